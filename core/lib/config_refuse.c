/*
 * config_refuse.c — the one shape of every sandbox.yaml refusal:
 * "file:line:column: key.path: what was wrong; what was expected". Written once here so the
 * reader's files never assemble a position by hand.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "config_internal.h"

static void prefix_position(msb_error *err, const msb_node *at)
{
	if (at)
		msb_error_prefix(err, "%s:%u:%u: %s: ", at->file ? at->file : "<memory>", at->line,
				 at->column, at->path && *at->path ? at->path : "(document)");
}

msb_errc msb_config_refuse(msb_error *err, const msb_node *at, const char *fmt, ...)
{
	if (!err)
		return MSB_E_CONFIG;
	va_list ap;
	va_start(ap, fmt);
	msb_error_vset(err, MSB_E_CONFIG, fmt, ap);
	va_end(ap);
	prefix_position(err, at);
	return MSB_E_CONFIG;
}

msb_errc msb_config_reposition(msb_error *err, const msb_node *at)
{
	if (!err)
		return MSB_E_CONFIG;
	/* Out of memory stays what it is: it says nothing about the file. */
	if (err->code == MSB_E_NOMEM)
		return MSB_E_NOMEM;
	prefix_position(err, at);
	err->code = MSB_E_CONFIG;
	return MSB_E_CONFIG;
}

msb_node msb_config_key_at(const msb_node *map, size_t i)
{
	msb_node where = *map->pairs[i].value;
	where.line = map->pairs[i].key_line;
	where.column = map->pairs[i].key_column;
	return where;
}
