/*
 * suite_egress.c — what a declared egress mode holds: a `closed` sandbox reaches nothing,
 * and under `allowlist` the listed name answers while an unlisted name, an address literal,
 * a listed name resolving to the host's loopback, UDP, DNS and IPv6 get nowhere — each
 * decision reported when the backend declares observes_egress. The allowlist half's peers
 * are link-local, in a namespace the kit makes at the addresses the backend's own test map
 * gives the kit's names (netpeer.c); without such a map those cases are skipped.
 *
 * The closed case's peer is the kit's own (peer.c), on a loopback address in the host's
 * network namespace; the guest is asked to fetch from it with the kit's own probe program
 * (msb-probe connect), never with whatever tool the image happens to hold (the allowlist
 * cases dial names through the backend's proxy, so they use the guest's HTTP tools). A
 * guest behind a boundary that shares the host's network reaches it; one with its own empty
 * namespace reaches its own loopback, where nothing listens. Reaching is judged on both sides: the token in the guest's output, or a
 * connection the peer counted.
 */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msb/conformance.h>

#include "egress_log.h"
#include "kit.h"
#include "netpeer.h"
#include "peer.h"
#include "probe.h"

typedef enum reach { REACH_ERROR = -2, REACH_NO_TOOL = -1, REACH_NO = 0, REACH_YES = 1 } reach;

/*
 * The allowlist cases dial names, which only the backend's proxy resolves: those need the
 * guest's own HTTP tools (curl, wget, python3 honour the proxy the backend sets), which the
 * kit's probe is not — it dials numeric addresses only. Each attempt is bounded at 20 s, not
 * less: a TCG microVM on a loaded host took over 5 s for one proxied request (the kit's
 * qemu cases failed at 5 s with the load average at 20); an answer, or a refusal, ends it
 * as soon as it comes.
 */
static const char probe_script[] =
	"url=\"http://$1:$2/\"\n"
	"if command -v curl >/dev/null 2>&1; then curl -s -m 20 \"$url\"; echo \"tool=curl\"\n"
	"elif command -v wget >/dev/null 2>&1; then wget -q -T 20 -O - \"$url\"; echo \"tool=wget\"\n"
	"elif command -v python3 >/dev/null 2>&1; then python3 -c 'import sys, urllib.request\n"
	"print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())' \"$url\" 2>/dev/null; echo tool=python3\n"
	"elif command -v bash >/dev/null 2>&1; then bash -c 'exec 3<>\"/dev/tcp/$0/$1\" && printf \"GET / HTTP/1.0\\r\\n\\r\\n\" >&3 && cat <&3' \"$1\" \"$2\" 2>/dev/null; echo tool=bash\n"
	"else echo tool=none; fi\n";

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

/* Reach `host` (a name or an address) on `port` with the guest's own tools. */
static reach attempt_at(conf_run *run, conf_box *box, const char *host, unsigned port,
			conf_peer *peer)
{
	char port_text[16];
	snprintf(port_text, sizeof(port_text), "%u", port);
	const char *args[] = { host, port_text, NULL };
	unsigned before = conf_peer_connections(peer);
	msb_exec_result res;
	msb_error err = MSB_ERROR_INIT;
	msb_errc rc = conf_sh(run, box, NULL, probe_script, args, 30, &res, &err);
	reach r = REACH_NO;
	if (rc != MSB_OK) {
		conf_fail_call(run, "exec of the connection attempt to run", &err);
		r = REACH_ERROR;
	} else if (conf_peer_connections(peer) > before ||
		   (res.out.len && strstr((const char *)res.out.data, peer->token))) {
		r = REACH_YES;
	} else if (res.out.len && strstr((const char *)res.out.data, "tool=none")) {
		r = REACH_NO_TOOL;
	}
	msb_exec_result_free(&res);
	msb_error_clear(&err);
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

/* ---- the allowlist half ------------------------------------------------------------ */

/*
 * The world one allowlist case runs in: the kit's names mapped by the backend's own test map
 * (egress_test_hosts), link-local peers in a namespace the kit made at the listed and other
 * names' addresses, a peer on the loopback name's address in the host's namespace (which
 * must stay unreachable), and a sandbox allowed the listed and loopback names.
 */
typedef struct allow_world {
	conf_netpeer np;
	conf_peer loop;
	bool loop_up, np_up;
	conf_box *box;
	char listed[64], other[64], loopback[64];
} allow_world;

static const char *map_address(const msb_node *config, const char *name)
{
	const msb_node *map = msb_node_get(config, "egress_test_hosts");
	const msb_node *v = map && map->kind == MSB_NODE_MAP ? msb_node_get(map, name) : NULL;
	return v && v->kind == MSB_NODE_SCALAR ? v->scalar : NULL;
}

static bool allow_world_up(conf_run *run, allow_world *w)
{
	memset(w, 0, sizeof *w);
	if (!(run->decl->egress_modes & MSB_BIT(MSB_EGRESS_ALLOWLIST))) {
		conf_not_applicable(run, "the backend does not declare the allowlist egress mode");
		return false;
	}
	const msb_node *config = run->opts->struct_size >= offsetof(msb_conformance_options, backend_config) +
							      sizeof run->opts->backend_config
					 ? run->opts->backend_config : NULL;
	const char *l = map_address(config, MSB_CONFORMANCE_LISTED_HOST);
	const char *o = map_address(config, MSB_CONFORMANCE_OTHER_HOST);
	const char *b = map_address(config, MSB_CONFORMANCE_LOOPBACK_HOST);
	if (!l || !o || !b) {
		conf_skip(run, "the backend's config has no egress_test_hosts entries for "
			       MSB_CONFORMANCE_LISTED_HOST ", " MSB_CONFORMANCE_OTHER_HOST " and "
			       MSB_CONFORMANCE_LOOPBACK_HOST ", so the kit has no peers to stand up "
			       "(see msb/conformance.h)");
		return false;
	}
	snprintf(w->listed, sizeof w->listed, "%s", l);
	snprintf(w->other, sizeof w->other, "%s", o);
	snprintf(w->loopback, sizeof w->loopback, "%s", b);
	conf_box *box = conf_box_new(run, "allowlist", NULL, MSB_SCOPE_CONVERSATION);
	if (!box)
		return false;
	if (!conf_exec_usable(run, box)) {
		conf_skip(run, "exec is declared but did not run the kit's probe program");
		return false;
	}
	char t1[96], t2[96], t3[96];
	conf_unique(run, "listed", t1, sizeof t1);
	conf_unique(run, "other", t2, sizeof t2);
	conf_unique(run, "loopback", t3, sizeof t3);
	msb_error err = MSB_ERROR_INIT;
	if (conf_netpeer_start(&w->np, l, o, t1, t2, &err) != MSB_OK) {
		conf_skip(run, "%s", msb_error_message(&err));
		msb_error_clear(&err);
		return false;
	}
	w->np_up = true;
	struct in_addr a;
	int fd = inet_pton(AF_INET, b, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127 ? conf_peer_listen(b, 80) : -1;
	if (fd < 0 || conf_peer_start_fd(&w->loop, fd, b, t3, &err) != MSB_OK) {
		conf_skip(run, "the kit could not listen on %s:80 for " MSB_CONFORMANCE_LOOPBACK_HOST
			       " (it must map to a free 127.0.0.0/8 address)", b);
		msb_error_clear(&err);
		return false;
	}
	w->loop_up = true;
	static const char *const allow[] = { MSB_CONFORMANCE_LISTED_HOST, MSB_CONFORMANCE_LOOPBACK_HOST, NULL };
	box->spec.egress = MSB_EGRESS_ALLOWLIST;
	box->spec.egress_allow = allow;
	if (!conf_box_reacquire(run, box))
		return false;
	w->box = box;
	conf_egress_log_clear();
	return true;
}

static void allow_world_down(allow_world *w)
{
	if (w->loop_up)
		conf_peer_stop(&w->loop);
	if (w->np_up)
		conf_netpeer_stop(&w->np);
	w->loop_up = w->np_up = false;
}

/* When the backend says it observes egress, its report of this decision must arrive. */
static void expect_observed(conf_run *run, bool allowed, const char *destination)
{
	if (!run->decl->observes_egress || conf_decided(run))
		return;
	char needle[160];
	snprintf(needle, sizeof needle, "%s %s:80 ", allowed ? "ALLOW" : "DENY", destination);
	if (!conf_egress_log_wait(needle, 5000))
		conf_fail(run, "an EgressObserved report of each decision (the backend declares "
			       "observes_egress)", "no %s report for %s:80 arrived within 5 s",
			  allowed ? "ALLOW" : "DENY", destination);
}

static void case_allowlist_listed(conf_run *run)
{
	allow_world w;
	if (allow_world_up(run, &w)) {
		reach r = attempt_at(run, w.box, MSB_CONFORMANCE_LISTED_HOST, 80, &w.np.listed);
		if (r == REACH_NO_TOOL)
			conf_skip(run, "the guest has no curl, wget, python3 or bash to attempt a connection with");
		else if (r == REACH_NO)
			conf_fail(run, "the listed name " MSB_CONFORMANCE_LISTED_HOST " to answer",
				  "the guest did not reach its peer at %s:80: the backend confines "
				  "more than the spec asked", w.listed);
		else if (r == REACH_YES)
			expect_observed(run, true, MSB_CONFORMANCE_LISTED_HOST);
	}
	allow_world_down(&w);
}

static void refused_case(conf_run *run, int which)
{
	allow_world w;
	if (allow_world_up(run, &w)) {
		const char *host = which == 0 ? MSB_CONFORMANCE_OTHER_HOST
				 : which == 1 ? w.listed : MSB_CONFORMANCE_LOOPBACK_HOST;
		conf_peer *peer = which == 0 ? &w.np.other : which == 1 ? &w.np.listed : &w.loop;
		static const char *const what[] = {
			"an unlisted name (" MSB_CONFORMANCE_OTHER_HOST ") unreachable",
			"the listed name's address, dialled as a literal, unreachable",
			"a listed name resolving to the host's loopback unreachable",
		};
		reach r = attempt_at(run, w.box, host, 80, peer);
		if (r == REACH_NO_TOOL)
			conf_skip(run, "the guest has no curl, wget, python3 or bash to attempt a connection with");
		else if (r == REACH_YES)
			conf_fail(run, what[which], "the guest reached %s:80 through %s", peer->address, host);
		else if (r == REACH_NO)
			expect_observed(run, false, host);
	}
	allow_world_down(&w);
}

static void case_allowlist_other(conf_run *run)
{
	refused_case(run, 0);
}

static void case_allowlist_literal(conf_run *run)
{
	refused_case(run, 1);
}

static void case_allowlist_loopback(conf_run *run)
{
	refused_case(run, 2);
}

static const char side_channels[] =
	"command -v python3 >/dev/null 2>&1 || { echo tool=none; exit 0; }\n"
	"python3 - \"$1\" <<'EOF'\n"
	"import socket, sys\n"
	"q = b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x06listed\\x00\\x00\\x01\\x00\\x01'\n"
	"s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
	"try: s.sendto(q, (sys.argv[1], 53)); print('udp=sent')\n"
	"except Exception: print('udp=unreachable')\n"
	"try: socket.getaddrinfo('" MSB_CONFORMANCE_OTHER_HOST "', 80); print('dns=resolved')\n"
	"except Exception: print('dns=none')\n"
	"try: socket.create_connection(('fd00::1', 80), timeout=3); print('v6=connected')\n"
	"except Exception: print('v6=refused')\n"
	"EOF\n";

/* No DNS path, no UDP, no IPv6 route out: the peers see nothing, the guest resolves nothing. */
static void case_allowlist_side_channels(conf_run *run)
{
	allow_world w;
	if (allow_world_up(run, &w)) {
		const char *args[] = { w.listed, NULL };
		msb_exec_result res;
		msb_error err = MSB_ERROR_INIT;
		conf_netpeer_datagrams(&w.np);
		if (conf_sh(run, w.box, NULL, side_channels, args, 30, &res, &err) != MSB_OK) {
			conf_fail_call(run, "exec of the side-channel attempts to run", &err);
		} else {
			const char *out = res.out.len ? (const char *)res.out.data : "";
			unsigned got = conf_netpeer_datagrams(&w.np);
			if (strstr(out, "tool=none"))
				conf_skip(run, "the guest has no python3 to send a datagram with");
			else if (got)
				conf_fail(run, "no UDP (DNS included) out of an allowlist sandbox",
					  "%u datagram(s) reached %s:53", got, w.listed);
			else if (strstr(out, "dns=resolved"))
				conf_fail(run, "no name resolution inside an allowlist sandbox",
					  "the guest resolved " MSB_CONFORMANCE_OTHER_HOST);
			else if (strstr(out, "v6=connected"))
				conf_fail(run, "no IPv6 route out of an allowlist sandbox",
					  "the guest connected to [fd00::1]:80");
			msb_exec_result_free(&res);
		}
		msb_error_clear(&err);
	}
	allow_world_down(&w);
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
	{ "allowlist-literal-refused", MSB_BIT(MSB_CAP_EXEC), case_allowlist_literal },
	{ "allowlist-loopback-refused", MSB_BIT(MSB_CAP_EXEC), case_allowlist_loopback },
	{ "allowlist-no-dns-udp-ipv6", MSB_BIT(MSB_CAP_EXEC), case_allowlist_side_channels },
};

const conf_suite conf_suite_egress = {
	.name = "egress",
	.inapplicable = egress_inapplicable,
	.cases = egress_cases,
	.n_cases = sizeof(egress_cases) / sizeof(egress_cases[0]),
};
