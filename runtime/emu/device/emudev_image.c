/*
 * emudev_image — what a module image handed to cuModuleLoadData is.
 *
 * The real driver accepts three things and so does the emulated device:
 * a CUBIN (an ELF file for e_machine EM_CUDA), PTX text, and — only here —
 * an EMU image, the x86-64 shared object emu_image.c builds from the same
 * kernel text.  To behave like the driver the device must know, before it
 * loads anything, which of them it holds, which architecture a CUBIN or
 * PTX module was built for (a CUBIN for the wrong GPU fails with
 * CUDA_ERROR_NO_BINARY_FOR_GPU on real hardware, and a test that only ever
 * runs on the emulator must fail the same way), and which kernel entry
 * points it contains (cuModuleGetFunction of a name the image lacks is
 * CUDA_ERROR_NOT_FOUND, even though the kernel body comes from an EMU twin).
 *
 * The bytes are untrusted: a plan file may be truncated or corrupt, and
 * the tests feed this parser every prefix of real images and random bit
 * flips.  So nothing is read through a struct overlay or a pointer the
 * file supplies.  Every field is assembled byte by byte (little-endian,
 * alignment-free), and every offset/size pair is checked with
 * `within(n, off, len)` — off <= n && len <= n - off, which cannot
 * overflow — before the bytes behind it are touched.  The whole ELF
 * skeleton is validated up front (header, section header table, program
 * header table, the extent of every section and segment), so a real image
 * cut short anywhere is reported as truncated rather than half-read; the
 * symbol and string tables are checked again where they are used, because
 * an entry's name must end (NUL) inside its string table.  A rejection is
 * never an error return: the image is UNKNOWN with a `why` that names the
 * field and the offset, which the driver copies into its last-error
 * message.  -1 is kept for out of memory.
 *
 * The architecture of a CUBIN is in e_flags, in one of two layouts chosen
 * by EI_ABIVERSION (names as in LLVM's BinaryFormat/ELF.h):
 *
 *   ABI 7 (older toolkits; taken from LLVM, no such toolkit here to
 *       measure): EF_CUDA_SM = e_flags & 0xff, the virtual arch in bits
 *       16..23, EF_CUDA_ACCELERATORS_V1 0x800 marks an "a" target.
 *   ABI 8 (CUDA 13): the SM moved to bits 8..15 (EF_CUDA_SM_MASK 0xff00),
 *       EF_CUDA_ACCELERATORS is 0x8.
 *
 * Measured with NVRTC 13.0 (V13.0.88, nvrtcGetCUBIN, -arch=sm_XX), every
 * CUBIN has EI_OSABI 0x41, EI_ABIVERSION 8, e_type ET_EXEC and:
 *
 *   sm_75 0x06004b04   sm_80 0x06005004   sm_86 0x06005604   sm_87 0x06005704
 *   sm_89 0x06005904   sm_90 0x06005a04   sm_100 0x06006402  sm_103 0x06006702
 *   sm_110 0x06006e02  sm_120 0x06007802  sm_121 0x06007902
 *
 * i.e. SM = (e_flags >> 8) & 0xff, low byte 0x04 below sm_100 and 0x02
 * from it, top byte 0x06.  Surprise: sm_90a, sm_100a and sm_120a give the
 * *same* e_flags as sm_90/sm_100/sm_120 — NVRTC 13.0 does not set
 * EF_CUDA_ACCELERATORS.  Apart from the command line that
 * .note.nv.tkinfo records ("-arch sm_90a"), the only difference is in the
 * `.nv.compat` section, a list of {u8 format, u8 attribute, u16 value}
 * records (format 4 is followed by `value` bytes): attribute 0x09 is 1 for
 * every "a" target and 0 otherwise (sm_100f is byte-identical to sm_100
 * there).  Both the flag and that attribute are honoured.
 *
 * Kernel entries of a CUBIN are its STT_FUNC symbols with bit 0x10 of
 * st_other set (the entry-point flag); ptxas sets it on every __global__
 * function and on no __device__ function — measured: with -rdc=true an
 * extern "C" __device__ function is a GLOBAL FUNC without it, and a
 * non-inlined helper becomes a LOCAL FUNC `$kernel$helper` without it
 * inside the kernel's own .text section.  Each
 * kernel lives in its own section `.text.<name>`, which is checked: a
 * symbol that disagrees with its section means a corrupt table.  Entries
 * of internal linkage (a kernel in an anonymous namespace: a LOCAL symbol,
 * a PTX `.entry` without `.visible`) count too, because cuModuleGetFunction
 * finds them and the PTX side lists every `.entry`.
 *
 * The interface reports the SM as a number, so an arch-specific ("a") or
 * family-specific ("f") target cannot reach emudev_image_runs_on; for
 * those the number is the one after "sm_" and `why`, otherwise empty for a
 * usable image, says what the suffix restricts.
 *
 * Entry names are reported sorted by strcmp and without duplicates, for
 * every kind (EMU images list the kernels exported with
 * BERTC_KERNEL_EXPORT, i.e. their `<entry>__emu` descriptors whose
 * <entry> is a C identifier).
 */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_abi.h"
#include "emudev_internal.h"

/* ------------------------------------------------------------ ELF constants
 * Spelled out here (not <elf.h>) so that the values this file depends on
 * are visible in one place, including the NVIDIA ones <elf.h> lacks. */

enum {
    ELF_EHDR_SIZE = 64,
    ELF_SHDR_SIZE = 64,
    ELF_PHDR_SIZE = 56,
    ELF_SYM_SIZE = 24,
    ELF_CLASS64 = 2,
    ELF_CLASS32 = 1,
    ELF_DATA_LSB = 1,
    ELF_DATA_MSB = 2,
    ELF_ET_DYN = 3,
    ELF_EM_X86_64 = 62,
    ELF_EM_CUDA = 190,
    ELF_SHT_NULL = 0,
    ELF_SHT_SYMTAB = 2,
    ELF_SHT_STRTAB = 3,
    ELF_SHT_NOBITS = 8,
    ELF_SHT_DYNSYM = 11,
    ELF_PT_NULL = 0,
    ELF_PT_LOAD = 1,
    ELF_STT_OBJECT = 1,
    ELF_STT_FUNC = 2,
    ELF_STB_GLOBAL = 1,
    ELF_STB_WEAK = 2,
    ELF_SHN_LORESERVE = 0xff00,
    ELF_SHN_XINDEX = 0xffff,
    ELF_PN_XNUM = 0xffff,
};

#define CUDA_EF_SM_V1(f) ((int)((f)&0xffu))           /* ABI 7: EF_CUDA_SM */
#define CUDA_EF_ACCEL_V1 0x800u                       /* ABI 7: EF_CUDA_ACCELERATORS_V1 */
#define CUDA_EF_SM_V2(f) ((int)(((f) >> 8) & 0xffu))  /* ABI 8: EF_CUDA_SM_MASK >> EF_CUDA_SM_OFFSET */
#define CUDA_EF_ACCEL_V2 0x8u                         /* ABI 8: EF_CUDA_ACCELERATORS */
#define CUDA_STO_ENTRY 0x10u                          /* st_other of a kernel entry */
#define CUDA_COMPAT_ARCH_SPECIFIC 0x09u               /* .nv.compat attribute, measured */

#define EMU_SUFFIX "__emu"
#define EMU_ABI_SYMBOL "bertc_emu_image_abi"

/* ------------------------------------------------------------ small helpers */

typedef unsigned long long ull;

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (unsigned)p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* [off, off + len) lies inside [0, n); written so that nothing overflows. */
static int within(uint64_t n, uint64_t off, uint64_t len) { return off <= n && len <= n - off; }

/* The NUL-terminated string at tab[off], or NULL if it does not end inside
 * the table (a name that runs off its table is corruption, not a name). */
static const char *str_at(const uint8_t *tab, uint64_t tabsize, uint64_t off) {
    if (off >= tabsize) return NULL;
    if (!memchr(tab + off, 0, (size_t)(tabsize - off))) return NULL;
    return (const char *)tab + off;
}

/* Marks the image UNKNOWN with a reason; returns 1 ("rejected") so that
 * callers can `return reject(...)`. */
static int reject(emudev_image_info *info, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int reject(emudev_image_info *info, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(info->why, sizeof info->why, fmt, ap);
    va_end(ap);
    info->kind = EMUDEV_IMAGE_UNKNOWN;
    return 1;
}

/* ------------------------------------------------------------ entry name list */

typedef struct namelist {
    char **v;
    int n, cap;
} namelist;

static void names_free(namelist *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* 0, or -1 out of memory (the list stays valid either way). */
static int names_add(namelist *l, const char *s, size_t len) {
    if (l->n == l->cap) {
        /* Names are distinct strings inside the image, so INT_MAX of them
         * cannot happen; the check keeps the arithmetic honest. */
        if (l->cap > INT_MAX / 2) return -1;
        int cap = l->cap ? l->cap * 2 : 8;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    char *c = malloc(len + 1);
    if (!c) return -1;
    memcpy(c, s, len);
    c[len] = '\0';
    l->v[l->n++] = c;
    return 0;
}

static int names_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts, drops duplicates, hands the list to info. */
static void names_give(namelist *l, emudev_image_info *info) {
    if (l->n > 1) qsort(l->v, (size_t)l->n, sizeof *l->v, names_cmp);
    int k = 0;
    for (int i = 0; i < l->n; i++) {
        if (k > 0 && strcmp(l->v[k - 1], l->v[i]) == 0)
            free(l->v[i]);
        else
            l->v[k++] = l->v[i];
    }
    info->nentries = k;
    info->entries = k ? l->v : NULL;
    if (!k) free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* Ends an inspection that collected entry names in l: rc 0 (classified)
 * hands them to info, 1 (rejected) or -1 (out of memory) frees them.
 * Returns rc, so that an inspector can `return names_finish(...)`. */
static int names_finish(namelist *l, int rc, emudev_image_info *info) {
    if (rc == 0) names_give(l, info);
    else names_free(l);
    return rc;
}

/* ------------------------------------------------------------ ELF skeleton */

typedef struct elf {
    const uint8_t *d;
    uint64_t n;
    uint16_t machine, type;
    uint64_t shoff, shnum;      /* shnum after extended numbering */
    uint64_t phoff, phnum;
    const uint8_t *names;       /* section name table, NULL if none */
    uint64_t names_size;
} elf;

typedef struct shdr {
    uint32_t name, type;
    uint64_t offset, size;
    uint32_t link;
    uint64_t entsize;
} shdr;

typedef struct esym {
    uint32_t name;
    uint8_t info, other;
    uint16_t shndx;
    uint64_t value;
} esym;

/* Section i; the caller guarantees i < shnum (the table is in bounds). */
static void elf_shdr(const elf *e, uint64_t i, shdr *s) {
    const uint8_t *p = e->d + e->shoff + i * ELF_SHDR_SIZE;
    s->name = rd32(p);
    s->type = rd32(p + 4);
    s->offset = rd64(p + 24);
    s->size = rd64(p + 32);
    s->link = rd32(p + 40);
    s->entsize = rd64(p + 56);
}

/* The section's bytes, NULL if it has none in the file.  Every section was
 * checked by elf_open; checking again keeps each read locally provable. */
static const uint8_t *elf_bytes(const elf *e, const shdr *s) {
    if (s->type == ELF_SHT_NOBITS || !within(e->n, s->offset, s->size)) return NULL;
    return e->d + s->offset;
}

static const char *elf_section_name(const elf *e, const shdr *s) {
    return e->names ? str_at(e->names, e->names_size, s->name) : NULL;
}

/* Validates the header and the extent of every table, section and segment.
 * 0: the skeleton is sound; 1: rejected (info says why). */
static int elf_open(elf *e, const uint8_t *d, size_t size, emudev_image_info *info) {
    memset(e, 0, sizeof *e);
    e->d = d;
    e->n = size;
    if (size < ELF_EHDR_SIZE) return reject(info, "truncated ELF header: %zu of %d bytes", size, ELF_EHDR_SIZE);
    if (d[4] == ELF_CLASS32) return reject(info, "32-bit ELF (ELFCLASS32): only 64-bit images are loadable");
    if (d[4] != ELF_CLASS64) return reject(info, "ELF class %u is neither 32- nor 64-bit", d[4]);
    if (d[5] == ELF_DATA_MSB)
        return reject(info, "big-endian ELF: CUDA and x86-64 images are little-endian");
    if (d[5] != ELF_DATA_LSB) return reject(info, "ELF data encoding %u is invalid", d[5]);
    if (d[6] != 1 || rd32(d + 20) != 1)
        return reject(info, "ELF version %u/%u is not 1 (EV_CURRENT)", d[6], rd32(d + 20));
    e->type = rd16(d + 16);
    e->machine = rd16(d + 18);
    if (e->machine != ELF_EM_X86_64 && e->machine != ELF_EM_CUDA)
        return reject(info, "ELF machine %u is neither x86-64 nor CUDA (e_machine %d or %d)", e->machine,
                      ELF_EM_X86_64, ELF_EM_CUDA);
    if (rd16(d + 52) < ELF_EHDR_SIZE)
        return reject(info, "ELF header size %u is smaller than an ELF64 header (%d)", rd16(d + 52), ELF_EHDR_SIZE);

    e->phoff = rd64(d + 32);
    e->shoff = rd64(d + 40);
    uint16_t phentsize = rd16(d + 54), shentsize = rd16(d + 58);
    e->phnum = rd16(d + 56);
    e->shnum = rd16(d + 60);
    uint64_t shstrndx = rd16(d + 62);

    /* Section header table.  Counts that do not fit the 16-bit fields live
     * in section 0 (extended numbering), so section 0 is read first. */
    if (e->shoff == 0) {
        e->shnum = 0;
        shstrndx = 0;
        if (e->phnum == ELF_PN_XNUM)
            return reject(info, "extended program header count without a section header table");
    } else {
        if (shentsize != ELF_SHDR_SIZE)
            return reject(info, "section header entries of %u bytes, expected %d", shentsize, ELF_SHDR_SIZE);
        if (!within(size, e->shoff, ELF_SHDR_SIZE))
            return reject(info, "truncated section header table at offset %llu (image is %zu bytes)", (ull)e->shoff,
                          size);
        const uint8_t *s0 = d + e->shoff;
        if (e->shnum == 0) e->shnum = rd64(s0 + 32);
        if (e->phnum == ELF_PN_XNUM) e->phnum = rd32(s0 + 44);
        if (shstrndx == ELF_SHN_XINDEX) shstrndx = rd32(s0 + 40);
        if (e->shnum > (size - e->shoff) / ELF_SHDR_SIZE)
            return reject(info,
                          "truncated section header table at offset %llu: %llu sections of %d bytes, image is %zu bytes",
                          (ull)e->shoff, (ull)e->shnum, ELF_SHDR_SIZE, size);
    }

    /* Program header table and the file extent of every segment. */
    if (e->phnum) {
        if (phentsize != ELF_PHDR_SIZE)
            return reject(info, "program header entries of %u bytes, expected %d", phentsize, ELF_PHDR_SIZE);
        if (e->phoff > size || e->phnum > (size - e->phoff) / ELF_PHDR_SIZE)
            return reject(info,
                          "truncated program header table at offset %llu: %llu entries of %d bytes, image is %zu bytes",
                          (ull)e->phoff, (ull)e->phnum, ELF_PHDR_SIZE, size);
        for (uint64_t i = 0; i < e->phnum; i++) {
            const uint8_t *p = d + e->phoff + i * ELF_PHDR_SIZE;
            uint64_t off = rd64(p + 8), filesz = rd64(p + 32);
            if (rd32(p) != ELF_PT_NULL && !within(size, off, filesz))
                return reject(info, "segment %llu (offset %llu, %llu bytes) extends past the end of the image (%zu bytes)",
                              (ull)i, (ull)off, (ull)filesz, size);
        }
    }

    /* The file extent of every section (section 0 holds counts, not data). */
    for (uint64_t i = 1; i < e->shnum; i++) {
        shdr s;
        elf_shdr(e, i, &s);
        if (s.type != ELF_SHT_NULL && s.type != ELF_SHT_NOBITS && !within(size, s.offset, s.size))
            return reject(info, "section %llu (offset %llu, %llu bytes) extends past the end of the image (%zu bytes)",
                          (ull)i, (ull)s.offset, (ull)s.size, size);
    }

    if (shstrndx != 0) {
        if (shstrndx >= e->shnum)
            return reject(info, "section name table index %llu, but there are %llu sections", (ull)shstrndx,
                          (ull)e->shnum);
        shdr s;
        elf_shdr(e, shstrndx, &s);
        const uint8_t *b = elf_bytes(e, &s);
        if (s.type != ELF_SHT_STRTAB || !b)
            return reject(info, "section name table (section %llu) is not a string table", (ull)shstrndx);
        e->names = b;
        e->names_size = s.size;
    }
    return 0;
}

/* A symbol table section and its string table. */
typedef struct symtab {
    const uint8_t *syms;
    uint64_t count;
    const uint8_t *str;
    uint64_t strsize;
} symtab;

static int elf_symtab(const elf *e, uint64_t idx, const shdr *s, symtab *t, emudev_image_info *info) {
    if (s->entsize != ELF_SYM_SIZE)
        return reject(info, "symbol table (section %llu) has entries of %llu bytes, expected %d", (ull)idx,
                      (ull)s->entsize, ELF_SYM_SIZE);
    if (s->size % ELF_SYM_SIZE)
        return reject(info, "symbol table (section %llu) of %llu bytes is not a whole number of entries", (ull)idx,
                      (ull)s->size);
    const uint8_t *b = elf_bytes(e, s);
    if (!b) return reject(info, "symbol table (section %llu) is not in the file", (ull)idx);
    if (s->link == 0 || s->link >= e->shnum)
        return reject(info, "symbol table (section %llu) names string table %u, but there are %llu sections", (ull)idx,
                      s->link, (ull)e->shnum);
    shdr st;
    elf_shdr(e, s->link, &st);
    const uint8_t *sb = elf_bytes(e, &st);
    if (st.type != ELF_SHT_STRTAB || !sb)
        return reject(info, "symbol table (section %llu) names section %u, which is not a string table", (ull)idx,
                      s->link);
    t->syms = b;
    t->count = s->size / ELF_SYM_SIZE;
    t->str = sb;
    t->strsize = st.size;
    return 0;
}

static void elf_sym(const symtab *t, uint64_t j, esym *y) {
    const uint8_t *p = t->syms + j * ELF_SYM_SIZE;
    y->name = rd32(p);
    y->info = p[4];
    y->other = p[5];
    y->shndx = rd16(p + 6);
    y->value = rd64(p + 8);
}

/* ------------------------------------------------------------ CUBIN */

/* Whether a .nv.compat section marks the code arch-specific ("a" target). */
static int cubin_compat_arch_specific(const uint8_t *p, uint64_t n) {
    uint64_t i = 0;
    while (n - i >= 4) {
        uint8_t format = p[i], attr = p[i + 1];
        uint16_t v = rd16(p + i + 2);
        i += 4;
        if (format == 4) {              /* a sized value: v bytes follow */
            if (v > n - i) return 0;
            i += v;
        } else if (attr == CUDA_COMPAT_ARCH_SPECIFIC) {
            return (v & 0xff) != 0;
        }
    }
    return 0;
}

/* The kernel entries of one symbol table (section idx) into l: STT_FUNC
 * symbols with the entry flag, each in its own section .text.<name>.
 * 0, 1 rejected, -1 out of memory. */
static int cubin_symtab_entries(const elf *e, uint64_t idx, const shdr *s, namelist *l, emudev_image_info *info) {
    symtab t;
    if (elf_symtab(e, idx, s, &t, info)) return 1;
    for (uint64_t j = 1; j < t.count; j++) {
        esym y;
        elf_sym(&t, j, &y);
        if ((y.info & 0xf) != ELF_STT_FUNC || !(y.other & CUDA_STO_ENTRY)) continue;
        const char *nm = str_at(t.str, t.strsize, y.name);
        if (!nm || !*nm)
            return reject(info, "kernel symbol %llu of section %llu has no name inside its string table", (ull)j,
                          (ull)idx);
        shdr ks;
        const char *ksn = NULL;
        if (y.shndx != 0 && y.shndx < ELF_SHN_LORESERVE && y.shndx < e->shnum) {
            elf_shdr(e, y.shndx, &ks);
            ksn = elf_section_name(e, &ks);
        }
        if (!ksn || strncmp(ksn, ".text.", 6) != 0 || strcmp(ksn + 6, nm) != 0)
            return reject(info, "kernel %.64s is not in a section .text.%.64s (section index %u)", nm, nm,
                          (unsigned)y.shndx);
        if (names_add(l, nm, strlen(nm))) return -1;
    }
    return 0;
}

/* 0 classified as CUBIN, 1 rejected, -1 out of memory. */
static int inspect_cubin(const elf *e, emudev_image_info *info) {
    uint8_t abiver = e->d[8];
    uint32_t flags = rd32(e->d + 48);
    int sm, specific;
    if (abiver == 7) {
        sm = CUDA_EF_SM_V1(flags);
        specific = (flags & CUDA_EF_ACCEL_V1) != 0;
    } else if (abiver == 8) {
        sm = CUDA_EF_SM_V2(flags);
        specific = (flags & CUDA_EF_ACCEL_V2) != 0;
    } else {
        return reject(info, "CUDA ELF ABI version %u is neither 7 nor 8", abiver);
    }
    /* sm_20 is the oldest architecture CUDA's ELF format ever described. */
    if (sm < 20)
        return reject(info, "e_flags 0x%08x (CUDA ELF ABI %u) give sm_%d, which is no NVIDIA architecture", flags,
                      abiver, sm);
    if (!e->names) return reject(info, "CUBIN without a section name table");

    namelist l = {0};
    int rc = 0;
    for (uint64_t i = 1; i < e->shnum && rc == 0; i++) {
        shdr s;
        elf_shdr(e, i, &s);
        if (s.type == ELF_SHT_SYMTAB) {
            rc = cubin_symtab_entries(e, i, &s, &l, info);
        } else if (!specific && s.type != ELF_SHT_NOBITS) {
            const char *sn = elf_section_name(e, &s);
            const uint8_t *b = elf_bytes(e, &s);
            if (sn && b && strcmp(sn, ".nv.compat") == 0) specific = cubin_compat_arch_specific(b, s.size);
        }
    }
    if (rc == 0) {
        info->kind = EMUDEV_IMAGE_CUBIN;
        info->sm = sm;
        if (specific)
            snprintf(info->why, sizeof info->why,
                     "arch-specific sm_%da: runs only on compute capability %d.%d exactly", sm, sm / 10, sm % 10);
    }
    return names_finish(&l, rc, info);
}

/* ------------------------------------------------------------ EMU */

/* Whether s[0..n) is a C identifier, as every extern "C" entry is.  It
 * keeps out what else ends in the suffix: an image built with
 * AddressSanitizer also exports `__odr_asan.<entry>__emu` indicators. */
static int c_identifier(const char *s, size_t n) {
    if (n == 0 || (s[0] >= '0' && s[0] <= '9')) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return 0;
    }
    return 1;
}

/* The file offset of `len` bytes at virtual address v, via PT_LOAD. */
static int emu_vaddr_offset(const elf *e, uint64_t v, uint64_t len, uint64_t *off) {
    for (uint64_t i = 0; i < e->phnum; i++) {
        const uint8_t *p = e->d + e->phoff + i * ELF_PHDR_SIZE;
        if (rd32(p) != ELF_PT_LOAD) continue;
        uint64_t poff = rd64(p + 8), vaddr = rd64(p + 16), filesz = rd64(p + 32);
        if (v < vaddr || !within(filesz, v - vaddr, len)) continue;
        uint64_t o = poff + (v - vaddr);
        if (!within(e->n, o, len)) continue;
        *off = o;
        return 0;
    }
    return -1;
}

/* The ABI version the prelude stamped into symbol y: an image of another
 * ABI would be refused by emu_image_load, so it is refused here. */
static int emu_abi_check(const elf *e, const esym *y, emudev_image_info *info) {
    uint64_t off;
    if (emu_vaddr_offset(e, y->value, 4, &off))
        return reject(info, EMU_ABI_SYMBOL " (address 0x%llx) is not in a loaded segment of the file", (ull)y->value);
    uint32_t abi = rd32(e->d + off);
    if (abi != BERTC_EMU_ABI_VERSION)
        return reject(info, "EMU image of ABI version %u; this device runs version %u", abi, BERTC_EMU_ABI_VERSION);
    return 0;
}

/* The kernels a dynamic symbol table (section idx) exports into l, and
 * whether it has the ABI symbol.  0, 1 rejected, -1 out of memory. */
static int emu_dynsym_entries(const elf *e, uint64_t idx, const shdr *s, namelist *l, int *have_abi,
                              emudev_image_info *info) {
    symtab t;
    if (elf_symtab(e, idx, s, &t, info)) return 1;
    for (uint64_t j = 1; j < t.count; j++) {
        esym y;
        elf_sym(&t, j, &y);
        unsigned bind = y.info >> 4, type = y.info & 0xf;
        if (y.shndx == 0 || (bind != ELF_STB_GLOBAL && bind != ELF_STB_WEAK)) continue;
        const char *nm = str_at(t.str, t.strsize, y.name);
        if (!nm) return reject(info, "dynamic symbol %llu has no name inside its string table", (ull)j);
        size_t len = strlen(nm), sl = sizeof EMU_SUFFIX - 1;
        if (strcmp(nm, EMU_ABI_SYMBOL) == 0) {
            if (emu_abi_check(e, &y, info)) return 1;
            *have_abi = 1;
        } else if (type == ELF_STT_OBJECT && bind == ELF_STB_GLOBAL && len > sl &&
                   strcmp(nm + len - sl, EMU_SUFFIX) == 0 && c_identifier(nm, len - sl)) {
            if (names_add(l, nm, len - sl)) return -1;
        }
    }
    return 0;
}

static int inspect_emu(const elf *e, emudev_image_info *info) {
    if (e->type != ELF_ET_DYN)
        return reject(info, "x86-64 ELF of type %u is not a shared object (ET_DYN = 3)", e->type);
    namelist l = {0};
    int have_abi = 0, have_dynsym = 0, rc = 0;
    for (uint64_t i = 1; i < e->shnum && rc == 0; i++) {
        shdr s;
        elf_shdr(e, i, &s);
        if (s.type != ELF_SHT_DYNSYM) continue;
        have_dynsym = 1;
        rc = emu_dynsym_entries(e, i, &s, &l, &have_abi, info);
    }
    if (rc == 0 && !have_dynsym)
        rc = reject(info, "x86-64 shared object without a dynamic symbol table");
    else if (rc == 0 && !have_abi)
        rc = reject(info, "x86-64 shared object without the symbol " EMU_ABI_SYMBOL
                          " (not a kernel image built with cuda_prelude.h)");
    if (rc == 0) {
        info->kind = EMUDEV_IMAGE_EMU;
        info->sm = 0;
    }
    return names_finish(&l, rc, info);
}

/* ------------------------------------------------------------ PTX */

/* Length of the text before its NUL (or the whole buffer), or 0 if the
 * bytes are not text: control characters other than white space.  Bytes
 * >= 0x80 are allowed (UTF-8 in comments and file names). */
static size_t ptx_text_length(const uint8_t *d, size_t n) {
    size_t len = 0;
    for (; len < n && d[len]; len++) {
        uint8_t c = d[len];
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f') return 0;
        if (c == 0x7f) return 0;
    }
    return len;
}

typedef struct ptxlex {
    const char *p, *end;
} ptxlex;

static int ptx_is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int ptx_is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int ptx_is_digit(char c) { return c >= '0' && c <= '9'; }
/* PTX identifiers: [a-zA-Z][a-zA-Z0-9_$]* or [_$%][a-zA-Z0-9_$]+ */
static int ptx_is_follow(char c) { return ptx_is_alpha(c) || ptx_is_digit(c) || c == '_' || c == '$'; }

/* Skips white space and comments (an unterminated block comment ends the text). */
static void ptx_skip(ptxlex *x) {
    for (;;) {
        while (x->p < x->end && ptx_is_space(*x->p)) x->p++;
        if (x->end - x->p >= 2 && x->p[0] == '/' && x->p[1] == '/') {
            while (x->p < x->end && *x->p != '\n') x->p++;
        } else if (x->end - x->p >= 2 && x->p[0] == '/' && x->p[1] == '*') {
            x->p += 2;
            while (x->end - x->p >= 2 && !(x->p[0] == '*' && x->p[1] == '/')) x->p++;
            x->p = x->end - x->p >= 2 ? x->p + 2 : x->end;
        } else {
            return;
        }
    }
}

/* A word of [a-zA-Z0-9_$] at the cursor; its length (0 if none). */
static size_t ptx_word(ptxlex *x, const char **w) {
    *w = x->p;
    while (x->p < x->end && ptx_is_follow(*x->p)) x->p++;
    return (size_t)(x->p - *w);
}

/* Parses "sm_<digits>[a|f]"; the number, or -1 if the word is not one. */
static int ptx_sm_number(const char *w, size_t n, char *suffix) {
    if (n < 4 || memcmp(w, "sm_", 3) != 0) return -1;
    size_t i = 3;
    int v = 0;
    for (; i < n && ptx_is_digit(w[i]); i++) {
        if (i - 3 >= 3) return -1;
        v = v * 10 + (w[i] - '0');
    }
    if (i == 3) return -1;
    *suffix = 0;
    if (i < n && (w[i] == 'a' || w[i] == 'f')) *suffix = w[i++];
    return i == n ? v : -1;
}

/* What the directives of a PTX text say. */
typedef struct ptxmodule {
    int have_version;
    int sm;              /* of .target; -1 until one is seen */
    char suffix;         /* of .target: 'a', 'f' or 0 */
    namelist names;      /* of every .entry */
} ptxmodule;

/* A string literal at the cursor (.file names): skipped whole. */
static void ptx_skip_string(ptxlex *x) {
    x->p++;
    while (x->p < x->end && *x->p != '"' && *x->p != '\n') x->p += (*x->p == '\\' && x->end - x->p >= 2) ? 2 : 1;
    if (x->p < x->end) x->p++;
}

/* .target sm_XY[a|f] [, texmode_independent] [, debug] ...: the sm_ word,
 * in any position.  0, or 1 rejected. */
static int ptx_directive_target(ptxlex *x, size_t at, ptxmodule *m, emudev_image_info *info) {
    if (m->sm >= 0) return reject(info, "PTX with a second .target directive at byte %zu", at);
    for (;;) {
        ptx_skip(x);
        const char *t;
        size_t tn = ptx_word(x, &t);
        if (tn >= 3 && memcmp(t, "sm_", 3) == 0) {
            char sfx;
            int v = ptx_sm_number(t, tn, &sfx);
            if (v < 10) return reject(info, "PTX .target %.*s is not an architecture", (int)(tn > 32 ? 32 : tn), t);
            m->sm = v;
            m->suffix = sfx;
        }
        ptx_skip(x);
        if (tn && x->p < x->end && *x->p == ',') {
            x->p++;
            continue;
        }
        break;
    }
    if (m->sm < 0) return reject(info, "PTX .target at byte %zu names no sm_ architecture", at);
    return 0;
}

/* .entry <identifier>: the name goes to m's list.  0, 1 rejected, -1 out of memory. */
static int ptx_directive_entry(ptxlex *x, size_t at, ptxmodule *m, emudev_image_info *info) {
    ptx_skip(x);
    const char *nm = x->p;
    int starts = x->p < x->end && (ptx_is_alpha(*x->p) || *x->p == '_' || *x->p == '$' || *x->p == '%');
    if (starts) x->p++;
    while (starts && x->p < x->end && ptx_is_follow(*x->p)) x->p++;
    size_t nn = (size_t)(x->p - nm);
    if (nn == 0 || (nn == 1 && !ptx_is_alpha(*nm))) return reject(info, "PTX .entry at byte %zu has no name", at);
    return names_add(&m->names, nm, nn) ? -1 : 0;
}

/* The directive at the cursor ('.' and a letter, at byte `at` of the text):
 * .version, .target and .entry are read, any other is passed over. */
static int ptx_directive(ptxlex *x, size_t at, ptxmodule *m, emudev_image_info *info) {
    x->p++;
    const char *w;
    size_t wn = ptx_word(x, &w);
    if (wn == 7 && memcmp(w, "version", 7) == 0) {
        ptx_skip(x);
        if (x->p >= x->end || !ptx_is_digit(*x->p))
            return reject(info, "PTX .version at byte %zu is not followed by a version number", at);
        m->have_version = 1;
        return 0;
    }
    if (wn == 6 && memcmp(w, "target", 6) == 0) return ptx_directive_target(x, at, m, info);
    if (wn == 5 && memcmp(w, "entry", 5) == 0) return ptx_directive_entry(x, at, m, info);
    return 0;
}

/* Every directive of the text, past comments, string literals and other words. */
static int ptx_scan(const char *text, size_t len, ptxmodule *m, emudev_image_info *info) {
    ptxlex x = {text, text + len};
    while (x.p < x.end) {
        ptx_skip(&x);
        if (x.p >= x.end) break;
        if (*x.p == '"') {
            ptx_skip_string(&x);
            continue;
        }
        if (*x.p != '.' || x.end - x.p < 2 || !ptx_is_alpha(x.p[1])) {
            const char *w;
            if (!ptx_word(&x, &w)) x.p++;
            continue;
        }
        int rc = ptx_directive(&x, (size_t)(x.p - text), m, info);
        if (rc) return rc;
    }
    return 0;
}

static int inspect_ptx(const char *text, size_t len, emudev_image_info *info) {
    ptxmodule m = {.sm = -1};
    int rc = ptx_scan(text, len, &m, info);
    if (rc == 0 && !m.have_version)
        rc = reject(info, "not an ELF file or PTX text (text without a .version directive)");
    else if (rc == 0 && m.sm < 0)
        rc = reject(info, "PTX without a .target directive");
    if (rc == 0) {
        int sm = m.sm;
        info->kind = EMUDEV_IMAGE_PTX;
        info->sm = sm;
        if (m.suffix == 'a')
            snprintf(info->why, sizeof info->why,
                     "arch-specific .target sm_%da: runs only on compute capability %d.%d exactly", sm, sm / 10,
                     sm % 10);
        else if (m.suffix == 'f')
            snprintf(info->why, sizeof info->why,
                     "family-specific .target sm_%df: runs only on compute capability %d.x, minor >= %d", sm, sm / 10,
                     sm % 10);
    }
    return names_finish(&m.names, rc, info);
}

/* ------------------------------------------------------------ public */

int emudev_image_inspect(const void *data, size_t size, emudev_image_info *info) {
    if (!info) return -1;
    memset(info, 0, sizeof *info);
    info->kind = EMUDEV_IMAGE_UNKNOWN;
    if (!data) {
        reject(info, size ? "no image (NULL pointer)" : "empty image (NULL, 0 bytes)");
        return 0;
    }
    if (size == 0) {
        reject(info, "empty image (0 bytes)");
        return 0;
    }
    const uint8_t *d = data;
    int rc;
    if (size >= 4 && memcmp(d, "\177ELF", 4) == 0) {
        elf e;
        rc = elf_open(&e, d, size, info);
        if (rc == 0) rc = e.machine == ELF_EM_CUDA ? inspect_cubin(&e, info) : inspect_emu(&e, info);
    } else {
        size_t len = ptx_text_length(d, size);
        rc = len ? inspect_ptx((const char *)d, len, info) : reject(info, "not an ELF file or PTX text");
    }
    if (rc < 0) {
        memset(info, 0, sizeof *info);
        info->kind = EMUDEV_IMAGE_UNKNOWN;
        snprintf(info->why, sizeof info->why, "out of memory");
        return -1;
    }
    if (info->kind == EMUDEV_IMAGE_UNKNOWN) {
        info->sm = 0;
        info->nentries = 0;
        info->entries = NULL;
    }
    return 0;
}

void emudev_image_info_free(emudev_image_info *info) {
    if (!info) return;
    for (int i = 0; i < info->nentries && info->entries; i++) free(info->entries[i]);
    free(info->entries);
    memset(info, 0, sizeof *info);
    info->kind = EMUDEV_IMAGE_UNKNOWN;
}

/*
 * The compatibility rules, from the CUDA C++ Programming Guide (section
 * "Binary Compatibility" / CUDA 13's "1.3 The CUDA platform") and the PTX
 * ISA:
 *
 *  - CUBIN: "binary compatibility is guaranteed from one minor revision to
 *    the next one, but not from one minor revision to the previous one or
 *    across major revisions": a cubin for X.y runs on X.z with z >= y only.
 *    (LLVM's offload plugin applies the same test before cuModuleLoadData:
 *    Major == ImageMajor && Minor >= ImageMinor.)
 *  - PTX: "PTX code produced for some specific compute capability can
 *    always be compiled to binary code of greater or equal compute
 *    capability" — the driver JIT-compiles it for any capability >= its
 *    .target.
 *  - Targets with the "a" suffix "include architecture-accelerated features
 *    that are supported on the specified architecture only ... PTX code
 *    generated for such targets cannot be run on later generation devices"
 *    (PTX ISA, target directive); "f" targets run within their family.
 *    The `sm` argument cannot say so (see the top of this file).
 *
 * Compute capability 0.0 is the emulated device's own "emu" arch: only EMU
 * images run there, and EMU images run nowhere else.  A minor above 9
 * cannot be written as sm_XY and is refused.
 */
int emudev_image_runs_on(emudev_image_kind kind, int sm, int major, int minor) {
    if (major < 0 || minor < 0 || minor > 9) return 0;
    int emu = major == 0 && minor == 0;
    switch (kind) {
    case EMUDEV_IMAGE_EMU:
        return emu;
    case EMUDEV_IMAGE_CUBIN:
        return !emu && sm > 0 && sm / 10 == major && minor >= sm % 10;
    case EMUDEV_IMAGE_PTX:
        return !emu && sm > 0 && major <= (INT_MAX - 9) / 10 && major * 10 + minor >= sm;
    default:
        return 0;
    }
}
