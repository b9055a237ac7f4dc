// Streaming checksums: CRC-32 (IEEE, as zlib and `cksum -a crc32b`), FNV-1a 64-bit and SHA-256.
#ifndef CHECKSUM_HASH_H
#define CHECKSUM_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef enum { ALGO_CRC32, ALGO_FNV1A64, ALGO_SHA256 } algorithm_t;

typedef struct {
    algorithm_t algo;
    uint32_t crc;
    uint64_t fnv;
    uint32_t sha_state[8];
    uint8_t sha_block[64];
    size_t sha_fill;
    uint64_t length;
} hasher_t;

// The algorithm named `name` (NUL-terminated); returns 0 when there is none of that name.
int algorithm_from_name(const char *name, algorithm_t *out);
// The digest length in hex characters.
size_t digest_hex_len(algorithm_t algo);

void hasher_init(hasher_t *h, algorithm_t algo);
void hasher_update(hasher_t *h, const uint8_t *data, size_t len);
// Writes the lowercase hex digest and a NUL into `hex` (at least 65 bytes).
void hasher_finish(hasher_t *h, char *hex);

#endif
