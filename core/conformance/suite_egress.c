/*
 * suite_egress.c — what a declared egress mode holds: a `closed` sandbox reaches nothing,
 * and under `allowlist` the listed peer answers while another does not.
 *
 * The peers are the kit's own (peer.c), on loopback addresses in the host's network
 * namespace; the guest is asked to fetch from them with the kit's own probe program
 * (msb-probe connect), never with whatever tool the image happens to hold. A guest behind a boundary that shares the host's network
 * reaches them; one with its own empty namespace reaches its own loopback, where nothing
 * listens. Reaching is judged on both sides: the token in the guest's output, or a
 * connection the peer counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"
#include "peer.h"
#include "probe.h"

typedef enum reach { REACH_ERROR = -2, REACH_NO_TOOL = -1, REACH_NO = 0, REACH_YES = 1 } reach;

/*
 * The kit's own probe connects (probe.c): a guest image without curl, wget or a shell must
 * not turn "could not try" into "could not reach". When the probe cannot be carried in or
 * run, the case is skipped saying why.
 */
static reach attempt(conf_run *run, conf_box *box, conf_peer *peer)
{
	char port[16];
	snprintf(port, sizeof(port), "%u", peer->port);
	const char *args[] = { "connect", peer->address, port, NULL };
	unsigned before = conf_peer_connections(peer);
	char *out = NULL;
	if (!conf_probe_run(run, box, args, &out))
		return conf_decided(run) && run->verdict->outcome == MSB_CONFORMANCE_SKIP ? REACH_NO_TOOL
											 : REACH_ERROR;
	reach r = conf_peer_connections(peer) > before || strstr(out, peer->token) ? REACH_YES : REACH_NO;
	free(out);
	return r;
}

static bool start_peer(conf_run *run, conf_box *box, conf_peer *peer, const char *address)
{
	if (!conf_exec_usable(run, box)) {
		conf_skip(run, "exec is declared but did not run the kit's probe program, so no "
			       "connection can be attempted from inside");
		return false;
	}
	char token[96];
	msb_error err = MSB_ERROR_INIT;
	conf_unique(run, "peer", token, sizeof(token));
	if (conf_peer_start(peer, address, token, &err) != MSB_OK) {
		conf_skip(run, "the kit could not start its loopback peer on %s: %s", address,
			  msb_error_message(&err));
		msb_error_clear(&err);
		return false;
	}
	return true;
}

static void case_closed_reaches_nothing(conf_run *run)
{
	if (!(run->decl->egress_modes & MSB_BIT(MSB_EGRESS_CLOSED))) {
		conf_not_applicable(run, "the backend does not declare the closed egress mode");
		return;
	}
	conf_box *box = conf_box_acquire(run, "closed", NULL, MSB_SCOPE_CONVERSATION);
	if (!box)
		return;
	conf_peer peer;
	if (!start_peer(run, box, &peer, "127.0.0.1"))
		return;
	reach r = attempt(run, box, &peer);
	if (r == REACH_YES)
		conf_fail(run, "a closed sandbox to reach nothing",
			  "the guest reached the kit's peer at %s:%u in the host's network namespace",
			  peer.address, peer.port);
	conf_peer_stop(&peer);
}

static void allowlist_case(conf_run *run, bool listed)
{
	if (!(run->decl->egress_modes & MSB_BIT(MSB_EGRESS_ALLOWLIST))) {
		conf_not_applicable(run, "the backend does not declare the allowlist egress mode");
		return;
	}
	static const char *const allow[] = { "127.0.0.1", NULL };
	conf_box *box = conf_box_new(run, "allowlist", NULL, MSB_SCOPE_CONVERSATION);
	if (!box)
		return;
	box->spec.egress = MSB_EGRESS_ALLOWLIST;
	box->spec.egress_allow = allow;
	if (!conf_box_reacquire(run, box))
		return;
	conf_peer ok, other;
	if (!start_peer(run, box, &ok, "127.0.0.1"))
		return;
	if (!start_peer(run, box, &other, "127.0.0.2")) {
		conf_peer_stop(&ok);
		return;
	}
	reach r = attempt(run, box, listed ? &ok : &other);
	if (listed && r == REACH_NO)
		conf_fail(run, "the listed peer 127.0.0.1 to answer under egress_allow [127.0.0.1]",
			  "the guest did not reach %s:%u: the backend confines more than the spec asked",
			  ok.address, ok.port);
	else if (!listed && r == REACH_YES)
		conf_fail(run, "a peer off the allowlist (127.0.0.2) unreachable",
			  "the guest reached %s:%u", other.address, other.port);
	conf_peer_stop(&ok);
	conf_peer_stop(&other);
}

static void case_allowlist_listed(conf_run *run)
{
	allowlist_case(run, true);
}

static void case_allowlist_other(conf_run *run)
{
	allowlist_case(run, false);
}

static const char *egress_inapplicable(conf_run *run)
{
	if (!conf_has(run, MSB_CAP_EXEC))
		return "attempting a connection from inside needs exec, which the backend does not declare";
	if (!(run->decl->egress_modes & (MSB_BIT(MSB_EGRESS_CLOSED) | MSB_BIT(MSB_EGRESS_ALLOWLIST))))
		return "the backend declares neither closed nor allowlist egress";
	return NULL;
}

static const conf_case egress_cases[] = {
	{ "closed-reaches-nothing", MSB_BIT(MSB_CAP_EXEC), case_closed_reaches_nothing },
	{ "allowlist-listed-answers", MSB_BIT(MSB_CAP_EXEC), case_allowlist_listed },
	{ "allowlist-other-refused", MSB_BIT(MSB_CAP_EXEC), case_allowlist_other },
};

const conf_suite conf_suite_egress = {
	.name = "egress",
	.inapplicable = egress_inapplicable,
	.cases = egress_cases,
	.n_cases = sizeof(egress_cases) / sizeof(egress_cases[0]),
};
