/*
 * qemu_relay.c — the qemu backend's frame relay (plugins/qemu/relay.c) over socketpairs that
 * stand in for a VM's virtio-serial ports, without booting anything: every port is greeted
 * at once, the relay is ready when the FIRST port answers HELLO, a port is handed a request
 * only after its own greeting succeeded, one whose greeting failed is closed and never
 * used, and a relay none of whose ports answers well says 'F'. The same again through
 * msb_qemu_relay_spawn and the msb-qemu-relay program (the fd layout of its command line),
 * and a program that cannot be executed is a failed spawn saying why (errno). A streamed
 * exec is one exchange of several frames, both ways.
 */
#include <errno.h>
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
#include <msb/driver.h>
#include <msb/unix_socket.h>

#include "msb_test.h"
#include "relay.h"

#define N_PORTS 3
#define RELAY_PROGRAM MSB_TOP_BUILDDIR "/plugins/qemu/msb-qemu-relay"

typedef struct relay_fixture {
	char dir[64], sock[100];
	pid_t relay;
	bool spawned;       /* by msb_qemu_relay_spawn: not this process's child */
	int agent[N_PORTS]; /* the guest agents' ends of the ports */
	int ready;          /* the relay's word */
} relay_fixture;

/*
 * Start a relay over N_PORTS socketpairs: `program` NULL, msb_qemu_relay_run in a child of
 * this process; else that program through msb_qemu_relay_spawn, as the backend starts it.
 */
static void relay_start(relay_fixture *f, const char *program)
{
	snprintf(f->dir, sizeof f->dir, "/tmp/msb-qemu-relay-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->sock, sizeof f->sock, "%s/agent.sock", f->dir);
	int lfd = msb_unix_listen(f->sock);
	assert_true(lfd >= 0);
	int guest[N_PORTS], ready[2];
	for (int i = 0; i < N_PORTS; i++) {
		int sp[2];
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
		f->agent[i] = sp[0];
		guest[i] = sp[1];
	}
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	f->spawned = program != NULL;
	f->relay = program ? msb_qemu_relay_spawn(program, lfd, guest, N_PORTS, ready[1]) : fork();
	assert_true(program ? f->relay > 0 : f->relay >= 0);
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
		/* A spawned relay is a daemon: its reaper is not this process. */
		if (f->spawned)
			for (int i = 0; i < 500 && msb_driver_pid_running(f->relay); i++)
				usleep(10000);
		else
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
	relay_start(&fixture, NULL);
	*state = &fixture;
	return 0;
}

static int program_setup(void **state)
{
	relay_start(&fixture, RELAY_PROGRAM);
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
	if (f->spawned) {
		/* Not this process's child: it is seen gone, its status is its reaper's. */
		for (int i = 0; i < 500 && msb_driver_pid_running(f->relay); i++)
			usleep(10000);
		assert_false(msb_driver_pid_running(f->relay));
		return;
	}
	int status = 0;
	assert_int_equal(waitpid(f->relay, &status, 0), f->relay);
	f->relay = -1;
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

/* The program, started as the backend starts it, serves as the fork did; it is the program. */
static void the_program_is_the_relay(void **state)
{
	relay_fixture *f = *state;
	char path[64], exe[4096] = "";
	snprintf(path, sizeof path, "/proc/%ld/exe", (long)f->relay);
	ssize_t len = readlink(path, exe, sizeof exe - 1);
	assert_true(len > 0);
	exe[len] = '\0';
	assert_string_equal(exe, RELAY_PROGRAM);
	for (int i = 0; i < N_PORTS; i++) {
		expect_frame(f->agent[i], MSB_AGENT_HELLO);
		answer(f->agent[i], MSB_AGENT_HELLO, 0, MSB_OK);
	}
	assert_int_equal(ready_word(f), 'R');
	int c = client_ping(f, 9);
	int served = -1;
	for (int i = 0; i < N_PORTS && served < 0; i++)
		if (readable(f->agent[i], i ? 0 : 5000))
			served = i;
	assert_true(served >= 0);
	assert_int_equal(expect_frame(f->agent[served], MSB_AGENT_PING), 9);
	answer(f->agent[served], MSB_AGENT_PING, 9, MSB_OK);
	assert_int_equal(expect_frame(c, MSB_AGENT_PING | MSB_AGENT_REPLY), 9);
	close(c);
}

/* Write one frame of `type` #id carrying one u32 field (what OUTPUT/INPUT need here). */
static void put_frame(int fd, uint16_t type, uint32_t id, uint16_t tag)
{
	msb_buf p = { 0 };
	assert_int_equal(msb_agent_put_u32(&p, tag, 1, NULL), MSB_OK);
	if (type == MSB_AGENT_OUTPUT)
		assert_int_equal(msb_agent_put_str(&p, MSB_TAG_DATA, "chunk", NULL), MSB_OK);
	assert_int_equal(msb_agent_frame_write(fd, type, id, &p, NULL), MSB_OK);
	msb_buf_free(&p);
}

/*
 * A streamed exec is one exchange of several frames: the port's OUTPUT frames reach the
 * client as they come, the client's INPUT reaches the port while the exec runs, and the
 * port stays the client's until the frame with the reply bit; a late INPUT is dropped.
 */
static void a_streamed_exec_is_one_exchange(void **state)
{
	relay_fixture *f = *state;
	for (int i = 0; i < N_PORTS; i++) {
		expect_frame(f->agent[i], MSB_AGENT_HELLO);
		answer(f->agent[i], MSB_AGENT_HELLO, 0, MSB_OK);
	}
	assert_int_equal(ready_word(f), 'R');
	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->sock);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof sa), 0);
	msb_buf req = { 0 };
	assert_int_equal(msb_agent_put_str(&req, MSB_TAG_ARG, "cat", NULL), MSB_OK);
	assert_int_equal(msb_agent_frame_write(c, MSB_AGENT_EXEC_STREAM, 11, &req, NULL), MSB_OK);
	msb_buf_free(&req);
	int port = -1;
	for (int i = 0; i < N_PORTS && port < 0; i++)
		if (readable(f->agent[i], i ? 0 : 5000))
			port = i;
	assert_true(port >= 0);
	assert_int_equal(expect_frame(f->agent[port], MSB_AGENT_EXEC_STREAM), 11);
	/* Output first, then input while it runs, then more output. */
	put_frame(f->agent[port], MSB_AGENT_OUTPUT, 11, MSB_TAG_STREAM);
	assert_int_equal(expect_frame(c, MSB_AGENT_OUTPUT), 11);
	put_frame(c, MSB_AGENT_INPUT, 11, MSB_TAG_EOF);
	assert_int_equal(expect_frame(f->agent[port], MSB_AGENT_INPUT), 11);
	put_frame(f->agent[port], MSB_AGENT_OUTPUT, 11, MSB_TAG_STREAM);
	assert_int_equal(expect_frame(c, MSB_AGENT_OUTPUT), 11);
	answer(f->agent[port], MSB_AGENT_EXEC_STREAM, 11, MSB_OK);
	assert_int_equal(expect_frame(c, MSB_AGENT_EXEC_STREAM | MSB_AGENT_REPLY), 11);
	/* Late input is dropped, and the next request is served as a request. */
	put_frame(c, MSB_AGENT_INPUT, 11, MSB_TAG_EOF);
	msb_buf none = { 0 };
	assert_int_equal(msb_agent_frame_write(c, MSB_AGENT_PING, 12, &none, NULL), MSB_OK);
	int next = -1;
	for (int i = 0; i < N_PORTS && next < 0; i++)
		if (readable(f->agent[i], i ? 0 : 5000))
			next = i;
	assert_true(next >= 0);
	assert_int_equal(expect_frame(f->agent[next], MSB_AGENT_PING), 12);
	answer(f->agent[next], MSB_AGENT_PING, 12, MSB_OK);
	assert_int_equal(expect_frame(c, MSB_AGENT_PING | MSB_AGENT_REPLY), 12);
	close(c);
}

/* A relay program that cannot be executed fails the spawn with the exec's errno. */
static void a_program_that_cannot_run_fails_the_spawn(void **state)
{
	(void)state;
	char dir[] = "/tmp/msb-qemu-relay-XXXXXX", plain[64];
	assert_non_null(mkdtemp(dir));
	snprintf(plain, sizeof plain, "%s/not-executable", dir);
	int fd = open(plain, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	close(fd);
	int sp[2], ready[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	errno = 0;
	pid_t missing = msb_qemu_relay_spawn(dir, sp[0], &sp[1], 1, ready[1]);
	int missing_errno = errno;
	errno = 0;
	pid_t gone = msb_qemu_relay_spawn("/nonexistent/msb-qemu-relay", sp[0], &sp[1], 1, ready[1]);
	int gone_errno = errno;
	errno = 0;
	pid_t plain_pid = msb_qemu_relay_spawn(plain, sp[0], &sp[1], 1, ready[1]);
	int plain_errno = errno;
	close(ready[1]);
	/* Nothing ever wrote a word, and every copy of the pipe's write end is closed. */
	char c;
	assert_int_equal(read(ready[0], &c, 1), 0);
	close(ready[0]);
	close(sp[0]);
	close(sp[1]);
	unlink(plain);
	rmdir(dir);
	assert_int_equal(missing, -1);
	assert_int_equal(missing_errno, EACCES);
	assert_int_equal(gone, -1);
	assert_int_equal(gone_errno, ENOENT);
	assert_int_equal(plain_pid, -1);
	assert_int_equal(plain_errno, EACCES);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(ready_on_the_first_greeting_and_no_port_used_before_its_own,
						relay_setup, relay_stop),
		cmocka_unit_test_setup_teardown(no_port_answering_well_is_a_failed_start, relay_setup,
						relay_stop),
		cmocka_unit_test_setup_teardown(the_program_is_the_relay, program_setup, relay_stop),
		cmocka_unit_test_setup_teardown(a_streamed_exec_is_one_exchange, relay_setup, relay_stop),
		cmocka_unit_test_setup_teardown(no_port_answering_well_is_a_failed_start, program_setup,
						relay_stop),
		cmocka_unit_test(a_program_that_cannot_run_fails_the_spawn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
