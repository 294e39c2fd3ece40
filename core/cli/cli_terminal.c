/*
 * cli_terminal.c — `msb exec -t`: the host's terminal lent to a command under the guest's
 * pseudo-terminal. The host side goes raw (every key, ^C and ^D included, is the guest's to
 * interpret: the guest's terminal does the cooking) and its size follows the window
 * (SIGWINCH, through a self-pipe the streamed exec polls).
 *
 * The terminal is restored however msb ends: on return, at exit(), and from the handler of
 * every signal that would end msb (SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE…), which
 * restores the saved settings and re-raises the signal with its default action, so msb
 * still dies of it. SIGKILL cannot be caught; `stty sane` is the remedy there, as for any
 * raw-mode program.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"

static struct termios saved;
static volatile sig_atomic_t raw_on;
static int winch_pipe[2] = { -1, -1 };

static const int fatal_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGALRM,
				     SIGUSR1, SIGUSR2, SIGABRT };

void msb_cli_terminal_restore(void)
{
	if (raw_on) {
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
		raw_on = 0;
	}
}

static void on_fatal(int sig)
{
	msb_cli_terminal_restore(); /* tcsetattr is async-signal-safe */
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_winch(int sig)
{
	(void)sig;
	int e = errno;
	ssize_t w = write(winch_pipe[1], "w", 1);
	(void)w;
	errno = e;
}

void msb_cli_terminal_size(void *ctx, uint16_t *rows, uint16_t *cols)
{
	(void)ctx;
	struct winsize ws;
	if ((ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 || ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) &&
	    ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
		return;
	}
	*rows = 24; /* not a terminal: the classic size */
	*cols = 80;
}

int msb_cli_terminal_raw(void)
{
	if (pipe2(winch_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
		struct sigaction sa = { .sa_handler = on_winch, .sa_flags = SA_RESTART };
		sigemptyset(&sa.sa_mask);
		sigaction(SIGWINCH, &sa, NULL);
	}
	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved) != 0)
		return winch_pipe[0]; /* input is not a terminal: nothing to make raw */
	for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
		struct sigaction sa = { .sa_handler = on_fatal };
		sigemptyset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, NULL);
	}
	atexit(msb_cli_terminal_restore);
	struct termios raw = saved;
	cfmakeraw(&raw);
	raw_on = 1;
	/* TCSANOW, not TCSAFLUSH: what was typed ahead is the command's, not to be dropped. */
	if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) != 0)
		raw_on = 0;
	return winch_pipe[0];
}
