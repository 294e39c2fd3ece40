/*
 * test_egress_policy.c — the egress enforcer's decisions alone (sdk/egress/policy.c,
 * http.c): the config keys and their refusals, which egress_allow lists are honoured, which
 * addresses a name may resolve to (and which ranges the operator may reopen), and the one
 * request head a proxy-aware tool sends. No socket is opened and no name resolved: the test
 * map is the resolver.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <msb/config.h>
#include <msb/egress.h>

#include "../../sdk/egress/egress_internal.h"

/* A backend `config:` node from YAML text, through the host's own parser. */
static msb_config *cfg_of(const char *yaml_config, const msb_node **config)
{
	char text[4096];
	snprintf(text, sizeof text,
		 "version: 1\nbackends:\n  - plugin: x.so\n    config:\n%s", yaml_config);
	msb_config *cfg = NULL;
	msb_error err = MSB_ERROR_INIT;
	if (msb_config_parse(text, strlen(text), "<test>", NULL, &cfg, &err) != MSB_OK) {
		fprintf(stderr, "%s\n", msb_error_message(&err));
		fail();
	}
	*config = msb_node_get(msb_node_get(msb_config_root(cfg), "backends")->items[0], "config");
	return cfg;
}

static msb_errc read_config(const char *yaml, msb_egress_config *c, msb_error *err)
{
	const msb_node *n;
	msb_config *cfg = cfg_of(yaml, &n);
	msb_errc rc = msb_egress_config_read(n, c, err);
	msb_config_free(cfg);
	return rc;
}

static void test_defaults(void **state)
{
	(void)state;
	msb_egress_config c;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_egress_config_read(NULL, &c, &err), MSB_OK);
	assert_int_equal(c.n_ports, 2);
	assert_int_equal(c.ports[0], 443);
	assert_int_equal(c.ports[1], 80);
	assert_int_equal(c.max_connections, 64);
	assert_false(c.has_test_hosts);
	msb_egress_config_free(&c);
}

static void test_config_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *yaml, *says;
	} bad[] = {
		{ "      egress_ports: [0]\n", "egress_ports" },
		{ "      egress_ports: [3128]\n", "in-guest proxy" },
		{ "      egress_ports: [80, 80]\n", "listed twice" },
		{ "      egress_ports: 80\n", "list of 1 to" },
		{ "      egress_max_connections: 0\n", "egress_max_connections" },
		{ "      egress_idle_timeout: 0\n", "egress_idle_timeout" },
		{ "      egress_max_bytes: 0\n", "egress_max_bytes" },
		{ "      egress_allow_ranges: [10.0.0.0/33]\n", "not a CIDR" },
		{ "      egress_allow_ranges: [nonsense]\n", "not a CIDR" },
		{ "      egress_test_hosts: {a.test: not-an-address}\n", "address literal" },
		{ "      egress_test_hosts: {\"bad name!\": 127.0.0.1}\n", "not a host name" },
		{ "      egress_test_hosts: {a.test: {address: 127.0.0.1, delay: 61s}}\n", "delay is from 0" },
		{ "      egress_test_hosts: {a.test: {address: 127.0.0.1, when: 1s}}\n", "unknown key when" },
		{ "      egress_test_hosts: {a.test: {delay: 1s}}\n", "address literal" },
		{ "      egress_resolve_timeout: 0\n", "egress_resolve_timeout" },
		{ "      egress_resolve_timeout: 301s\n", "egress_resolve_timeout" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		msb_egress_config c;
		msb_error err = MSB_ERROR_INIT;
		assert_int_equal(read_config(bad[i].yaml, &c, &err), MSB_E_CONFIG);
		if (!strstr(msb_error_message(&err), bad[i].says)) {
			fprintf(stderr, "%s: %s\n", bad[i].yaml, msb_error_message(&err));
			fail();
		}
		assert_non_null(strstr(msb_error_message(&err), "<test>:"));
		msb_error_clear(&err);
	}
}

static void test_allow_check(void **state)
{
	(void)state;
	msb_error err = MSB_ERROR_INIT;
	const char *const ok[] = { "deb.debian.org", "pypi.org", "a-b.c1.test", NULL };
	assert_int_equal(msb_egress_allow_check(ok, &err), MSB_OK);
	const struct {
		const char *entry, *says;
	} bad[] = {
		{ "127.0.0.1", "is an address" }, { "[::1]", "is an address" },
		{ "2130706433", "is an address" }, { "0x7f.1", "is an address" },
		{ "*.debian.org", "wildcard" },    { "-bad.org", "not a host name" },
		{ "a..b", "not a host name" },     { "a_b.org", "not a host name" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *const list[] = { "fine.org", bad[i].entry, NULL };
		assert_int_equal(msb_egress_allow_check(list, &err), MSB_E_VALUE);
		assert_non_null(strstr(msb_error_message(&err), bad[i].says));
		assert_non_null(strstr(msb_error_message(&err), bad[i].entry));
		msb_error_clear(&err);
	}
	const char *const dup[] = { "pypi.org", "PyPI.org", NULL };
	assert_int_equal(msb_egress_allow_check(dup, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "twice"));
	msb_error_clear(&err);
	size_t idx = 9;
	assert_true(msb_egress_allow_find(ok, "PYPI.ORG", &idx));
	assert_int_equal(idx, 1);
	assert_false(msb_egress_allow_find(ok, "evil.pypi.org", NULL));
	assert_false(msb_egress_allow_find(ok, "pypi.org.evil", NULL));
}

static bool refused(const msb_egress_config *c, const char *addr, const char **why)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1)
		v4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1)
		v6->sin6_family = AF_INET6;
	else
		fail();
	return msb_egress_address_refused(c, (struct sockaddr *)&ss, why);
}

static void test_ranges(void **state)
{
	(void)state;
	msb_egress_config c;
	msb_egress_config_defaults(&c);
	static const char *const bad[] = {
		"10.1.2.3",  "172.16.0.1",  "172.31.255.255", "192.168.1.1", "127.0.0.1", "127.9.9.9",
		"169.254.0.5", "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255",
		"::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1", "::ffff:127.0.0.1",
		"::ffff:10.0.0.1", "64:ff9b::a00:1",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *why = NULL;
		if (!refused(&c, bad[i], &why)) {
			fprintf(stderr, "%s was not refused\n", bad[i]);
			fail();
		}
		assert_non_null(why);
	}
	static const char *const good[] = { "93.184.216.34", "151.101.0.223", "2a04:4e42::223",
					    "172.32.0.1", "::ffff:93.184.216.34" };
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		if (refused(&c, good[i], NULL)) {
			fprintf(stderr, "%s was refused\n", good[i]);
			fail();
		}
	const char *why = NULL;
	assert_true(refused(&c, "192.168.7.7", &why));
	assert_string_equal(why, "private 192.168.0.0/16");
}

/* The operator reopens a range; the metadata address only by itself. */
static void test_reopened_ranges(void **state)
{
	(void)state;
	msb_egress_config c;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(read_config("      egress_allow_ranges: [169.254.0.0/16, 10.8.0.0/16]\n", &c, &err),
			 MSB_OK);
	const char *why = NULL;
	assert_false(refused(&c, "169.254.7.2", NULL));
	assert_false(refused(&c, "10.8.1.1", NULL));
	assert_true(refused(&c, "10.9.1.1", NULL));
	assert_true(refused(&c, "169.254.169.254", &why));
	assert_string_equal(why, "metadata 169.254.169.254");
	msb_egress_config_free(&c);
	assert_int_equal(read_config("      egress_allow_ranges: [169.254.169.254/32]\n", &c, &err), MSB_OK);
	assert_false(refused(&c, "169.254.169.254", NULL));
	assert_true(refused(&c, "169.254.169.253", NULL));
	msb_egress_config_free(&c);
}

static void test_resolve_through_test_map(void **state)
{
	(void)state;
	msb_egress_config c;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(read_config("      egress_allow_ranges: [169.254.5.0/24]\n"
				     "      egress_test_hosts:\n"
				     "        peer.test: 169.254.5.2\n"
				     "        rebind.test: 10.0.0.1\n"
				     "        six.test: \"fd00::5\"\n", &c, &err), MSB_OK);
	struct sockaddr_storage ss;
	socklen_t len;
	char why[256];
	assert_true(msb_egress_resolve(&c, "PEER.test", 443, &ss, &len, why, sizeof why));
	assert_int_equal(ss.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 443);
	assert_false(msb_egress_resolve(&c, "rebind.test", 443, &ss, &len, why, sizeof why));
	assert_non_null(strstr(why, "private 10.0.0.0/8"));
	assert_false(msb_egress_resolve(&c, "six.test", 443, &ss, &len, why, sizeof why));
	assert_non_null(strstr(why, "unique local"));
	/* With a test map, nothing else resolves: not even a real name. */
	assert_false(msb_egress_resolve(&c, "localhost", 443, &ss, &len, why, sizeof why));
	assert_non_null(strstr(why, "test map"));
	msb_egress_config_free(&c);
}

static int parse(eg_http_head *h, const char *text, char *why)
{
	memset(h, 0, sizeof *h);
	h->len = strlen(text);
	memcpy(h->raw, text, h->len);
	return eg_http_parse(h, why, 256);
}

static void test_http_heads(void **state)
{
	(void)state;
	eg_http_head *h = malloc(sizeof *h);
	char why[256];
	assert_int_equal(parse(h, "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\nTLS", why), 1);
	assert_true(h->connect);
	assert_string_equal(h->host, "pypi.org");
	assert_int_equal(h->port, 443);
	assert_int_equal(h->len - h->head_len, 3);
	assert_int_equal(parse(h, "GET http://deb.debian.org/debian/x HTTP/1.1\r\nHost: deb.debian.org\r\nA: b\r\n\r\n", why), 1);
	assert_false(h->connect);
	assert_int_equal(h->port, 80);
	assert_string_equal(h->rewritten, "GET /debian/x HTTP/1.1\r\nHost: deb.debian.org\r\nA: b\r\n\r\n");
	assert_int_equal(parse(h, "GET http://a.test:8080 HTTP/1.0\r\n\r\n", why), 1);
	assert_string_equal(h->rewritten, "GET / HTTP/1.0\r\n\r\n");
	assert_int_equal(h->port, 8080);
	assert_int_equal(parse(h, "GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n", why), -1);
	assert_non_null(strstr(why, "Host header names another host"));
	assert_int_equal(parse(h, "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nhost: b.test\r\n\r\n", why), -1);
	assert_non_null(strstr(why, "more than one Host"));
	assert_int_equal(parse(h, "GET http://a.test/ HTTP/1.1\r\nHost: a.test:81\r\n\r\n", why), -1);
	assert_int_equal(parse(h, "GET https://a.test/ HTTP/1.1\r\n\r\n", why), -1);
	assert_non_null(strstr(why, "CONNECT"));
	assert_int_equal(parse(h, "GET /relative HTTP/1.1\r\n\r\n", why), -1);
	assert_int_equal(parse(h, "CONNECT a.test HTTP/1.1\r\n\r\n", why), -1);
	assert_int_equal(parse(h, "CONNECT user@a.test:443 HTTP/1.1\r\n\r\n", why), -1);
	assert_int_equal(parse(h, "GET http://u@a.test/ HTTP/1.1\r\n\r\n", why), -1);
	assert_int_equal(parse(h, "CONNECT a.test:99999 HTTP/1.1\r\n\r\n", why), -1);
	assert_int_equal(parse(h, "CONNECT a.test:443 SPDY\r\n\r\n", why), -1);
	assert_int_equal(parse(h, "CONNECT a.\x01test:443 HTTP/1.1\r\n\r\n", why), -1);
	assert_int_equal(parse(h, "CONNECT [::1]:443 HTTP/1.1\r\n\r\n", why), 1);
	assert_true(eg_is_address(h->host));
	assert_true(eg_is_address("2130706433"));
	assert_true(eg_is_address("0x7f.1"));
	assert_false(eg_is_address("pypi.org"));
	/* Incomplete: more bytes wanted, nothing decided. */
	assert_int_equal(parse(h, "CONNECT a.test:443 HTTP/1.1\r\n", why), 0);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_config_refusals),
		cmocka_unit_test(test_allow_check),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_reopened_ranges),
		cmocka_unit_test(test_resolve_through_test_map),
		cmocka_unit_test(test_http_heads),
	};
	return cmocka_run_group_tests_name("egress policy", tests, NULL, NULL);
}
