/*
 * sha256 — SHA-256 (FIPS 180-4), for pinning plans by digest.
 *
 * A plan is code (docs/security.md): a service that deploys plans can tell
 * bertc_plan_open the digest it deployed, and bertc checks it over the
 * mapped bytes before anything in the file is used; `bertc inspect` prints
 * the digest to pin.  Streaming interface plus a one-call helper; written
 * from the standard, checked against its test vectors (tests).
 */
#ifndef BERTC_SHA256_H
#define BERTC_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_HEX_SIZE 65 /* 64 hex digits and a NUL */

typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t bytes;                /* message length so far */
    unsigned char block[64];
    size_t fill;                   /* bytes in block */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, unsigned char out[SHA256_DIGEST_SIZE]);

/* The digest of len bytes as 64 lowercase hex digits. */
void sha256_hex(const void *data, size_t len, char out[SHA256_HEX_SIZE]);
/* 1 if s is 64 hex digits (either case). */
int sha256_hex_valid(const char *s);
/* 1 if two hex digests are equal, ignoring case. */
int sha256_hex_equal(const char *a, const char *b);

#endif
