/*
 * sha256.h — SHA-256, for naming sandboxes after keys a model may have influenced.
 * Internal to libmsb-sdk: a name must not collide for two different keys, and no
 * dependency on a crypto library is worth taking for one hash of a few hundred bytes.
 */
#ifndef MSB_SHA256_H
#define MSB_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct msb_sha256 {
	uint32_t h[8];
	uint64_t total;
	unsigned char block[64];
	size_t used;
} msb_sha256;

void msb_sha256_init(msb_sha256 *s);
void msb_sha256_update(msb_sha256 *s, const void *data, size_t len);
void msb_sha256_final(msb_sha256 *s, unsigned char digest[32]);

#endif
