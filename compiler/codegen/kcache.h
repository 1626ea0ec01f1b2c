/*
 * kcache — the compile cache: built kernel images (PTX, relocatable and
 * linked CUBINs, with ptxas's reports) stored under a key that is a digest
 * of everything that went into them, so an unchanged recompile takes its
 * images from disk instead of NVRTC and ptxas.
 *
 * Where.  $BERTC_CACHE_DIR if set, else $XDG_CACHE_HOME/bertc, else
 * ~/.cache/bertc; entries live in its subfolder `images-v1/` (the folder
 * also holds other things bertc downloads, e.g. wheels), one file per
 * entry at `images-v1/<2 hex>/<64 hex>`, the hex being the key.  A cache
 * that cannot be created or written is simply not used: the compile goes
 * on and says nothing, because a cache is never needed for correctness.
 *
 * Keys.  A key is the SHA-256 of a kind string and a sequence of
 * length-prefixed fields (kcache_hash_*): the caller adds everything that
 * affects the bytes — source text, target, tool versions and options,
 * bertc's version — so equal keys mean equal outputs and any change makes
 * a new key.  Nothing is ever invalidated; stale entries are just never
 * asked for again (delete the folder to reclaim the space).
 *
 * Entries.  "BERTCKC1", the part count, the key again, each part's size,
 * the parts, and a CRC-32C of all of it.  A read checks every one of
 * those, so a truncated, damaged or misplaced file is a miss (and is
 * removed, so the rebuilt entry replaces it), never a wrong image.
 *
 * Trust.  An entry becomes code in the plans compiled from it, so the
 * cache is as trusted as the compiler: bertc creates its folders private
 * to the user (0700) and entries readable by the user only (mkostemp's
 * 0600); a cache folder others can write to lets them change the plans
 * compiled with it (docs/security.md).
 *
 * Writes are atomic and safe against concurrent compiles: an entry is
 * written to an exclusive temporary in its folder and renamed into place,
 * so a reader sees either no file or a whole one, and two compiles storing
 * the same key store the same bytes (builds are deterministic).  The
 * functions are thread-safe (kbuild calls them from its job threads).
 */
#ifndef BERTC_KCACHE_H
#define BERTC_KCACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

#define KCACHE_SUBDIR "images-v1"
#define KCACHE_MAX_PARTS 4

typedef struct kcache {
    char *dir;                   /* .../images-v1; NULL: the cache is off */
    pthread_mutex_t mu;
    int hits, misses, stores, damaged;
} kcache;

typedef struct kcache_key {
    unsigned char digest[SHA256_DIGEST_SIZE];
} kcache_key;

typedef struct kcache_hash {
    sha256_ctx ctx;
} kcache_hash;

/* One part of an entry: bytes and their size (get: malloc'd, NUL-terminated
 * beyond size, so text parts can be used as strings). */
typedef struct kcache_part {
    unsigned char *data;
    size_t size;
} kcache_part;

/* Opens the cache (enabled = 0, or no usable folder: every get misses and
 * every put is dropped). */
void kcache_open(kcache *c, int enabled);
void kcache_close(kcache *c);
/* The folder the cache would use (BERTC_CACHE_DIR, XDG_CACHE_HOME, HOME),
 * without images-v1; NULL if none can be named.  malloc'd. */
char *kcache_default_dir(void);

void kcache_hash_begin(kcache_hash *h, const char *kind);
void kcache_hash_bytes(kcache_hash *h, const void *data, size_t len);
void kcache_hash_str(kcache_hash *h, const char *s);
void kcache_hash_int(kcache_hash *h, long long v);
void kcache_hash_end(kcache_hash *h, kcache_key *k);

/* 0 and nparts parts (free them with kcache_parts_free) if the key's entry
 * is there and whole with exactly nparts parts; -1 otherwise. */
int kcache_get(kcache *c, const kcache_key *k, kcache_part *parts, int nparts);
/* Stores an entry (best effort: failures are counted, not reported). */
void kcache_put(kcache *c, const kcache_key *k, const kcache_part *parts, int nparts);
void kcache_parts_free(kcache_part *parts, int nparts);

#endif
