/*
 * kcache — the compile cache (kcache.h): keys, entries, atomic stores.
 *
 * An entry file, little-endian:
 *
 *     "BERTCKC1"  u32 nparts  u32 0  u8 key[32]  u64 size[nparts]
 *     part bytes, back to back
 *     u32 crc32c of everything above
 *
 * The key is repeated inside so a file that ended up under another name
 * (a copy, a bug) cannot pass for that name's entry; the CRC catches
 * truncation and damage.  Reads take the whole file into memory first
 * (entries are a few MB at most) and check it before handing out a byte.
 */
#include "kcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"

#define KCACHE_MAGIC "BERTCKC1"
#define KCACHE_HEAD (8 + 4 + 4 + SHA256_DIGEST_SIZE)
#define KCACHE_MAX_ENTRY ((size_t)1 << 30)

char *kcache_default_dir(void) {
    const char *dir = getenv("BERTC_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char *out = NULL;
    if (dir && *dir) out = strdup(dir);
    else if (xdg && *xdg && asprintf(&out, "%s/bertc", xdg) < 0) out = NULL;
    else if (!(xdg && *xdg) && home && *home && asprintf(&out, "%s/.cache/bertc", home) < 0) out = NULL;
    return out;
}

/* mkdir -p (new folders private to the user); 0 if the folder exists afterwards. */
static int kcache_mkdirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc && errno != EEXIST) return -1;
    }
    if (mkdir(path, 0700) && errno != EEXIST) return -1;
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

void kcache_open(kcache *c, int enabled) {
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    char *root = enabled ? kcache_default_dir() : NULL;
    if (root && asprintf(&c->dir, "%s/%s", root, KCACHE_SUBDIR) < 0) c->dir = NULL;
    free(root);
    if (c->dir && kcache_mkdirs(c->dir)) {
        free(c->dir);
        c->dir = NULL;
    }
}

void kcache_close(kcache *c) {
    free(c->dir);
    c->dir = NULL;
    pthread_mutex_destroy(&c->mu);
}

/* ------------------------------------------------------------ keys */

void kcache_hash_begin(kcache_hash *h, const char *kind) {
    sha256_init(&h->ctx);
    kcache_hash_str(h, "bertc kernel cache 1");
    kcache_hash_str(h, kind);
}

/* Every field is preceded by its length, so ("ab", "c") and ("a", "bc")
 * give different keys. */
void kcache_hash_bytes(kcache_hash *h, const void *data, size_t len) {
    unsigned char n[8];
    for (int i = 0; i < 8; i++) n[i] = (unsigned char)((uint64_t)len >> (8 * i));
    sha256_update(&h->ctx, n, sizeof n);
    if (len) sha256_update(&h->ctx, data, len);
}

void kcache_hash_str(kcache_hash *h, const char *s) { kcache_hash_bytes(h, s ? s : "", s ? strlen(s) : 0); }

void kcache_hash_int(kcache_hash *h, long long v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", v);
    kcache_hash_str(h, buf);
}

void kcache_hash_end(kcache_hash *h, kcache_key *k) { sha256_final(&h->ctx, k->digest); }

/* ------------------------------------------------------------ entries */

static void kcache_count(kcache *c, int *counter) {
    pthread_mutex_lock(&c->mu);
    (*counter)++;
    pthread_mutex_unlock(&c->mu);
}

/* dir/ab/abcd... (and the folder dir/ab when `folder` is set). */
static char *kcache_path(const kcache *c, const kcache_key *k, int folder) {
    char hex[2 * SHA256_DIGEST_SIZE + 1], *path;
    for (int i = 0; i < SHA256_DIGEST_SIZE; i++) snprintf(hex + 2 * i, 3, "%02x", k->digest[i]);
    int rc = folder ? asprintf(&path, "%s/%.2s", c->dir, hex) : asprintf(&path, "%s/%.2s/%s", c->dir, hex, hex);
    return rc < 0 ? NULL : path;
}

static uint64_t kcache_le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void kcache_put_le(unsigned char *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Checks a whole entry and cuts it into parts (copies); 0 or -1. */
static int kcache_decode(const unsigned char *b, size_t n, const kcache_key *k, kcache_part *parts, int nparts) {
    size_t head = KCACHE_HEAD + 8 * (size_t)nparts;
    if (n < head + 4 || memcmp(b, KCACHE_MAGIC, 8) || kcache_le(b + 8, 4) != (uint64_t)nparts ||
        kcache_le(b + 12, 4) != 0 || memcmp(b + 16, k->digest, SHA256_DIGEST_SIZE))
        return -1;
    if (crc32c_update(0, b, n - 4) != (uint32_t)kcache_le(b + n - 4, 4)) return -1;
    size_t off = head;
    for (int i = 0; i < nparts; i++) {
        uint64_t size = kcache_le(b + KCACHE_HEAD + 8 * (size_t)i, 8);
        if (size > n - 4 - off) return -1;
        parts[i].data = malloc((size_t)size + 1);
        if (!parts[i].data) return -1;
        memcpy(parts[i].data, b + off, (size_t)size);
        parts[i].data[size] = 0;
        parts[i].size = (size_t)size;
        off += (size_t)size;
    }
    return off == n - 4 ? 0 : -1;
}

/* The file's bytes (malloc'd) or NULL. */
static unsigned char *kcache_slurp(const char *path, size_t *n) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    unsigned char *b = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= KCACHE_MAX_ENTRY &&
        (b = malloc((size_t)st.st_size + 1))) {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
            if (r <= 0) break;
            got += (size_t)r;
        }
        *n = got;
    }
    close(fd);
    return b;
}

int kcache_get(kcache *c, const kcache_key *k, kcache_part *parts, int nparts) {
    memset(parts, 0, sizeof *parts * (size_t)nparts);
    if (!c || !c->dir || nparts < 1 || nparts > KCACHE_MAX_PARTS) return -1;
    char *path = kcache_path(c, k, 0);
    size_t n = 0;
    unsigned char *b = path ? kcache_slurp(path, &n) : NULL;
    int rc = -1;
    if (b) {
        rc = kcache_decode(b, n, k, parts, nparts);
        if (rc) {
            kcache_parts_free(parts, nparts);
            kcache_count(c, &c->damaged);
            unlink(path); /* the rebuilt entry takes its place */
        }
    }
    kcache_count(c, rc ? &c->misses : &c->hits);
    free(b);
    free(path);
    return rc;
}

static int kcache_write_all(int fd, const void *data, size_t len) {
    const unsigned char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Header, parts and CRC into fd. */
static int kcache_encode(int fd, const kcache_key *k, const kcache_part *parts, int nparts) {
    unsigned char head[KCACHE_HEAD + 8 * KCACHE_MAX_PARTS], tail[4];
    size_t hn = KCACHE_HEAD + 8 * (size_t)nparts;
    memcpy(head, KCACHE_MAGIC, 8);
    kcache_put_le(head + 8, (uint64_t)nparts, 4);
    kcache_put_le(head + 12, 0, 4);
    memcpy(head + 16, k->digest, SHA256_DIGEST_SIZE);
    for (int i = 0; i < nparts; i++) kcache_put_le(head + KCACHE_HEAD + 8 * i, parts[i].size, 8);
    uint32_t crc = crc32c_update(0, head, hn);
    int rc = kcache_write_all(fd, head, hn);
    for (int i = 0; i < nparts && !rc; i++) {
        crc = crc32c_update(crc, parts[i].data, parts[i].size);
        rc = kcache_write_all(fd, parts[i].data, parts[i].size);
    }
    kcache_put_le(tail, crc, 4);
    return rc ? rc : kcache_write_all(fd, tail, 4);
}

void kcache_put(kcache *c, const kcache_key *k, const kcache_part *parts, int nparts) {
    if (!c || !c->dir || nparts < 1 || nparts > KCACHE_MAX_PARTS) return;
    char *folder = kcache_path(c, k, 1), *path = kcache_path(c, k, 0), *tmp = NULL;
    int ok = folder && path && (mkdir(folder, 0700) == 0 || errno == EEXIST) &&
             asprintf(&tmp, "%s/.tmp-XXXXXX", folder) >= 0;
    int fd = ok ? mkostemp(tmp, O_CLOEXEC) : -1;
    if (fd >= 0) {
        ok = kcache_encode(fd, k, parts, nparts) == 0;
        ok = close(fd) == 0 && ok && rename(tmp, path) == 0;
        if (!ok) unlink(tmp);
    }
    if (fd >= 0 && ok) kcache_count(c, &c->stores);
    free(tmp);
    free(path);
    free(folder);
}

void kcache_parts_free(kcache_part *parts, int nparts) {
    for (int i = 0; i < nparts; i++) {
        free(parts[i].data);
        parts[i].data = NULL;
        parts[i].size = 0;
    }
}
