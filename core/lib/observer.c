/*
 * observer.c — delivering the eight events, and the msb_host that lets a backend report
 * its egress decisions to the same observer.
 *
 * Each delivery reads the callback only when the table is new enough to have it
 * (struct_size), so a host built against an older table never has a field read past its
 * end. A callback's failure is reported and swallowed here, once, so no emitter can forget.
 */
#include <stddef.h>
#include <stdio.h>

#include <msb/observer.h>

static int observer_failed(const char *event, int rc)
{
	/* The observer cannot fail the call; it is told about on stderr and nothing else. */
	if (rc != 0)
		fprintf(stderr, "msb: observer: the %s callback returned %d; ignored (an observer never fails a call)\n",
			event, rc);
	return rc;
}

#define MSB_OBSERVER_HAS(o, field)                                                     \
	((o) && (o)->struct_size >= offsetof(msb_observer, field) + sizeof((o)->field) && \
	 (o)->field)

#define MSB_OBSERVER_DELIVER(name, type)                                              \
	int msb_observer_##name(const msb_observer *o, const type *event)             \
	{                                                                             \
		if (!MSB_OBSERVER_HAS(o, name))                                       \
			return 0;                                                     \
		return observer_failed(#name, o->name(o->ctx, event));                \
	}

MSB_OBSERVER_DELIVER(sandbox_acquired, msb_sandbox_acquired)
MSB_OBSERVER_DELIVER(sandbox_disposed, msb_sandbox_disposed)
MSB_OBSERVER_DELIVER(scope_disposed, msb_scope_disposed)
MSB_OBSERVER_DELIVER(egress_observed, msb_egress_observed)
MSB_OBSERVER_DELIVER(host_tool_called, msb_host_tool_called)
MSB_OBSERVER_DELIVER(store_file_read, msb_store_file_read)
MSB_OBSERVER_DELIVER(outputs_collected, msb_outputs_collected)
MSB_OBSERVER_DELIVER(tool_call_ended, msb_tool_call_ended)

static void host_log(void *ctx, msb_log_level level, const char *message)
{
	(void)ctx;
	static const char *const names[] = { "debug", "info", "warning", "error" };
	const char *name = (int)level >= 0 && level <= MSB_LOG_ERROR ? names[level] : "log";
	fprintf(stderr, "msb: %s: %s\n", name, message ? message : "");
}

static void host_egress_observed(void *ctx, const msb_key *key, const char *destination, bool allowed)
{
	const msb_egress_observed event = { key, destination, allowed, NULL };
	msb_observer_egress_observed(ctx, &event);
}

static void host_egress_decided(void *ctx, const msb_key *key, const char *destination,
				bool allowed, const char *reason)
{
	const msb_egress_observed event = { key, destination, allowed, allowed ? NULL : reason };
	msb_observer_egress_observed(ctx, &event);
}

void msb_host_init(msb_host *host, const msb_observer *observer)
{
	host->struct_size = (uint32_t)sizeof *host;
	/* The observer is only read through; the host's ctx is untyped by contract. */
	host->ctx = (void *)(uintptr_t)observer;
	host->log = host_log;
	host->egress_observed = host_egress_observed;
	host->egress_decided = host_egress_decided;
}
