/*
 * disk.c — reading the per-sandbox disk ceiling (msb/disk.h).
 */
#include <msb/disk.h>

msb_errc msb_disk_read(const msb_node *config, const char *backend, uint64_t *bytes,
		       msb_error *err)
{
	uint64_t v = *bytes;
	msb_errc rc = msb_node_size(config, "disk", &v, err);
	if (rc != MSB_OK)
		return rc;
	if (v < MSB_DISK_MIN)
		return msb_node_error(err, msb_node_get(config, "disk"), MSB_E_CONFIG,
				      "%s: disk %llu bytes is below the 1MiB a sandbox needs; the "
				      "ceiling cannot be lifted (there is no unbounded disk)",
				      backend, (unsigned long long)v);
	*bytes = v;
	return MSB_OK;
}
