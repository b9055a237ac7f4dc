// Streaming checksums; see hash.h. Written for clarity, not speed: a call hashes at about 100-200 MB/s.
#include "hash.h"

#include <string.h>

static const struct {
    const char *name;
    algorithm_t algo;
    size_t hex_len;
} ALGORITHMS[] = {
    {"crc32", ALGO_CRC32, 8},
    {"fnv1a64", ALGO_FNV1A64, 16},
    {"sha256", ALGO_SHA256, 64},
};

int algorithm_from_name(const char *name, algorithm_t *out) {
    for (size_t i = 0; i < sizeof ALGORITHMS / sizeof ALGORITHMS[0]; i++) {
        if (strcmp(name, ALGORITHMS[i].name) == 0) {
            *out = ALGORITHMS[i].algo;
            return 1;
        }
    }
    return 0;
}

size_t digest_hex_len(algorithm_t algo) {
    for (size_t i = 0; i < sizeof ALGORITHMS / sizeof ALGORITHMS[0]; i++) {
        if (ALGORITHMS[i].algo == algo) return ALGORITHMS[i].hex_len;
    }
    return 0;
}

static const uint32_t SHA_K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha_block(uint32_t s[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++) {
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    }
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + SHA_K[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    s[0] += a; s[1] += b; s[2] += c; s[3] += d; s[4] += e; s[5] += f; s[6] += g; s[7] += h;
}

static uint32_t crc_table[256];

static void crc_table_init(void) {
    if (crc_table[1]) return;
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

void hasher_init(hasher_t *h, algorithm_t algo) {
    static const uint32_t SHA_INIT[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memset(h, 0, sizeof *h);
    h->algo = algo;
    h->crc = 0xffffffffu;
    h->fnv = 0xcbf29ce484222325ull;
    memcpy(h->sha_state, SHA_INIT, sizeof SHA_INIT);
    crc_table_init();
}

void hasher_update(hasher_t *h, const uint8_t *data, size_t len) {
    h->length += len;
    switch (h->algo) {
    case ALGO_CRC32:
        for (size_t i = 0; i < len; i++) h->crc = crc_table[(h->crc ^ data[i]) & 0xff] ^ (h->crc >> 8);
        break;
    case ALGO_FNV1A64:
        for (size_t i = 0; i < len; i++) h->fnv = (h->fnv ^ data[i]) * 0x100000001b3ull;
        break;
    case ALGO_SHA256:
        while (len > 0) {
            size_t take = 64 - h->sha_fill < len ? 64 - h->sha_fill : len;
            memcpy(h->sha_block + h->sha_fill, data, take);
            h->sha_fill += take;
            data += take;
            len -= take;
            if (h->sha_fill == 64) {
                sha_block(h->sha_state, h->sha_block);
                h->sha_fill = 0;
            }
        }
        break;
    }
}

static void put_hex(char *out, uint64_t value, int digits) {
    static const char HEX[] = "0123456789abcdef";
    for (int i = digits - 1; i >= 0; i--, value >>= 4) out[i] = HEX[value & 0xf];
}

void hasher_finish(hasher_t *h, char *hex) {
    switch (h->algo) {
    case ALGO_CRC32:
        put_hex(hex, h->crc ^ 0xffffffffu, 8);
        hex[8] = 0;
        break;
    case ALGO_FNV1A64:
        put_hex(hex, h->fnv, 16);
        hex[16] = 0;
        break;
    case ALGO_SHA256: {
        uint64_t bits = h->length * 8;
        uint8_t pad = 0x80;
        uint64_t length = h->length;
        hasher_update(h, &pad, 1);
        pad = 0;
        while (h->sha_fill != 56) hasher_update(h, &pad, 1);
        uint8_t len_be[8];
        for (int i = 0; i < 8; i++) len_be[i] = (uint8_t)(bits >> (56 - 8 * i));
        hasher_update(h, len_be, 8);
        h->length = length;
        for (int i = 0; i < 8; i++) put_hex(hex + 8 * i, h->sha_state[i], 8);
        hex[64] = 0;
        break;
    }
    }
}
