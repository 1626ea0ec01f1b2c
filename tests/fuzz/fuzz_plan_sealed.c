/*
 * fuzz_plan_sealed — the plan reader past its checksums: the mutated input
 * gets every section's CRC-32C and the header's recomputed before it is
 * read, so the mutations reach the record checks and the launch contract
 * (a checksum-valid plan must never crash the reader).  A plan that reads
 * is then checked against the contract once more here: every launch's
 * arguments inside their buffers, as plan_kernels.h defines them.
 */
#include <string.h>

#include "crc32c.h"
#include "fuzz.h"
#include "plan.h"
#include "plan_format.h"
#include "plan_kernels.h"

static uint32_t fuzz_ld32(const uint8_t *b) { return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24; }
static uint64_t fuzz_ld64(const uint8_t *b) { return (uint64_t)fuzz_ld32(b) | (uint64_t)fuzz_ld32(b + 4) << 32; }
static void fuzz_st32(uint8_t *b, uint32_t v) {
    for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
}

/* Recomputes the CRCs a mutation broke, where the table lets us find them. */
static void fuzz_seal(uint8_t *b, size_t len) {
    if (len < PLAN_HEADER_SIZE) return;
    uint64_t toff = fuzz_ld64(b + PLAN_HDR_TABLE_OFFSET);
    uint32_t count = fuzz_ld32(b + PLAN_HDR_SECTION_COUNT);
    if (count > PLAN_MAX_SECTIONS || toff > len || (uint64_t)count * PLAN_SECTION_ENTRY_SIZE > len - toff) return;
    for (uint32_t i = 0; i < count; i++) {
        uint8_t *e = b + toff + (uint64_t)i * PLAN_SECTION_ENTRY_SIZE;
        uint64_t off = fuzz_ld64(e + 8), size = fuzz_ld64(e + 16);
        if (off <= len && size <= len - off) fuzz_st32(e + 24, crc32c_update(0, b + off, (size_t)size));
    }
    fuzz_st32(b + PLAN_HDR_CRC, 0);
    uint32_t crc = crc32c_update(0, b, PLAN_HEADER_SIZE);
    crc = crc32c_update(crc, b + toff, (size_t)count * PLAN_SECTION_ENTRY_SIZE);
    fuzz_st32(b + PLAN_HDR_CRC, crc);
}

static uint64_t fuzz_buffer(const plan *p, const sched_bucket *b, sched_buf buf) {
    return buf == SCHED_BUF_WEIGHTS    ? p->weights_size
           : buf == SCHED_BUF_ARENA    ? b->arena_bytes
           : buf == SCHED_BUF_REQUEST  ? kernel_request_bytes(b->seq_len)
           : buf == SCHED_BUF_COUNTERS ? b->counter_bytes
                                       : 0;
}

/* Every device has one step list, and every list has variant 0's buckets. */
static void fuzz_check_variants(const plan *p) {
    int nv = plan_variant_count(p);
    fuzz_require(plan_variant_buckets(p, 0)->cc_min == 0 && plan_variant_buckets(p, nv - 1)->cc_max == PLAN_CC_MAX,
                 "a capability without a step list in a plan that read");
    for (int v = 1; v < nv; v++) {
        const sched_bucket *a = plan_variant_buckets(p, v - 1), *b = plan_variant_buckets(p, v);
        fuzz_require(b->cc_min == a->cc_max + 1, "step lists' capability ranges overlap or leave a gap");
        for (int i = 0; i < p->nbuckets; i++)
            fuzz_require(b[i].seq_len == p->buckets[i].seq_len && b[i].max_seqs == p->buckets[i].max_seqs &&
                             b[i].cc_min == b->cc_min && b[i].cc_max == b->cc_max,
                         "a step list with other buckets in a plan that read");
        fuzz_require(plan_variant_for(p, b->cc_min / 10, b->cc_min % 10) == v, "a capability picks another list");
    }
}

/* A device binds every kernel its step list launches from the image it
 * loads: checked at the capabilities where either choice can change. */
static void fuzz_check_carried(const plan *p) {
    int ccs[3 * 64 + 1], n = 0;
    ccs[n++] = 0;
    for (int i = 0; i < p->nimages && n + 3 <= (int)(sizeof ccs / sizeof ccs[0]); i++) {
        int sm = plan_arch_number(p->images[i].arch, p->images[i].kind == PLAN_IMAGE_PTX ? "compute_" : "sm_");
        if (sm < 0 || sm > 6000) continue;
        ccs[n++] = sm, ccs[n++] = sm + 1, ccs[n++] = (sm / 10 + 1) * 10;
    }
    for (int c = 0; c < n; c++) {
        char arch[24];
        if (ccs[c]) snprintf(arch, sizeof arch, "sm_%d%d", ccs[c] / 10, ccs[c] % 10);
        else snprintf(arch, sizeof arch, "emu");
        int i = plan_image_select(p, arch, ccs[c] / 10, ccs[c] % 10, NULL, 0), v = plan_variant_for(p, ccs[c] / 10, ccs[c] % 10);
        if (i < 0) continue;
        const sched_bucket *bs = plan_variant_buckets(p, v);
        for (int b = 0; b < p->nbuckets; b++)
            for (int s = 0; s < bs[b].nsteps; s++)
                fuzz_require(bs[b].steps[s].kind != SCHED_STEP_KERNEL || plan_image_carries(p, i, bs[b].steps[s].launch.kernel),
                             "a device's image lacks a kernel of its step list in a plan that read");
    }
}

static void fuzz_check_launches(const plan *p) {
    for (int bi = 0; bi < plan_variant_count(p) * p->nbuckets; bi++) { /* every variant's */
        const sched_bucket *b = &p->buckets[bi];
        for (int s = 0; s < b->nsteps; s++) {
            if (b->steps[s].kind != SCHED_STEP_KERNEL) continue;
            const sched_launch *l = &b->steps[s].launch;
            kernel_arg a[KERNEL_MAX_ARGS];
            kernel_args_of(&p->kernels[l->kernel].spec, b->seq_len, a);
            for (int i = 0; i < l->nargs; i++) {
                if (a[i].use == KERNEL_ARG_UNUSED) continue;
                fuzz_require((a[i].use == KERNEL_ARG_COUNTERS) == (l->args[i].buf == SCHED_BUF_COUNTERS),
                             "arrival counters outside the COUNTERS buffer, or another argument in it");
                uint64_t size = fuzz_buffer(p, b, l->args[i].buf);
                fuzz_require(l->args[i].offset <= size && a[i].bytes <= size - l->args[i].offset,
                             "a launch argument outside its buffer in a plan that read");
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *b = malloc(size ? size : 1);
    if (!b) return 0;
    memcpy(b, data, size);
    fuzz_seal(b, size);
    plan p;
    diag d;
    diag_init(&d);
    if (plan_read_memory(&p, b, size, "fuzz.plan", &d) == 0) {
        fuzz_check_launches(&p);
        fuzz_check_variants(&p);
        fuzz_check_carried(&p);
        plan_free(&p);
    }
    free(b);
    return 0;
}
