/*
 * qemu_relay.c — the qemu backend's frame relay (plugins/qemu/relay.c) over socketpairs that
 * stand in for a VM's virtio-serial ports, without booting anything: every port is greeted
 * at once, the relay is ready when the FIRST port answers HELLO, a port is handed a request
 * only after its own greeting succeeded, one whose greeting failed is closed and never
 * used, and a relay none of whose ports answers well says 'F'.
 */
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/agent.h>

#include "msb_test.h"
#include "relay.h"

#define N_PORTS 3

typedef struct relay_fixture {
	char dir[64], sock[100];
	pid_t relay;
	int agent[N_PORTS]; /* the guest agents' ends of the ports */
	int ready;          /* the relay's word */
} relay_fixture;

/* Start a relay over N_PORTS socketpairs in a child, as msb_qemu_relay_spawn's would run. */
static void relay_start(relay_fixture *f)
{
	snprintf(f->dir, sizeof f->dir, "/tmp/msb-qemu-relay-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->sock, sizeof f->sock, "%s/agent.sock", f->dir);
	int lfd = msb_qemu_relay_listen(f->sock);
	assert_true(lfd >= 0);
	int guest[N_PORTS], ready[2];
	for (int i = 0; i < N_PORTS; i++) {
		int sp[2];
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
		f->agent[i] = sp[0];
		guest[i] = sp[1];
	}
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	f->relay = fork();
	assert_true(f->relay >= 0);
	if (f->relay == 0) {
		for (int i = 0; i < N_PORTS; i++)
			close(f->agent[i]);
		close(ready[0]);
		msb_qemu_relay_run(lfd, guest, N_PORTS, ready[1]);
	}
	close(lfd);
	close(ready[1]);
	for (int i = 0; i < N_PORTS; i++)
		close(guest[i]);
	f->ready = ready[0];
}

/* The teardown, also after a failed assertion: the relay ends, its socket and dir go. */
static int relay_stop(void **state)
{
	relay_fixture *f = *state;
	if (f->relay > 0) {
		kill(f->relay, SIGKILL);
		waitpid(f->relay, NULL, 0);
	}
	for (int i = 0; i < N_PORTS; i++)
		close(f->agent[i]);
	close(f->ready);
	unlink(f->sock);
	rmdir(f->dir);
	return 0;
}

static relay_fixture fixture;

static int relay_setup(void **state)
{
	relay_start(&fixture);
	*state = &fixture;
	return 0;
}

/* Whether `fd` has something to read (or hung up) within `ms`. */
static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, ms) == 1;
}

/* Read one frame of `type` on an agent's end; its id. */
static uint32_t expect_frame(int fd, uint16_t type)
{
	msb_agent_header h;
	msb_buf payload = { 0 };
	assert_int_equal(msb_agent_frame_read(fd, msb_agent_now_ms() + 5000, &h, &payload, NULL,
					      NULL), MSB_OK);
	assert_int_equal(h.type, type);
	msb_buf_free(&payload);
	return h.id;
}

/* Answer `type` #id with ERRC `code` (and the version, for a HELLO). */
static void answer(int fd, uint16_t type, uint32_t id, msb_errc code)
{
	msb_buf out = { 0 };
	assert_int_equal(msb_agent_put_u32(&out, MSB_TAG_ERRC, (uint32_t)code, NULL), MSB_OK);
	if (type == MSB_AGENT_HELLO)
		assert_int_equal(msb_agent_put_u32(&out, MSB_TAG_VERSION, MSB_AGENT_PROTOCOL_VERSION,
						   NULL), MSB_OK);
	assert_int_equal(msb_agent_frame_write(fd, (uint16_t)(type | MSB_AGENT_REPLY), id, &out,
					       NULL), MSB_OK);
	msb_buf_free(&out);
}

/* A client of agent.sock that has sent one PING #id. */
static int client_ping(const relay_fixture *f, uint32_t id)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->sock);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	msb_buf none = { 0 };
	assert_int_equal(msb_agent_frame_write(fd, MSB_AGENT_PING, id, &none, NULL), MSB_OK);
	return fd;
}

static char ready_word(const relay_fixture *f)
{
	char c = 0;
	assert_true(readable(f->ready, 5000));
	assert_int_equal(read(f->ready, &c, 1), 1);
	return c;
}

static void ready_on_the_first_greeting_and_no_port_used_before_its_own(void **state)
{
	relay_fixture f = *(relay_fixture *)*state;
	/* Every port is greeted at once, before any answered. */
	for (int i = 0; i < N_PORTS; i++)
		expect_frame(f.agent[i], MSB_AGENT_HELLO);
	assert_false(readable(f.ready, 100));
	/* Port 1 answers first: ready, though ports 0 and 2 have not answered. */
	answer(f.agent[1], MSB_AGENT_HELLO, 0, MSB_OK);
	assert_int_equal(ready_word(&f), 'R');
	/* Port 0's greeting fails: the relay closes it. */
	answer(f.agent[0], MSB_AGENT_HELLO, 0, MSB_E_PROTOCOL);
	assert_true(readable(f.agent[0], 5000));
	char byte;
	assert_int_equal(read(f.agent[0], &byte, 1), 0);

	/* The first request goes to the one greeted port... */
	int a = client_ping(&f, 7);
	assert_int_equal(expect_frame(f.agent[1], MSB_AGENT_PING), 7);
	/* ...and while it is busy, the next waits: not on port 2 (not greeted yet). */
	int b = client_ping(&f, 8);
	assert_false(readable(f.agent[2], 300));
	/* Port 2 answers its HELLO: now it serves the waiting request. */
	answer(f.agent[2], MSB_AGENT_HELLO, 0, MSB_OK);
	assert_int_equal(expect_frame(f.agent[2], MSB_AGENT_PING), 8);
	answer(f.agent[2], MSB_AGENT_PING, 8, MSB_OK);
	answer(f.agent[1], MSB_AGENT_PING, 7, MSB_OK);
	assert_int_equal(expect_frame(a, MSB_AGENT_PING | MSB_AGENT_REPLY), 7);
	assert_int_equal(expect_frame(b, MSB_AGENT_PING | MSB_AGENT_REPLY), 8);
	close(a);
	close(b);
}

static void no_port_answering_well_is_a_failed_start(void **state)
{
	relay_fixture *f = *state;
	for (int i = 0; i < N_PORTS; i++) {
		expect_frame(f->agent[i], MSB_AGENT_HELLO);
		/* A reply of the wrong type is no greeting either. */
		answer(f->agent[i], i ? MSB_AGENT_HELLO : MSB_AGENT_PING, 0,
		       i ? MSB_E_PROTOCOL : MSB_OK);
	}
	assert_int_equal(ready_word(f), 'F');
	int status = 0;
	assert_int_equal(waitpid(f->relay, &status, 0), f->relay);
	f->relay = -1;
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(ready_on_the_first_greeting_and_no_port_used_before_its_own,
						relay_setup, relay_stop),
		cmocka_unit_test_setup_teardown(no_port_answering_well_is_a_failed_start, relay_setup,
						relay_stop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
