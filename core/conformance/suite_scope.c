/*
 * suite_scope.c — what one sandbox serves: two conversations (different thread ids) never
 * share a filesystem, one conversation's key finds its own sandbox again (get-or-create),
 * however many callers race to acquire it, and with `call` declared two calls of one
 * conversation never meet and one call's leftovers — files and a process it left running —
 * are unreachable from the next.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "kit.h"

/* Conversation a, shared by the first two cases: on a microVM every acquire is a boot. */
static conf_box *conversation_a(conf_run *run)
{
	if (!run->suite_state)
		run->suite_state = conf_box_acquire(run, "conv-a", NULL, MSB_SCOPE_CONVERSATION);
	return run->suite_state;
}

static void case_conversations_apart(conf_run *run)
{
	conf_box *a = conversation_a(run);
	if (!a)
		return;
	char marker[96];
	conf_unique(run, "mark", marker, sizeof(marker));
	if (!conf_plant(run, a, marker, "conversation a"))
		return;
	conf_box *b = conf_box_acquire(run, "conv-b", NULL, MSB_SCOPE_CONVERSATION);
	if (!b)
		return;
	int seen = conf_exists(run, b, marker);
	if (seen < 0)
		conf_skip(run, "nothing declared (exec or files_out) can look for a file");
	else if (seen)
		conf_fail(run, "conversation b not to see a file conversation a wrote",
			  "%s, written in thread %s, is visible in thread %s", marker, a->thread, b->thread);
}

static void case_conversation_reused(conf_run *run)
{
	conf_box *a = conversation_a(run);
	if (!a)
		return;
	char marker[96];
	conf_unique(run, "mark", marker, sizeof(marker));
	if (!conf_plant(run, a, marker, "kept") || !conf_box_reacquire(run, a))
		return;
	int seen = conf_exists(run, a, marker);
	if (seen < 0)
		conf_skip(run, "nothing declared (exec or files_out) can look for a file");
	else if (!seen)
		conf_fail(run, "acquiring the same key again to find the same sandbox",
			  "%s, written before, is gone: the key was not get-or-create", marker);
}

static bool has_call_scope(conf_run *run)
{
	if (run->decl->isolation_scopes & MSB_BIT(MSB_SCOPE_CALL))
		return true;
	conf_not_applicable(run, "the backend does not declare the call isolation scope");
	return false;
}

static void case_calls_apart(conf_run *run)
{
	if (!has_call_scope(run))
		return;
	char thread_tag[32];
	snprintf(thread_tag, sizeof(thread_tag), "calls");
	conf_box *c1 = conf_box_acquire(run, thread_tag, "call-1", MSB_SCOPE_CALL);
	if (!c1)
		return;
	conf_box *c2 = conf_box_new(run, thread_tag, "call-2", MSB_SCOPE_CALL);
	if (!c2)
		return;
	/* Same conversation: the second call's thread id is the first's. */
	snprintf(c2->thread, sizeof(c2->thread), "%s", c1->thread);
	if (!conf_box_reacquire(run, c2))
		return;
	char marker[96];
	conf_unique(run, "call-mark", marker, sizeof(marker));
	if (!conf_plant(run, c1, marker, "call one"))
		return;
	int seen = conf_exists(run, c2, marker);
	if (seen < 0)
		conf_skip(run, "nothing declared (exec or files_out) can look for a file");
	else if (seen)
		conf_fail(run, "two calls of one conversation never to share a filesystem",
			  "%s, written by call-1, is visible to call-2 of thread %s", marker, c1->thread);
}

static void case_call_leftovers_unreachable(conf_run *run)
{
	if (!has_call_scope(run))
		return;
	conf_box *c1 = conf_box_acquire(run, "leftovers", "call-1", MSB_SCOPE_CALL);
	if (!c1)
		return;
	char left[96], late[96];
	conf_unique(run, "left", left, sizeof(left));
	conf_unique(run, "late", late, sizeof(late));
	if (!conf_plant(run, c1, left, "left behind"))
		return;
	bool process = conf_exec_usable(run, c1);
	if (process) {
		/* A process the call leaves running, writing after the call has ended. */
		const char *args[] = { late, NULL };
		if (!conf_sh_ok(run, c1, NULL, "a background process left by call-1",
				"(sleep 1; echo late > \"$1\") >/dev/null 2>&1 &", args))
			return;
	}
	/* The call ends: what the router does at call scope is dispose its sandbox. */
	msb_disposal_failure f = { 0 };
	conf_box_dispose(run, c1, &f);
	msb_disposal_failure_free(&f);
	conf_box *c2 = conf_box_new(run, "leftovers", "call-2", MSB_SCOPE_CALL);
	if (!c2)
		return;
	snprintf(c2->thread, sizeof(c2->thread), "%s", c1->thread);
	if (!conf_box_reacquire(run, c2))
		return;
	if (process)
		usleep(1500 * 1000);
	int l = conf_exists(run, c2, left), t = process ? conf_exists(run, c2, late) : 0;
	if (l < 0 || t < 0)
		conf_skip(run, "nothing declared (exec or files_out) can look for a file");
	else if (l || t)
		conf_fail(run, "nothing of call-1 reachable from call-2",
			  "call-2 sees %s", l ? left : "the file call-1's leftover process wrote after the call");
}

#define RACERS 4

typedef struct starting_gun {
	pthread_mutex_t lock;
	pthread_cond_t fired;
	bool go;
} starting_gun;

typedef struct racer {
	conf_run *run;
	const conf_box *box;
	starting_gun *gun;
	msb_sandbox_handle *handle;
	msb_errc rc;
	char error[256];
} racer;

/* Only the backend is called here: verdicts are written by the main thread afterwards. */
static void *race(void *arg)
{
	racer *r = arg;
	msb_error err = MSB_ERROR_INIT;
	pthread_mutex_lock(&r->gun->lock);
	while (!r->gun->go)
		pthread_cond_wait(&r->gun->fired, &r->gun->lock);
	pthread_mutex_unlock(&r->gun->lock);
	r->rc = r->run->ops->acquire(r->run->self, &r->box->key, &r->box->spec, &r->handle, &err);
	snprintf(r->error, sizeof(r->error), "%s: %s", msb_errc_name(r->rc), msb_error_message(&err));
	msb_error_clear(&err);
	return NULL;
}

/*
 * Several callers acquire one key at once (the contract: one sandbox per (key, kind) however
 * many race). Each then writes a marker through its own handle; every marker must be visible
 * through the first, or the race made several sandboxes and all but one are orphans.
 */
static void case_acquire_race(conf_run *run)
{
	conf_box *box = conf_box_new(run, "race", NULL, MSB_SCOPE_CONVERSATION);
	if (!box)
		return;
	starting_gun gun = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
	racer racers[RACERS];
	pthread_t threads[RACERS];
	size_t started = 0;
	for (size_t i = 0; i < RACERS; i++) {
		racers[i] = (racer){ .run = run, .box = box, .gun = &gun };
		if (pthread_create(&threads[i], NULL, race, &racers[i]) != 0)
			break;
		started++;
	}
	/* All at once: the window a backend without a lock leaves open is at its widest. */
	pthread_mutex_lock(&gun.lock);
	gun.go = true;
	pthread_cond_broadcast(&gun.fired);
	pthread_mutex_unlock(&gun.lock);
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	if (started < 2)
		conf_skip(run, "could not start threads to race");
	for (size_t i = 0; i < started && !conf_decided(run); i++)
		if (racers[i].rc != MSB_OK || !racers[i].handle)
			conf_fail(run, "every racing acquire of one key to return its sandbox",
				  "racer %zu: %s", i, racers[i].error);
	char markers[RACERS][96];
	for (size_t i = 0; i < started && !conf_decided(run); i++) {
		conf_box view = *box;
		view.handle = racers[i].handle;
		conf_unique(run, "racer", markers[i], sizeof(markers[i]));
		conf_plant(run, &view, markers[i], "raced");
	}
	if (!conf_decided(run)) {
		conf_box first = *box;
		first.handle = racers[0].handle;
		for (size_t i = 0; i < started && !conf_decided(run); i++) {
			int seen = conf_exists(run, &first, markers[i]);
			if (seen < 0)
				conf_skip(run, "nothing declared (exec or files_out) can look for a file");
			else if (!seen)
				conf_fail(run, "racing acquires of one key to meet one sandbox",
					  "%s, written through racer %zu's handle, is not in racer 0's sandbox",
					  markers[i], i);
		}
	}
	for (size_t i = 0; i < started; i++)
		if (racers[i].handle)
			run->ops->release(racers[i].handle);
}

static const conf_case scope_cases[] = {
	{ "conversations-apart", 0, case_conversations_apart },
	{ "conversation-reused", 0, case_conversation_reused },
	{ "acquire-race-one-sandbox", 0, case_acquire_race },
	{ "calls-apart", 0, case_calls_apart },
	{ "call-leftovers-unreachable", 0, case_call_leftovers_unreachable },
};

const conf_suite conf_suite_scope = {
	.name = "scope",
	.cases = scope_cases,
	.n_cases = sizeof(scope_cases) / sizeof(scope_cases[0]),
};
