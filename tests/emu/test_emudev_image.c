/*
 * test_emudev_image — the emulated device tells module images apart
 * (emudev_image.c) the way the driver must: EMU shared object, CUBIN or
 * PTX; for CUBIN and PTX the SM and the exact list of kernel entries.
 *
 * The images are the real thing wherever possible: CUBINs and the PTX
 * image come from the project's own kbuild (NVRTC) for every architecture
 * it supports, the arch-specific ("a"/"f") targets and a relocatable
 * (-rdc) CUBIN straight from NVRTC, the EMU image from emu_build_image_file.
 * Hand-made headers and small hand-built ELF files cover what the tools
 * never emit (32-bit, big-endian, other machines, the older ABI-7 e_flags
 * layout, a wrong EMU ABI version).
 *
 * The parser's other promise is that no byte sequence makes it read
 * outside the buffer.  Every input here is copied into a heap block of
 * exactly its size, so the sanitizer build turns any over-read into a
 * report; the inputs are every prefix of real images, random bit flips
 * (half of them aimed at the ELF header, the section and program header
 * tables and the symbol table, where a flip changes the parse instead of
 * some instruction), random bytes behind a valid-looking ELF header, and
 * random PTX-like token soup.  Every answer must be self-consistent
 * (UNKNOWN has a reason and no entries; a usable image has a plausible SM
 * and sorted, distinct, non-empty names) and the same when asked twice.
 */
#include <elf.h>
#include <nvrtc.h>
#include <unistd.h>

#include "check.h"
#include "kimage.h"
#include "emu_build.h"
#include "emu_abi.h"
#include "emu.h"
#include "emudev_internal.h"
#include "kbuild.h"

/* ------------------------------------------------------------ fixtures */

static const char unit_add[] =
    "extern \"C\" __global__ void img_add(float *o, const float *a, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) o[i] = a[i] + 1.0f;\n"
    "}\n";
static const char unit_square[] =
    "__device__ __noinline__ float img_sq(float x) { return x * x; }\n"
    "extern \"C\" __global__ void img_square(float *o, const float *a) {\n"
    "    o[threadIdx.x] = img_sq(a[threadIdx.x]);\n"
    "}\n";
static const char unit_fill[] =
    "extern \"C\" __global__ void img_fill(int *o, int v) { o[threadIdx.x] = v; }\n";
static const char *const kernel_names[] = {"img_add", "img_fill", "img_square"}; /* sorted */

static const char emu_src[] =
    "extern \"C\" __global__ void k_one(float *o) { o[threadIdx.x] = 1.0f; }\n"
    "BERTC_KERNEL_EXPORT(k_one)\n"
    "extern \"C\" __global__ void k_two(float *o, int n) { if ((int)threadIdx.x < n) o[threadIdx.x] = 2.0f; }\n"
    "BERTC_KERNEL_EXPORT(k_two)\n";

static const char *const all_archs[] = {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"};
#define NARCHS ((int)(sizeof all_archs / sizeof all_archs[0]))

static kbuild_result kb;
static int kb_ok;
static char kb_error[4096];
static unsigned char *emu_img;
static size_t emu_size;
static char emu_error[4096];

/* The kbuild image for arch ("sm_80", "compute_75"), or NULL. */
static const kbuild_image *kb_image(const char *arch) {
    for (int i = 0; kb_ok && i < kb.nimages; i++)
        if (strcmp(kb.images[i].arch, arch) == 0) return &kb.images[i];
    return NULL;
}

/* ------------------------------------------------------------ helpers */

/* Inspects a private heap copy of exactly n bytes: an over-read is an
 * AddressSanitizer report in the sanitizer build. */
static int inspect_copy(const void *src, size_t n, emudev_image_info *info) {
    unsigned char *c = malloc(n ? n : 1);
    if (!c) return -2;
    if (n) memcpy(c, src, n);
    int rc = emudev_image_inspect(c, n, info);
    free(c);
    return rc;
}

static const char *kind_name(emudev_image_kind k) {
    switch (k) {
    case EMUDEV_IMAGE_UNKNOWN: return "UNKNOWN";
    case EMUDEV_IMAGE_EMU: return "EMU";
    case EMUDEV_IMAGE_CUBIN: return "CUBIN";
    case EMUDEV_IMAGE_PTX: return "PTX";
    }
    return "?";
}

static void entries_text(const emudev_image_info *in, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < in->nentries && len + 1 < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "", in->entries[i]);
}

/* Exactly these entries (names sorted ascending), in this order. */
static int entries_are(const emudev_image_info *in, const char *const *names, int n) {
    if (in->nentries != n) return 0;
    for (int i = 0; i < n; i++)
        if (!in->entries || !in->entries[i] || strcmp(in->entries[i], names[i]) != 0) return 0;
    return 1;
}

/* The invariants every answer must satisfy; 1 if it does (failures recorded). */
static int consistent(const emudev_image_info *in, const char *what) {
    int ok = 1;
    if (in->kind == EMUDEV_IMAGE_UNKNOWN) {
        if (!in->why[0] || in->nentries != 0 || in->entries != NULL || in->sm != 0) {
            CHECK(0, "%s: UNKNOWN without a reason or with leftovers (why '%s', %d entries, sm %d)", what, in->why,
                  in->nentries, in->sm);
            ok = 0;
        }
        return ok;
    }
    if (in->kind != EMUDEV_IMAGE_EMU && in->kind != EMUDEV_IMAGE_CUBIN && in->kind != EMUDEV_IMAGE_PTX) {
        CHECK(0, "%s: kind %d", what, (int)in->kind);
        return 0;
    }
    if (in->kind == EMUDEV_IMAGE_EMU ? in->sm != 0 : (in->sm < 10 || in->sm > 999)) {
        CHECK(0, "%s: %s with sm %d", what, kind_name(in->kind), in->sm);
        ok = 0;
    }
    if (in->nentries < 0 || (in->nentries > 0) != (in->entries != NULL)) {
        CHECK(0, "%s: %d entries, array %p", what, in->nentries, (void *)in->entries);
        return 0;
    }
    for (int i = 0; i < in->nentries; i++) {
        if (!in->entries[i] || !in->entries[i][0] || (i > 0 && strcmp(in->entries[i - 1], in->entries[i]) >= 0)) {
            CHECK(0, "%s: entry %d empty, unsorted or repeated", what, i);
            ok = 0;
            break;
        }
    }
    return ok;
}

static int same_answer(const emudev_image_info *a, const emudev_image_info *b) {
    if (a->kind != b->kind || a->sm != b->sm || a->nentries != b->nentries || strcmp(a->why, b->why) != 0) return 0;
    for (int i = 0; i < a->nentries; i++)
        if (strcmp(a->entries[i], b->entries[i]) != 0) return 0;
    return 1;
}

/* Inspects (twice), checks the invariants, returns the kind (info freed). */
static emudev_image_kind inspect_checked(const void *p, size_t n, const char *what, int *sm_out) {
    emudev_image_info a, b;
    int rc = inspect_copy(p, n, &a);
    CHECK(rc == 0, "%s: inspect returned %d", what, rc);
    if (rc) return EMUDEV_IMAGE_UNKNOWN;
    consistent(&a, what);
    rc = inspect_copy(p, n, &b);
    CHECK(rc == 0 && same_answer(&a, &b), "%s: two inspections of the same bytes disagree", what);
    emudev_image_kind k = a.kind;
    if (sm_out) *sm_out = a.sm;
    emudev_image_info_free(&a);
    if (!rc) emudev_image_info_free(&b);
    return k;
}

/* Test-side ELF reading: trusts the (real, pristine) image it is given. */
typedef struct tsec {
    uint64_t hdr;     /* offset of the section header */
    Elf64_Shdr sh;
    const char *name;
} tsec;

static int t_section(const unsigned char *d, size_t n, const char *name, uint32_t type, tsec *out) {
    Elf64_Ehdr eh;
    if (n < sizeof eh) return -1;
    memcpy(&eh, d, sizeof eh);
    Elf64_Shdr names;
    memcpy(&names, d + eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof names, sizeof names);
    for (unsigned i = 1; i < eh.e_shnum; i++) {
        out->hdr = eh.e_shoff + (uint64_t)i * sizeof out->sh;
        memcpy(&out->sh, d + out->hdr, sizeof out->sh);
        out->name = (const char *)d + names.sh_offset + out->sh.sh_name;
        if ((name && strcmp(out->name, name) == 0) || (!name && out->sh.sh_type == type)) return (int)i;
    }
    return -1;
}

static void put16(unsigned char *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

/* Compiles src with NVRTC directly (for targets kbuild does not offer);
 * a malloc'd CUBIN or PTX (NUL included in *n), or NULL. */
static unsigned char *nvrtc_image(const char *src, const char *arch_opt, int want_ptx, int rdc, size_t *n,
                                  char *err, size_t cap) {
    nvrtcProgram p;
    unsigned char *out = NULL;
    err[0] = '\0';
    if (nvrtcCreateProgram(&p, src, "img.cu", 0, NULL, NULL) != NVRTC_SUCCESS) {
        snprintf(err, cap, "nvrtcCreateProgram failed");
        return NULL;
    }
    const char *opts[2] = {arch_opt, "-rdc=true"};
    nvrtcResult r = nvrtcCompileProgram(p, rdc ? 2 : 1, opts);
    if (r != NVRTC_SUCCESS) {
        snprintf(err, cap, "%s: %s", arch_opt, nvrtcGetErrorString(r));
    } else {
        r = want_ptx ? nvrtcGetPTXSize(p, n) : nvrtcGetCUBINSize(p, n);
        if (r == NVRTC_SUCCESS && *n > 0 && (out = malloc(*n)) != NULL) {
            r = want_ptx ? nvrtcGetPTX(p, (char *)out) : nvrtcGetCUBIN(p, (char *)out);
            if (r != NVRTC_SUCCESS) {
                free(out);
                out = NULL;
            }
        }
        if (!out) snprintf(err, cap, "%s: no %s (%s)", arch_opt, want_ptx ? "PTX" : "CUBIN", nvrtcGetErrorString(r));
    }
    nvrtcDestroyProgram(&p);
    return out;
}

/* ------------------------------------------------------------ CUBIN and PTX from kbuild */

static void test_kbuild_cubins(void) {
    CHECK(kb_ok, "kbuild: %s", kb_error);
    if (!kb_ok) return;
    int seen = 0;
    for (int i = 0; i < kb.nimages; i++) {
        const kbuild_image *im = &kb.images[i];
        if (im->is_ptx) continue;
        seen++;
        int want = atoi(im->arch + 3);
        emudev_image_info in;
        CHECK(inspect_copy(im->data, im->size, &in) == 0, "%s: inspect failed", im->arch);
        char list[256];
        entries_text(&in, list, sizeof list);
        CHECK(in.kind == EMUDEV_IMAGE_CUBIN && in.sm == want && in.why[0] == '\0',
              "%s: %s sm %d why '%s' (e_flags 0x%08x)", im->arch, kind_name(in.kind), in.sm, in.why,
              im->size >= 52 ? (unsigned)(im->data[48] | im->data[49] << 8 | im->data[50] << 16 |
                                          (unsigned)im->data[51] << 24)
                             : 0u);
        CHECK(entries_are(&in, kernel_names, 3), "%s: entries [%s], expected img_add,img_fill,img_square (the "
              "__device__ helper img_sq is no entry)", im->arch, list);
        consistent(&in, im->arch);
        /* binary compatibility around its own capability */
        int ma = want / 10, mi = want % 10;
        CHECK(emudev_image_runs_on(in.kind, in.sm, ma, mi), "%s does not run on %d.%d", im->arch, ma, mi);
        CHECK(emudev_image_runs_on(in.kind, in.sm, ma, 9), "%s does not run on %d.9", im->arch, ma);
        CHECK(mi == 0 || !emudev_image_runs_on(in.kind, in.sm, ma, mi - 1), "%s runs on %d.%d", im->arch, ma, mi - 1);
        CHECK(!emudev_image_runs_on(in.kind, in.sm, ma + 1, 0), "%s runs on %d.0", im->arch, ma + 1);
        CHECK(!emudev_image_runs_on(in.kind, in.sm, 0, 0), "%s runs on the emu arch", im->arch);
        emudev_image_info_free(&in);
    }
    CHECK(seen == NARCHS, "kbuild gave %d CUBINs for %d archs", seen, NARCHS);
}

static void test_kbuild_ptx(void) {
    CHECK(kb_ok, "kbuild: %s", kb_error);
    const kbuild_image *im = kb_image("compute_75");
    CHECK(!kb_ok || (im && im->is_ptx), "kbuild gave no PTX image for the lowest arch");
    if (!im) return;
    /* as kbuild stores it (size without the NUL), and as a driver sees it (with) */
    for (int with_nul = 0; with_nul < 2; with_nul++) {
        emudev_image_info in;
        CHECK(inspect_copy(im->data, im->size + (size_t)with_nul, &in) == 0, "inspect failed");
        char list[256];
        entries_text(&in, list, sizeof list);
        CHECK(in.kind == EMUDEV_IMAGE_PTX && in.sm == 75 && in.why[0] == '\0', "PTX (nul %d): %s sm %d why '%s'",
              with_nul, kind_name(in.kind), in.sm, in.why);
        CHECK(entries_are(&in, kernel_names, 3), "PTX entries [%s]", list);
        CHECK(emudev_image_runs_on(in.kind, in.sm, 7, 5) && emudev_image_runs_on(in.kind, in.sm, 8, 6) &&
                  emudev_image_runs_on(in.kind, in.sm, 12, 0),
              "sm_75 PTX must JIT on 7.5, 8.6 and 12.0");
        CHECK(!emudev_image_runs_on(in.kind, in.sm, 7, 0) && !emudev_image_runs_on(in.kind, in.sm, 0, 0),
              "sm_75 PTX runs on 7.0 or on the emu arch");
        emudev_image_info_free(&in);
    }
}

/* Targets kbuild does not offer, straight from NVRTC: arch-specific ("a"),
 * family-specific ("f"), sm_121, and a relocatable CUBIN in which an
 * extern "C" __device__ function is a global FUNC symbol but no entry. */
static void test_nvrtc_special_targets(void) {
    static const struct {
        const char *opt;
        int ptx, rdc, sm;
        const char *why;     /* substring; "" = empty */
    } cases[] = {
        {"-arch=sm_90a", 0, 0, 90, "arch-specific"},   {"-arch=sm_100a", 0, 0, 100, "arch-specific"},
        {"-arch=sm_120a", 0, 0, 120, "arch-specific"}, {"-arch=sm_121", 0, 0, 121, ""},
        {"-arch=sm_100f", 0, 0, 100, ""},              {"-arch=compute_90a", 1, 0, 90, "arch-specific"},
        {"-arch=compute_100f", 1, 0, 100, "family"},   {"-arch=compute_120", 1, 0, 120, ""},
        {"-arch=sm_80", 0, 1, 80, ""},
    };
    char src[1024];
    snprintf(src, sizeof src, "%s%s%s", unit_add,
             "extern \"C\" __device__ __noinline__ float img_helper(float x) { return x * 3.0f; }\n",
             "extern \"C\" __global__ void img_use(float *o) { o[threadIdx.x] = img_helper(o[threadIdx.x]); }\n");
    static const char *const want[] = {"img_add", "img_use"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char err[256];
        size_t n = 0;
        unsigned char *img = nvrtc_image(src, cases[c].opt, cases[c].ptx, cases[c].rdc, &n, err, sizeof err);
        CHECK(img != NULL, "NVRTC: %s", err);
        if (!img) continue;
        emudev_image_info in;
        CHECK(inspect_copy(img, n, &in) == 0, "%s: inspect failed", cases[c].opt);
        char list[256];
        entries_text(&in, list, sizeof list);
        emudev_image_kind k = cases[c].ptx ? EMUDEV_IMAGE_PTX : EMUDEV_IMAGE_CUBIN;
        CHECK(in.kind == k && in.sm == cases[c].sm, "%s%s: %s sm %d (%s)", cases[c].opt, cases[c].rdc ? " -rdc" : "",
              kind_name(in.kind), in.sm, in.why);
        CHECK(cases[c].why[0] ? strstr(in.why, cases[c].why) != NULL : in.why[0] == '\0', "%s: why '%s'",
              cases[c].opt, in.why);
        CHECK(entries_are(&in, want, 2), "%s%s: entries [%s], expected img_add,img_use", cases[c].opt,
              cases[c].rdc ? " -rdc" : "", list);
        emudev_image_info_free(&in);
        free(img);
    }
}

/* ------------------------------------------------------------ EMU */

static void test_emu_image(void) {
    CHECK(emu_img != NULL, "emu_build_image_file: %s", emu_error);
    if (!emu_img) return;
    emudev_image_info in;
    CHECK(inspect_copy(emu_img, emu_size, &in) == 0, "inspect failed");
    static const char *const want[] = {"k_one", "k_two"};
    char list[256];
    entries_text(&in, list, sizeof list);
    CHECK(in.kind == EMUDEV_IMAGE_EMU && in.sm == 0 && in.why[0] == '\0', "EMU image: %s sm %d why '%s'",
          kind_name(in.kind), in.sm, in.why);
    CHECK(entries_are(&in, want, 2), "EMU entries [%s], expected k_one,k_two", list);
    CHECK(emudev_image_runs_on(in.kind, in.sm, 0, 0), "EMU image must run on the emu arch 0.0");
    CHECK(!emudev_image_runs_on(in.kind, in.sm, 8, 0) && !emudev_image_runs_on(in.kind, in.sm, 0, 1),
          "EMU image runs on a GPU capability");
    emudev_image_info_free(&in);

    /* an x86-64 program that is no kernel image: this test itself */
    size_t n = 0;
    char *self = check_read_file("/proc/self/exe", &n);
    CHECK(self != NULL, "cannot read /proc/self/exe");
    if (self) {
        CHECK(inspect_copy(self, n, &in) == 0, "inspect failed");
        CHECK(in.kind == EMUDEV_IMAGE_UNKNOWN &&
                  (strstr(in.why, "bertc_emu_image_abi") || strstr(in.why, "not a shared object")),
              "this test's own executable: %s, why '%s'", kind_name(in.kind), in.why);
        emudev_image_info_free(&in);
        free(self);
    }
}

/* A minimal x86-64 ET_DYN with one PT_LOAD over the whole file, a .dynsym
 * with the given symbols and the ABI word at `abi` (if with_abi). */
typedef struct tsym {
    const char *name;
    unsigned char info;   /* ELF64_ST_INFO(bind, type) */
    uint16_t shndx;
} tsym;

static size_t build_emu(unsigned char *buf, size_t cap, const tsym *syms, int nsyms, int with_abi, uint32_t abi) {
    memset(buf, 0, cap);
    size_t phoff = 64, data = phoff + 56, dynstr = data + 16;
    size_t p = dynstr + 1;
    uint32_t name_off[16];
    int ns = nsyms + (with_abi ? 1 : 0);
    for (int i = 0; i < ns; i++) {
        const char *nm = i < nsyms ? syms[i].name : "bertc_emu_image_abi";
        name_off[i] = (uint32_t)(p - dynstr);
        memcpy(buf + p, nm, strlen(nm) + 1);
        p += strlen(nm) + 1;
    }
    size_t dynstr_size = p - dynstr;
    size_t dynsym = (p + 7) & ~(size_t)7;
    size_t q = dynsym + 24; /* symbol 0 stays null */
    for (int i = 0; i < ns; i++, q += 24) {
        put32(buf + q, name_off[i]);
        buf[q + 4] = i < nsyms ? syms[i].info : (unsigned char)ELF64_ST_INFO(STB_WEAK, STT_OBJECT);
        put16(buf + q + 6, i < nsyms ? syms[i].shndx : 1);
        put64(buf + q + 8, i < nsyms ? 0 : data);
        put64(buf + q + 16, 4);
    }
    size_t dynsym_size = q - dynsym;
    size_t shstr = q;
    static const char names[] = "\0.dynsym\0.dynstr\0.shstrtab";
    memcpy(buf + shstr, names, sizeof names);
    size_t shoff = (shstr + sizeof names + 7) & ~(size_t)7;
    size_t total = shoff + 4 * 64;
    if (total > cap) return 0;
    put32(buf + data, abi);
    memcpy(buf, "\177ELF\2\1\1", 7);
    put16(buf + 16, ET_DYN);
    put16(buf + 18, EM_X86_64);
    put32(buf + 20, 1);
    put64(buf + 32, phoff);
    put64(buf + 40, shoff);
    put16(buf + 52, 64);
    put16(buf + 54, 56);
    put16(buf + 56, 1);
    put16(buf + 58, 64);
    put16(buf + 60, 4);
    put16(buf + 62, 3);
    put32(buf + phoff, PT_LOAD);
    put64(buf + phoff + 8, 0);
    put64(buf + phoff + 16, 0);
    put64(buf + phoff + 32, total);
    put64(buf + phoff + 40, total);
    unsigned char *sh = buf + shoff + 64; /* .dynsym */
    put32(sh, 1);
    put32(sh + 4, SHT_DYNSYM);
    put64(sh + 24, dynsym);
    put64(sh + 32, dynsym_size);
    put32(sh + 40, 2);
    put64(sh + 56, 24);
    sh += 64; /* .dynstr */
    put32(sh, 9);
    put32(sh + 4, SHT_STRTAB);
    put64(sh + 24, dynstr);
    put64(sh + 32, dynstr_size);
    sh += 64; /* .shstrtab */
    put32(sh, 17);
    put32(sh + 4, SHT_STRTAB);
    put64(sh + 24, shstr);
    put64(sh + 32, sizeof names);
    return total;
}

static void test_emu_handmade(void) {
    unsigned char buf[1024];
    const unsigned char obj = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT);
    const tsym syms[] = {
        {"k_b__emu", obj, 1},
        {"k_a__emu", obj, 1},
        {"__emu", obj, 1},                                    /* no name before the suffix */
        {"k_func__emu", ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 1}, /* not a descriptor */
        {"k_undef__emu", obj, 0},                             /* undefined: imported, not exported */
        {"k_local__emu", ELF64_ST_INFO(STB_LOCAL, STT_OBJECT), 1},
        {"k_a__emu", obj, 1},                                 /* repeated */
        {"__odr_asan.k_a__emu", obj, 1},                      /* AddressSanitizer's ODR indicator */
    };
    size_t n = build_emu(buf, sizeof buf, syms, 8, 1, BERTC_EMU_ABI_VERSION);
    CHECK(n > 0, "hand-made EMU image does not fit");
    emudev_image_info in;
    CHECK(inspect_copy(buf, n, &in) == 0, "inspect failed");
    static const char *const want[] = {"k_a", "k_b"};
    char list[256];
    entries_text(&in, list, sizeof list);
    CHECK(in.kind == EMUDEV_IMAGE_EMU && entries_are(&in, want, 2), "hand-made EMU: %s [%s] why '%s'",
          kind_name(in.kind), list, in.why);
    emudev_image_info_free(&in);

    n = build_emu(buf, sizeof buf, syms, 2, 1, BERTC_EMU_ABI_VERSION + 1);
    char want_why[64];
    snprintf(want_why, sizeof want_why, "ABI version %u", BERTC_EMU_ABI_VERSION + 1);
    CHECK(inspect_copy(buf, n, &in) == 0 && in.kind == EMUDEV_IMAGE_UNKNOWN && strstr(in.why, want_why),
          "wrong ABI version: %s '%s'", kind_name(in.kind), in.why);
    emudev_image_info_free(&in);

    n = build_emu(buf, sizeof buf, syms, 2, 0, 1);
    CHECK(inspect_copy(buf, n, &in) == 0 && in.kind == EMUDEV_IMAGE_UNKNOWN && strstr(in.why, "bertc_emu_image_abi"),
          "no ABI symbol: %s '%s'", kind_name(in.kind), in.why);
    emudev_image_info_free(&in);

    n = build_emu(buf, sizeof buf, syms, 2, 1, 1);
    put16(buf + 16, ET_EXEC);
    CHECK(inspect_copy(buf, n, &in) == 0 && in.kind == EMUDEV_IMAGE_UNKNOWN && strstr(in.why, "not a shared object"),
          "ET_EXEC: %s '%s'", kind_name(in.kind), in.why);
    emudev_image_info_free(&in);

    /* the ABI word's address outside every segment */
    n = build_emu(buf, sizeof buf, syms, 2, 1, 1);
    put64(buf + 64 + 32, 100); /* PT_LOAD now covers only the first 100 bytes */
    CHECK(inspect_copy(buf, n, &in) == 0 && in.kind == EMUDEV_IMAGE_UNKNOWN && strstr(in.why, "segment"),
          "ABI word outside the segments: %s '%s'", kind_name(in.kind), in.why);
    emudev_image_info_free(&in);
}

/* ------------------------------------------------------------ PTX text */

static void test_ptx_text(void) {
    static const struct {
        const char *text;
        emudev_image_kind kind;
        int sm;
        const char *entries;   /* comma-separated, sorted */
        const char *why;       /* substring */
    } cases[] = {
        {".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k1(\n\t.param .u64 p\n)\n{\n\tret;\n}\n"
         ".entry k2()\n{\n\tret;\n}\n",
         EMUDEV_IMAGE_PTX, 80, "k1,k2", ""},
        {"//\n// .entry fake_line(\n/* .entry fake_block( .target sm_99 */\n.version 9.0\n.target sm_90a, debug\n"
         ".file 1 \".entry fake_string(\"\n.visible .entry real(){}\n",
         EMUDEV_IMAGE_PTX, 90, "real", "arch-specific"},
        {".version 7.8 .target texmode_independent, sm_86 .entry $d1() {} .entry _x() {} .entry %y() {}",
         EMUDEV_IMAGE_PTX, 86, "$d1,%y,_x", ""},
        {".version 9.0\n.target sm_100f\n.entry b\n.maxntid 128, 1, 1\n{}\n.entry a(){}\n.entry b(){}\n",
         EMUDEV_IMAGE_PTX, 100, "a,b", "family"},
        {".version 8.0\n.target sm_75\n", EMUDEV_IMAGE_PTX, 75, "", ""},
        {".target sm_80\n.entry k(){}\n", EMUDEV_IMAGE_UNKNOWN, 0, "", "not an ELF file or PTX text"},
        {".version 8.0\n.entry k(){}\n", EMUDEV_IMAGE_UNKNOWN, 0, "", "without a .target"},
        {".version 8.0\n.target sm_8x\n", EMUDEV_IMAGE_UNKNOWN, 0, "", "not an architecture"},
        {".version 8.0\n.target sm_1234\n", EMUDEV_IMAGE_UNKNOWN, 0, "", "not an architecture"},
        {".version 8.0\n.target sm_5\n", EMUDEV_IMAGE_UNKNOWN, 0, "", "not an architecture"},
        {".version 8.0\n.target compute_80\n", EMUDEV_IMAGE_UNKNOWN, 0, "", "names no sm_"},
        {".version 8.0\n.target sm_80\n.target sm_90\n", EMUDEV_IMAGE_UNKNOWN, 0, "", "second .target"},
        {".version 8.0\n.target sm_80\n.entry (", EMUDEV_IMAGE_UNKNOWN, 0, "", "no name"},
        {".version 8.0\n.target sm_80\n.entry 9lives(", EMUDEV_IMAGE_UNKNOWN, 0, "", "no name"},
        {".version 8.0\n.target sm_80\n.entry _(", EMUDEV_IMAGE_UNKNOWN, 0, "", "no name"},
        {".version\n.target sm_80\n", EMUDEV_IMAGE_UNKNOWN, 0, "", "version number"},
        {".version 8.0 .target sm_80 /* unterminated .entry x(", EMUDEV_IMAGE_PTX, 80, "", ""},
        {"hello, world\n", EMUDEV_IMAGE_UNKNOWN, 0, "", "not an ELF file or PTX text"},
        {".version 8.0\n.target sm_80\n\001\002", EMUDEV_IMAGE_UNKNOWN, 0, "", "not an ELF file or PTX text"},
        {"\x7f" "EL", EMUDEV_IMAGE_UNKNOWN, 0, "", "not an ELF file or PTX text"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        emudev_image_info in;
        CHECK(inspect_copy(cases[c].text, strlen(cases[c].text), &in) == 0, "case %zu: inspect failed", c);
        char list[256];
        entries_text(&in, list, sizeof list);
        CHECK(in.kind == cases[c].kind && in.sm == cases[c].sm && strcmp(list, cases[c].entries) == 0 &&
                  strstr(in.why, cases[c].why) != NULL && (cases[c].why[0] || in.why[0] == '\0'),
              "case %zu: %s sm %d [%s] why '%s'; expected %s sm %d [%s] why '%s'", c, kind_name(in.kind), in.sm, list,
              in.why, kind_name(cases[c].kind), cases[c].sm, cases[c].entries, cases[c].why);
        consistent(&in, "PTX case");
        emudev_image_info_free(&in);
    }
    /* the text ends at its NUL: what follows is not read as PTX */
    static const char tail[] = ".version 8.0\n.target sm_80\n.entry k(){}\n\0\001\377\002 .entry junk(";
    emudev_image_info in;
    CHECK(inspect_copy(tail, sizeof tail - 1, &in) == 0, "inspect failed");
    CHECK(in.kind == EMUDEV_IMAGE_PTX && in.nentries == 1 && strcmp(in.entries[0], "k") == 0,
          "PTX followed by NUL and bytes: %s, %d entries", kind_name(in.kind), in.nentries);
    emudev_image_info_free(&in);
}

/* ------------------------------------------------------------ ELF headers */

static void expect_unknown(const unsigned char *img, size_t n, const char *why, const char *what) {
    emudev_image_info in;
    CHECK(inspect_copy(img, n, &in) == 0, "%s: inspect failed", what);
    CHECK(in.kind == EMUDEV_IMAGE_UNKNOWN && strstr(in.why, why), "%s: %s sm %d why '%s', expected UNKNOWN '%s'",
          what, kind_name(in.kind), in.sm, in.why, why);
    consistent(&in, what);
    emudev_image_info_free(&in);
}

static void test_elf_rejections(void) {
    const kbuild_image *im = kb_image("sm_80");
    CHECK(im != NULL, "no sm_80 CUBIN: %s", kb_error);
    if (!im) return;
    size_t n = im->size;
    unsigned char *c = malloc(n);
    if (!c) return;
#define FRESH() memcpy(c, im->data, n)
    FRESH(); c[4] = 1; expect_unknown(c, n, "32-bit", "ELFCLASS32");
    FRESH(); c[4] = 7; expect_unknown(c, n, "ELF class 7", "ELF class 7");
    FRESH(); c[5] = 2; expect_unknown(c, n, "big-endian", "ELFDATA2MSB");
    FRESH(); c[5] = 0; expect_unknown(c, n, "data encoding 0", "ELFDATANONE");
    FRESH(); put32(c + 20, 2); expect_unknown(c, n, "ELF version", "e_version 2");
    FRESH(); put16(c + 18, 3); expect_unknown(c, n, "ELF machine 3 is neither x86-64 nor CUDA", "EM_386");
    FRESH(); put16(c + 52, 52); expect_unknown(c, n, "header size 52", "e_ehsize 52");
    FRESH(); expect_unknown(c, 63, "truncated ELF header: 63 of 64", "63 bytes");
    FRESH(); expect_unknown(c, 4, "truncated ELF header: 4 of 64", "4 bytes");
    FRESH(); put64(c + 40, n); expect_unknown(c, n, "truncated section header table at offset", "e_shoff = size");
    FRESH(); put64(c + 40, UINT64_MAX - 8); expect_unknown(c, n, "truncated section header table", "e_shoff huge");
    FRESH(); put16(c + 60, 0xfff0); expect_unknown(c, n, "truncated section header table", "e_shnum huge");
    FRESH(); put16(c + 58, 40); expect_unknown(c, n, "section header entries of 40 bytes", "e_shentsize 40");
    FRESH(); put16(c + 54, 32); expect_unknown(c, n, "program header entries of 32 bytes", "e_phentsize 32");
    FRESH(); put64(c + 32, n - 8); expect_unknown(c, n, "truncated program header table", "e_phoff near the end");
    FRESH(); put16(c + 62, 0x7000); expect_unknown(c, n, "section name table index", "e_shstrndx huge");
    FRESH(); c[8] = 9; expect_unknown(c, n, "ABI version 9", "EI_ABIVERSION 9");
    FRESH(); put32(c + 48, 0x06000504u); expect_unknown(c, n, "no NVIDIA architecture", "sm_5 in e_flags");

    /* e_flags layouts: the ABI-7 one (SM in the low byte) and both accelerator flags */
    static const struct {
        uint8_t abiver;
        uint32_t flags;
        int sm, specific;
    } layouts[] = {
        {7, 0x00500550u, 80, 0}, {7, 0x00500d50u, 80, 1}, {7, 0x005a055au, 90, 0},
        {8, 0x06005a04u, 90, 0}, {8, 0x06005a0cu, 90, 1}, {8, 0x06007802u, 120, 0},
    };
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        FRESH();
        c[8] = layouts[i].abiver;
        put32(c + 48, layouts[i].flags);
        emudev_image_info in;
        CHECK(inspect_copy(c, n, &in) == 0, "inspect failed");
        CHECK(in.kind == EMUDEV_IMAGE_CUBIN && in.sm == layouts[i].sm &&
                  (strstr(in.why, "arch-specific") != NULL) == layouts[i].specific,
              "ABI %u e_flags 0x%08x: %s sm %d why '%s', expected sm %d%s", layouts[i].abiver, layouts[i].flags,
              kind_name(in.kind), in.sm, in.why, layouts[i].sm, layouts[i].specific ? " arch-specific" : "");
        emudev_image_info_free(&in);
    }

    /* the symbol table and what the kernels' symbols point at */
    tsec st, tx, names;
    int si = t_section(im->data, n, NULL, SHT_SYMTAB, &st);
    int ti = t_section(im->data, n, ".text.img_add", 0, &tx);
    int ni = t_section(im->data, n, ".shstrtab", 0, &names);
    CHECK(si > 0 && ti > 0 && ni > 0, "sm_80 CUBIN without .symtab / .text.img_add / .shstrtab");
    if (si > 0 && ti > 0 && ni > 0) {
        FRESH(); put64(c + st.hdr + 56, 16); expect_unknown(c, n, "entries of 16 bytes", "symtab entsize 16");
        FRESH(); put64(c + st.hdr + 32, st.sh.sh_size - 4); expect_unknown(c, n, "whole number", "symtab size % 24");
        FRESH(); put32(c + st.hdr + 40, 9999); expect_unknown(c, n, "string table 9999", "symtab link out of range");
        FRESH(); put32(c + st.hdr + 40, (uint32_t)si); expect_unknown(c, n, "not a string table", "symtab links itself");
        FRESH(); put64(c + st.hdr + 24, n - 8); expect_unknown(c, n, "extends past the end", "symtab past the end");
        /* a kernel symbol whose name runs off its string table */
        for (uint64_t j = 1; j < st.sh.sh_size / 24; j++) {
            Elf64_Sym y;
            memcpy(&y, im->data + st.sh.sh_offset + j * 24, sizeof y);
            if (ELF64_ST_TYPE(y.st_info) == STT_FUNC && y.st_shndx == ti) {
                FRESH();
                put32(c + st.sh.sh_offset + j * 24, 0xffffff);
                expect_unknown(c, n, "no name inside its string table", "kernel name offset huge");
                FRESH();
                put16(c + st.sh.sh_offset + j * 24 + 6, (uint16_t)si);
                expect_unknown(c, n, "is not in a section .text.img_add", "kernel symbol in the wrong section");
            }
        }
        /* the kernel's section renamed */
        FRESH();
        c[names.sh.sh_offset + tx.sh.sh_name + 6] = 'X';
        expect_unknown(c, n, "is not in a section .text.img_add", "section .text.Xmg_add");
    }
    free(c);
#undef FRESH
}

/* ------------------------------------------------------------ robustness */

/* Every prefix of a real ELF image is rejected: the file ends in a table or
 * a section, so a cut anywhere leaves something referring past the end. */
static void truncations_elf(const unsigned char *img, size_t n, const char *what, int stride_from, int stride) {
    int bad = 0;
    for (size_t len = 0; len < n && bad < 3; len++) {
        if (stride_from >= 0 && len >= (size_t)stride_from && len + 4096 < n && len % (size_t)stride) continue;
        char label[96];
        snprintf(label, sizeof label, "%s cut to %zu of %zu bytes", what, len, n);
        emudev_image_kind k = inspect_checked(img, len, label, NULL);
        if (k != EMUDEV_IMAGE_UNKNOWN) {
            CHECK(0, "%s: %s, expected UNKNOWN", label, kind_name(k));
            bad++;
        }
    }
    CHECK(inspect_checked(img, n, what, NULL) != EMUDEV_IMAGE_UNKNOWN, "%s whole is UNKNOWN", what);
}

static void test_truncations(void) {
    CHECK(kb_ok, "kbuild: %s", kb_error);
    for (int a = 0; a < NARCHS && kb_ok; a++) {
        const kbuild_image *im = kb_image(all_archs[a]);
        if (im) truncations_elf(im->data, im->size, all_archs[a], -1, 1);
    }
    if (emu_img) truncations_elf(emu_img, emu_size, "EMU image", 4096, 7);

    /* PTX prefixes: PTX of sm_75 with entries that are prefixes of the real ones, or UNKNOWN */
    const kbuild_image *p = kb_image("compute_75");
    for (size_t len = 0; p && len <= p->size; len++) {
        emudev_image_info in;
        if (inspect_copy(p->data, len, &in) != 0) {
            CHECK(0, "PTX cut to %zu: inspect failed", len);
            break;
        }
        consistent(&in, "PTX prefix");
        int ok = in.kind == EMUDEV_IMAGE_UNKNOWN || (in.kind == EMUDEV_IMAGE_PTX && in.sm == 75);
        for (int i = 0; ok && i < in.nentries; i++) {
            int pre = 0;
            for (int k = 0; k < 3; k++) pre |= strncmp(kernel_names[k], in.entries[i], strlen(in.entries[i])) == 0;
            ok = pre;
        }
        CHECK(ok, "PTX cut to %zu: %s sm %d", len, kind_name(in.kind), in.sm);
        emudev_image_info_free(&in);
        if (!ok) break;
    }
}

/* Byte ranges where a flip changes the parse: header, tables, symbols. */
typedef struct region {
    size_t off, len;
} region;

static int structural_regions(const unsigned char *d, size_t n, region *r) {
    int k = 0;
    Elf64_Ehdr eh;
    if (n < sizeof eh || memcmp(d, "\177ELF", 4) != 0) return 0;
    memcpy(&eh, d, sizeof eh);
    r[k++] = (region){0, sizeof eh};
    if (eh.e_shoff && eh.e_shoff + (uint64_t)eh.e_shnum * 64 <= n) r[k++] = (region){eh.e_shoff, eh.e_shnum * 64u};
    if (eh.e_phoff && eh.e_phoff + (uint64_t)eh.e_phnum * 56 <= n) r[k++] = (region){eh.e_phoff, eh.e_phnum * 56u};
    tsec s;
    if (t_section(d, n, NULL, eh.e_machine == EM_CUDA ? SHT_SYMTAB : SHT_DYNSYM, &s) > 0 && s.sh.sh_size)
        r[k++] = (region){s.sh.sh_offset, s.sh.sh_size};
    if (t_section(d, n, ".nv.compat", 0, &s) > 0 && s.sh.sh_size) r[k++] = (region){s.sh.sh_offset, s.sh.sh_size};
    return k;
}

static void flips(const unsigned char *img, size_t n, const char *what, int iterations) {
    region rg[8];
    int nr = structural_regions(img, n, rg);
    int orig_sm = 0;
    emudev_image_kind orig = inspect_checked(img, n, what, &orig_sm);
    unsigned char *c = malloc(n);
    if (!c) return;
    for (int it = 0; it < iterations; it++) {
        memcpy(c, img, n);
        int nflips = (int)check_rng_range(1, 4), header_touched = 0;
        for (int f = 0; f < nflips; f++) {
            size_t at;
            if (nr && check_rng_uniform() < 0.5) {
                const region *r = &rg[check_rng_range(0, nr - 1)];
                at = r->off + (size_t)check_rng_range(0, (int64_t)r->len - 1);
            } else {
                at = (size_t)check_rng_range(0, (int64_t)n - 1);
            }
            c[at] ^= (unsigned char)(1u << check_rng_range(0, 7));
            header_touched |= at < 64;
        }
        char label[96];
        snprintf(label, sizeof label, "%s with %d flipped bits (iteration %d)", what, nflips, it);
        int sm = 0;
        emudev_image_kind k = inspect_checked(c, n, label, &sm);
        /* outside the header the SM cannot change; the kind can only be lost */
        if (!header_touched && k != EMUDEV_IMAGE_UNKNOWN && orig != EMUDEV_IMAGE_PTX)
            CHECK(k == orig && sm == orig_sm, "%s: became %s sm %d", label, kind_name(k), sm);
    }
    free(c);
}

static void test_bit_flips(void) {
    const kbuild_image *a = kb_image("sm_80"), *b = kb_image("sm_120"), *p = kb_image("compute_75");
    CHECK(a && b && p, "kbuild images missing: %s", kb_error);
    if (a) flips(a->data, a->size, "sm_80 CUBIN", 4000);
    if (b) flips(b->data, b->size, "sm_120 CUBIN", 4000);
    if (p) flips(p->data, p->size, "PTX", 2000);
    if (emu_img) flips(emu_img, emu_size, "EMU image", 3000);
    unsigned char buf[1024];
    const tsym syms[] = {{"k_a__emu", ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), 1}};
    size_t n = build_emu(buf, sizeof buf, syms, 1, 1, BERTC_EMU_ABI_VERSION);
    if (n) flips(buf, n, "hand-made EMU image", 4000);
}

static void test_random_bytes(void) {
    unsigned char buf[2048];
    for (int it = 0; it < 3000; it++) {
        size_t n = (size_t)check_rng_range(0, 512);
        for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)check_rng_u64();
        inspect_checked(buf, n, "random bytes", NULL);
    }
    /* a plausible ELF64 header over random tables: the parse goes deep */
    for (int it = 0; it < 6000; it++) {
        size_t n = (size_t)check_rng_range(64, sizeof buf);
        for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(check_rng_uniform() < 0.6 ? (uint64_t)check_rng_range(0, 3)
                                                                                           : check_rng_u64());
        memcpy(buf, "\177ELF\2\1\1", 7);
        buf[8] = (unsigned char)check_rng_range(7, 8);
        put16(buf + 16, (uint16_t)check_rng_range(2, 3));
        put16(buf + 18, check_rng_uniform() < 0.5 ? EM_CUDA : EM_X86_64);
        put32(buf + 20, 1);
        put32(buf + 48, (uint32_t)check_rng_range(20, 130) << 8);
        put16(buf + 52, 64);
        put64(buf + 32, (uint64_t)check_rng_range(0, (int64_t)n));
        put64(buf + 40, (uint64_t)check_rng_range(0, (int64_t)n));
        put16(buf + 54, 56);
        put16(buf + 56, (uint16_t)check_rng_range(0, 4));
        put16(buf + 58, 64);
        put16(buf + 60, (uint16_t)check_rng_range(0, 12));
        put16(buf + 62, (uint16_t)check_rng_range(0, 12));
        inspect_checked(buf, n, "random ELF", NULL);
    }
}

static void test_random_ptx(void) {
    static const char *const tok[] = {".version", "8.0", ".target", "sm_80", "sm_90a", "sm_", "compute_75", ",",
                                      ".entry", ".visible", "k1", "k2", "_", "$x", "%y", "(", ")", "{", "}", "//",
                                      "/*", "*/", "\"", "\\", "\n", " ", ".", "9", ".file", ";", "\t"};
    const int ntok = (int)(sizeof tok / sizeof tok[0]);
    char buf[1024];
    for (int it = 0; it < 20000; it++) {
        size_t len = 0;
        int count = (int)check_rng_range(0, 40);
        for (int i = 0; i < count; i++) {
            const char *t = tok[check_rng_range(0, ntok - 1)];
            size_t tl = strlen(t);
            if (len + tl + 1 >= sizeof buf) break;
            memcpy(buf + len, t, tl);
            len += tl;
            if (check_rng_uniform() < 0.5) buf[len++] = ' ';
        }
        int sm = 0;
        emudev_image_kind k = inspect_checked(buf, len, "random PTX tokens", &sm);
        CHECK(k == EMUDEV_IMAGE_UNKNOWN || (k == EMUDEV_IMAGE_PTX && sm >= 10),
              "random PTX tokens: %s sm %d", kind_name(k), sm);
    }
}

/* ------------------------------------------------------------ runs_on, edges */

static void test_runs_on_table(void) {
    static const struct {
        emudev_image_kind kind;
        int sm, major, minor, runs;
    } t[] = {
        /* CUBIN: same major, minor >= the cubin's */
        {EMUDEV_IMAGE_CUBIN, 80, 8, 0, 1},  {EMUDEV_IMAGE_CUBIN, 80, 8, 6, 1},  {EMUDEV_IMAGE_CUBIN, 80, 8, 9, 1},
        {EMUDEV_IMAGE_CUBIN, 86, 8, 0, 0},  {EMUDEV_IMAGE_CUBIN, 86, 8, 6, 1},  {EMUDEV_IMAGE_CUBIN, 86, 8, 9, 1},
        {EMUDEV_IMAGE_CUBIN, 80, 9, 0, 0},  {EMUDEV_IMAGE_CUBIN, 90, 8, 9, 0},  {EMUDEV_IMAGE_CUBIN, 75, 7, 5, 1},
        {EMUDEV_IMAGE_CUBIN, 75, 8, 0, 0},  {EMUDEV_IMAGE_CUBIN, 100, 10, 0, 1}, {EMUDEV_IMAGE_CUBIN, 100, 10, 3, 1},
        {EMUDEV_IMAGE_CUBIN, 103, 10, 0, 0}, {EMUDEV_IMAGE_CUBIN, 100, 12, 0, 0}, {EMUDEV_IMAGE_CUBIN, 120, 12, 1, 1},
        {EMUDEV_IMAGE_CUBIN, 121, 12, 0, 0}, {EMUDEV_IMAGE_CUBIN, 80, 0, 0, 0},  {EMUDEV_IMAGE_CUBIN, 0, 0, 0, 0},
        /* PTX: any capability >= its target */
        {EMUDEV_IMAGE_PTX, 75, 7, 5, 1},    {EMUDEV_IMAGE_PTX, 75, 7, 0, 0},    {EMUDEV_IMAGE_PTX, 75, 8, 0, 1},
        {EMUDEV_IMAGE_PTX, 75, 12, 0, 1},   {EMUDEV_IMAGE_PTX, 90, 8, 9, 0},    {EMUDEV_IMAGE_PTX, 90, 10, 0, 1},
        {EMUDEV_IMAGE_PTX, 120, 10, 3, 0},  {EMUDEV_IMAGE_PTX, 75, 0, 0, 0},
        /* EMU: the emu arch only */
        {EMUDEV_IMAGE_EMU, 0, 0, 0, 1},     {EMUDEV_IMAGE_EMU, 0, 8, 0, 0},     {EMUDEV_IMAGE_EMU, 0, 0, 1, 0},
        /* UNKNOWN: never */
        {EMUDEV_IMAGE_UNKNOWN, 0, 0, 0, 0}, {EMUDEV_IMAGE_UNKNOWN, 80, 8, 0, 0},
        /* capabilities no device reports (the last one must not overflow major * 10) */
        {EMUDEV_IMAGE_PTX, 75, 8, 10, 0},   {EMUDEV_IMAGE_PTX, 75, -1, 0, 0},   {EMUDEV_IMAGE_CUBIN, 80, 8, -1, 0},
        {EMUDEV_IMAGE_PTX, 75, 2147483647, 0, 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int r = emudev_image_runs_on(t[i].kind, t[i].sm, t[i].major, t[i].minor);
        CHECK(r == t[i].runs, "runs_on(%s, sm_%d, %d.%d) = %d, expected %d", kind_name(t[i].kind), t[i].sm, t[i].major,
              t[i].minor, r, t[i].runs);
    }
}

static void test_empty_and_free(void) {
    emudev_image_info in;
    static const unsigned char one = 0;
    CHECK(emudev_image_inspect(NULL, 0, &in) == 0 && in.kind == EMUDEV_IMAGE_UNKNOWN && strstr(in.why, "empty"),
          "NULL, 0: %s '%s'", kind_name(in.kind), in.why);
    emudev_image_info_free(&in);
    CHECK(emudev_image_inspect(&one, 0, &in) == 0 && in.kind == EMUDEV_IMAGE_UNKNOWN && strstr(in.why, "empty"),
          "0 bytes: %s '%s'", kind_name(in.kind), in.why);
    emudev_image_info_free(&in);
    CHECK(emudev_image_inspect(NULL, 100, &in) == 0 && in.kind == EMUDEV_IMAGE_UNKNOWN && in.why[0],
          "NULL, 100: %s '%s'", kind_name(in.kind), in.why);
    emudev_image_info_free(&in);
    CHECK(emudev_image_inspect(&one, 1, &in) == 0 && in.kind == EMUDEV_IMAGE_UNKNOWN, "one NUL byte: %s",
          kind_name(in.kind));
    emudev_image_info_free(&in);
    CHECK(emudev_image_inspect(&one, 1, NULL) == -1, "NULL info must be refused");

    emudev_image_info_free(NULL);
    emudev_image_info z;
    memset(&z, 0, sizeof z);
    emudev_image_info_free(&z);
    static const char ptx[] = ".version 8.0 .target sm_80 .entry a(){} .entry b(){}";
    CHECK(emudev_image_inspect(ptx, sizeof ptx - 1, &in) == 0 && in.nentries == 2, "two-entry PTX");
    emudev_image_info_free(&in);
    CHECK(in.entries == NULL && in.nentries == 0 && in.kind == EMUDEV_IMAGE_UNKNOWN, "free must reset the info");
    emudev_image_info_free(&in); /* twice: harmless */
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv) {
    check_init(argc, argv);

    kbuild_unit units[3] = {{unit_add, "img_add", 0}, {unit_square, "img_square", 0}, {unit_fill, "img_fill", 0}};
    kbuild_options opt = {0};
    opt.jobs = 4;
    /* these kernels test no __CUDA_ARCH__, so every arch compiles from
     * compute_75 and that PTX is the one the build gives: the parser's
     * subject here, as JIT input for every newer GPU */
    diag d;
    diag_init(&d);
    kb_ok = kbuild_compile(units, 3, all_archs, NARCHS, &opt, &kb, &d) == 0;
    if (!kb_ok) snprintf(kb_error, sizeof kb_error, "%s", d.text);

    diag_init(&d);
    emu_img = (unsigned char *)kimage_build_bytes("emudev_image.so", &(const char *){emu_src}, 1, &emu_size, &d);
    if (!emu_img) snprintf(emu_error, sizeof emu_error, "%s", d.text);
    printf("info: kbuild gave %d images in %.2f s; EMU image of %zu bytes\n", kb_ok ? kb.nimages : 0,
           kb_ok ? kb.seconds : 0.0, emu_size);

    CHECK_CASE(test_kbuild_cubins);
    CHECK_CASE(test_kbuild_ptx);
    CHECK_CASE(test_nvrtc_special_targets);
    CHECK_CASE(test_emu_image);
    CHECK_CASE(test_emu_handmade);
    CHECK_CASE(test_ptx_text);
    CHECK_CASE(test_elf_rejections);
    CHECK_CASE(test_truncations);
    CHECK_CASE(test_bit_flips);
    CHECK_CASE(test_random_bytes);
    CHECK_CASE(test_random_ptx);
    CHECK_CASE(test_runs_on_table);
    CHECK_CASE(test_empty_and_free);

    free(emu_img);
    if (kb_ok) kbuild_result_free(&kb);
    return check_summary();
}
