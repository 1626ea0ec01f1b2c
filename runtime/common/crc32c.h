/*
 * crc32c — the CRC-32C (Castagnoli) checksum that guards every section of a
 * plan file (docs/plan-format.md).
 *
 * CRC-32C rather than a 64-bit hash: it is fully specified by four numbers
 * (reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF),
 * so a reader in any language can recompute it without a reference
 * implementation, it detects every burst error up to 32 bits and every odd
 * number of flipped bits, and x86-64 (SSE 4.2) computes it in hardware at
 * several GB/s, so checking a gigabyte of weights at load time is cheap.
 *
 * The value is chainable: crc32c_update(crc32c_update(0, a), b) equals the
 * CRC of a followed by b, and crc32c_update(0, "123456789", 9) is the
 * standard check value 0xE3069283.
 */
#ifndef BERTC_CRC32C_H
#define BERTC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of `data` continued from `crc` (0 to start). */
uint32_t crc32c_update(uint32_t crc, const void *data, size_t len);
/* The same, always by the portable table-driven code (tests compare the two). */
uint32_t crc32c_update_portable(uint32_t crc, const void *data, size_t len);
/* 1 if crc32c_update uses the processor's CRC32 instruction. */
int crc32c_hardware(void);

#endif
