/*
 * buf.c — the owned result values: byte buffers, entry lists, command results.
 */
#include <stdlib.h>
#include <string.h>

#include <msb/types.h>

msb_errc msb_buf_append(msb_buf *buf, const void *data, size_t len, msb_error *err)
{
	if (len > SIZE_MAX - buf->len - 1)
		return msb_error_set(err, MSB_E_NOMEM, "buffer would exceed the address space");
	size_t need = buf->len + len + 1; /* +1 keeps data NUL-terminated for text readers */
	if (need > buf->cap) {
		size_t cap = buf->cap ? buf->cap : 256;
		while (cap < need)
			cap = cap > SIZE_MAX / 2 ? need : cap * 2;
		unsigned char *p = realloc(buf->data, cap);
		if (!p)
			return msb_error_set(err, MSB_E_NOMEM, "out of memory growing a %zu-byte buffer", buf->len);
		buf->data = p;
		buf->cap = cap;
	}
	if (len)
		memcpy(buf->data + buf->len, data, len);
	buf->len += len;
	buf->data[buf->len] = '\0';
	return MSB_OK;
}

void msb_buf_free(msb_buf *buf)
{
	if (!buf)
		return;
	free(buf->data);
	buf->data = NULL;
	buf->len = buf->cap = 0;
}

void msb_exec_result_free(msb_exec_result *res)
{
	if (!res)
		return;
	msb_buf_free(&res->out);
	msb_buf_free(&res->err);
}

msb_errc msb_entry_list_add(msb_entry_list *list, const char *path, msb_entry_kind kind,
			    int64_t size_bytes, msb_error *err)
{
	char *copy = strdup(path);
	msb_entry *items = copy ? realloc(list->items, (list->len + 1) * sizeof *items) : NULL;
	if (!items) {
		free(copy);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory listing '%s'", path);
	}
	items[list->len++] = (msb_entry){ .path = copy, .kind = kind, .size_bytes = size_bytes };
	list->items = items;
	return MSB_OK;
}

void msb_entry_list_free(msb_entry_list *list)
{
	if (!list)
		return;
	for (size_t i = 0; i < list->len; i++)
		free(list->items[i].path);
	free(list->items);
	list->items = NULL;
	list->len = 0;
}
