/*
 * safetensors — see safetensors.h.
 *
 * The file is mapped read-only and never copied: a BERT-base checkpoint is
 * 400 MB and the compiler reads only the tensors it needs, so st_tensor.data
 * points straight into the mapping.  The in-memory variant copies its input
 * into a private buffer instead, so a caller (a test, a fuzzer) may free its
 * own buffer right after the call and both variants are closed the same way.
 *
 * All validation happens in st_file_parse before a single tensor is handed
 * out, in the order a reader would trip over the problems: the 8-byte length,
 * the header's bounds, the JSON, then each entry (its keys, dtype, shape,
 * offsets, and the size implied by dtype × shape, computed with overflow
 * checks), then the ranges against the data section and against each other.
 * Overlap is found by sorting the non-empty ranges by begin, so a hostile
 * header with a million entries costs O(n log n), not O(n²).  Holes between
 * ranges are allowed (they are harmless, and some writers align tensors).
 * Duplicate names are already rejected by the JSON reader; the sort by name
 * that makes st_file_find a binary search checks again, so this file does not
 * depend on that choice of json.c.
 *
 * Error messages name the file, the byte offset in the file (header offsets
 * are shifted by the 8-byte length prefix) and the tensor; tensor names from
 * a hostile file are printed with non-printable bytes escaped.
 *
 * Elements are read with memcpy (never through a cast pointer): the data
 * section starts at 8 + N, and nothing forces N to keep tensors aligned.
 * Little-endian hosts only, like the format itself.
 */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileutil.h"
#include "json.h"

/* The same bound the reference implementation uses against absurd headers. */
#define ST_MAX_HEADER_LEN 100000000u

static const struct {
    const char *name;
    size_t size;
} st_dtype_info[ST_DTYPE_COUNT] = {
    [ST_DTYPE_F32] = {"F32", 4},  [ST_DTYPE_F16] = {"F16", 2}, [ST_DTYPE_BF16] = {"BF16", 2},
    [ST_DTYPE_F64] = {"F64", 8},  [ST_DTYPE_I64] = {"I64", 8}, [ST_DTYPE_I32] = {"I32", 4},
    [ST_DTYPE_I16] = {"I16", 2},  [ST_DTYPE_I8] = {"I8", 1},   [ST_DTYPE_U8] = {"U8", 1},
    [ST_DTYPE_BOOL] = {"BOOL", 1},
};

const char *st_dtype_name(st_dtype t) {
    return (unsigned)t < ST_DTYPE_COUNT ? st_dtype_info[t].name : "?";
}

size_t st_dtype_size(st_dtype t) {
    return (unsigned)t < ST_DTYPE_COUNT ? st_dtype_info[t].size : 0;
}

int64_t st_tensor_numel(const st_tensor *t) {
    /* A zero dimension first: [2^62, 2^62, 0] is a legal empty tensor, and
     * multiplying left to right would overflow before reaching the 0. */
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] == 0) return 0;
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

/* ---- diagnostics ------------------------------------------------------ */

/* Copy `name` for a message: printable ASCII as is, other bytes as \xNN. */
static void st_name_quote(const char *name, char *buf, size_t cap) {
    size_t o = 0;
    for (const unsigned char *s = (const unsigned char *)name; *s && o + 8 < cap; s++) {
        if (o > 200) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (*s >= 0x20 && *s < 0x7f && *s != '\\') {
            buf[o++] = (char)*s;
        } else {
            snprintf(buf + o, cap - o, "\\x%02x", (unsigned)*s);
            o += 4;
        }
    }
    buf[o] = '\0';
}

/*
 * "FILE: byte OFF: tensor 'NAME': message" (the tensor part only when
 * `tensor` is non-NULL).
 */
__attribute__((format(printf, 6, 7)))
static int st_fail(diag *d, diag_code code, const char *file, size_t off, const char *tensor,
                   const char *fmt, ...) {
    char msg[2048], qname[256] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (tensor) st_name_quote(tensor, qname, sizeof qname);
    return diag_set(d, code, "%s: byte %zu: %s%s%s%s", file, off, tensor ? "tensor '" : "", qname,
                    tensor ? "': " : "", msg);
}

/* ---- header validation ------------------------------------------------ */

static int st_tensor_compare_name(const void *a, const void *b) {
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

static int st_tensor_ptr_compare_begin(const void *a, const void *b) {
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A JSON integer that is >= 0, or -1. */
static int st_json_uint(const json_value *v, uint64_t *out) {
    if (v->type != JSON_TYPE_NUMBER || !v->number_is_int || v->integer < 0) return -1;
    *out = (uint64_t)v->integer;
    return 0;
}

static void st_shape_format(const st_tensor *t, char *buf, size_t cap) {
    size_t o = 0;
    int n = snprintf(buf, cap, "[");
    if (n > 0) o = (size_t)n;
    for (int i = 0; i < t->ndim && o < cap; i++) {
        n = snprintf(buf + o, cap - o, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
        if (n > 0) o += (size_t)n;
    }
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

/*
 * Check one header entry `key: v` and fill `t` (name is set by the caller).
 * `base` is the file offset of the JSON's first byte.
 */
/* Where an entry's messages point: the file, its byte base, the tensor. */
typedef struct st_where {
    const char *file;
    size_t base;
    const char *key;
    diag *d;
} st_where;

/* The entry's three keys, no others. */
static int st_entry_keys(const json_value *v, const st_where *w, const json_value **dt, const json_value **sh,
                         const json_value **of) {
    if (v->type != JSON_TYPE_OBJECT)
        return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + v->offset, w->key,
                       "entry is a JSON %s, expected an object with dtype, shape and "
                       "data_offsets",
                       json_type_name(v->type));
    *dt = *sh = *of = NULL;
    for (size_t i = 0; i < v->count; i++) {
        const char *k = v->keys[i];
        if (strcmp(k, "dtype") == 0) {
            *dt = &v->items[i];
        } else if (strcmp(k, "shape") == 0) {
            *sh = &v->items[i];
        } else if (strcmp(k, "data_offsets") == 0) {
            *of = &v->items[i];
        } else {
            char qk[256];
            st_name_quote(k, qk, sizeof qk);
            return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + v->items[i].offset, w->key,
                           "unknown key '%s' (expected only dtype, shape and data_offsets)", qk);
        }
    }
    const char *missing = !*dt ? "dtype" : !*sh ? "shape" : !*of ? "data_offsets" : NULL;
    if (missing) return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + v->offset, w->key, "missing '%s'", missing);
    return 0;
}

static int st_entry_dtype(const json_value *dt, const st_where *w, st_tensor *t) {
    if (dt->type != JSON_TYPE_STRING)
        return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + dt->offset, w->key,
                       "dtype is a JSON %s, expected a string", json_type_name(dt->type));
    t->dtype = ST_DTYPE_COUNT;
    for (int k = 0; k < ST_DTYPE_COUNT; k++)
        if (strlen(dt->string) == dt->string_len && strcmp(dt->string, st_dtype_info[k].name) == 0)
            t->dtype = (st_dtype)k;
    if (t->dtype == ST_DTYPE_COUNT) {
        char qd[256];
        st_name_quote(dt->string, qd, sizeof qd);
        return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + dt->offset, w->key,
                       "unknown dtype '%s' (expected one of F32, F16, BF16, F64, I64, I32, I16, "
                       "I8, U8, BOOL)",
                       qd);
    }
    return 0;
}

/* The shape, and its size in bytes, with overflow checks. */
static int st_entry_shape(const json_value *sh, const st_where *w, st_tensor *t, uint64_t *nbytes) {
    if (sh->type != JSON_TYPE_ARRAY)
        return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + sh->offset, w->key,
                       "shape is a JSON %s, expected an array of non-negative integers",
                       json_type_name(sh->type));
    if (sh->count > ST_MAX_DIMS)
        return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + sh->offset, w->key,
                       "shape has %zu dimensions, expected at most %d", sh->count, ST_MAX_DIMS);
    t->ndim = (int)sh->count;
    int has_zero = 0;
    for (size_t i = 0; i < sh->count; i++) {
        uint64_t dim;
        if (st_json_uint(&sh->items[i], &dim) < 0)
            return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + sh->items[i].offset, w->key,
                           "shape[%zu] is not a non-negative integer that fits in 64 bits", i);
        t->shape[i] = (int64_t)dim;
        if (dim == 0) has_zero = 1;
    }
    uint64_t numel = has_zero ? 0 : 1;
    char s[256];
    for (int i = 0; !has_zero && i < t->ndim; i++) {
        uint64_t dim = (uint64_t)t->shape[i];
        if (numel > (uint64_t)INT64_MAX / dim) {
            st_shape_format(t, s, sizeof s);
            return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + sh->offset, w->key,
                           "shape %s has too many elements (overflows 63 bits)", s);
        }
        numel *= dim;
    }
    size_t esize = st_dtype_info[t->dtype].size;
    if (numel > UINT64_MAX / esize) {
        st_shape_format(t, s, sizeof s);
        return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + sh->offset, w->key,
                       "shape %s of %s is too many bytes (overflows 64 bits)", s, st_dtype_info[t->dtype].name);
    }
    *nbytes = numel * esize;
    return 0;
}

/* data_offsets: [begin, end) spanning exactly nbytes inside the data section. */
static int st_entry_offsets(const json_value *of, const st_where *w, st_tensor *t, uint64_t nbytes,
                            size_t data_len) {
    if (of->type != JSON_TYPE_ARRAY || of->count != 2)
        return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + of->offset, w->key,
                       "data_offsets is not a [begin, end] array of two integers");
    for (int k = 0; k < 2; k++)
        if (st_json_uint(&of->items[k], k ? &t->end : &t->begin) < 0)
            return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + of->items[k].offset, w->key,
                           "data_offsets[%d] is not a non-negative integer that fits in 64 bits", k);
    if (t->begin > t->end)
        return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + of->offset, w->key,
                       "data_offsets [%llu, %llu] has begin > end", (unsigned long long)t->begin,
                       (unsigned long long)t->end);
    if (t->end - t->begin != nbytes) {
        char s[256];
        st_shape_format(t, s, sizeof s);
        return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + of->offset, w->key,
                       "size mismatch: dtype %s x shape %s is %llu bytes but data_offsets "
                       "[%llu, %llu] span %llu bytes",
                       st_dtype_info[t->dtype].name, s, (unsigned long long)nbytes, (unsigned long long)t->begin,
                       (unsigned long long)t->end, (unsigned long long)(t->end - t->begin));
    }
    if (t->end > data_len)
        return st_fail(w->d, DIAG_CODE_INPUT, w->file, w->base + of->offset, w->key,
                       "data_offsets [%llu, %llu] end beyond the data section, which is %zu "
                       "bytes",
                       (unsigned long long)t->begin, (unsigned long long)t->end, data_len);
    return 0;
}

static int st_entry_parse(const json_value *v, const char *key, size_t base, size_t data_len,
                          st_tensor *t, const char *file, diag *d) {
    st_where w = {file, base, key, d};
    const json_value *dt = NULL, *sh = NULL, *of = NULL;
    uint64_t nbytes = 0;
    if (st_entry_keys(v, &w, &dt, &sh, &of) || st_entry_dtype(dt, &w, t) || st_entry_shape(sh, &w, t, &nbytes) ||
        st_entry_offsets(of, &w, t, nbytes, data_len))
        return -1;
    return 0;
}

static int st_metadata_check(const json_value *v, size_t base, const char *file, diag *d) {
    if (v->type != JSON_TYPE_OBJECT)
        return st_fail(d, DIAG_CODE_INPUT, file, base + v->offset, NULL,
                       "__metadata__ is a JSON %s, expected an object of strings",
                       json_type_name(v->type));
    for (size_t i = 0; i < v->count; i++)
        if (v->items[i].type != JSON_TYPE_STRING) {
            char qk[256];
            st_name_quote(v->keys[i], qk, sizeof qk);
            return st_fail(d, DIAG_CODE_INPUT, file, base + v->items[i].offset, NULL,
                           "__metadata__ value '%s' is a JSON %s, expected a string", qk,
                           json_type_name(v->items[i].type));
        }
    return 0;
}

/* What the weights interface shows of a tensor (the name, shape and data
 * pointers are the tensor's own). */
static void st_tensor_view_fill(st_tensor *t) {
    weights_tensor *v = &t->view;
    v->name = t->name;
    v->dtype = t->dtype == ST_DTYPE_F32    ? WEIGHTS_DTYPE_F32
               : t->dtype == ST_DTYPE_F16  ? WEIGHTS_DTYPE_F16
               : t->dtype == ST_DTYPE_BF16 ? WEIGHTS_DTYPE_BF16
               : t->dtype == ST_DTYPE_F64  ? WEIGHTS_DTYPE_F64
                                           : WEIGHTS_DTYPE_OTHER;
    v->dtype_name = st_dtype_name(t->dtype);
    v->ndim = t->ndim;
    memcpy(v->shape, t->shape, sizeof v->shape);
    v->data = t->data;
}

/* Validate f->map / f->map_len and fill the tensor table. */
static int st_file_parse(st_file *f, diag *d) {
    const unsigned char *m = f->map;
    const char *file = f->path;
    if (f->map_len < 8)
        return st_fail(d, DIAG_CODE_INPUT, file, 0, NULL,
                       "file is %zu bytes, too short for the 8-byte header length", f->map_len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | m[i];
    if (n > ST_MAX_HEADER_LEN)
        return st_fail(d, DIAG_CODE_INPUT, file, 0, NULL,
                       "header length %llu is absurd (more than %u bytes); not a safetensors "
                       "file?",
                       (unsigned long long)n, ST_MAX_HEADER_LEN);
    if (n > f->map_len - 8)
        return st_fail(d, DIAG_CODE_INPUT, file, 0, NULL,
                       "header length %llu exceeds the %zu bytes that follow it (truncated "
                       "file?)",
                       (unsigned long long)n, f->map_len - 8);
    f->header_len = (size_t)n;
    size_t data_len = f->map_len - 8 - f->header_len;
    const unsigned char *data = m + 8 + f->header_len;

    char jname[1200], jerr[2048];
    snprintf(jname, sizeof jname, "%.1000s: header JSON (starts at file byte 8)", file);
    json_doc doc;
    if (json_parse(&doc, (const char *)m + 8, f->header_len, jname, jerr, sizeof jerr) < 0)
        return diag_set(d, DIAG_CODE_INPUT, "%s", jerr);
    int rc = -1;
    const json_value *root = &doc.root;
    st_tensor **by_begin = NULL;
    if (root->type != JSON_TYPE_OBJECT) {
        st_fail(d, DIAG_CODE_INPUT, file, 8 + root->offset, NULL,
                "header is a JSON %s, expected an object mapping tensor names to entries",
                json_type_name(root->type));
        goto done;
    }
    f->tensors = calloc(root->count ? root->count : 1, sizeof *f->tensors);
    if (!f->tensors) {
        st_fail(d, DIAG_CODE_INTERNAL, file, 8, NULL, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < root->count; i++) {
        const char *key = root->keys[i];
        const json_value *v = &root->items[i];
        if (strcmp(key, "__metadata__") == 0) {
            if (st_metadata_check(v, 8, file, d) < 0) goto done;
            continue;
        }
        st_tensor *t = &f->tensors[f->count];
        if (st_entry_parse(v, key, 8, data_len, t, file, d) < 0) goto done;
        t->name = strdup(key);
        if (!t->name) {
            st_fail(d, DIAG_CODE_INTERNAL, file, 8 + v->offset, NULL, "out of memory");
            goto done;
        }
        t->data = data + t->begin;
        f->count++;
    }

    /* Non-empty ranges must not overlap: sort by begin, track the furthest end. */
    by_begin = malloc((f->count ? f->count : 1) * sizeof *by_begin);
    if (!by_begin) {
        st_fail(d, DIAG_CODE_INTERNAL, file, 8, NULL, "out of memory");
        goto done;
    }
    size_t nonempty = 0;
    for (size_t i = 0; i < f->count; i++)
        if (f->tensors[i].end > f->tensors[i].begin) by_begin[nonempty++] = &f->tensors[i];
    qsort(by_begin, nonempty, sizeof *by_begin, st_tensor_ptr_compare_begin);
    const st_tensor *reach = NULL;
    for (size_t i = 0; i < nonempty; i++) {
        const st_tensor *t = by_begin[i];
        if (reach && t->begin < reach->end) {
            char qa[256];
            st_name_quote(reach->name, qa, sizeof qa);
            st_fail(d, DIAG_CODE_INPUT, file, 8 + f->header_len + t->begin, t->name,
                    "data range [%llu, %llu) overlaps tensor '%s' [%llu, %llu)",
                    (unsigned long long)t->begin, (unsigned long long)t->end, qa,
                    (unsigned long long)reach->begin, (unsigned long long)reach->end);
            goto done;
        }
        if (!reach || t->end > reach->end) reach = t;
    }

    qsort(f->tensors, f->count, sizeof *f->tensors, st_tensor_compare_name);
    for (size_t i = 1; i < f->count; i++)
        if (strcmp(f->tensors[i].name, f->tensors[i - 1].name) == 0) {
            st_fail(d, DIAG_CODE_INPUT, file, 8, f->tensors[i].name, "duplicate tensor name");
            goto done;
        }
    for (size_t i = 0; i < f->count; i++) st_tensor_view_fill(&f->tensors[i]);
    rc = 0;
done:
    free(by_begin);
    json_free(&doc);
    return rc;
}

/* ---- open / close ----------------------------------------------------- */

static void st_file_reset(st_file *f) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

int st_file_open(st_file *f, const char *path, diag *d) {
    st_file_reset(f);
    if (!path || !*path) return diag_set(d, DIAG_CODE_INPUT, "safetensors: empty file path");
    f->path = strdup(path);
    if (!f->path) return diag_set(d, DIAG_CODE_INTERNAL, "%s: out of memory", path);
    file_mapping m;
    if (file_map(path, &m, d)) goto fail;
    f->fd = m.fd;
    f->map = m.data;
    f->map_len = m.len;
    if (m.len < 8) {
        st_fail(d, DIAG_CODE_INPUT, path, 0, NULL, "file is %zu bytes, too short for the 8-byte header length", m.len);
        goto fail;
    }
    if (st_file_parse(f, d) < 0) goto fail;
    return 0;
fail:
    st_file_close(f);
    return -1;
}

int st_file_open_memory(st_file *f, const void *buf, size_t len, const char *name, diag *d) {
    st_file_reset(f);
    f->path = strdup(name ? name : "<memory>");
    if (!f->path) return diag_set(d, DIAG_CODE_INTERNAL, "safetensors: out of memory");
    f->map = malloc(len ? len : 1);
    if (!f->map) {
        diag_set(d, DIAG_CODE_INTERNAL, "%s: out of memory for %zu bytes", f->path, len);
        goto fail;
    }
    if (len) memcpy(f->map, buf, len);
    f->map_len = len;
    if (st_file_parse(f, d) < 0) goto fail;
    return 0;
fail:
    st_file_close(f);
    return -1;
}

void st_file_close(st_file *f) {
    if (!f) return;
    for (size_t i = 0; i < f->count; i++) free(f->tensors[i].name);
    free(f->tensors);
    if (f->fd >= 0) {
        file_mapping m = {f->fd, f->map, f->map_len};
        file_unmap(&m);
    } else {
        free(f->map);
    }
    free(f->path);
    st_file_reset(f);
}

const st_tensor *st_file_find(const st_file *f, const char *name) {
    if (!f || !name || f->count == 0) return NULL;
    size_t lo = 0, hi = f->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f->tensors[mid].name, name);
        if (c == 0) return &f->tensors[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- the weights interface -------------------------------------------- */

static const weights_tensor *st_weights_find(const void *impl, const char *name) {
    const st_tensor *t = st_file_find(impl, name);
    return t ? &t->view : NULL;
}

void st_file_weights(const st_file *f, weights *w) {
    w->path = f->path;
    w->impl = f;
    w->find = st_weights_find;
}
