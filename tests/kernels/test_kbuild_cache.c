/*
 * test_kbuild_cache — the compile pipeline's promises that do not depend on
 * which kernels a plan has: targets chosen from the texts' __CUDA_ARCH__
 * tests, outputs independent of the thread count and of the cache, and the
 * cache itself (kcache.h).
 *
 * The kernels are three small texts, so a compile costs a fraction of a
 * second: one plain, one that tests `__CUDA_ARCH__ >= 800` (as the
 * templates do) and, where a case asks for it, one that tests `>= 900` or
 * uses a macro kbuild cannot read.  Every case works in its own cache
 * folder under a fresh temporary directory (BERTC_CACHE_DIR is pointed
 * there), never in the user's.
 *
 * What "the same output" means: every image of the result, byte for byte,
 * and every ptxas number — a compile from the cache, with no cache, with 1
 * or 4 threads, after a damaged entry, and in two threads sharing one
 * cache folder at once.  The folders the cache creates are private to the
 * user (an entry becomes code in a plan: docs/security.md).
 */
#include <dirent.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "kbuild.h"
#include "kcache.h"

static const char k_plain[] =
    "extern \"C\" __global__ void kc_plain(float *o) { o[threadIdx.x] = 1.0f + threadIdx.x; }\n";
static const char k_arch80[] =
    "extern \"C\" __global__ void kc_arch80(float *o) {\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"
    "    o[threadIdx.x] = 2.0f;\n"
    "#else\n"
    "    o[threadIdx.x] = 3.0f;\n"
    "#endif\n"
    "}\n";
static const char k_arch90[] =
    "extern \"C\" __global__ void kc_arch90(float *o) {\n"
    "#if __CUDA_ARCH__ >= 900\n"
    "    o[threadIdx.x] = 4.0f;\n"
    "#endif\n"
    "}\n";
/* sm_90's instructions as kernels write them (bertc_device.cuh): marked
 * comments from compute_80 on; and, to compare with, the same kernel
 * compiled the plain way, behind a test at 900.  A marker of a level no
 * architecture here reaches stays a comment. */
#define K_PDL(guard, wait, go)                                                                                   \
    "extern \"C\" __global__ void kc_pdl(const float *x, float *o) {\n"                                         \
    "    float v = 0.5f * (float)threadIdx.x;\n"                                                                 \
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= " guard "\n"                                                 \
    "    asm volatile(\"" wait "griddepcontrol.wait;\\n\" ::: \"memory\");\n"                                  \
    "#endif\n"                                                                                                 \
    "    v += x[threadIdx.x];\n"                                                                               \
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= " guard "\n"                                                 \
    "    asm volatile(\"" go "griddepcontrol.launch_dependents;\\n\" ::);\n"                                    \
    "    asm volatile(\"//@sm_120 membar.sys;\\n\" ::: \"memory\");\n"                                       \
    "#endif\n"                                                                                                 \
    "    o[threadIdx.x] = v * v;\n"                                                                            \
    "}\n"
static const char k_pdl_marked[] = K_PDL("800", "//@sm_90 ", "//@sm_90 ");
static const char k_pdl_native[] = K_PDL("900", "", "");

static const char k_unreadable[] =
    "extern \"C\" __global__ void kc_list(float *o) { o[0] = (float)(__CUDA_ARCH__ / 100); }\n";

static char t_root[256];

static int t_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* A fresh BERTC_CACHE_DIR under the test's folder. */
static void t_cache_dir(const char *name, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", t_root, name);
    nftw(out, t_rm, 16, FTW_DEPTH | FTW_PHYS);
    setenv("BERTC_CACHE_DIR", out, 1);
}

static int t_compile(const kbuild_unit *u, int n, const char *const *archs, int narchs, int jobs, kcache *cache,
                     kbuild_result *r) {
    kbuild_options o = {.jobs = jobs, .cache = cache};
    diag d;
    diag_init(&d);
    int rc = kbuild_compile(u, n, archs, narchs, &o, r, &d);
    CHECK(rc == 0, "compile: %s", d.text);
    return rc;
}

/* Whether two results are the same, image by image and number by number. */
static int t_same(const kbuild_result *a, const kbuild_result *b, const char *what) {
    int ok = a->nimages == b->nimages;
    for (int i = 0; ok && i < a->nimages; i++) {
        const kbuild_image *x = &a->images[i], *y = &b->images[i];
        ok = !strcmp(x->arch, y->arch) && x->is_ptx == y->is_ptx && x->size == y->size &&
             !memcmp(x->data, y->data, x->size);
        for (int u = 0; ok && !x->is_ptx && u < a->nunits; u++)
            ok = !memcmp(&x->stats[u], &y->stats[u], sizeof x->stats[u]);
    }
    CHECK(ok, "%s: the outputs differ", what);
    return ok;
}

static const kbuild_unit t_units[2] = {{k_plain, "kc_plain", 0}, {k_arch80, "kc_arch80", 0}};
static const char *const t_archs[3] = {"sm_75", "sm_80", "sm_86"};

/* Miss, hit, no cache, 1 and 4 threads: the same bytes. */
static void test_cache_hit_miss_identical(void) {
    char dir[512];
    t_cache_dir("hitmiss", dir, sizeof dir);
    kcache c;
    kcache_open(&c, 1);
    CHECK(c.dir && strstr(c.dir, dir) == c.dir && strstr(c.dir, "/" KCACHE_SUBDIR), "cache folder %s", c.dir);
    struct stat st;
    CHECK(c.dir && stat(c.dir, &st) == 0 && (st.st_mode & 0777) == 0700 && stat(dir, &st) == 0 &&
              (st.st_mode & 0777) == 0700,
          "the cache folders are not private to the user");
    kbuild_result miss, hit, none, one;
    if (t_compile(t_units, 2, t_archs, 3, 2, &c, &miss)) goto out;
    CHECK(miss.ntargets == 2 && miss.cached_jobs == 0 && miss.njobs == 5, "%d targets, %d of %d jobs cached",
          miss.ntargets, miss.cached_jobs, miss.njobs);
    CHECK(c.stores == miss.njobs && c.hits == 0, "%d stores, %d hits", c.stores, c.hits);
    if (!t_compile(t_units, 2, t_archs, 3, 2, &c, &hit)) {
        CHECK(hit.cached_jobs == hit.njobs, "second compile: %d of %d jobs cached", hit.cached_jobs, hit.njobs);
        t_same(&miss, &hit, "cache hit");
        kbuild_result_free(&hit);
    }
    if (!t_compile(t_units, 2, t_archs, 3, 4, NULL, &none)) {
        t_same(&miss, &none, "no cache, 4 threads");
        kbuild_result_free(&none);
    }
    kcache off;
    kcache_open(&off, 0);
    CHECK(off.dir == NULL, "a disabled cache has a folder");
    if (!t_compile(t_units, 2, t_archs, 3, 1, &off, &one)) {
        CHECK(one.cached_jobs == 0 && off.stores == 0, "a disabled cache was used");
        t_same(&miss, &one, "disabled cache, 1 thread");
        kbuild_result_free(&one);
    }
    kcache_close(&off);
    kbuild_result_free(&miss);
out:
    kcache_close(&c);
}

/* The files of a cache folder, temporaries included (paths, malloc'd);
 * their count. */
static int t_entries(const char *dir, char **paths, int cap) {
    char sub[600];
    snprintf(sub, sizeof sub, "%s/%s", dir, KCACHE_SUBDIR);
    int n = 0;
    DIR *d = opendir(sub);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char leaf[900];
        snprintf(leaf, sizeof leaf, "%s/%s", sub, e->d_name);
        DIR *d2 = opendir(leaf);
        for (struct dirent *f; d2 && (f = readdir(d2));)
            if (strcmp(f->d_name, ".") && strcmp(f->d_name, "..") && n < cap &&
                asprintf(&paths[n], "%s/%s", leaf, f->d_name) > 0)
                n++;
        if (d2) closedir(d2);
    }
    if (d) closedir(d);
    return n;
}

/* Damages a file: a flipped byte (mode 0), cut in half (1), emptied (2). */
static void t_damage(const char *path, int mode) {
    FILE *f = fopen(path, "r+b");
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    if (mode == 0) {
        long at = (long)(check_rng_u64() % (uint64_t)n);
        fseek(f, at, SEEK_SET);
        int c = fgetc(f);
        fseek(f, at, SEEK_SET);
        fputc(c ^ 0x10, f);
    }
    fclose(f);
    if (mode) CHECK(truncate(path, mode == 1 ? n / 2 : 0) == 0, "truncate %s", path);
}

/* Every entry damaged in turn is detected, rebuilt and replaced. */
static void test_cache_damaged_entries(void) {
    char dir[512], *paths[16];
    t_cache_dir("damaged", dir, sizeof dir);
    kcache c;
    kcache_open(&c, 1);
    kbuild_result ref, r;
    if (t_compile(t_units, 2, t_archs, 3, 2, &c, &ref)) {
        kcache_close(&c);
        return;
    }
    int n = t_entries(dir, paths, 16);
    CHECK(n == ref.njobs, "%d entries for %d jobs", n, ref.njobs);
    for (int i = 0; i < n; i++) {
        t_damage(paths[i], i % 3);
        int damaged = c.damaged;
        if (!t_compile(t_units, 2, t_archs, 3, 2, &c, &r)) {
            CHECK(c.damaged == damaged + 1, "entry %d (%s): %d damaged entries seen", i, paths[i], c.damaged - damaged);
            CHECK(r.cached_jobs == r.njobs - 1, "entry %d: %d of %d jobs cached", i, r.cached_jobs, r.njobs);
            t_same(&ref, &r, "after a damaged entry");
            kbuild_result_free(&r);
        }
        if (!t_compile(t_units, 2, t_archs, 3, 2, &c, &r)) {
            CHECK(r.cached_jobs == r.njobs, "entry %d not replaced: %d of %d cached", i, r.cached_jobs, r.njobs);
            kbuild_result_free(&r);
        }
        free(paths[i]);
    }
    kbuild_result_free(&ref);
    kcache_close(&c);
}

typedef struct t_thread_arg {
    kbuild_result r;
    int rc;
} t_thread_arg;

static void *t_thread(void *arg) {
    t_thread_arg *a = arg;
    kcache c;
    kcache_open(&c, 1);
    kbuild_options o = {.jobs = 2, .cache = &c};
    diag d;
    diag_init(&d);
    a->rc = kbuild_compile(t_units, 2, t_archs, 3, &o, &a->r, &d);
    kcache_close(&c);
    return NULL;
}

/* Two compiles into one empty cache folder at once: both right, the same. */
static void test_cache_concurrent(void) {
    char dir[512];
    t_cache_dir("concurrent", dir, sizeof dir);
    t_thread_arg a[2];
    memset(a, 0, sizeof a);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, t_thread, &a[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    CHECK(a[0].rc == 0 && a[1].rc == 0, "concurrent compiles failed");
    if (!a[0].rc && !a[1].rc) t_same(&a[0].r, &a[1].r, "concurrent compiles");
    kbuild_result ref;
    if (!t_compile(t_units, 2, t_archs, 3, 2, NULL, &ref)) {
        if (!a[0].rc) t_same(&ref, &a[0].r, "concurrent against uncached");
        kbuild_result_free(&ref);
    }
    for (int i = 0; i < 2; i++) kbuild_result_free(&a[i].r);
    char *paths[16];
    int n = t_entries(dir, paths, 16);
    for (int i = 0; i < n; i++) free(paths[i]);
    CHECK(n == 5, "%d entries after two concurrent compiles (no temporaries left, one per key)", n);
}

/* The folder: BERTC_CACHE_DIR, else XDG_CACHE_HOME/bertc, else
 * HOME/.cache/bertc; one that cannot be made turns the cache off. */
static void test_cache_folder(void) {
    char *saved_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("BERTC_CACHE_DIR", "/somewhere/else", 1);
    char *d = kcache_default_dir();
    CHECK(d && !strcmp(d, "/somewhere/else"), "BERTC_CACHE_DIR gave %s", d);
    free(d);
    unsetenv("BERTC_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    d = kcache_default_dir();
    CHECK(d && !strcmp(d, "/xdg/bertc"), "XDG_CACHE_HOME gave %s", d);
    free(d);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/someone", 1);
    d = kcache_default_dir();
    CHECK(d && !strcmp(d, "/home/someone/.cache/bertc"), "HOME gave %s", d);
    free(d);
    /* a plain file where the folder should be: no cache, and no failure */
    char file[512];
    snprintf(file, sizeof file, "%s/not-a-folder", t_root);
    FILE *f = fopen(file, "w");
    if (f) fclose(f);
    setenv("BERTC_CACHE_DIR", file, 1);
    kcache c;
    kcache_open(&c, 1);
    CHECK(c.dir == NULL, "a cache under a file: %s", c.dir);
    kbuild_result r;
    if (!t_compile(t_units, 1, t_archs, 1, 1, &c, &r)) kbuild_result_free(&r);
    kcache_close(&c);
    if (saved_xdg) setenv("XDG_CACHE_HOME", saved_xdg, 1);
    if (saved_home) setenv("HOME", saved_home, 1);
    free(saved_xdg);
    free(saved_home);
}

/* Keys: fields are length-prefixed; entries: the part count must match. */
static void test_cache_keys_and_entries(void) {
    char dir[512];
    t_cache_dir("keys", dir, sizeof dir);
    kcache_hash h;
    kcache_key k1, k2, k3;
    kcache_hash_begin(&h, "t");
    kcache_hash_str(&h, "ab");
    kcache_hash_str(&h, "c");
    kcache_hash_end(&h, &k1);
    kcache_hash_begin(&h, "t");
    kcache_hash_str(&h, "a");
    kcache_hash_str(&h, "bc");
    kcache_hash_end(&h, &k2);
    kcache_hash_begin(&h, "u");
    kcache_hash_str(&h, "ab");
    kcache_hash_str(&h, "c");
    kcache_hash_end(&h, &k3);
    CHECK(memcmp(&k1, &k2, sizeof k1) && memcmp(&k1, &k3, sizeof k1), "keys collide");
    kcache c;
    kcache_open(&c, 1);
    kcache_part in[2] = {{(unsigned char *)"hello", 5}, {(unsigned char *)"", 0}}, out[2];
    CHECK(kcache_get(&c, &k1, out, 2) != 0, "a missing entry was found");
    kcache_put(&c, &k1, in, 2);
    CHECK(kcache_get(&c, &k1, out, 2) == 0 && out[0].size == 5 && !memcmp(out[0].data, "hello", 5) &&
              out[1].size == 0 && out[1].data[0] == 0,
          "round trip");
    kcache_parts_free(out, 2);
    CHECK(kcache_get(&c, &k1, out, 1) != 0, "an entry read with the wrong part count");
    CHECK(kcache_get(&c, &k2, out, 2) != 0, "another key's entry");
    kcache_close(&c);
}

/* Targets follow the texts: a >= 900 test splits sm_90 off; an unreadable
 * use of the macro gives every arch its own.  The plan keeps the PTX of
 * the targets from compute_80 on (the tensor-core path for newer GPUs),
 * a lower one only when it is the only target. */
static void test_targets_from_texts(void) {
    const char *archs[3] = {"sm_75", "sm_80", "sm_90"};
    kbuild_unit u3[3] = {{k_plain, "kc_plain", 0}, {k_arch80, "kc_arch80", 0}, {k_arch90, "kc_arch90", 0}};
    kbuild_result r;
    if (!t_compile(u3, 3, archs, 3, 2, NULL, &r)) {
        CHECK(r.ntargets == 3 && r.nimages == 5 && !strcmp(r.images[3].arch, "compute_80") &&
                  !strcmp(r.images[4].arch, "compute_90"),
              "%d targets, %d images, last %s", r.ntargets, r.nimages, r.nimages ? r.images[r.nimages - 1].arch : "?");
        kbuild_result_free(&r);
    }
    if (!t_compile(u3, 2, archs, 3, 2, NULL, &r)) {
        CHECK(r.ntargets == 2 && r.nimages == 4 && !strcmp(r.images[3].arch, "compute_80"),
              "%d targets for a >= 800 test", r.ntargets);
        kbuild_result_free(&r);
    }
    kbuild_unit ul[2] = {{k_plain, "kc_plain", 0}, {k_unreadable, "kc_list", 0}};
    const char *two[2] = {"sm_80", "sm_86"};
    if (!t_compile(ul, 2, two, 2, 2, NULL, &r)) {
        CHECK(r.ntargets == 2 && !strcmp(r.images[3].arch, "compute_86"), "%d targets for an unreadable test",
              r.ntargets);
        kbuild_result_free(&r);
    }
    if (!t_compile(u3, 1, two, 2, 2, NULL, &r)) {
        CHECK(r.ntargets == 1 && !strcmp(r.images[2].arch, "compute_80"), "%d targets without any test", r.ntargets);
        kbuild_result_free(&r);
    }
}

/* The image of `arch` in r, or NULL. */
static const kbuild_image *t_image(const kbuild_result *r, const char *arch) {
    for (int i = 0; i < r->nimages; i++)
        if (!strcmp(r->images[i].arch, arch)) return &r->images[i];
    return NULL;
}

/* Whether an image's bytes name `entry` (a CUBIN's symbol table, a PTX .entry). */
static int t_names(const kbuild_image *im, const char *entry) {
    return im && memmem(im->data, im->size, entry, strlen(entry)) != NULL;
}

/* Kernels per image (kbuild_options.nlists): each CUBIN and PTX holds the
 * kernels of the step lists its devices run (plan_image_serves_range), no
 * other; a twin's lists join its text's; the machine code of an entry is
 * the whole module's (registers alike); without lists every image holds
 * every unit. */
static void test_lists_per_image(void) {
    const char *archs[3] = {"sm_75", "sm_80", "sm_90"};
    static const int lo[3] = {0, 80, 90}, hi[3] = {79, 89, 65535};
    kbuild_unit u[4] = {{k_plain, "kc_plain", 1}, {k_arch80, "kc_arch80", 2}, {k_arch90, "kc_arch90", 4},
                        {k_plain, "kc_plain", 4}};
    kbuild_options o = {.jobs = 2, .nlists = 3, .list_cc_min = lo, .list_cc_max = hi};
    kbuild_result r, whole;
    diag d;
    diag_init(&d);
    CHECK_REQUIRE(kbuild_compile(u, 4, archs, 3, &o, &r, &d) == 0, "compile: %s", d.text);
    static const struct {
        const char *arch;
        int carries[4];
    } want[5] = {{"sm_75", {1, 0, 0, 1}},      {"sm_80", {0, 1, 0, 0}},      {"sm_90", {1, 0, 1, 1}},
                 {"compute_80", {1, 1, 1, 1}}, {"compute_90", {1, 0, 1, 1}}};
    CHECK(r.nimages == 5, "%d images", r.nimages);
    for (int i = 0; i < 5 && i < r.nimages; i++) {
        const kbuild_image *im = t_image(&r, want[i].arch);
        CHECK_REQUIRE(im && im->carries, "no %s image, or no carries", want[i].arch);
        for (int k = 0; k < 4; k++) {
            CHECK(im->carries[k] == want[i].carries[k], "%s carries %s: %d", want[i].arch, u[k].entry, im->carries[k]);
            CHECK(t_names(im, u[k].entry) == want[i].carries[k], "%s names %s: %d", want[i].arch, u[k].entry,
                  t_names(im, u[k].entry));
            if (!im->is_ptx)
                CHECK((im->stats[k].registers >= 0) == want[i].carries[k], "%s: %s registers %d", want[i].arch,
                      u[k].entry, im->stats[k].registers);
        }
    }
    kbuild_unit all[3] = {{k_plain, "kc_plain", 0}, {k_arch80, "kc_arch80", 0}, {k_arch90, "kc_arch90", 0}};
    if (!t_compile(all, 3, archs, 3, 2, NULL, &whole)) {
        for (int i = 0; i < whole.nimages; i++)
            for (int k = 0; k < 3; k++) CHECK(whole.images[i].carries[k], "%s: %s", whole.images[i].arch, all[k].entry);
        const kbuild_image *a = t_image(&r, "sm_80"), *b = t_image(&whole, "sm_80");
        CHECK(a && b && a->stats[1].registers == b->stats[1].registers && a->size < b->size,
              "sm_80: kc_arch80 alone has %d registers, in the whole module %d; %zu bytes against %zu",
              a ? a->stats[1].registers : -1, b ? b->stats[1].registers : -1, a ? a->size : 0, b ? b->size : 0);
        kbuild_result_free(&whole);
    }
    kbuild_result_free(&r);
    o.nlists = 65;
    CHECK(kbuild_compile(u, 4, archs, 3, &o, &r, &d) != 0 && strstr(d.text, "65 step lists"), "%s", d.text);
}

/* Derived targets (kbuild.h): compute_90's PTX made from compute_80's is
 * NVRTC's own compute_90 output, byte for byte, and so is sm_90's CUBIN; the
 * front end runs once; compute_80 keeps the instructions as comments; a
 * front end at the marked level (a plan for sm_90 alone) gets them too. */
static void test_derived_targets(void) {
    const char *archs[2] = {"sm_80", "sm_90"}, *only90[1] = {"sm_90"};
    kbuild_unit marked = {k_pdl_marked, "kc_pdl", 0}, native = {k_pdl_native, "kc_pdl", 0};
    kbuild_result d, n, f;
    if (t_compile(&marked, 1, archs, 2, 2, NULL, &d)) return;
    if (t_compile(&native, 1, archs, 2, 2, NULL, &n)) {
        kbuild_result_free(&d);
        return;
    }
    if (t_compile(&marked, 1, only90, 1, 1, NULL, &f)) {
        kbuild_result_free(&d);
        kbuild_result_free(&n);
        return;
    }
    CHECK(d.ntargets == 1 && d.nderived == 1 && d.njobs == 3 && n.ntargets == 2 && n.nderived == 0,
          "front ends %d + %d derived (%d jobs); native %d + %d", d.ntargets, d.nderived, d.njobs, n.ntargets,
          n.nderived);
    const kbuild_image *d90 = t_image(&d, "compute_90"), *n90 = t_image(&n, "compute_90"), *f90 = t_image(&f, "compute_90");
    const kbuild_image *d80 = t_image(&d, "compute_80"), *ds = t_image(&d, "sm_90"), *ns = t_image(&n, "sm_90");
    if (!d90 || !n90 || !f90 || !d80 || !ds || !ns) {
        CHECK(0, "missing images");
    } else {
        CHECK(d90->size == n90->size && !memcmp(d90->data, n90->data, d90->size), "derived compute_90 PTX differs:\n%s",
              (const char *)d90->data);
        CHECK(f90->size == n90->size && !memcmp(f90->data, n90->data, f90->size), "sm_90 alone: PTX differs:\n%s",
              (const char *)f90->data);
        CHECK(ds->size == ns->size && !memcmp(ds->data, ns->data, ds->size), "sm_90 CUBINs differ");
        CHECK(strstr((const char *)d80->data, "\t//@sm_90 griddepcontrol.wait;") &&
                  strstr((const char *)d80->data, ".target sm_80") &&
                  strstr((const char *)d90->data, "\tgriddepcontrol.wait;") &&
                  strstr((const char *)d90->data, "//@sm_120 membar.sys;") &&
                  !strstr((const char *)d90->data, "//@sm_90"),
              "markers: compute_80\n%s\ncompute_90\n%s", (const char *)d80->data, (const char *)d90->data);
    }
    kbuild_result_free(&d);
    kbuild_result_free(&n);
    kbuild_result_free(&f);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    const char *tmp = getenv("TMPDIR");
    snprintf(t_root, sizeof t_root, "%s/bertc-kcache-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(t_root)) {
        printf("FAIL setup: cannot create %s\n", t_root);
        return 1;
    }
    CHECK_CASE(test_cache_keys_and_entries);
    CHECK_CASE(test_cache_folder);
    CHECK_CASE(test_targets_from_texts);
    CHECK_CASE(test_derived_targets);
    CHECK_CASE(test_lists_per_image);
    CHECK_CASE(test_cache_hit_miss_identical);
    CHECK_CASE(test_cache_damaged_entries);
    CHECK_CASE(test_cache_concurrent);
    nftw(t_root, t_rm, 16, FTW_DEPTH | FTW_PHYS);
    return check_summary();
}
