/*
 * outputs_landed.c — the owned values of the outputs API: landed artifacts and sinks.
 */
#include <stdlib.h>

#include <msb/outputs.h>

void msb_landed_artifact_free(msb_landed_artifact *landed)
{
	if (!landed)
		return;
	free(landed->name);
	free(landed->media_type);
	free(landed->display);
	free(landed->handle);
	*landed = (msb_landed_artifact){ 0 };
}

void msb_landed_artifacts_free(msb_landed_artifacts *list)
{
	if (!list)
		return;
	for (size_t i = 0; i < list->len; i++)
		msb_landed_artifact_free(&list->items[i]);
	free(list->items);
	list->items = NULL;
	list->len = 0;
}

void msb_output_sink_free(msb_output_sink *sink)
{
	if (!sink)
		return;
	if (sink->destroy)
		sink->destroy(sink->ctx);
	free(sink);
}

bool msb_spec_lands_artifacts(const msb_spec *spec)
{
	if (spec->outputs_named_at_call_time)
		return true;
	for (size_t i = 0; i < spec->n_declared_outputs; i++)
		if (spec->declared_outputs[i].disposition == MSB_DISPOSITION_LAND)
			return true;
	return false;
}
