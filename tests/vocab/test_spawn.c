/*
 * test_spawn.c — msb_spawn_shared (msb/spawn.h): a child that shares the caller's memory
 * until it exits, the caller suspended until then, started with every signal blocked while
 * the caller's own mask comes back unchanged; a fork where sharing cannot be used (no
 * stack, or a sanitizer build), with the same outward behaviour; msb_spawn_signals_default;
 * and the pin to the caller's CPU, undone even when the saved mask no longer fits.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <msb/spawn.h>

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SHARES 0 /* the sanitizers get forks (msb/spawn.h) */
#else
#define SHARES 1
#endif

static volatile int written;

/* Writes `written` (seen by the caller only through shared memory), then exits 0 when
 * every signal was blocked at its start. */
static int child(void *arg)
{
	written = *(const int *)arg;
	sigset_t now;
	sigprocmask(SIG_SETMASK, NULL, &now);
	_exit(sigismember(&now, SIGUSR1) && sigismember(&now, SIGTERM) ? 0 : 1);
}

static int returns_seven(void *arg)
{
	(void)arg;
	return 7;
}

static int exit_status(pid_t pid)
{
	int status = -1;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void shares_memory_until_the_child_exits(void **state)
{
	(void)state;
	static char stack[MSB_SPAWN_STACK_MIN];
	written = 0;
	int value = 42;
	pid_t pid = msb_spawn_shared(child, &value, stack, sizeof stack);
	assert_true(pid > 0);
	/* With CLONE_VFORK the child has exited by now: its write is there to read. */
	assert_int_equal(written, SHARES ? 42 : 0);
	assert_int_equal(exit_status(pid), 0);
}

static void without_a_stack_it_forks(void **state)
{
	(void)state;
	written = 0;
	int value = 43;
	pid_t pid = msb_spawn_shared(child, &value, NULL, 0);
	assert_true(pid > 0);
	assert_int_equal(exit_status(pid), 0);
	assert_int_equal(written, 0);
	char small[1024];
	pid = msb_spawn_shared(child, &value, small, sizeof small);
	assert_true(pid > 0);
	assert_int_equal(exit_status(pid), 0);
	assert_int_equal(written, 0);
}

static void the_callers_mask_comes_back(void **state)
{
	(void)state;
	sigset_t mine, before, after;
	sigemptyset(&mine);
	sigaddset(&mine, SIGUSR2);
	sigprocmask(SIG_SETMASK, &mine, &before);
	static char stack[MSB_SPAWN_STACK_MIN];
	int value = 1;
	pid_t pid = msb_spawn_shared(child, &value, stack, sizeof stack);
	sigprocmask(SIG_SETMASK, &before, &after);
	assert_true(pid > 0);
	assert_int_equal(exit_status(pid), 0);
	assert_true(sigismember(&after, SIGUSR2));
	assert_false(sigismember(&after, SIGUSR1));
	assert_false(sigismember(&after, SIGTERM));
}

static void a_function_that_returns_sets_the_exit_status(void **state)
{
	(void)state;
	static char stack[MSB_SPAWN_STACK_MIN];
	pid_t pid = msb_spawn_shared(returns_seven, NULL, stack, sizeof stack);
	assert_true(pid > 0);
	assert_int_equal(exit_status(pid), 7);
	pid = msb_spawn_shared(returns_seven, NULL, NULL, 0);
	assert_true(pid > 0);
	assert_int_equal(exit_status(pid), 7);
}

static void on_usr2(int sig)
{
	(void)sig;
}

/* In a child: the host's ignored and handled signals back to the default, the mask empty. */
static void signals_come_back_to_the_defaults(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGUSR1, SIG_IGN);
		signal(SIGUSR2, on_usr2);
		sigset_t block;
		sigemptyset(&block);
		sigaddset(&block, SIGTERM);
		sigprocmask(SIG_BLOCK, &block, NULL);
		msb_spawn_signals_default();
		struct sigaction one, two;
		sigset_t now;
		sigaction(SIGUSR1, NULL, &one);
		sigaction(SIGUSR2, NULL, &two);
		sigprocmask(SIG_SETMASK, NULL, &now);
		_exit(one.sa_handler == SIG_DFL && two.sa_handler == SIG_DFL &&
			      !sigismember(&now, SIGTERM)
			      ? 0
			      : 1);
	}
	assert_int_equal(exit_status(pid), 0);
}

static int allowed_cpus(void)
{
	cpu_set_t set;
	assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
	return CPU_COUNT(&set);
}

/* Pinned to the CPU it runs on, then back to every CPU it had; a pin that did nothing
 * (one CPU allowed) undoes nothing. */
static void a_pin_narrows_to_this_cpu_and_undo_restores_the_mask(void **state)
{
	(void)state;
	int before = allowed_cpus();
	msb_spawn_pin pin;
	msb_spawn_pin_here(&pin);
	if (before < 2) {
		printf("one CPU allowed here: the pin is a no-op, as documented\n");
		assert_false(pin.pinned);
	} else {
		assert_true(pin.pinned);
		assert_int_equal(allowed_cpus(), 1);
	}
	assert_int_equal(msb_spawn_pin_undo(&pin), 0);
	assert_int_equal(allowed_cpus(), before);
}

/*
 * A saved mask that no longer fits (the cpuset changed during the launch; here, a mask
 * naming no CPU that exists) is replaced by every CPU the kernel allows: never left on one.
 */
static void undo_falls_back_to_every_cpu_when_the_saved_mask_no_longer_fits(void **state)
{
	(void)state;
	int before = allowed_cpus();
	msb_spawn_pin pin;
	msb_spawn_pin_here(&pin);
	if (!pin.pinned) {
		printf("skipped: one CPU allowed here, nothing to pin\n");
		skip();
	}
	cpu_set_t none;
	CPU_ZERO(&none);
	CPU_SET(CPU_SETSIZE - 1, &none); /* beyond any machine this runs on */
	memcpy(pin.was, &none, sizeof none);
	assert_int_equal(msb_spawn_pin_undo(&pin), 0);
	assert_int_equal(allowed_cpus(), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(shares_memory_until_the_child_exits),
		cmocka_unit_test(without_a_stack_it_forks),
		cmocka_unit_test(the_callers_mask_comes_back),
		cmocka_unit_test(a_function_that_returns_sets_the_exit_status),
		cmocka_unit_test(signals_come_back_to_the_defaults),
		cmocka_unit_test(a_pin_narrows_to_this_cpu_and_undo_restores_the_mask),
		cmocka_unit_test(undo_falls_back_to_every_cpu_when_the_saved_mask_no_longer_fits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
