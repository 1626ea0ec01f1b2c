/*
 * crc32c — see crc32c.h.
 *
 * Two implementations of one function.  The portable one is "slicing by
 * eight": eight 256-entry tables, where table k gives the CRC contribution of
 * a byte followed by k zero bytes, so eight input bytes are folded per step
 * with eight independent lookups instead of eight dependent ones (about
 * 1-2 GB/s, against ~400 MB/s for the byte-at-a-time loop).  The tables are
 * computed once, on first use, under pthread_once, so concurrent first
 * readers are safe and no 8 KiB literal sits in the source.
 *
 * On x86-64 with SSE 4.2 the CRC32 instruction (which implements exactly
 * this polynomial) takes eight bytes per instruction.  The function carrying
 * it is compiled for that target alone and is only called after a run-time
 * CPU check, so the library still builds and runs with the default -march.
 * Words are fetched with memcpy, so the input may have any alignment.
 */
#include "crc32c.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u /* 0x1EDC6F41 bit-reversed */

static uint32_t crc32c_table[8][256];
static pthread_once_t crc32c_table_once = PTHREAD_ONCE_INIT;

static void crc32c_table_build(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1u)));
        crc32c_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int k = 1; k < 8; k++) {
            uint32_t prev = crc32c_table[k - 1][n];
            crc32c_table[k][n] = (prev >> 8) ^ crc32c_table[0][prev & 0xffu];
        }
}

uint32_t crc32c_update_portable(uint32_t crc, const void *data, size_t len) {
    pthread_once(&crc32c_table_once, crc32c_table_build);
    const uint8_t *p = data;
    uint32_t c = ~crc;
    while (len >= 8) {
        /* The low four bytes are xored with the running CRC (little-endian
         * byte order by construction, whatever the host's). */
        uint32_t lo = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        lo ^= c;
        c = crc32c_table[7][lo & 0xffu] ^ crc32c_table[6][(lo >> 8) & 0xffu] ^
            crc32c_table[5][(lo >> 16) & 0xffu] ^ crc32c_table[4][lo >> 24] ^ crc32c_table[3][p[4]] ^
            crc32c_table[2][p[5]] ^ crc32c_table[1][p[6]] ^ crc32c_table[0][p[7]];
        p += 8;
        len -= 8;
    }
    while (len--) c = (c >> 8) ^ crc32c_table[0][(c ^ *p++) & 0xffu];
    return ~c;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>

__attribute__((target("sse4.2"))) static uint32_t crc32c_update_sse42(uint32_t crc, const void *data,
                                                                       size_t len) {
    const uint8_t *p = data;
    uint64_t c = ~crc;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (len--) c32 = _mm_crc32_u8(c32, *p++);
    return ~c32;
}

int crc32c_hardware(void) { return __builtin_cpu_supports("sse4.2") ? 1 : 0; }

uint32_t crc32c_update(uint32_t crc, const void *data, size_t len) {
    if (crc32c_hardware()) return crc32c_update_sse42(crc, data, len);
    return crc32c_update_portable(crc, data, len);
}
#else
int crc32c_hardware(void) { return 0; }

uint32_t crc32c_update(uint32_t crc, const void *data, size_t len) {
    return crc32c_update_portable(crc, data, len);
}
#endif
