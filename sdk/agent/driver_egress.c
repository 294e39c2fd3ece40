/*
 * driver_egress.c — `egress: allowlist` for every driver-based backend whose boundary says
 * .egress: the instance's one proxy (msb/egress.h), started with the first allowlist
 * sandbox, a socket per sandbox in <dir>/egress/, and every decision handed to the host.
 *
 * The proxy lives in the host process, so a sandbox's way out exists while a host serves it
 * (each acquire, by any process, listens anew on its socket); a connection attempted while
 * no host runs is refused by the forwarder at once. Decisions go to the reporter the host
 * gave at init (EgressObserved), the reason with them where the host takes one.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver_internal.h"

const bool msb_driver_observes_egress = true;

static void report(void *ctx, const msb_key *key, const char *destination, bool allowed,
		   const char *reason)
{
	msb_backend_instance *inst = ctx;
	if (!inst->has_host)
		return;
	const msb_host *h = &inst->host;
	if (h->struct_size >= offsetof(msb_host, egress_decided) + sizeof h->egress_decided &&
	    h->egress_decided)
		h->egress_decided(h->ctx, key, destination, allowed, reason);
	else if (h->egress_observed)
		h->egress_observed(h->ctx, key, destination, allowed);
}

void msb_driver_egress_agent_config(const msb_driver_box *box, msb_agent_config *c)
{
	if (!box->egress_socket || !box->spec)
		return;
	c->egress_socket = box->egress_socket;
	c->egress_names = box->spec->egress_allow;
	c->egress_ports = box->config->egress.ports;
	c->n_egress_ports = box->config->egress.n_ports;
}

msb_errc driver_egress_check(msb_backend_instance *inst, const msb_spec *spec, msb_error *err)
{
	if (spec->egress != MSB_EGRESS_ALLOWLIST)
		return MSB_OK;
	if (!inst->boundary.egress)
		return msb_error_set(err, MSB_E_EGRESS_NOT_ENFORCED,
				     "backend %s cannot enforce the 'allowlist' egress the '%s' "
				     "workload runs in (its boundary carries no egress socket)",
				     inst->boundary.name, spec->kind);
	msb_errc rc = msb_egress_allow_check(spec->egress_allow, err);
	if (rc != MSB_OK)
		msb_error_prefix(err, "backend %s: kind %s: ", inst->boundary.name, spec->kind);
	return rc;
}

/* <dir>/egress/hosts: every allowed name at its loopback address (msb/egress.h). */
static msb_errc write_hosts(msb_backend_instance *inst, driver_paths *p, const msb_spec *spec,
			    msb_error *err)
{
	char *path = msb_driver_path(p->egress_dir, MSB_EGRESS_HOSTS_LEAF);
	FILE *f = path ? fopen(path, "we") : NULL;
	if (!f) {
		msb_errc rc = msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend %s: sandbox %s: "
						  "cannot write %s", inst->boundary.name, p->name,
						  path ? path : "the hosts file");
		free(path);
		return rc;
	}
	fputs("127.0.0.1\tlocalhost\n::1\tlocalhost\n", f);
	for (size_t i = 0; spec->egress_allow && spec->egress_allow[i]; i++) {
		char addr[16];
		msb_egress_guest_address(i, addr);
		fprintf(f, "%s\t%s\n", addr, spec->egress_allow[i]);
	}
	bool ok = fclose(f) == 0;
	chmod(path, 0644);
	free(path);
	return ok ? MSB_OK : msb_error_set(err, MSB_E_BACKEND, "backend %s: sandbox %s: the hosts "
					   "file could not be written", inst->boundary.name, p->name);
}

msb_errc driver_egress_prepare(msb_backend_instance *inst, driver_paths *p, const msb_spec *spec,
			       msb_error *err)
{
	(void)inst;
	if (spec->egress != MSB_EGRESS_ALLOWLIST)
		return MSB_OK;
	/* Traversable by the guest's uid, whatever the boundary picks; listable by nobody. Only
	 * when made here: a boundary may since have narrowed both to its guest's uid alone
	 * (process), and the serve of a later acquire must not open them to every uid again. */
	if (mkdir(p->egress_dir, 0711) == 0) {
		chmod(p->egress_dir, 0711);
		chmod(p->dir, 0711);
	} else if (errno != EEXIST) {
		return msb_error_set_errno(err, MSB_E_BACKEND, errno, "backend %s: sandbox %s: mkdir %s",
					   inst->boundary.name, p->name, p->egress_dir);
	}
	msb_errc rc = write_hosts(inst, p, spec, err);
	if (rc == MSB_OK)
		p->box.egress_socket = p->egress_sock;
	return rc;
}

msb_errc driver_egress_serve(msb_backend_instance *inst, driver_paths *p, const msb_key *key,
			     const msb_spec *spec, msb_error *err)
{
	p->box.egress_socket = NULL;
	if (spec->egress != MSB_EGRESS_ALLOWLIST)
		return MSB_OK;
	msb_errc rc = driver_egress_prepare(inst, p, spec, err);
	p->box.egress_socket = NULL;
	pthread_mutex_lock(&inst->egress_lock);
	if (rc == MSB_OK && !inst->egress_proxy)
		rc = msb_egress_proxy_new(&inst->config.egress, report, inst, &inst->egress_proxy, err);
	pthread_mutex_unlock(&inst->egress_lock);
	if (rc == MSB_OK)
		rc = msb_egress_proxy_serve(inst->egress_proxy, key, spec->egress_allow,
					    p->egress_sock, err);
	if (rc != MSB_OK)
		msb_error_prefix(err, "backend %s: sandbox %s: ", inst->boundary.name, p->name);
	return rc;
}

void driver_egress_forget(msb_backend_instance *inst, driver_paths *p)
{
	pthread_mutex_lock(&inst->egress_lock);
	msb_egress_proxy *proxy = inst->egress_proxy;
	pthread_mutex_unlock(&inst->egress_lock);
	if (proxy)
		msb_egress_proxy_forget(proxy, p->egress_sock);
}

void driver_egress_fini(msb_backend_instance *inst)
{
	msb_egress_proxy_free(inst->egress_proxy);
	inst->egress_proxy = NULL;
	pthread_mutex_destroy(&inst->egress_lock);
}
