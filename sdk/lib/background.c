/*
 * background.c — the owned values of the background operations (msb/background.h).
 */
#include <stdlib.h>
#include <string.h>

#include <msb/background.h>

void msb_bg_output_free(msb_bg_output *out)
{
	if (!out)
		return;
	msb_buf_free(&out->out);
	msb_buf_free(&out->err);
}

void msb_bg_list_free(msb_bg_list *list)
{
	if (!list)
		return;
	free(list->items);
	list->items = NULL;
	list->n = 0;
}

bool msb_bg_id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	return n >= 1 && n <= MSB_BG_ID_MAX && strspn(id, "0123456789abcdefghijklmnopqrstuvwxyz") == n;
}
