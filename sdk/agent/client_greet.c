/*
 * client_greet.c — msb_agent_client_greet_await: waiting for the answer to a greeting sent
 * before the agent ran, while watching for the boundary's death, which a queued connection
 * alone would not report until the last holder of the socket is gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <msb/agent.h>

/* How long a failed greeting waits to learn whether the boundary died: a death closes the
 * watched pipe within milliseconds; a live agent that refused the greeting never does. */
#define DEATH_WAIT_MS 1000

/* Append what is there to read on `fd` to `said` (NUL-terminated, `cap` bytes). */
static void drain(int fd, char *said, size_t cap)
{
	size_t used = said ? strlen(said) : 0;
	char chunk[512];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof chunk)) > 0) {
		if (!said || used + 1 >= cap)
			continue;
		size_t take = (size_t)n < cap - 1 - used ? (size_t)n : cap - 1 - used;
		memcpy(said + used, chunk, take);
		said[used += take] = '\0';
	}
}

/* Wait until `deadline` for end of file on `fd`, keeping what it carries; true at its end. */
static bool until_eof(int fd, char *said, size_t cap, int64_t deadline)
{
	struct pollfd p = { fd, POLLIN, 0 };
	for (int64_t left; (left = deadline - msb_agent_now_ms()) > 0;) {
		int n = poll(&p, 1, (int)left);
		if (n < 0 && errno != EINTR)
			return false;
		drain(fd, said, cap);
		if (n > 0 && (p.revents & (POLLHUP | POLLERR)))
			return true;
	}
	return false;
}

msb_errc msb_agent_client_greet_await(msb_agent_client *c, int death_fd, double timeout,
				      char *said, size_t cap, bool *died, msb_error *err)
{
	*died = false;
	if (death_fd >= 0)
		fcntl(death_fd, F_SETFL, fcntl(death_fd, F_GETFL) | O_NONBLOCK);
	int64_t deadline = msb_agent_now_ms() + (int64_t)(timeout * 1000.0), left = 0;
	struct pollfd pfd[2] = { { msb_agent_client_greeting_fd(c), POLLIN, 0 },
				 { death_fd, POLLIN, 0 } };
	bool answered = false;
	while (!*died && !answered && (left = deadline - msb_agent_now_ms()) > 0) {
		if (poll(pfd, death_fd >= 0 ? 2 : 1, (int)left) < 0 && errno != EINTR)
			break;
		if (death_fd >= 0 && pfd[1].revents) {
			drain(death_fd, said, cap);
			*died = pfd[1].revents & (POLLHUP | POLLERR);
		}
		answered = !*died && pfd[0].revents;
	}
	if (*died)
		return msb_error_set(err, MSB_E_BACKEND, "the boundary exited before its agent answered");
	if (!answered)
		return msb_error_set(err, MSB_E_TIMEOUT, "the agent did not answer within %.1f s",
				     timeout);
	msb_errc rc = msb_agent_client_greet_finish(c, (double)left / 1000.0, err);
	if (rc == MSB_OK || death_fd < 0)
		return rc;
	int64_t soon = msb_agent_now_ms() + DEATH_WAIT_MS;
	if ((*died = until_eof(death_fd, said, cap, soon < deadline ? soon : deadline))) {
		msb_error_clear(err);
		return msb_error_set(err, MSB_E_BACKEND, "the boundary exited before its agent answered");
	}
	return msb_error_prefix(err, "the agent refused its greeting: ");
}

msb_errc msb_agent_client_greet(const char *socket_path, int death_fd, double timeout, char *said,
				size_t cap, bool *died, msb_agent_client **out, msb_error *err)
{
	return msb_agent_client_greet_meanwhile(socket_path, death_fd, timeout, NULL, NULL, said, cap,
						died, out, err);
}

msb_errc msb_agent_client_greet_meanwhile(const char *socket_path, int death_fd, double timeout,
					  void (*meanwhile)(void *arg), void *arg, char *said,
					  size_t cap, bool *died, msb_agent_client **out,
					  msb_error *err)
{
	*died = false;
	msb_agent_client *c = NULL;
	msb_errc rc = msb_agent_client_greet_start(socket_path, timeout, &c, err);
	if (rc != MSB_OK) {
		/* Refused at once: the socket's last holder may be gone already, the boundary
		 * dead before the host even connected. */
		if (death_fd >= 0 && (*died = until_eof(death_fd, said, cap,
							msb_agent_now_ms() + DEATH_WAIT_MS))) {
			msb_error_clear(err);
			return msb_error_set(err, MSB_E_BACKEND,
					     "the boundary exited before its agent answered");
		}
		return rc;
	}
	if (meanwhile)
		meanwhile(arg);
	rc = msb_agent_client_greet_await(c, death_fd, timeout, said, cap, died, err);
	if (rc == MSB_OK)
		*out = c;
	else
		msb_agent_client_close(c);
	return rc;
}
