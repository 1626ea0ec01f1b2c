/*
 * kimage — generated kernels for the tests (see kimage.h).
 *
 * Design.  Thin on purpose: each helper is one library call plus the
 * failure handling every caller repeated (a CHECK that names the spec, a
 * temp path, removing a half-built image), so the tests read as what they
 * generate and run.
 */
#include "kimage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "emu_build.h"
#include "tbuf.h"

kernel_spec kimage_spec(kernel_kind kind, plan_dtype dt, int bucket) {
    kernel_spec s;
    memset(&s, 0, sizeof s);
    s.kind = kind;
    s.dtype = dt;
    s.bucket = bucket;
    return s;
}

int kimage_source(const kernel_spec *s, int index, char **text, char **entry) {
    diag d;
    diag_init(&d);
    int rc = kernel_source(s, text, entry, &d);
    CHECK(rc == 0, "spec %d: %s", index, d.text);
    return rc ? -1 : 0;
}

char *kimage_prefixed(const char *prefix, const char *text) { return text ? tbuf_format("%s%s", prefix, text) : NULL; }

const char *kimage_build(const char *name, const char *const *texts, int n, diag *d) {
    static char path[512];
    const char *p = check_write_temp(name, "", 0);
    if (!p) {
        diag_set(d, DIAG_CODE_INTERNAL, "cannot write %s under the temp dir", name);
        return NULL;
    }
    snprintf(path, sizeof path, "%s", p);
    if (emu_build_image_file(texts, n, path, d) != 0) {
        unlink(path);
        return NULL;
    }
    return path;
}
