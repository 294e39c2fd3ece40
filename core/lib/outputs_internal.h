/*
 * outputs_internal.h — what the outputs sources share: the NFC spelling of a name.
 */
#ifndef MSB_OUTPUTS_INTERNAL_H
#define MSB_OUTPUTS_INTERNAL_H

#include <msb/outputs.h>

/* `name` composed to NFC (libunistring's u8_normalize); *out heap-allocated, NUL-terminated. */
msb_errc msb_artifact_name_nfc(const char *name, char **out, msb_error *err);

#endif
