/*
 * test_agent_listen.c — msb-agent in --listen mode, as the backends run it: concurrent
 * requests on separate connections, HELLO and version refusal in both directions, malformed
 * and oversize frames answered and survived, file operations through the work alias, and
 * SHUTDOWN killing a daemon that escaped its command's process group.
 */
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/un.h>
#include <termios.h>

#include <cmocka.h>

#include <msb/agent.h>
#include <msb/unix_socket.h>

#include "agent_fixture.h"

typedef agent_session ctx;

static int setup(void **state)
{
	static const char *const extra[] = { "--work-alias", "/msb/work", NULL };
	ctx *c = calloc(1, sizeof *c);
	fixture_start(&c->fx, "--listen", extra);
	msb_error err = MSB_ERROR_INIT;
	if (msb_agent_client_open_unix(c->fx.sock, 10, &c->client, &err) != MSB_OK) {
		fprintf(stderr, "open: %s\n", msb_error_message(&err));
		return -1;
	}
	*state = c;
	return 0;
}

/* A raw connection, to speak the protocol badly on purpose. */
static int raw_connect(ctx *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", c->fx.sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	return fd;
}

static void send_header(int fd, uint16_t version, uint16_t type, uint32_t length)
{
	msb_agent_header h = { MSB_AGENT_MAGIC, version, type, 77, length };
	unsigned char raw[MSB_AGENT_HEADER_SIZE];
	msb_agent_header_encode(&h, raw);
	assert_int_equal(write(fd, raw, sizeof raw), (ssize_t)sizeof raw);
}

/* Read one reply and return its error message (caller frees), asserting its code. */
static char *read_refusal(int fd, msb_errc want, uint16_t *version)
{
	msb_agent_header h;
	msb_buf payload = { 0 };
	assert_int_equal(msb_agent_frame_read(fd, msb_agent_now_ms() + 5000, &h, &payload, NULL, NULL),
			 MSB_OK);
	*version = h.version;
	msb_agent_reader r = { .data = payload.data, .len = payload.len };
	uint32_t code = 0;
	char *msg = NULL;
	for (;;) {
		msb_agent_field f;
		bool done;
		assert_int_equal(msb_agent_reader_next(&r, &f, &done, NULL), MSB_OK);
		if (done)
			break;
		if (f.tag == MSB_TAG_ERRC)
			msb_agent_field_u32(&f, &code, NULL);
		if (f.tag == MSB_TAG_MESSAGE)
			msg = strndup((const char *)f.value, f.len);
	}
	msb_buf_free(&payload);
	assert_int_equal(code, want);
	assert_non_null(msg);
	return msg;
}

static void test_version_refused_by_agent(void **state)
{
	ctx *c = *state;
	int fd = raw_connect(c);
	msb_buf p = { 0 };
	/* Version 1, the protocol before streamed exec: refused by name at HELLO. */
	msb_agent_put_u32(&p, MSB_TAG_VERSION, 1, NULL);
	send_header(fd, 1, MSB_AGENT_HELLO, (uint32_t)p.len);
	assert_int_equal(write(fd, p.data, p.len), (ssize_t)p.len);
	msb_buf_free(&p);
	uint16_t version;
	char *msg = read_refusal(fd, MSB_E_PROTOCOL, &version);
	assert_int_equal(version, MSB_AGENT_PROTOCOL_VERSION);
	assert_non_null(strstr(msg, "speaking version 1 refused"));
	assert_non_null(strstr(msg, "speaks version 2"));
	free(msg);
	char b;
	assert_int_equal(read(fd, &b, 1), 0); /* and the stream is dropped */
	close(fd);
}

static void test_hello_first_and_bad_frames(void **state)
{
	ctx *c = *state;
	int fd = raw_connect(c);
	send_header(fd, MSB_AGENT_PROTOCOL_VERSION, MSB_AGENT_PING, 0);
	uint16_t version;
	char *msg = read_refusal(fd, MSB_E_PROTOCOL, &version);
	assert_non_null(strstr(msg, "hello must come first"));
	free(msg);
	close(fd);

	fd = raw_connect(c);
	send_header(fd, MSB_AGENT_PROTOCOL_VERSION, MSB_AGENT_HELLO, 0xffffffffu);
	msg = read_refusal(fd, MSB_E_PROTOCOL, &version);
	assert_non_null(strstr(msg, "limit"));
	free(msg);
	close(fd);

	fd = raw_connect(c);
	assert_int_equal(write(fd, "GET / HTTP/1.1\r\n\r\n", 18), 18);
	char b;
	/* Not our protocol: dropped without a word (a reset, as unread bytes were pending). */
	assert_true(read(fd, &b, 1) <= 0);
	close(fd);
	/* Every refusal cost one connection, never the agent. */
	assert_int_equal(msb_agent_ping(c->client, 5, NULL), MSB_OK);
}

/* A fake agent of another version, answering one HELLO. */
static void *fake_agent(void *arg)
{
	int fd = *(int *)arg;
	msb_agent_header h;
	msb_buf in = { 0 }, out = { 0 };
	if (msb_agent_frame_read(fd, 0, &h, &in, NULL, NULL) == MSB_OK) {
		msb_agent_put_u32(&out, MSB_TAG_ERRC, 0, NULL);
		msb_agent_put_u32(&out, MSB_TAG_VERSION, 9, NULL);
		msb_agent_header r = { MSB_AGENT_MAGIC, 9, (uint16_t)(h.type | MSB_AGENT_REPLY), h.id,
				       (uint32_t)out.len };
		unsigned char raw[MSB_AGENT_HEADER_SIZE];
		msb_agent_header_encode(&r, raw);
		if (write(fd, raw, sizeof raw) < 0 || write(fd, out.data, out.len) < 0)
			perror("fake agent");
	}
	msb_buf_free(&in);
	msb_buf_free(&out);
	return NULL;
}

static void test_version_refused_by_client(void **state)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pthread_t t;
	pthread_create(&t, NULL, fake_agent, &sv[1]);
	msb_agent_client *client = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_client_open_fds(sv[0], sv[0], 5, &client, &err), MSB_E_PROTOCOL);
	assert_null(client);
	assert_non_null(strstr(msb_error_message(&err), "agent speaks version 9"));
	assert_non_null(strstr(msb_error_message(&err), "client speaks version 2"));
	msb_error_clear(&err);
	pthread_join(t, NULL);
	close(sv[1]);
}

/* A fake agent whose answer to the first ping comes late, after the client gave up. */
static void *late_agent(void *arg)
{
	int fd = *(int *)arg;
	for (int n = 0; n < 3; n++) {
		msb_agent_header h;
		msb_buf in = { 0 }, out = { 0 };
		if (msb_agent_frame_read(fd, 0, &h, &in, NULL, NULL) != MSB_OK)
			break;
		if (n == 1)
			fixture_sleep_ms(400);
		msb_agent_put_u32(&out, MSB_TAG_ERRC, 0, NULL);
		if (h.type == MSB_AGENT_HELLO)
			msb_agent_put_u32(&out, MSB_TAG_VERSION, MSB_AGENT_PROTOCOL_VERSION, NULL);
		msb_agent_frame_write(fd, (uint16_t)(h.type | MSB_AGENT_REPLY), h.id, &out, NULL);
		msb_buf_free(&in);
		msb_buf_free(&out);
	}
	return NULL;
}

static void test_stream_skips_stale_reply(void **state)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pthread_t t;
	pthread_create(&t, NULL, late_agent, &sv[1]);
	msb_agent_client *client = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_client_open_fds(sv[0], sv[0], 5, &client, &err), MSB_OK);
	assert_int_equal(msb_agent_ping(client, 0.1, &err), MSB_E_TIMEOUT);
	assert_non_null(strstr(msb_error_message(&err), "ping"));
	msb_error_clear(&err);
	/* The late answer to the first ping arrives first, and is not taken for this one's. */
	assert_int_equal(msb_agent_ping(client, 5, &err), MSB_OK);
	msb_agent_client_close(client);
	pthread_join(t, NULL);
	close(sv[1]);
}

/*
 * --device: one stream on a character device, as a VM's virtio serial port is. A pty in
 * raw mode stands in for it; its master is the host's end.
 */
static void test_device_mode(void **state)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(master >= 0);
	assert_int_equal(grantpt(master), 0);
	assert_int_equal(unlockpt(master), 0);
	char slave_path[64];
	snprintf(slave_path, sizeof slave_path, "%s", ptsname(master));
	/* Raw, so the line discipline passes binary frames untouched; held open meanwhile. */
	int slave = open(slave_path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(slave >= 0);
	struct termios t;
	assert_int_equal(tcgetattr(slave, &t), 0);
	cfmakeraw(&t);
	assert_int_equal(tcsetattr(slave, TCSANOW, &t), 0);
	static agent_fixture fx; /* static: teardown may have to stop it */
	fixture_device = slave_path;
	fixture_start(&fx, "--device", NULL);
	msb_agent_client *client = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_client_open_fds(master, master, 10, &client, &err), MSB_OK);
	const char *const argv[] = { "printf", "%s", "a\001b", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10 };
	msb_exec_result res = { 0 };
	assert_int_equal(msb_agent_exec(client, &req, NULL, &res, &err), MSB_OK);
	assert_int_equal(res.out.len, 3);
	assert_memory_equal(res.out.data, "a\001b", 3);
	msb_exec_result_free(&res);
	assert_int_equal(msb_agent_write_file(client, "f", "\0\377", 2, fx.work, &err), MSB_OK);
	assert_int_equal(msb_agent_shutdown(client, 5, &err), MSB_OK);
	msb_agent_client_close(client);
	close(slave);
	fixture_stop(&fx);
}

typedef struct slow_call {
	msb_agent_client *client;
	msb_exec_result res;
	msb_errc rc;
} slow_call;

static void *run_slow(void *arg)
{
	slow_call *s = arg;
	const char *const argv[] = { "sleep", "1", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10 };
	s->rc = msb_agent_exec(s->client, &req, NULL, &s->res, NULL);
	return NULL;
}

static void test_concurrent_requests(void **state)
{
	ctx *c = *state;
	slow_call s = { .client = c->client };
	pthread_t t;
	int64_t t0 = msb_agent_now_ms();
	pthread_create(&t, NULL, run_slow, &s);
	fixture_sleep_ms(100);
	/* A quick request is served while the slow one still runs. */
	const char *const argv[] = { "true", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10 };
	msb_exec_result res = { 0 };
	assert_int_equal(msb_agent_exec(c->client, &req, NULL, &res, NULL), MSB_OK);
	assert_true(msb_agent_now_ms() - t0 < 800);
	msb_exec_result_free(&res);
	pthread_join(t, NULL);
	assert_int_equal(s.rc, MSB_OK);
	assert_int_equal(s.res.exit_code, 0);
	msb_exec_result_free(&s.res);
}

static void test_files_through_alias(void **state)
{
	ctx *c = *state;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_write_file(c->client, "d/f.txt", "abc", 3, "/msb/work", &err), MSB_OK);
	char host_path[160];
	snprintf(host_path, sizeof host_path, "%s/d/f.txt", c->fx.work);
	assert_int_equal(access(host_path, F_OK), 0); /* the guest path meant the work dir */
	msb_entry_list list = { 0 };
	assert_int_equal(msb_agent_list_dir(c->client, "d", "/msb/work", &list, &err), MSB_OK);
	assert_int_equal(list.len, 1);
	assert_string_equal(list.items[0].path, "d/f.txt");
	assert_int_equal(list.items[0].size_bytes, 3);
	msb_entry_list_free(&list);
	msb_buf buf = { 0 };
	assert_int_equal(msb_agent_read_file(c->client, "d/f.txt", "/msb/work", 3, &buf, &err), MSB_OK);
	assert_string_equal((char *)buf.data, "abc");
	msb_buf_free(&buf);
	assert_int_equal(msb_agent_read_file(c->client, "nope", "/msb/work", 3, &buf, &err),
			 MSB_E_NOT_FOUND);
	msb_error_clear(&err);
	assert_int_equal(msb_agent_reclaim(c->client, "/msb/work/d", "/msb/work", 5, &err), MSB_OK);
	assert_int_not_equal(access(host_path, F_OK), 0);
	/* reclaim refuses a directory outside its working directory. */
	assert_int_not_equal(msb_agent_reclaim(c->client, "/etc", "/msb/work", 5, &err), MSB_OK);
	msb_error_clear(&err);
}

static void test_shutdown_kills_escaped_daemon(void **state)
{
	ctx *c = *state;
	const char *const argv[] = {
		"sh", "-c", "setsid sh -c 'echo $$ > d.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 &",
		NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10 };
	msb_exec_result res = { 0 };
	assert_int_equal(msb_agent_exec(c->client, &req, NULL, &res, NULL), MSB_OK);
	msb_exec_result_free(&res);
	char path[160];
	snprintf(path, sizeof path, "%s/d.pid", c->fx.work);
	long daemon = 0;
	for (int i = 0; i < 400 && daemon <= 0; i++) {
		FILE *f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%ld", &daemon) != 1)
				daemon = 0;
			fclose(f);
		}
		if (daemon <= 0)
			fixture_sleep_ms(5);
	}
	assert_true(daemon > 0);
	assert_true(msb_driver_pid_running((pid_t)daemon));
	assert_int_equal(msb_agent_shutdown(c->client, 5, NULL), MSB_OK);
	int status;
	pid_t agent = c->fx.pid;
	for (int i = 0; i < 1000 && waitpid(agent, &status, WNOHANG) != agent; i++)
		fixture_sleep_ms(5);
	assert_false(msb_driver_pid_running(agent));
	c->fx.pid = 0;
	assert_true(fixture_wait_gone((pid_t)daemon, 2000));
}

/*
 * msb-agent --reap, what a launcher's resident process execs: it waits for its children
 * and, as a child subreaper, for the orphans below it, and exits 0 only once none is left.
 * The orphan writes a byte just before it exits, after the direct child is long gone: a
 * reaper that waited only for its children would exit before the byte is there.
 */
static void test_reap_mode_outlasts_every_descendant(void **state)
{
	(void)state;
	int pipefd[2];
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid_t reaper = fork();
	assert_true(reaper >= 0);
	if (reaper == 0) {
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		if (fork() == 0) {
			fixture_sleep_ms(50);
			_exit(0);
		}
		if (fork() == 0) {
			if (fork() == 0) {
				fixture_sleep_ms(300);
				_exit(write(pipefd[1], "o", 1) == 1 ? 0 : 1);
			}
			_exit(0);
		}
		execl(AGENT_BINARY, AGENT_BINARY, "--reap", (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	int status;
	assert_int_equal(waitpid(reaper, &status, 0), reaper);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(fcntl(pipefd[0], F_SETFL, O_NONBLOCK), 0);
	char b = 0;
	assert_int_equal(read(pipefd[0], &b, 1), 1);
	assert_int_equal(b, 'o');
	close(pipefd[0]);
}

/*
 * msb-agent --reap --status-fd N --status-of PID: what gVisor's reaper execs while runsc
 * still runs. The child's wait status arrives on N when it ends (not before: the child
 * outlives the exec), and the reaper still waits for every other descendant. Malformed
 * arguments are refused, naming the form.
 */
static void test_reap_mode_reports_one_childs_status(void **state)
{
	(void)state;
	int status_pipe[2];
	assert_int_equal(pipe2(status_pipe, O_CLOEXEC), 0);
	pid_t reaper = fork();
	assert_true(reaper >= 0);
	if (reaper == 0) {
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		pid_t child = fork();
		if (child == 0) {
			fixture_sleep_ms(100);
			_exit(7);
		}
		if (fork() == 0) {
			fixture_sleep_ms(200);
			_exit(0);
		}
		dup2(status_pipe[1], 3);
		char pid[16];
		snprintf(pid, sizeof pid, "%ld", (long)child);
		execl(AGENT_BINARY, AGENT_BINARY, "--reap", "--status-fd", "3", "--status-of", pid,
		      (char *)NULL);
		_exit(127);
	}
	close(status_pipe[1]);
	int child_status = -1;
	assert_int_equal(read(status_pipe[0], &child_status, sizeof child_status),
			 (ssize_t)sizeof child_status);
	assert_true(WIFEXITED(child_status));
	assert_int_equal(WEXITSTATUS(child_status), 7);
	char more;
	assert_int_equal(read(status_pipe[0], &more, 1), 0); /* closed once said */
	close(status_pipe[0]);
	int status;
	assert_int_equal(waitpid(reaper, &status, 0), reaper);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	static const char *const bad[][5] = {
		{ "--status-fd", "x", "--status-of", "1", NULL },
		{ "--status-fd", "3", "--status-of", "0", NULL },
		{ "--status-fd", "99", "--status-of", "1", NULL }, /* not open */
		{ "--status-of", "1", "--status-fd", "3", NULL },
		{ "--status-fd", "3", NULL, NULL, NULL },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		int errpipe[2];
		assert_int_equal(pipe2(errpipe, O_CLOEXEC), 0);
		pid_t p = fork();
		if (p == 0) {
			dup2(errpipe[1], 2);
			dup2(errpipe[1], 3);
			const char *argv[8] = { AGENT_BINARY, "--reap" };
			for (size_t k = 0; k < 4 && bad[i][k]; k++)
				argv[2 + k] = bad[i][k];
			execv(AGENT_BINARY, (char *const *)argv);
			_exit(127);
		}
		close(errpipe[1]);
		char said[256] = "";
		ssize_t n = read(errpipe[0], said, sizeof said - 1);
		said[n > 0 ? n : 0] = '\0';
		close(errpipe[0]);
		assert_int_equal(waitpid(p, &status, 0), p);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 2);
		assert_non_null(strstr(said, "--status-fd <an open fd> --status-of <a child's pid>"));
	}
}

/* The children of `parent`, from /proc (this kernel may have no .../children file). */
static size_t children_of(pid_t parent, pid_t *out, size_t max)
{
	DIR *d = opendir("/proc");
	assert_non_null(d);
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) && n < max) {
		char path[300], buf[512];
		snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		size_t got = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[got] = '\0';
		char *p = strrchr(buf, ')');
		char state;
		long ppid;
		if (p && sscanf(p + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent && state != 'Z')
			out[n++] = (pid_t)atol(de->d_name);
	}
	closedir(d);
	return n;
}

/* Wait up to 5 s for `parent` to have exactly one child other than `not`; that child or 0. */
static pid_t one_child_but(pid_t parent, pid_t not)
{
	for (int i = 0; i < 1000; i++) {
		pid_t kids[8];
		size_t n = children_of(parent, kids, 8);
		if (n == 1 && kids[0] != not)
			return kids[0];
		fixture_sleep_ms(5);
	}
	return 0;
}

/*
 * The process that will serve the next connection is forked before anyone connects (so the
 * fork is never between a host's connect and its answer); killed, it is replaced; and it
 * dies with the supervisor, which alone reaps and ends what a connection starts.
 */
static void test_an_acceptor_waits_is_replaced_and_dies_with_its_supervisor(void **state)
{
	(void)state;
	agent_fixture f;
	fixture_start(&f, "--listen", NULL);
	pid_t first = one_child_but(f.pid, 0);
	assert_true(first > 0); /* ready, and nobody has connected yet */
	assert_int_equal(kill(first, SIGKILL), 0);
	pid_t second = one_child_but(f.pid, first);
	assert_true(second > 0);
	msb_agent_client *c = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_client_open_unix(f.sock, 5, &c, &err), MSB_OK);
	assert_int_equal(msb_agent_ping(c, 5, &err), MSB_OK);
	msb_agent_client_close(c);
	/* The supervisor forks the next acceptor when the busy one tells it, on its own time:
	 * wait for it rather than expect it the moment the answer arrived. */
	pid_t third = one_child_but(f.pid, second);
	assert_true(third > 0);
	assert_int_equal(kill(f.pid, SIGKILL), 0);
	assert_int_equal(waitpid(f.pid, NULL, 0), f.pid);
	f.pid = 0;
	assert_true(fixture_wait_gone(third, 2000));
	assert_true(fixture_wait_gone(second, 2000));
	fixture_stop(&f);
}

/* Start the agent on a listening socket made here (--listen-fd); its stderr on *errfd. */
static pid_t start_on_fd(const agent_fixture *f, int fd, int *errfd)
{
	int errpipe[2];
	assert_int_equal(pipe2(errpipe, O_CLOEXEC), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fd, 3);
		dup2(errpipe[1], 2);
		execl(AGENT_BINARY, AGENT_BINARY, "--listen-fd", "3", "--work-dir", f->work, (char *)NULL);
		_exit(127);
	}
	close(errpipe[1]);
	*errfd = errpipe[0];
	fixture_track(f, pid);
	return pid;
}

/*
 * --listen-fd: a socket the launcher made and listens on. A host that connected and said
 * HELLO before the agent even ran is answered once it does: what lets a sandbox's start
 * greet the agent while the sandbox is still being built.
 */
static void test_a_greeting_queued_before_the_agent_runs_is_answered(void **state)
{
	(void)state;
	agent_fixture f = { .pid = 0 };
	fixture_mkdirs(&f);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f.sock);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(lfd, 8), 0);
	msb_agent_client *c = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_client_greet_start(f.sock, 5, &c, &err), MSB_OK);
	struct pollfd p = { msb_agent_client_greeting_fd(c), POLLIN, 0 };
	assert_int_equal(poll(&p, 1, 50), 0); /* nobody to answer yet */
	int errfd;
	f.pid = start_on_fd(&f, lfd, &errfd);
	close(lfd);
	close(errfd);
	assert_int_equal(msb_agent_client_greet_finish(c, 5, &err), MSB_OK);
	const char *const argv[] = { "echo", "queued", NULL };
	msb_exec_request req = { .argv = argv, .timeout = 10 };
	msb_exec_result res = { 0 };
	assert_int_equal(msb_agent_exec(c, &req, NULL, &res, &err), MSB_OK);
	assert_int_equal(res.out.len, 7);
	assert_memory_equal(res.out.data, "queued\n", 7);
	msb_exec_result_free(&res);
	/* A second greeting on a client that has finished its first is refused, not read. */
	assert_int_equal(msb_agent_client_greet_finish(c, 1, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "no greeting"));
	msb_error_clear(&err);
	msb_agent_client_close(c);
	fixture_stop(&f);
}

/*
 * msb_agent_client_greet_await: with nobody to answer, a timeout; with the watched pipe
 * closed by its last holder, the boundary reported dead and what it said kept; once an
 * agent serves the socket, the answer.
 */
static void test_greet_await_tells_a_timeout_a_death_and_an_answer(void **state)
{
	(void)state;
	agent_fixture f = { .pid = 0 };
	fixture_mkdirs(&f);
	int lfd = msb_unix_listen(f.sock);
	assert_true(lfd >= 0);
	int death[2];
	assert_int_equal(pipe2(death, O_CLOEXEC), 0);
	msb_agent_client *c = NULL;
	msb_error err = MSB_ERROR_INIT;
	char said[64] = "";
	bool died = true;
	assert_int_equal(msb_agent_client_greet_start(f.sock, 5, &c, &err), MSB_OK);
	assert_int_equal(msb_agent_client_greet_await(c, death[0], 0.2, said, sizeof said, &died, &err),
			 MSB_E_TIMEOUT);
	assert_false(died);
	msb_error_clear(&err);
	assert_int_equal(write(death[1], "boom\n", 5), 5);
	close(death[1]);
	assert_int_equal(msb_agent_client_greet_await(c, death[0], 5, said, sizeof said, &died, &err),
			 MSB_E_BACKEND);
	assert_true(died);
	assert_string_equal(said, "boom\n");
	msb_error_clear(&err);
	close(death[0]);
	msb_agent_client_close(c);
	/* The same socket, an agent on it now: answered, nothing watched. */
	assert_int_equal(msb_agent_client_greet_start(f.sock, 5, &c, &err), MSB_OK);
	int errfd;
	f.pid = start_on_fd(&f, lfd, &errfd);
	close(lfd);
	close(errfd);
	assert_int_equal(msb_agent_client_greet_await(c, -1, 5, NULL, 0, &died, &err), MSB_OK);
	assert_false(died);
	assert_int_equal(msb_agent_ping(c, 5, &err), MSB_OK);
	msb_agent_client_close(c);
	fixture_stop(&f);
}

/*
 * msb_agent_client_greet: a connection refused at once (the socket's last holder gone) is a
 * dead boundary when the watched pipe has reached its end, and the refusal itself when
 * nothing is watched.
 */
static void test_greet_weighs_a_refused_connection(void **state)
{
	(void)state;
	agent_fixture f = { .pid = 0 };
	fixture_mkdirs(&f);
	close(msb_unix_listen(f.sock)); /* the file stays; nobody listens */
	int death[2];
	assert_int_equal(pipe2(death, O_CLOEXEC), 0);
	close(death[1]);
	msb_agent_client *c = NULL;
	msb_error err = MSB_ERROR_INIT;
	bool died = false;
	assert_int_equal(msb_agent_client_greet(f.sock, death[0], 5, NULL, 0, &died, &c, &err),
			 MSB_E_BACKEND);
	assert_true(died);
	assert_null(c);
	msb_error_clear(&err);
	close(death[0]);
	assert_int_equal(msb_agent_client_greet(f.sock, -1, 5, NULL, 0, &died, &c, &err), MSB_E_BACKEND);
	assert_false(died);
	assert_non_null(strstr(msb_error_message(&err), "cannot connect"));
	msb_error_clear(&err);
	fixture_stop(&f);
}

/* The agent's stderr and status when run with `args` (NULL-terminated) and no listener. */
static int agent_refusal(const char *const *args, char *said, size_t n)
{
	int errpipe[2];
	assert_int_equal(pipe2(errpipe, O_CLOEXEC), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(errpipe[1], 2);
		const char *argv[8] = { AGENT_BINARY };
		for (int i = 0; args[i] && i < 6; i++)
			argv[i + 1] = args[i];
		execv(AGENT_BINARY, (char *const *)argv);
		_exit(127);
	}
	close(errpipe[1]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	ssize_t got = read(errpipe[0], said, n - 1);
	said[got > 0 ? got : 0] = '\0';
	close(errpipe[0]);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* One way to serve is needed, and only one: none and two are both refused, naming them. */
static void test_agent_refuses_no_mode_and_two_modes(void **state)
{
	(void)state;
	char said[256];
	const char *none[] = { "--work-dir", "/tmp", NULL };
	assert_int_equal(agent_refusal(none, said, sizeof said), 2);
	assert_non_null(strstr(said, "exactly one of --listen, --listen-fd, --fd, --device"));
	const char *two[] = { "--listen", "/tmp/x.sock", "--listen-fd", "3", "--work-dir", "/tmp", NULL };
	assert_int_equal(agent_refusal(two, said, sizeof said), 2);
	assert_non_null(strstr(said, "exactly one of --listen, --listen-fd, --fd, --device"));
}

/* The client refuses a socket path no address can hold, rather than reaching a cut one. */
static void test_client_refuses_a_path_too_long(void **state)
{
	(void)state;
	char path[200];
	memset(path, 'a', sizeof path - 1);
	path[0] = '/';
	path[sizeof path - 1] = '\0';
	msb_agent_client *c = NULL;
	msb_error err = MSB_ERROR_INIT;
	assert_int_equal(msb_agent_client_open_unix(path, 1, &c, &err), MSB_E_VALUE);
	assert_non_null(strstr(msb_error_message(&err), "agent socket path too long"));
	assert_null(c);
	msb_error_clear(&err);
}

/* An fd that is not a listening socket is refused at start, saying which. */
static void test_listen_fd_refuses_what_is_not_listening(void **state)
{
	(void)state;
	agent_fixture f = { .pid = 0 };
	fixture_mkdirs(&f);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	int errfd;
	pid_t pid = start_on_fd(&f, sv[0], &errfd);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	char said[256] = "";
	ssize_t n = read(errfd, said, sizeof said - 1);
	said[n > 0 ? n : 0] = '\0';
	close(errfd);
	close(sv[0]);
	close(sv[1]);
	fixture_stop(&f);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 2);
	assert_non_null(strstr(said, "--listen-fd 3 is not a listening socket"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_refused_by_agent),
		cmocka_unit_test(test_hello_first_and_bad_frames),
		cmocka_unit_test(test_version_refused_by_client),
		cmocka_unit_test(test_stream_skips_stale_reply),
		cmocka_unit_test(test_device_mode),
		cmocka_unit_test(test_concurrent_requests),
		cmocka_unit_test(test_files_through_alias),
		cmocka_unit_test(test_reap_mode_outlasts_every_descendant),
		cmocka_unit_test(test_reap_mode_reports_one_childs_status),
		cmocka_unit_test(test_an_acceptor_waits_is_replaced_and_dies_with_its_supervisor),
		cmocka_unit_test(test_a_greeting_queued_before_the_agent_runs_is_answered),
		cmocka_unit_test(test_listen_fd_refuses_what_is_not_listening),
		cmocka_unit_test(test_greet_await_tells_a_timeout_a_death_and_an_answer),
		cmocka_unit_test(test_greet_weighs_a_refused_connection),
		cmocka_unit_test(test_agent_refuses_no_mode_and_two_modes),
		cmocka_unit_test(test_client_refuses_a_path_too_long),
		cmocka_unit_test(test_shutdown_kills_escaped_daemon), /* last: it ends the agent */
	};
	return cmocka_run_group_tests(tests, setup, agent_session_teardown);
}
