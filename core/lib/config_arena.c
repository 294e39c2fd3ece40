/*
 * config_arena.c — one owner for a parsed sandbox.yaml and everything built from it (see
 * config_internal.h for why). Blocks are chained and freed together.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

typedef struct arena_block {
	struct arena_block *next;
	size_t used, size;
	max_align_t data[];
} arena_block;

struct msb_arena {
	arena_block *head;
	size_t total;
};

enum { ARENA_BLOCK = 16 * 1024 };

msb_arena *msb_arena_new(void)
{
	return calloc(1, sizeof(msb_arena));
}

void msb_arena_free(msb_arena *arena)
{
	if (!arena)
		return;
	for (arena_block *b = arena->head, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(arena);
}

void *msb_arena_alloc(msb_arena *arena, size_t size)
{
	const size_t align = sizeof(max_align_t);
	size = (size + align - 1) / align * align;
	if (size == 0)
		size = align;
	arena_block *b = arena->head;
	if (!b || b->size - b->used < size) {
		/* An oversized request gets a block of its own, so one long scalar never wastes the rest. */
		size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
		b = calloc(1, sizeof *b + cap);
		if (!b)
			return NULL;
		b->size = cap;
		b->next = arena->head;
		arena->head = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += size;
	arena->total += size;
	return p;
}

size_t msb_arena_total(const msb_arena *arena)
{
	return arena->total;
}

char *msb_arena_strndup(msb_arena *arena, const char *s, size_t n)
{
	char *p = msb_arena_alloc(arena, n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

char *msb_arena_strdup(msb_arena *arena, const char *s)
{
	return msb_arena_strndup(arena, s, strlen(s));
}

char *msb_arena_printf(msb_arena *arena, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *tmp = NULL;
	int n = vasprintf(&tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *p = msb_arena_strndup(arena, tmp, (size_t)n);
	free(tmp);
	return p;
}
