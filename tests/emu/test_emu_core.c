/*
 * test_emu_core — the emulated device's execution core against plain C.
 *
 * The kernels below are written for this test (CUDA text, as a GPU would
 * take it) and exercise one mechanism each: shared memory and
 * __syncthreads, every shuffle flavour with widths and a partial warp,
 * votes, atomics from many blocks, dynamic shared memory and its poison
 * fill, threads that return before a barrier, multi-dimensional indices and
 * scalar arguments, and the 16-bit float conversions (exhaustively for
 * half -> float, against the compiler's own _Float16 and an independent
 * bfloat16 rounding written here).  Every result is compared with a C
 * reference under every schedule.  Then the rules: a kernel with a missing
 * __syncthreads must give a wrong answer under a warp-greedy schedule, a
 * deadlocking kernel, a divergent barrier, a shuffle naming an exited lane
 * and __trap must come back as errors (not hang or crash), bad launch
 * configurations must be refused, and cp.async must land only when its
 * thread waits for its group (a read before that sees 0xff bytes).  It ends by measuring the cost of a fiber
 * switch and of a launch (printed, not judged).
 *
 * All kernels go into three units compiled in parallel (g++ dominates the
 * run time): two written here, and the faulting kernels (k_trap,
 * k_divergent) this test shares with test_emudev_driver
 * (support/kimage.c).  Test data are random (BERTC_TEST_SEED replays them)
 * and never all zeros.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "kimage.h"
#include "emu_build.h"
#include "emu.h"

static const char core_src[] =
    "#include <cuda_fp16.h>\n"
    "\n"
    "extern \"C\" __global__ void k_block_sum(float *out, const float *in) {\n"
    "    __shared__ float buf[1024];\n"
    "    unsigned t = threadIdx.x;\n"
    "    buf[t] = in[blockIdx.x * blockDim.x + t];\n"
    "    __syncthreads();\n"
    "    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n"
    "        if (t < s) buf[t] += buf[t + s];\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (t == 0) out[blockIdx.x] = buf[0];\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_block_sum)\n"
    "\n"
    "extern \"C\" __global__ void k_warp_ops(int *xsum, int *down, int *scan, int *bcast, int *seg,\n"
    "                                       const int *in) {\n"
    "    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    unsigned lane = threadIdx.x % 32;\n"
    "    int v = in[g], x = v, d = v, s = v, q = v;\n"
    "    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);\n"
    "    for (unsigned o = 16; o > 0; o >>= 1) d += __shfl_down_sync(0xffffffffu, d, o);\n"
    "    for (unsigned o = 1; o < 32; o <<= 1) {\n"
    "        int n = __shfl_up_sync(0xffffffffu, s, o);\n"
    "        if (lane >= o) s += n;\n"
    "    }\n"
    "    for (int o = 4; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o, 8);\n"
    "    xsum[g] = x; down[g] = d; scan[g] = s; seg[g] = q;\n"
    "    bcast[g] = __shfl_sync(0xffffffffu, v * 3, (int)(lane * 7 + 3));\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_warp_ops)\n"
    "\n"
    "extern \"C\" __global__ void k_partial(int *seg16, int *far, const int *in) {\n"
    "    unsigned t = threadIdx.x;\n"
    "    int q = in[t];\n"
    "    for (int o = 8; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o, 16);\n"
    "    seg16[t] = q;\n"
    "    far[t] = __shfl_sync(0xffffffffu, 5, 20);\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_partial)\n"
    "\n"
    "extern \"C\" __global__ void k_vote(unsigned *ballot, int *any, int *all, const int *in) {\n"
    "    unsigned t = threadIdx.x;\n"
    "    bool p = in[t] > 0;\n"
    "    ballot[t] = __ballot_sync(0xffffffffu, p);\n"
    "    any[t] = __any_sync(0xffffffffu, p);\n"
    "    all[t] = __all_sync(0xffffffffu, p);\n"
    "    __syncwarp();\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_vote)\n"
    "\n"
    "struct trio { float a; int b; unsigned short c; };\n"
    "extern \"C\" __global__ void k_gather(int *ok, const float *in) {\n"
    "    unsigned t = threadIdx.x, lane = t % 32, base = t - lane;\n"
    "    trio mine = {in[t], (int)t * 3, (unsigned short)(t + 7)};\n"
    "    trio all[32];\n"
    "    unsigned mask = lane < 16 ? 0x0000ffffu : 0xffff0000u;\n"
    "    bertc_emu_warp_allgather(mask, &mine, all, (unsigned)sizeof(trio));\n"
    "    int good = 1;\n"
    "    for (unsigned i = 0; i < 32; i++) {\n"
    "        bool part = ((mask >> i) & 1u) != 0;\n"
    "        if (part) good &= all[i].a == in[base + i] && all[i].b == (int)(base + i) * 3 &&\n"
    "                          all[i].c == (unsigned short)(base + i + 7);\n"
    "        else good &= all[i].b == -1 && all[i].c == 0xffff;\n"
    "    }\n"
    "    ok[t] = good;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_gather)\n"
    "\n"
    "extern \"C\" __global__ void k_atomics(int *hist, float *fsum, int *imax, int *casmax,\n"
    "                                      unsigned long long *usum, const int *in, const int *n,\n"
    "                                      const int *nbins) {\n"
    "    unsigned stride = gridDim.x * blockDim.x;\n"
    "    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)*n; i += stride) {\n"
    "        int v = in[i];\n"
    "        atomicAdd(&hist[v % *nbins], 1);\n"
    "        atomicAdd(fsum, (float)(v % 8));\n"
    "        atomicMax(imax, v);\n"
    "        atomicAdd(usum, (unsigned long long)v);\n"
    "        int old = *casmax;\n"
    "        while (old < v) {\n"
    "            int prev = atomicCAS(casmax, old, v);\n"
    "            if (prev == old) break;\n"
    "            old = prev;\n"
    "        }\n"
    "    }\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_atomics)\n"
    "\n"
    "extern \"C\" __global__ void k_dyn_smem(float *out, unsigned *first, const float *in) {\n"
    "    BERTC_DYNAMIC_SMEM(float, s);\n"
    "    unsigned t = threadIdx.x, n = blockDim.x, g = blockIdx.x * n + t;\n"
    "    first[g] = __float_as_uint(s[n + t]);\n"
    "    s[n + t] = in[g];\n"
    "    __syncthreads();\n"
    "    out[g] = s[n + (n - 1 - t)];\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_dyn_smem)\n"
    "\n"
    "extern \"C\" __global__ void k_early_exit(float *out, const float *in, const int *n) {\n"
    "    __shared__ float buf[1024];\n"
    "    unsigned t = threadIdx.x;\n"
    "    if ((int)t >= *n) return;\n"
    "    buf[t] = in[t] * 2.0f;\n"
    "    __syncthreads();\n"
    "    float mine = buf[(t + 1) % (unsigned)*n];\n"
    "    __syncthreads();\n"
    "    buf[t] = mine;\n"
    "    __syncthreads();\n"
    "    if (t == 0) {\n"
    "        float s = 0.0f;\n"
    "        for (int i = 0; i < *n; i++) s += buf[i];\n"
    "        out[0] = s;\n"
    "    }\n"
    "    out[1 + t] = mine;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_early_exit)\n"
    "\n"
    "extern \"C\" __global__ void k_racy(float *out, const float *in, const int *with_sync) {\n"
    "    __shared__ float buf[1024];\n"
    "    unsigned t = threadIdx.x, n = blockDim.x;\n"
    "    float x = in[t] * 2.0f;\n"
    "    buf[t] = x;\n"
    "    float nb = __shfl_xor_sync(0xffffffffu, x, 1);\n"
    "    if (*with_sync) __syncthreads();\n"
    "    out[t] = buf[n - 1 - t] + nb;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_racy)\n"
    "\n"
    "extern \"C\" __global__ void k_deadlock(int *out) {\n"
    "    if (threadIdx.x == 0) __syncthreads();\n"
    "    else __syncwarp();\n"
    "    out[threadIdx.x] = 1;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_deadlock)\n"
    "\n"
    "extern \"C\" __global__ void k_exited_lane(int *out) {\n"
    "    if (threadIdx.x == 5) return;\n"
    "    out[threadIdx.x] = __shfl_sync(0xffffffffu, (int)threadIdx.x, 0);\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_exited_lane)\n"
    "\n"
    "extern \"C\" __global__ void k_block_order(unsigned *ticket, unsigned *order) {\n"
    "    unsigned bl = blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y;\n"
    "    if (threadIdx.x == 0) order[bl] = atomicAdd(ticket, 1u);\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_block_order)\n"
    "\n"
    "extern \"C\" __global__ void k_dims(unsigned *out, unsigned *dims, int scale, float fscale) {\n"
    "    unsigned tl = threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;\n"
    "    unsigned bl = blockIdx.x + blockIdx.y * gridDim.x + blockIdx.z * gridDim.x * gridDim.y;\n"
    "    unsigned nt = blockDim.x * blockDim.y * blockDim.z;\n"
    "    out[bl * nt + tl] = threadIdx.x | threadIdx.y << 4 | threadIdx.z << 8 | blockIdx.x << 12 |\n"
    "                       blockIdx.y << 16 | blockIdx.z << 20;\n"
    "    if (bl == 0 && tl == 0) {\n"
    "        dims[0] = blockDim.x; dims[1] = blockDim.y; dims[2] = blockDim.z;\n"
    "        dims[3] = gridDim.x; dims[4] = gridDim.y; dims[5] = gridDim.z;\n"
    "        dims[6] = (unsigned)scale; dims[7] = __float_as_uint(fscale); dims[8] = warpSize;\n"
    "    }\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_dims)\n"
    "\n"
    "extern \"C\" __global__ void k_layernorm(float *out, const float *in, const int *cols) {\n"
    "    __shared__ float part[32];\n"
    "    unsigned t = threadIdx.x, lane = t % 32, warp = t / 32, nw = blockDim.x / 32;\n"
    "    const float *x = in + (size_t)blockIdx.x * *cols;\n"
    "    float s = 0.0f;\n"
    "    for (int c = t; c < *cols; c += blockDim.x) s += x[c];\n"
    "    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);\n"
    "    if (lane == 0) part[warp] = s;\n"
    "    __syncthreads();\n"
    "    float mean = 0.0f;\n"
    "    for (unsigned w = 0; w < nw; w++) mean += part[w];\n"
    "    mean /= *cols;\n"
    "    __syncthreads();\n"
    "    float v = 0.0f;\n"
    "    for (int c = t; c < *cols; c += blockDim.x) v += (x[c] - mean) * (x[c] - mean);\n"
    "    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
    "    if (lane == 0) part[warp] = v;\n"
    "    __syncthreads();\n"
    "    float var = 0.0f;\n"
    "    for (unsigned w = 0; w < nw; w++) var += part[w];\n"
    "    float r = rsqrtf(var / *cols + 1e-5f);\n"
    "    for (int c = t; c < *cols; c += blockDim.x) out[(size_t)blockIdx.x * *cols + c] = (x[c] - mean) * r;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_layernorm)\n"
    "\n"
    "extern \"C\" __global__ void k_empty(int *x) { (void)x; }\n"
    "BERTC_KERNEL_EXPORT(k_empty)\n"
    "\n"
    "extern \"C\" __global__ void k_sync_loop(const int *iters) {\n"
    "    for (int i = 0; i < *iters; i++) __syncthreads();\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_sync_loop)\n"
    "\n"
    "extern \"C\" __global__ void k_smem_overflow(float *out, const int *idx) {\n"
    "    __shared__ float small[8];\n"
    "    if (threadIdx.x < 8) small[threadIdx.x] = 1.0f;\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x == 0) out[0] = small[*idx];\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_smem_overflow)\n";

static const char half_src[] =
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n"
    "\n"
    "extern \"C\" __global__ void k_h2f(float *hf, float *bf) {\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    hf[i] = __half2float(__ushort_as_half((unsigned short)i));\n"
    "    bf[i] = __bfloat162float(__ushort_as_bfloat16((unsigned short)i));\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_h2f)\n"
    "\n"
    "extern \"C\" __global__ void k_f2h(unsigned short *h, unsigned short *b, unsigned short *hc,\n"
    "                                  unsigned short *bc, const float *in, const int *n) {\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if ((int)i >= *n) return;\n"
    "    h[i] = __half_as_ushort(__float2half(in[i]));\n"
    "    b[i] = __bfloat16_as_ushort(__float2bfloat16(in[i]));\n"
    "    __half hh = in[i];\n"
    "    __nv_bfloat16 bb = in[i];\n"
    "    hc[i] = __half_as_ushort(hh);\n"
    "    bc[i] = __bfloat16_as_ushort(bb);\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_f2h)\n"
    "\n"
    "extern \"C\" __global__ void k_d2h(unsigned short *h, unsigned short *b, const double *in, const int *n) {\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if ((int)i >= *n) return;\n"
    "    h[i] = __half_as_ushort(__double2half(in[i]));\n"
    "    b[i] = __bfloat16_as_ushort(__double2bfloat16(in[i]));\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_d2h)\n"
    "\n"
    "extern \"C\" __global__ void k_harith(__half *out, const __half *a, const __half *b, const int *n) {\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if ((int)i >= *n) return;\n"
    "    out[4 * i + 0] = __hadd(a[i], b[i]);\n"
    "    out[4 * i + 1] = a[i] * b[i];\n"
    "    out[4 * i + 2] = __hdiv(a[i], b[i]);\n"
    "    out[4 * i + 3] = __hfma(a[i], b[i], a[i]);\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_harith)\n"
    "\n"
    "extern \"C\" __global__ void k_half_shfl(__half *out, __nv_bfloat16 *bout, const __half *in) {\n"
    "    unsigned t = threadIdx.x;\n"
    "    out[t] = __shfl_xor_sync(0xffffffffu, in[t], 1);\n"
    "    __nv_bfloat16 b = __float2bfloat16((float)t + 0.5f);\n"
    "    bout[t] = __shfl_down_sync(0xffffffffu, b, 2);\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_half_shfl)\n";

/* Programmatic dependent launch: a producer, a consumer that keeps state
 * in shared memory across its wait, the same consumer reading before its
 * wait (the bug the emulator must expose), one thread waiting for a block,
 * and L2 prefetches. */
/* cp.async through CUDA's pipeline primitives: two groups of copies into
 * shared memory, each thread reading other threads' copies after its own
 * wait and a barrier.  `lag` is how many groups the first wait leaves in
 * flight: 1 is right (the second group may still be on its way), 2 reads
 * the first group before it has landed; `zero` zero-fills the second. */
static const char async_src[] =
    "extern \"C\" __global__ void k_async(float *out, const float *in, const int *lag, const int *zero) {\n"
    "    __shared__ float4 a[64], b[64];\n"
    "    const unsigned t = threadIdx.x, n = blockDim.x;\n"
    "    const float4 *src = reinterpret_cast<const float4 *>(in) + blockIdx.x * 2 * n;\n"
    "    __pipeline_memcpy_async(&a[t], &src[t], 16);\n"
    "    __pipeline_commit();\n"
    "    __pipeline_memcpy_async(&b[t], &src[n + t], 16, *zero ? 16 : 0);\n"
    "    __pipeline_commit();\n"
    "    __pipeline_wait_prior(*lag);\n"
    "    __syncthreads();\n"
    "    float4 x = a[(t + 1) % n];\n"
    "    __pipeline_wait_prior(0);\n"
    "    __syncthreads();\n"
    "    float4 y = b[(t + 3) % n];\n"
    "    float *o = out + (blockIdx.x * n + t) * 8;\n"
    "    o[0] = x.x; o[1] = x.y; o[2] = x.z; o[3] = x.w; o[4] = y.x; o[5] = y.y; o[6] = y.z; o[7] = y.w;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_async)\n"
    "\n"
    "extern \"C\" __global__ void k_async_misaligned(const float *in) {\n"
    "    __shared__ float4 a[32];\n"
    "    __pipeline_memcpy_async(&a[threadIdx.x], in + 1, 16);\n"
    "    __pipeline_commit();\n"
    "    __pipeline_wait_prior(0);\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_async_misaligned)\n";

static const char pdl_src[] =
    "extern \"C\" __global__ void k_pdl_producer(float *buf, const float *in) {\n"
    "    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    float v = in[g] * 2.0f;\n"
    "    cudaTriggerProgrammaticLaunchCompletion();\n"
    "    buf[g] = v;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_pdl_producer)\n"
    "\n"
    "extern \"C\" __global__ void k_pdl_consumer(float *out, const float *buf, const float *w) {\n"
    "    __shared__ float sw[1024];\n"
    "    unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t;\n"
    "    sw[blockDim.x - 1 - t] = w[g] * 3.0f;\n"
    "    cudaGridDependencySynchronize();\n"
    "    __syncthreads();\n"
    "    out[g] = buf[g] + sw[blockDim.x - 1 - t];\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_pdl_consumer)\n"
    "\n"
    "extern \"C\" __global__ void k_pdl_early_reader(float *out, const float *buf, const float *w) {\n"
    "    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    float b = buf[g];\n"
    "    cudaGridDependencySynchronize();\n"
    "    out[g] = b + w[g] * 3.0f;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_pdl_early_reader)\n"
    "\n"
    "extern \"C\" __global__ void k_pdl_one_waiter(float *out, const float *buf, const float *w) {\n"
    "    __shared__ float first;\n"
    "    unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t;\n"
    "    float mine = w[g] * 3.0f;\n"
    "    if (t == 0) {\n"
    "        cudaGridDependencySynchronize();\n"
    "        first = buf[blockIdx.x * blockDim.x];\n"
    "    }\n"
    "    __syncthreads();\n"
    "    out[g] = buf[g] + mine + 0.0f * first;\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_pdl_one_waiter)\n"
    "\n"
    "extern \"C\" __global__ void k_prefetch(const float *p, const int *n, const int *off) {\n"
    "    if (threadIdx.x == 0) bertc_emu_prefetch_l2(p + *off, (unsigned long long)*n * sizeof(float));\n"
    "}\n"
    "BERTC_KERNEL_EXPORT(k_prefetch)\n";

static emu_image *img;
static char img_error[4096];

static void *image_load(const char *path, diag *d) { return emu_image_load(path, d); }

static const emu_schedule all_scheds[] = {EMU_SCHEDULE_ROUND_ROBIN, EMU_SCHEDULE_WARP_GREEDY,
                                          EMU_SCHEDULE_WARP_GREEDY_REVERSE, EMU_SCHEDULE_RANDOM};
#define NSCHED 4

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static emu_status launch(const char *entry, unsigned gx, unsigned bx, unsigned smem, void **args, emu_schedule s,
                         diag *d) {
    unsigned grid[3] = {gx, 1, 1}, block[3] = {bx, 1, 1};
    return emu_launch(img, entry, grid, block, smem, args, s, check_rng_u64(), d);
}

#define NEED_IMAGE() CHECK_REQUIRE(img, "no kernel image: %s", img_error)

static float rnd_float(void) { return (float)(check_rng_uniform() * 4.0 - 2.0); }
static int rnd_nonzero(int lo, int hi) {
    int v;
    do v = (int)check_rng_range(lo, hi);
    while (v == 0);
    return v;
}

/* ------------------------------------------------------------ shared memory and barriers */

static void test_block_sum(void) {
    NEED_IMAGE();
    enum { B = 3, T = 256 };
    static float in[B * T], out[B], want[B];
    for (int i = 0; i < B * T; i++) in[i] = rnd_float();
    for (int b = 0; b < B; b++) {
        float buf[T];
        memcpy(buf, in + b * T, sizeof buf);
        for (int s = T / 2; s > 0; s >>= 1)
            for (int t = 0; t < s; t++) buf[t] += buf[t + s];
        want[b] = buf[0];
    }
    for (int k = 0; k < NSCHED; k++) {
        float *po = out;
        const float *pi = in;
        void *args[] = {&po, &pi};
        diag d;
        diag_init(&d);
        memset(out, 0, sizeof out);
        emu_status st = launch("k_block_sum", B, T, 0, args, all_scheds[k], &d);
        CHECK(st == EMU_STATUS_OK, "%s: %s", emu_schedule_name(all_scheds[k]), d.text);
        for (int b = 0; b < B; b++)
            CHECK(out[b] == want[b], "%s: block %d sum %.9g, want %.9g", emu_schedule_name(all_scheds[k]), b,
                  (double)out[b], (double)want[b]);
    }
}

static void test_early_exit(void) {
    NEED_IMAGE();
    enum { T = 128 };
    int n = 37;
    static float in[T], out[T + 1], want[T + 1];
    for (int i = 0; i < T; i++) in[i] = rnd_float();
    float s = 0.0f;
    for (int t = 0; t < n; t++) {
        want[1 + t] = in[(t + 1) % n] * 2.0f;
        s += want[1 + t];
    }
    want[0] = s;
    for (int k = 0; k < NSCHED; k++) {
        float *po = out;
        const float *pi = in;
        int *pn = &n;
        void *args[] = {&po, &pi, &pn};
        diag d;
        diag_init(&d);
        for (int i = 0; i <= T; i++) out[i] = -1.0f;
        emu_status st = launch("k_early_exit", 1, T, 0, args, all_scheds[k], &d);
        CHECK(st == EMU_STATUS_OK, "%s: %s", emu_schedule_name(all_scheds[k]), d.text);
        for (int i = 0; i <= n; i++)
            CHECK(out[i] == want[i], "%s: out[%d] = %g, want %g", emu_schedule_name(all_scheds[k]), i,
                  (double)out[i], (double)want[i]);
        for (int i = n + 1; i <= T; i++)
            CHECK(out[i] == -1.0f, "%s: returned thread %d wrote", emu_schedule_name(all_scheds[k]), i - 1);
    }
}

static void test_dynamic_smem(void) {
    NEED_IMAGE();
    enum { B = 2, T = 96 };
    static float in[B * T], out[B * T];
    static unsigned first[B * T];
    for (int i = 0; i < B * T; i++) in[i] = rnd_float();
    for (int k = 0; k < NSCHED; k++) {
        float *po = out;
        unsigned *pf = first;
        const float *pi = in;
        void *args[] = {&po, &pf, &pi};
        diag d;
        diag_init(&d);
        emu_status st = launch("k_dyn_smem", B, T, 2 * T * sizeof(float), args, all_scheds[k], &d);
        CHECK(st == EMU_STATUS_OK, "%s: %s", emu_schedule_name(all_scheds[k]), d.text);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                CHECK(out[b * T + t] == in[b * T + (T - 1 - t)], "%s: block %d thread %d",
                      emu_schedule_name(all_scheds[k]), b, t);
                CHECK(first[b * T + t] == 0xffffffffu, "%s: block %d thread %d saw 0x%08x, not the poison fill",
                      emu_schedule_name(all_scheds[k]), b, t, first[b * T + t]);
            }
    }
}

/* ------------------------------------------------------------ warps */

static void test_warp_shuffles(void) {
    NEED_IMAGE();
    enum { B = 2, T = 64, N = B * T };
    static int in[N], xs[N], dn[N], sc[N], bc[N], sg[N];
    static int wxs[N], wdn[N], wsc[N], wbc[N], wsg[N];
    for (int i = 0; i < N; i++) in[i] = rnd_nonzero(-1000, 1000);
    for (int w = 0; w < N / 32; w++) {
        const int *v = in + w * 32;
        int sum = 0, d[32];
        for (int l = 0; l < 32; l++) sum += v[l], d[l] = v[l];
        for (int o = 16; o > 0; o >>= 1) {
            int nd[32];
            for (int l = 0; l < 32; l++) nd[l] = d[l] + (l + o < 32 ? d[l + o] : d[l]);
            memcpy(d, nd, sizeof d);
        }
        int run = 0;
        for (int l = 0; l < 32; l++) {
            run += v[l];
            wxs[w * 32 + l] = sum;
            wdn[w * 32 + l] = d[l];
            wsc[w * 32 + l] = run;
            wbc[w * 32 + l] = v[(l * 7 + 3) % 32] * 3;
            int seg = 0;
            for (int j = l & ~7; j < (l & ~7) + 8; j++) seg += v[j];
            wsg[w * 32 + l] = seg;
        }
    }
    for (int k = 0; k < NSCHED; k++) {
        int *p[6] = {xs, dn, sc, bc, sg, in};
        void *args[] = {&p[0], &p[1], &p[2], &p[3], &p[4], &p[5]};
        diag d;
        diag_init(&d);
        emu_status st = launch("k_warp_ops", B, T, 0, args, all_scheds[k], &d);
        CHECK(st == EMU_STATUS_OK, "%s: %s", emu_schedule_name(all_scheds[k]), d.text);
        for (int i = 0; i < N; i++) {
            const char *sn = emu_schedule_name(all_scheds[k]);
            CHECK(xs[i] == wxs[i], "%s: xor-sum[%d] %d want %d", sn, i, xs[i], wxs[i]);
            CHECK(dn[i] == wdn[i], "%s: down[%d] %d want %d", sn, i, dn[i], wdn[i]);
            CHECK(sc[i] == wsc[i], "%s: scan[%d] %d want %d", sn, i, sc[i], wsc[i]);
            CHECK(bc[i] == wbc[i], "%s: broadcast[%d] %d want %d", sn, i, bc[i], wbc[i]);
            CHECK(sg[i] == wsg[i], "%s: width-8 sum[%d] %d want %d", sn, i, sg[i], wsg[i]);
        }
    }
}

/* A 48-thread block: warp 1 has 16 lanes. */
static void test_partial_warp(void) {
    NEED_IMAGE();
    enum { T = 48 };
    static int in[T], seg[T], far[T];
    for (int i = 0; i < T; i++) in[i] = rnd_nonzero(-50, 50);
    for (int k = 0; k < NSCHED; k++) {
        int *p0 = seg, *p1 = far, *p2 = in;
        void *args[] = {&p0, &p1, &p2};
        diag d;
        diag_init(&d);
        emu_status st = launch("k_partial", 1, T, 0, args, all_scheds[k], &d);
        CHECK(st == EMU_STATUS_OK, "%s: %s", emu_schedule_name(all_scheds[k]), d.text);
        for (int t = 0; t < T; t++) {
            int want = 0;
            for (int j = t & ~15; j < (t & ~15) + 16; j++) want += in[j];
            CHECK(seg[t] == want, "%s: width-16 sum[%d] %d want %d", emu_schedule_name(all_scheds[k]), t, seg[t],
                  want);
            /* lane 20 of warp 1 does not exist: the read yields the poison bits */
            int wfar = t < 32 ? 5 : -1;
            CHECK(far[t] == wfar, "%s: read of lane 20 by thread %d gave %d, want %d", emu_schedule_name(all_scheds[k]),
                  t, far[t], wfar);
        }
    }
}

static void test_votes(void) {
    NEED_IMAGE();
    enum { T = 96 };
    static int in[T], any[T], all[T];
    static unsigned ballot[T];
    for (int i = 0; i < T; i++) in[i] = i < 32 ? rnd_nonzero(-9, 9) : i < 64 ? (int)check_rng_range(1, 9)
                                                                                : (int)check_rng_range(-9, 0);
    for (int k = 0; k < NSCHED; k++) {
        unsigned *pb = ballot;
        int *pa = any, *pl = all, *pi = in;
        void *args[] = {&pb, &pa, &pl, &pi};
        diag d;
        diag_init(&d);
        emu_status st = launch("k_vote", 1, T, 0, args, all_scheds[k], &d);
        CHECK(st == EMU_STATUS_OK, "%s: %s", emu_schedule_name(all_scheds[k]), d.text);
        for (int w = 0; w < T / 32; w++) {
            unsigned want = 0;
            for (int l = 0; l < 32; l++)
                if (in[w * 32 + l] > 0) want |= 1u << l;
            for (int l = 0; l < 32; l++) {
                int t = w * 32 + l;
                CHECK(ballot[t] == want, "%s: ballot[%d] 0x%08x want 0x%08x", emu_schedule_name(all_scheds[k]), t,
                      ballot[t], want);
                CHECK(any[t] == (want != 0), "%s: any[%d]", emu_schedule_name(all_scheds[k]), t);
                CHECK(all[t] == (want == 0xffffffffu), "%s: all[%d]", emu_schedule_name(all_scheds[k]), t);
            }
        }
    }
}

/* The emulator's all-gather (two half-warp exchanges per warp). */
static void test_warp_allgather(void) {
    NEED_IMAGE();
    enum { T = 64 };
    static float in[T];
    static int ok[T];
    for (int i = 0; i < T; i++) in[i] = rnd_float();
    for (int k = 0; k < NSCHED; k++) {
        int *po = ok;
        const float *pi = in;
        void *args[] = {&po, &pi};
        diag d;
        diag_init(&d);
        memset(ok, 0, sizeof ok);
        emu_status st = launch("k_gather", 1, T, 0, args, all_scheds[k], &d);
        CHECK(st == EMU_STATUS_OK, "%s: %s", emu_schedule_name(all_scheds[k]), d.text);
        for (int t = 0; t < T; t++) CHECK(ok[t] == 1, "%s: thread %d saw wrong data", emu_schedule_name(all_scheds[k]), t);
    }
}

static void test_atomics(void) {
    NEED_IMAGE();
    enum { N = 3001, NB = 17 };
    static int in[N];
    int n = N, nbins = NB;
    int whist[NB] = {0}, wmax = 0;
    float wsum = 0.0f;
    unsigned long long wusum = 0;
    for (int i = 0; i < N; i++) {
        in[i] = (int)check_rng_range(1, 1000000);
        whist[in[i] % NB]++;
        wsum += (float)(in[i] % 8);
        wusum += (unsigned long long)in[i];
        if (in[i] > wmax) wmax = in[i];
    }
    for (int k = 0; k < NSCHED; k++) {
        int hist[NB] = {0}, imax = 0, casmax = 0;
        float fsum = 0.0f;
        unsigned long long usum = 0;
        int *p0 = hist, *p2 = &imax, *p3 = &casmax, *p5 = in, *p6 = &n, *p7 = &nbins;
        float *p1 = &fsum;
        unsigned long long *p4 = &usum;
        void *args[] = {&p0, &p1, &p2, &p3, &p4, &p5, &p6, &p7};
        diag d;
        diag_init(&d);
        emu_status st = launch("k_atomics", 5, 64, 0, args, all_scheds[k], &d);
        CHECK(st == EMU_STATUS_OK, "%s: %s", emu_schedule_name(all_scheds[k]), d.text);
        for (int b = 0; b < NB; b++)
            CHECK(hist[b] == whist[b], "%s: bin %d = %d, want %d", emu_schedule_name(all_scheds[k]), b, hist[b],
                  whist[b]);
        CHECK(fsum == wsum, "%s: float sum %g want %g", emu_schedule_name(all_scheds[k]), (double)fsum, (double)wsum);
        CHECK(usum == wusum, "%s: u64 sum %llu want %llu", emu_schedule_name(all_scheds[k]), usum, wusum);
        CHECK(imax == wmax && casmax == wmax, "%s: max %d / CAS max %d, want %d", emu_schedule_name(all_scheds[k]),
              imax, casmax, wmax);
    }
}

/* Blocks run in order under warp-greedy, in reverse under its reverse,
 * and in a seeded permutation under the random schedule: every block once,
 * and (over a few seeds) not always in order — so a kernel whose result
 * depends on which block comes last is caught by the schedules. */
static void test_block_order(void) {
    NEED_IMAGE();
    enum { GX = 5, GY = 3, GZ = 2, N = GX * GY * GZ };
    unsigned grid[3] = {GX, GY, GZ}, block[3] = {32, 1, 1};
    int shuffled = 0;
    for (int k = 0; k < 6; k++) {
        emu_schedule s = k == 0 ? EMU_SCHEDULE_WARP_GREEDY : k == 1 ? EMU_SCHEDULE_WARP_GREEDY_REVERSE : EMU_SCHEDULE_RANDOM;
        unsigned ticket = 0, order[N], *pt = &ticket, *po = order;
        void *args[] = {&pt, &po};
        memset(order, 0xff, sizeof order);
        diag d;
        diag_init(&d);
        CHECK(emu_launch(img, "k_block_order", grid, block, 0, args, s, check_rng_u64(), &d) == EMU_STATUS_OK, "%s",
              d.text);
        int seen[N] = {0}, ascending = 1;
        for (int b = 0; b < N; b++) {
            CHECK(order[b] < N && !seen[order[b]]++, "%s: block %d ran as %u", emu_schedule_name(s), b, order[b]);
            ascending &= order[b] == (unsigned)b;
            if (k == 1) CHECK(order[b] == (unsigned)(N - 1 - b), "reverse: block %d ran as %u", b, order[b]);
        }
        if (k == 0) CHECK(ascending, "warp-greedy: blocks not in order");
        if (k >= 2) shuffled += !ascending;
    }
    CHECK(shuffled >= 2, "the random schedule kept blocks in order in %d of 4 launches", 4 - shuffled);
}

static void test_dims_and_scalars(void) {
    NEED_IMAGE();
    unsigned grid[3] = {3, 2, 2}, block[3] = {4, 3, 2};
    enum { NT = 24, NB = 12 };
    static unsigned out[NT * NB], dims[9];
    unsigned *po = out, *pd = dims;
    int scale = -7;
    float fscale = 0.375f;
    void *args[] = {&po, &pd, &scale, &fscale};
    diag d;
    diag_init(&d);
    emu_kernel *k = emu_image_kernel(img, "k_dims", &d);
    CHECK(k != NULL, "%s", d.text);
    if (!k) return;
    CHECK(emu_kernel_arg_count(k) == 4, "arg count %u", emu_kernel_arg_count(k));
    const unsigned *sz = emu_kernel_arg_sizes(k);
    CHECK(sz[0] == 8 && sz[1] == 8 && sz[2] == 4 && sz[3] == 4, "arg sizes %u %u %u %u", sz[0], sz[1], sz[2], sz[3]);
    emu_status st = emu_kernel_launch(k, grid, block, 0, args, EMU_SCHEDULE_RANDOM, check_rng_u64(), &d);
    CHECK(st == EMU_STATUS_OK, "%s", d.text);
    for (unsigned bz = 0; bz < 2; bz++)
        for (unsigned by = 0; by < 2; by++)
            for (unsigned bx = 0; bx < 3; bx++)
                for (unsigned tz = 0; tz < 2; tz++)
                    for (unsigned ty = 0; ty < 3; ty++)
                        for (unsigned tx = 0; tx < 4; tx++) {
                            unsigned bl = bx + by * 3 + bz * 6, tl = tx + ty * 4 + tz * 12;
                            unsigned want = tx | ty << 4 | tz << 8 | bx << 12 | by << 16 | bz << 20;
                            CHECK(out[bl * NT + tl] == want, "block %u thread %u: 0x%x want 0x%x", bl, tl,
                                  out[bl * NT + tl], want);
                        }
    unsigned fbits;
    memcpy(&fbits, &fscale, 4);
    unsigned wd[9] = {4, 3, 2, 3, 2, 2, (unsigned)scale, fbits, 32};
    for (int i = 0; i < 9; i++) CHECK(dims[i] == wd[i], "dims[%d] = %u, want %u", i, dims[i], wd[i]);
}

/* ------------------------------------------------------------ 16-bit floats */

static uint16_t ref_f2h(float f) {
    if (isnan(f)) return 0x7fff; /* CUDA's canonical NaN */
    _Float16 h = (_Float16)f;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}
static uint16_t ref_d2h(double x) {
    if (isnan(x)) return 0x7fff;
    _Float16 h = (_Float16)x;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}
static double bf16_value(uint16_t b) {
    if ((b & 0x7fff) == 0x7f80) return (b & 0x8000) ? -ldexp(1.0, 128) : ldexp(1.0, 128); /* inf as 2^128 */
    return (double)check_bits_f32((uint32_t)b << 16);
}
/* Nearest bfloat16 by comparing distances in long double (ties to even);
 * independent of the emulator's bit-twiddling rounding. */
static uint16_t ref_ld2bf(long double x) {
    if (isnan(x)) return 0x7fff;
    if (isinf(x)) return x < 0 ? 0xff80 : 0x7f80;
    uint16_t lo = (uint16_t)(check_f32_bits((float)x) >> 16); /* a neighbour; the search below decides */
    uint16_t best = lo;
    long double bd = -1.0L;
    for (int k = -1; k <= 1; k++) {
        int c = (int)lo + k;
        if (c < 0 || c > 0xffff || ((c ^ lo) & 0x8000) || (c & 0x7fff) > 0x7f80) continue;
        long double dist = fabsl(x - (long double)bf16_value((uint16_t)c));
        if (bd < 0 || dist < bd || (dist == bd && !(c & 1))) {
            best = (uint16_t)c;
            bd = dist;
        }
    }
    return best;
}
static uint16_t ref_f2bf(float f) { return isnan(f) ? 0x7fff : ref_ld2bf((long double)f); }

static void test_half_to_float_exhaustive(void) {
    NEED_IMAGE();
    enum { N = 65536 };
    static float hf[N], bf[N];
    float *p0 = hf, *p1 = bf;
    void *args[] = {&p0, &p1};
    diag d;
    diag_init(&d);
    emu_status st = launch("k_h2f", N / 256, 256, 0, args, EMU_SCHEDULE_ROUND_ROBIN, &d);
    CHECK(st == EMU_STATUS_OK, "%s", d.text);
    for (uint32_t i = 0; i < N; i++) {
        uint16_t b = (uint16_t)i;
        _Float16 h;
        memcpy(&h, &b, 2);
        float want = (float)h;
        if (isnan(want))
            CHECK(check_f32_bits(hf[i]) == 0x7fffffffu, "half 0x%04x (NaN) -> 0x%08x, want CUDA's 0x7fffffff", i, check_f32_bits(hf[i]));
        else
            CHECK(check_f32_bits(hf[i]) == check_f32_bits(want), "half 0x%04x -> 0x%08x, want 0x%08x", i, check_f32_bits(hf[i]), check_f32_bits(want));
        CHECK(check_f32_bits(bf[i]) == i << 16, "bf16 0x%04x -> 0x%08x", i, check_f32_bits(bf[i]));
    }
}

/* Random floats concentrated where half and bfloat16 round: every binade
 * of half's range and beyond, exact ties, subnormals, specials. */
static float interesting_float(void) {
    uint32_t sign = (uint32_t)(check_rng_u64() & 1u) << 31;
    uint32_t mant = (uint32_t)check_rng_u64() & 0x7fffffu;
    switch (check_rng_range(0, 7)) {
    case 0: mant = (mant & ~0x1fffu) | 0x1000u; break;         /* half tie (normal range) */
    case 1: mant = (mant & ~0xffffu) | 0x8000u; break;         /* bf16 tie */
    case 2: mant = (mant & ~0x1fffu) | (0x1000u ^ 1u); break;  /* just off a tie */
    default: break;
    }
    uint32_t e;
    switch (check_rng_range(0, 9)) {
    case 0: e = (uint32_t)check_rng_range(0, 254); break;      /* anywhere, incl. float subnormals */
    case 1: e = 255; mant = check_rng_range(0, 1) ? 0 : mant | 1u; break; /* inf / NaN */
    case 2: e = (uint32_t)check_rng_range(100, 113); break;    /* half subnormal range */
    default: e = (uint32_t)check_rng_range(110, 144); break;   /* half normal range and overflow */
    }
    return check_bits_f32(sign | e << 23 | mant);
}

static void test_float_to_half_rounding(void) {
    NEED_IMAGE();
    enum { N = 1 << 16 };
    static float in[N];
    static uint16_t h[N], b[N], hc[N], bc[N];
    for (int i = 0; i < N; i++) in[i] = interesting_float();
    /* fixed corner cases up front */
    const float corners[] = {65504.0f, 65519.99f, 65520.0f, -65520.0f, 5.9604644775390625e-8f, 2.98023223876953125e-8f,
                             2.98023224e-8f, 6.103515625e-5f, 0.0f, -0.0f, 3.38953139e38f, 3.4028235e38f};
    for (size_t i = 0; i < sizeof corners / sizeof corners[0]; i++) in[i] = corners[i];
    int n = N;
    uint16_t *p0 = h, *p1 = b, *p2 = hc, *p3 = bc;
    float *p4 = in;
    int *p5 = &n;
    void *args[] = {&p0, &p1, &p2, &p3, &p4, &p5};
    diag d;
    diag_init(&d);
    emu_status st = launch("k_f2h", N / 128, 128, 0, args, EMU_SCHEDULE_WARP_GREEDY, &d);
    CHECK(st == EMU_STATUS_OK, "%s", d.text);
    for (int i = 0; i < N; i++) {
        uint16_t wh = ref_f2h(in[i]), wb = ref_f2bf(in[i]);
        CHECK(h[i] == wh, "__float2half(%a = 0x%08x) = 0x%04x, want 0x%04x", (double)in[i], check_f32_bits(in[i]), h[i], wh);
        CHECK(hc[i] == wh, "__half(%a) = 0x%04x, want 0x%04x", (double)in[i], hc[i], wh);
        CHECK(b[i] == wb, "__float2bfloat16(%a = 0x%08x) = 0x%04x, want 0x%04x", (double)in[i], check_f32_bits(in[i]), b[i], wb);
        CHECK(bc[i] == wb, "__nv_bfloat16(%a) = 0x%04x, want 0x%04x", (double)in[i], bc[i], wb);
    }
}

static void test_double_to_half_rounding(void) {
    NEED_IMAGE();
    enum { N = 4096 };
    static double in[N];
    static uint16_t h[N], b[N];
    for (int i = 0; i < N; i++) {
        double base = (double)interesting_float();
        /* nudge by a tiny amount so float rounding alone would land on ties */
        double nudge = ldexp((double)check_rng_range(-3, 3), -60) * fabs(base);
        in[i] = isfinite(base) ? base + nudge : base;
    }
    int n = N;
    uint16_t *p0 = h, *p1 = b;
    double *p2 = in;
    int *p3 = &n;
    void *args[] = {&p0, &p1, &p2, &p3};
    diag d;
    diag_init(&d);
    emu_status st = launch("k_d2h", N / 128, 128, 0, args, EMU_SCHEDULE_ROUND_ROBIN, &d);
    CHECK(st == EMU_STATUS_OK, "%s", d.text);
    for (int i = 0; i < N; i++) {
        uint16_t wh = ref_d2h(in[i]), wb = ref_ld2bf((long double)in[i]);
        CHECK(h[i] == wh, "__double2half(%a) = 0x%04x, want 0x%04x", in[i], h[i], wh);
        CHECK(b[i] == wb, "__double2bfloat16(%a) = 0x%04x, want 0x%04x", in[i], b[i], wb);
    }
}

static void test_half_arithmetic(void) {
    NEED_IMAGE();
    enum { N = 4096 };
    static uint16_t a[N], b[N], out[4 * N];
    for (int i = 0; i < N; i++) {
        a[i] = ref_f2h(rnd_float() * 300.0f);
        do b[i] = ref_f2h(rnd_float() * 3.0f);
        while ((b[i] & 0x7fff) == 0);
    }
    int n = N;
    uint16_t *p0 = out, *p1 = a, *p2 = b;
    int *p3 = &n;
    void *args[] = {&p0, &p1, &p2, &p3};
    diag d;
    diag_init(&d);
    emu_status st = launch("k_harith", N / 256, 256, 0, args, EMU_SCHEDULE_ROUND_ROBIN, &d);
    CHECK(st == EMU_STATUS_OK, "%s", d.text);
    for (int i = 0; i < N; i++) {
        _Float16 x, y;
        memcpy(&x, &a[i], 2);
        memcpy(&y, &b[i], 2);
        _Float16 w[4] = {x + y, x * y, x / y, (_Float16)fma((double)x, (double)y, (double)x)};
        for (int j = 0; j < 4; j++) {
            uint16_t wb;
            memcpy(&wb, &w[j], 2);
            CHECK(out[4 * i + j] == wb, "op %d on 0x%04x, 0x%04x = 0x%04x, want 0x%04x", j, a[i], b[i],
                  out[4 * i + j], wb);
        }
    }
}

static void test_half_shuffle(void) {
    NEED_IMAGE();
    enum { T = 64 };
    static uint16_t in[T], out[T], bout[T];
    for (int i = 0; i < T; i++) in[i] = ref_f2h(rnd_float());
    for (int k = 0; k < NSCHED; k++) {
        uint16_t *p0 = out, *p1 = bout, *p2 = in;
        void *args[] = {&p0, &p1, &p2};
        diag d;
        diag_init(&d);
        emu_status st = launch("k_half_shfl", 1, T, 0, args, all_scheds[k], &d);
        CHECK(st == EMU_STATUS_OK, "%s: %s", emu_schedule_name(all_scheds[k]), d.text);
        for (int t = 0; t < T; t++) {
            CHECK(out[t] == in[t ^ 1], "%s: half xor-shuffle[%d]", emu_schedule_name(all_scheds[k]), t);
            int src = (t % 32) + 2 < 32 ? t + 2 : t;
            CHECK(bout[t] == ref_f2bf((float)src + 0.5f), "%s: bf16 down-shuffle[%d] = 0x%04x",
                  emu_schedule_name(all_scheds[k]), t, bout[t]);
        }
    }
}

/* ------------------------------------------------------------ rules */

/* Without __syncthreads the result depends on the schedule: the warp-greedy
 * schedules must expose the race; with it every schedule must agree. */
static void test_missing_syncthreads_detected(void) {
    NEED_IMAGE();
    enum { T = 128 };
    static float in[T], out[T], want[T];
    for (int with = 1; with >= 0; with--) {
        int exposed = 0;
        for (int k = 0; k < NSCHED; k++) {
            /* fresh data each run: __shared__ keeps the previous launch's values */
            for (int i = 0; i < T; i++) in[i] = rnd_float();
            for (int t = 0; t < T; t++) want[t] = in[T - 1 - t] * 2.0f + in[t ^ 1] * 2.0f;
            float *po = out;
            const float *pi = in;
            int *pw = &with;
            void *args[] = {&po, &pi, &pw};
            diag d;
            diag_init(&d);
            emu_status st = launch("k_racy", 1, T, 0, args, all_scheds[k], &d);
            CHECK(st == EMU_STATUS_OK, "%s: %s", emu_schedule_name(all_scheds[k]), d.text);
            int wrong = 0;
            for (int t = 0; t < T; t++) wrong += out[t] != want[t];
            if (with) CHECK(wrong == 0, "%s: %d wrong results with __syncthreads", emu_schedule_name(all_scheds[k]), wrong);
            if (!with && (all_scheds[k] == EMU_SCHEDULE_WARP_GREEDY || all_scheds[k] == EMU_SCHEDULE_WARP_GREEDY_REVERSE)) {
                CHECK(wrong > 0, "%s: the missing __syncthreads went unnoticed", emu_schedule_name(all_scheds[k]));
                exposed += wrong > 0;
            }
        }
        if (!with) CHECK(exposed == 2, "race exposed by %d of 2 greedy schedules", exposed);
    }
}

static void expect_failure(const char *entry, unsigned threads, emu_status want, const char *needle1,
                           const char *needle2) {
    for (int k = 0; k < NSCHED; k++) {
        static int out[1024];
        int *po = out;
        void *args[] = {&po};
        diag d;
        diag_init(&d);
        emu_status st = launch(entry, 2, threads, 0, args, all_scheds[k], &d);
        CHECK(st == want, "%s under %s: status %s, want %s (%s)", entry, emu_schedule_name(all_scheds[k]),
              emu_status_name(st), emu_status_name(want), d.text);
        CHECK(d.code == DIAG_CODE_INTERNAL, "%s: diag code %d", entry, (int)d.code);
        CHECK(strstr(d.text, needle1) != NULL, "%s: message lacks '%s': %s", entry, needle1, d.text);
        if (needle2) CHECK(strstr(d.text, needle2) != NULL, "%s: message lacks '%s': %s", entry, needle2, d.text);
    }
    /* the emulator is still usable afterwards */
    static float in[64], out1[1];
    for (int i = 0; i < 64; i++) in[i] = 1.0f;
    float *po = out1;
    const float *pi = in;
    void *args[] = {&po, &pi};
    diag d;
    diag_init(&d);
    CHECK(launch("k_block_sum", 1, 64, 0, args, EMU_SCHEDULE_RANDOM, &d) == EMU_STATUS_OK && out1[0] == 64.0f,
          "after %s: a good kernel fails: %s", entry, d.text);
}

static void test_deadlock_reported(void) {
    NEED_IMAGE();
    expect_failure("k_deadlock", 64, EMU_STATUS_DEADLOCK, "deadlocked", "__syncwarp");
}

static void test_divergent_barrier_reported(void) {
    NEED_IMAGE();
    expect_failure("k_divergent", 64, EMU_STATUS_FAULT, "divergent __syncthreads", NULL);
}

static void test_exited_lane_reported(void) {
    NEED_IMAGE();
    expect_failure("k_exited_lane", 32, EMU_STATUS_FAULT, "returned", "0x");
}

static void test_trap_reported(void) {
    NEED_IMAGE();
    expect_failure("k_trap", 32, EMU_STATUS_FAULT, "__trap()", "thread (3,0,0)");
}

static void test_launch_limits(void) {
    NEED_IMAGE();
    int x = 0;
    int *px = &x;
    void *args[] = {&px};
    diag d;
    diag_init(&d);
    unsigned g1[3] = {1, 1, 1};
    unsigned b_big[3] = {1025, 1, 1}, b_prod[3] = {32, 32, 2}, b_z[3] = {1, 1, 65}, b_zero[3] = {0, 1, 1};
    unsigned b_ok[3] = {32, 32, 1}, g_bad[3] = {1, 65536, 1};
    CHECK(emu_launch(img, "k_empty", g1, b_big, 0, args, EMU_SCHEDULE_ROUND_ROBIN, 1, &d) == EMU_STATUS_INVALID,
          "1025 threads accepted");
    CHECK(strstr(d.text, "1025") != NULL, "message: %s", d.text);
    CHECK(emu_launch(img, "k_empty", g1, b_prod, 0, args, EMU_SCHEDULE_ROUND_ROBIN, 1, &d) == EMU_STATUS_INVALID,
          "32x32x2 threads accepted");
    CHECK(emu_launch(img, "k_empty", g1, b_z, 0, args, EMU_SCHEDULE_ROUND_ROBIN, 1, &d) == EMU_STATUS_INVALID,
          "block z = 65 accepted");
    CHECK(emu_launch(img, "k_empty", g1, b_zero, 0, args, EMU_SCHEDULE_ROUND_ROBIN, 1, &d) == EMU_STATUS_INVALID,
          "empty block accepted");
    CHECK(emu_launch(img, "k_empty", g_bad, b_ok, 0, args, EMU_SCHEDULE_ROUND_ROBIN, 1, &d) == EMU_STATUS_INVALID,
          "grid y = 65536 accepted");
    diag_init(&d);
    CHECK(emu_launch(img, "k_empty", g1, b_ok, 0, args, EMU_SCHEDULE_WARP_GREEDY, 1, &d) == EMU_STATUS_OK,
          "1024 threads refused: %s", d.text);
    CHECK(emu_launch(img, "no_such_kernel", g1, b_ok, 0, args, EMU_SCHEDULE_ROUND_ROBIN, 1, &d) ==
              EMU_STATUS_NOT_FOUND,
          "unknown entry accepted");
    CHECK(strstr(d.text, "no_such_kernel") != NULL, "message: %s", d.text);
    void *noargs[] = {NULL};
    CHECK(emu_launch(img, "k_empty", g1, b_ok, 0, noargs, EMU_SCHEDULE_ROUND_ROBIN, 1, &d) == EMU_STATUS_INVALID,
          "missing argument accepted");

    /* dynamic shared memory: 48 KiB without opt-in, more after it */
    emu_kernel *k = emu_image_kernel(img, "k_dyn_smem", &d);
    CHECK(k != NULL, "%s", d.text);
    if (!k) return;
    enum { T = 32 };
    static float in[T], out[T];
    static unsigned first[T];
    for (int i = 0; i < T; i++) in[i] = (float)i + 0.5f;
    float *p0 = out;
    unsigned *p1 = first;
    float *p2 = in;
    void *a3[] = {&p0, &p1, &p2};
    unsigned bt[3] = {T, 1, 1};
    CHECK(emu_kernel_launch(k, g1, bt, EMU_SMEM_DEFAULT_LIMIT, a3, EMU_SCHEDULE_ROUND_ROBIN, 1, &d) == EMU_STATUS_OK,
          "48 KiB refused: %s", d.text);
    CHECK(emu_kernel_launch(k, g1, bt, EMU_SMEM_DEFAULT_LIMIT + 16, a3, EMU_SCHEDULE_ROUND_ROBIN, 1, &d) ==
              EMU_STATUS_INVALID,
          "48 KiB + 16 accepted without opt-in");
    CHECK(emu_kernel_set_max_dynamic_smem(k, EMU_SMEM_OPTIN_LIMIT + 1, &d) == EMU_STATUS_INVALID,
          "opt-in beyond the device accepted");
    CHECK(emu_kernel_set_max_dynamic_smem(k, 100000, &d) == EMU_STATUS_OK, "%s", d.text);
    CHECK(emu_kernel_launch(k, g1, bt, 100000, a3, EMU_SCHEDULE_RANDOM, 1, &d) == EMU_STATUS_OK, "%s", d.text);
    for (int t = 0; t < T; t++) CHECK(out[t] == in[T - 1 - t], "opt-in launch result %d", t);
    CHECK(emu_kernel_set_max_dynamic_smem(k, EMU_SMEM_DEFAULT_LIMIT, &d) == EMU_STATUS_OK, "%s", d.text);
}

static void test_build_and_load_errors(void) {
    diag d;
    diag_init(&d);
    char path[512];
    snprintf(path, sizeof path, "%s", check_write_temp("bad.so", "", 0));
    const char *bad = "extern \"C\" __global__ void k(int *x) { x[0] = undeclared_name; }\n"
                      "BERTC_KERNEL_EXPORT(k)\n";
    int st = emu_build_image_file(&bad, 1, path, &d);
    CHECK(st != 0, "bad text built");
    CHECK(strstr(d.text, "undeclared_name") != NULL, "compiler message missing: %s", d.text);
    /* a raw extern __shared__ must not compile: dynamic shared memory goes through the macro */
    diag_init(&d);
    const char *raw = "extern \"C\" __global__ void k(float *x) { extern __shared__ float s[]; x[0] = s[0]; }\n"
                      "BERTC_KERNEL_EXPORT(k)\n";
    st = emu_build_image_file(&raw, 1, path, &d);
    CHECK(st != 0, "raw extern __shared__ built");
    diag_init(&d);
    CHECK(emu_image_load("/nonexistent/dir/x.so", &d) == NULL && strstr(d.text, "cannot load"),
          "loading a missing file: %s", d.text);
    diag_init(&d);
    CHECK(emu_image_load("libm.so.6", &d) == NULL, "libm loaded as a kernel image");
    unlink(path);
}

/* Two units define the same inline helper and template with different
 * bodies (as kernels specialised by macros do): each kernel must still call
 * its own, not one the linker picked for both. */
static void test_units_isolated(void) {
    const char *a = "#define SCALE 3\n"
                    "__device__ __noinline__ inline int helper(int x) { return x * SCALE; }\n"
                    "template <int N> __device__ __noinline__ int tpl() { return N + SCALE; }\n"
                    "extern \"C\" __global__ void k_unit_a(int *o) { o[0] = helper(2); o[1] = tpl<10>(); }\n"
                    "BERTC_KERNEL_EXPORT(k_unit_a)\n";
    const char *b = "#define SCALE 5\n"
                    "__device__ __noinline__ inline int helper(int x) { return x * SCALE; }\n"
                    "template <int N> __device__ __noinline__ int tpl() { return N + SCALE; }\n"
                    "extern \"C\" __global__ void k_unit_b(int *o) { o[0] = helper(2); o[1] = tpl<10>(); }\n"
                    "BERTC_KERNEL_EXPORT(k_unit_b)\n";
    const char *units[2] = {a, b};
    diag d;
    diag_init(&d);
    char path[512];
    snprintf(path, sizeof path, "%s", check_write_temp("units.so", "", 0));
    int st = emu_build_image_file(units, 2, path, &d);
    CHECK(st == 0, "%s", d.text);
    emu_image *im = st == 0 ? emu_image_load(path, &d) : NULL;
    unlink(path);
    CHECK(im != NULL, "%s", d.text);
    if (!im) return;
    int oa[2] = {0, 0}, ob[2] = {0, 0};
    int *pa = oa, *pb = ob;
    void *aa[] = {&pa}, *ab[] = {&pb};
    unsigned g[3] = {1, 1, 1}, bl[3] = {1, 1, 1};
    CHECK(emu_launch(im, "k_unit_a", g, bl, 0, aa, EMU_SCHEDULE_ROUND_ROBIN, 0, &d) == EMU_STATUS_OK, "%s", d.text);
    CHECK(emu_launch(im, "k_unit_b", g, bl, 0, ab, EMU_SCHEDULE_ROUND_ROBIN, 0, &d) == EMU_STATUS_OK, "%s", d.text);
    CHECK(oa[0] == 6 && oa[1] == 13, "unit a got %d, %d (want 6, 13)", oa[0], oa[1]);
    CHECK(ob[0] == 10 && ob[1] == 15, "unit b got %d, %d (want 10, 15)", ob[0], ob[1]);
    emu_image_free(im);
}

/* An image of more units than any fixed table held (64 did once, so a
 * plan with many buckets and token buckets failed after its whole GPU
 * compile): every unit is compiled, linked and launchable. */
static void test_units_many(void) {
    enum { N = 70 };
    char *texts[N];
    for (int i = 0; i < N; i++)
        if (asprintf(&texts[i], "extern \"C\" __global__ void k_many_%d(int *o) { o[0] = %d * 7 + 1; }\n"
                                "BERTC_KERNEL_EXPORT(k_many_%d)\n", i, i, i) < 0)
            texts[i] = NULL;
    diag d;
    diag_init(&d);
    char path[512];
    snprintf(path, sizeof path, "%s", check_write_temp("many.so", "", 0));
    int st = emu_build_image_file((const char *const *)texts, N, path, &d);
    for (int i = 0; i < N; i++) free(texts[i]);
    CHECK(st == 0, "%s", d.text);
    emu_image *im = st == 0 ? emu_image_load(path, &d) : NULL;
    unlink(path);
    CHECK(im != NULL, "%s", d.text);
    if (!im) return;
    static const int which[] = {0, 63, 64, N - 1};
    for (size_t k = 0; k < sizeof which / sizeof which[0]; k++) {
        int o = -1, *po = &o;
        void *args[] = {&po};
        unsigned g[3] = {1, 1, 1}, bl[3] = {1, 1, 1};
        char name[32];
        snprintf(name, sizeof name, "k_many_%d", which[k]);
        CHECK(emu_launch(im, name, g, bl, 0, args, EMU_SCHEDULE_ROUND_ROBIN, 0, &d) == EMU_STATUS_OK, "%s: %s", name,
              d.text);
        CHECK(o == which[k] * 7 + 1, "%s wrote %d (want %d)", name, o, which[k] * 7 + 1);
    }
    emu_image_free(im);
}

/* In a sanitizer build the images are instrumented and __shared__ arrays
 * are plain statics with redzones: an overflow must be reported by ASan
 * (in a child process, since the report ends it). */
static void test_sanitized_shared_overflow(void) {
    NEED_IMAGE();
    diag d;
    diag_init(&d);
    emu_kernel *k = emu_image_kernel(img, "k_smem_overflow", &d);
    CHECK(k != NULL, "%s", d.text);
    if (!k) return;
    if (!emu_kernel_is_sanitized(k)) {
        printf("info: images are not sanitized in this build; the overflow check runs under make sanitize\n");
        return;
    }
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        float out = 0;
        int idx = 8;
        float *po = &out;
        int *pidx = &idx;
        void *args[] = {&po, &pidx};
        unsigned g[3] = {1, 1, 1}, b[3] = {32, 1, 1};
        emu_kernel_launch(k, g, b, 0, args, EMU_SCHEDULE_ROUND_ROBIN, 0, &d);
        _exit(0);
    }
    close(fds[1]);
    char buf[8192];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf - 1 && (r = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)r;
    buf[n] = '\0';
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), "the overflow went unreported");
    CHECK(strstr(buf, "global-buffer-overflow") != NULL, "no ASan report: %.300s", buf);
}

/* Launches from two OS threads at once on one image (shared memory is per OS thread). */
typedef struct par_job {
    int id;
    int failures;
    uint64_t seed;
} par_job;

static void *par_worker(void *arg) {
    par_job *j = arg;
    enum { B = 4, T = 128 };
    float in[B * T], out[B];
    uint64_t s = j->seed;
    for (int rep = 0; rep < 20; rep++) {
        for (int i = 0; i < B * T; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            in[i] = (float)((s >> 40) % 1000) + 1.0f; /* integers: exact in any order */
        }
        float *po = out;
        const float *pi = in;
        void *args[] = {&po, &pi};
        diag d;
        diag_init(&d);
        unsigned grid[3] = {B, 1, 1}, block[3] = {T, 1, 1};
        if (emu_launch(img, "k_block_sum", grid, block, 0, args, (emu_schedule)(rep % NSCHED), s, &d) != EMU_STATUS_OK) {
            j->failures++;
            continue;
        }
        for (int b = 0; b < B; b++) {
            float want = 0.0f;
            for (int t = 0; t < T; t++) want += in[b * T + t];
            j->failures += out[b] != want;
        }
    }
    return NULL;
}

static void test_concurrent_launches(void) {
    NEED_IMAGE();
    par_job jobs[2] = {{0, 0, check_rng_u64()}, {1, 0, check_rng_u64()}};
    pthread_t th[2];
    int started = 0;
    for (int i = 0; i < 2; i++) started += pthread_create(&th[i], NULL, par_worker, &jobs[i]) == 0;
    CHECK(started == 2, "pthread_create failed");
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    CHECK(jobs[0].failures == 0 && jobs[1].failures == 0, "wrong results from concurrent launches: %d, %d",
          jobs[0].failures, jobs[1].failures);
}

/* ------------------------------------------------------------ cost (printed, and a loose sanity bound) */

/* ------------------------------------------------------------ programmatic dependent launch */

typedef struct pdl_bufs {
    float *in, *buf, *w, *out;
    unsigned n;
} pdl_bufs;

static pdl_bufs pdl_alloc(unsigned n) {
    pdl_bufs b = {malloc(n * 4), malloc(n * 4), malloc(n * 4), malloc(n * 4), n};
    for (unsigned i = 0; i < n; i++) {
        b.in[i] = rnd_float();
        b.w[i] = rnd_float();
    }
    memset(b.buf, 0xff, n * 4); /* NaN: what a fresh device allocation holds */
    memset(b.out, 0xff, n * 4);
    return b;
}

static void pdl_free(pdl_bufs *b) {
    free(b->in);
    free(b->buf);
    free(b->w);
    free(b->out);
}

/* out[i] = 2 in[i] + 3 w[i] wherever bit-exact; the count of others. */
static unsigned pdl_wrong(const pdl_bufs *b) {
    unsigned bad = 0;
    for (unsigned i = 0; i < b->n; i++) bad += b->out[i] != b->in[i] * 2.0f + b->w[i] * 3.0f;
    return bad;
}

/* consumer launched dependent, producer run, consumer finished: the order a
 * stream with a programmatic edge gives; *bad counts wrong outputs. */
static emu_status pdl_pair(const char *consumer, pdl_bufs *b, unsigned blocks, unsigned threads, emu_schedule s,
                           emu_launch_stats *held, unsigned *bad, diag *d) {
    unsigned grid[3] = {blocks, 1, 1}, block[3] = {threads, 1, 1};
    emu_kernel *kc = emu_image_kernel(img, consumer, d), *kp = emu_image_kernel(img, "k_pdl_producer", d);
    if (!kc || !kp) return EMU_STATUS_NOT_FOUND;
    void *cargs[3] = {&b->out, &b->buf, &b->w}, *pargs[2] = {&b->buf, &b->in};
    emu_grid *g = NULL;
    emu_status st = emu_kernel_launch_dependent(kc, grid, block, 0, cargs, s, check_rng_u64(), &g, d);
    if (st != EMU_STATUS_OK) return st;
    CHECK(emu_grid_kernel(g) == kc, "held grid runs another kernel");
    unsigned written = 0;
    for (unsigned i = 0; i < b->n; i++) written += check_f32_bits(b->out[i]) != 0xffffffffu;
    if (!strcmp(consumer, "k_pdl_consumer"))
        CHECK(written == 0, "%s (%s): %u outputs written before the predecessor ran", consumer, emu_schedule_name(s),
              written);
    st = emu_kernel_launch(kp, grid, block, 0, pargs, s, check_rng_u64(), d);
    if (st != EMU_STATUS_OK) {
        emu_grid_abandon(g);
        return st;
    }
    st = emu_grid_finish(g, d);
    emu_last_launch_stats(held);
    *bad = pdl_wrong(b);
    return st;
}

/* The producer, then `consumer` launched plainly after it. */
static emu_status pdl_in_order(const char *consumer, pdl_bufs *b, unsigned blocks, unsigned threads, emu_schedule s,
                               diag *d) {
    diag_init(d);
    void *pargs[2] = {&b->buf, &b->in}, *cargs[3] = {&b->out, &b->buf, &b->w};
    emu_status st = launch("k_pdl_producer", blocks, threads, 0, pargs, s, d);
    return st != EMU_STATUS_OK ? st : launch(consumer, blocks, threads, 0, cargs, s, d);
}

/* `consumer` as the programmatic dependent of the producer under every
 * schedule: right answers, and the waits and parked threads expected. */
static void pdl_each_schedule(const char *consumer, unsigned blocks, unsigned threads, uint64_t waits,
                              uint64_t parked) {
    for (int si = 0; si < NSCHED; si++) {
        pdl_bufs b = pdl_alloc(blocks * threads);
        diag d;
        diag_init(&d);
        emu_launch_stats ls;
        unsigned bad = 0;
        emu_status st = pdl_pair(consumer, &b, blocks, threads, all_scheds[si], &ls, &bad, &d);
        const char *sn = emu_schedule_name(all_scheds[si]);
        CHECK(st == EMU_STATUS_OK, "%s, %s: %s", consumer, sn, d.text);
        CHECK(bad == 0, "%s, %s: %u of %u outputs wrong", consumer, sn, bad, b.n);
        CHECK(ls.blocks == blocks && ls.waits == waits && ls.parked == parked,
              "%s, %s: %llu blocks, %llu waits, %llu parked", consumer, sn, (unsigned long long)ls.blocks,
              (unsigned long long)ls.waits, (unsigned long long)ls.parked);
        pdl_free(&b);
    }
}

/* A correct consumer: its shared memory and its threads survive the hold,
 * every thread of the held block parks, and the answer is right. */
static void test_pdl_correct_consumer(void) {
    NEED_IMAGE();
    pdl_each_schedule("k_pdl_consumer", 5, 96, 5 * 96, 96);
}

/* One thread waits, the others meet it at a barrier: the block is held,
 * not deadlocked, and the result is right. */
static void test_pdl_one_waiter(void) {
    NEED_IMAGE();
    pdl_each_schedule("k_pdl_one_waiter", 3, 64, 3, 1);
}

/* Reading the producer's output before the wait: correct when the launches
 * simply follow each other, wrong (the held block's rows) under the
 * programmatic order, as it would race on a GPU. */
static void test_pdl_early_read_caught(void) {
    NEED_IMAGE();
    pdl_bufs b = pdl_alloc(4 * 64);
    diag d;
    CHECK(pdl_in_order("k_pdl_early_reader", &b, 4, 64, EMU_SCHEDULE_ROUND_ROBIN, &d) == EMU_STATUS_OK, "%s", d.text);
    CHECK(pdl_wrong(&b) == 0, "serialised launches give a wrong answer");
    pdl_free(&b);
    for (int si = 0; si < NSCHED; si++) {
        pdl_bufs c = pdl_alloc(4 * 64);
        emu_launch_stats ls;
        unsigned bad = 0;
        emu_status st = pdl_pair("k_pdl_early_reader", &c, 4, 64, all_scheds[si], &ls, &bad, &d);
        CHECK(st == EMU_STATUS_OK, "%s", d.text);
        CHECK(bad == 64, "%s: %u outputs wrong, expected the held block's 64", emu_schedule_name(all_scheds[si]), bad);
        pdl_free(&c);
    }
}

/* Without a dependency in flight the wait returns at once; a held grid can
 * be abandoned (its predecessor failed) and the core goes on. */
static void test_pdl_plain_and_abandoned(void) {
    NEED_IMAGE();
    pdl_bufs b = pdl_alloc(2 * 32);
    diag d;
    void *pargs[2] = {&b.buf, &b.in}, *cargs[3] = {&b.out, &b.buf, &b.w};
    CHECK(pdl_in_order("k_pdl_consumer", &b, 2, 32, EMU_SCHEDULE_WARP_GREEDY, &d) == EMU_STATUS_OK, "%s", d.text);
    emu_launch_stats ls;
    emu_last_launch_stats(&ls);
    CHECK(ls.waits == 64 && ls.parked == 0 && pdl_wrong(&b) == 0, "plain launch: %llu waits, %llu parked",
          (unsigned long long)ls.waits, (unsigned long long)ls.parked);
    CHECK(ls.triggers == 0, "the consumer triggered");
    launch("k_pdl_producer", 2, 32, 0, pargs, EMU_SCHEDULE_WARP_GREEDY, &d);
    emu_last_launch_stats(&ls);
    CHECK(ls.triggers == 2, "%llu blocks triggered, expected 2", (unsigned long long)ls.triggers);
    emu_kernel *k = emu_image_kernel(img, "k_pdl_consumer", &d);
    unsigned grid[3] = {2, 1, 1}, block[3] = {32, 1, 1};
    for (int i = 0; k && i < 3; i++) {
        emu_grid *g = NULL;
        CHECK(emu_kernel_launch_dependent(k, grid, block, 0, cargs, EMU_SCHEDULE_RANDOM, check_rng_u64(), &g, &d) ==
                  EMU_STATUS_OK && g,
              "%s", d.text);
        emu_grid_abandon(g);
    }
    memset(b.out, 0xff, b.n * 4);
    CHECK(launch("k_pdl_consumer", 2, 32, 0, cargs, EMU_SCHEDULE_ROUND_ROBIN, &d) == EMU_STATUS_OK &&
              pdl_wrong(&b) == 0,
          "a launch after abandoned grids: %s", d.text);
    pdl_free(&b);
}

/* A prefetch must stay inside device memory: the core asks the checker the
 * device installs (here the test's own, knowing one buffer). */
static const float *pf_base;
static size_t pf_len;
static int pf_check(const void *p, unsigned long long bytes) {
    const char *c = p, *b = (const char *)pf_base;
    return c >= b && bytes <= pf_len * sizeof(float) && (size_t)(c - b) <= pf_len * sizeof(float) - bytes;
}

static void test_prefetch_range_checked(void) {
    NEED_IMAGE();
    float *buf = malloc(100 * sizeof *buf);
    pf_base = buf;
    pf_len = 100;
    emu_set_mem_check(pf_check);
    struct {
        int n, off;
        emu_status st;
    } cases[] = {{100, 0, EMU_STATUS_OK}, {10, 90, EMU_STATUS_OK}, {0, 200, EMU_STATUS_OK},
                 {11, 90, EMU_STATUS_FAULT}, {1, -1, EMU_STATUS_FAULT}, {101, 0, EMU_STATUS_FAULT}};
    for (int i = 0; i < 6; i++) {
        diag d;
        diag_init(&d);
        int *np = &cases[i].n, *op = &cases[i].off;
        void *args[3] = {&buf, &np, &op};
        emu_status st = launch("k_prefetch", 1, 32, 0, args, EMU_SCHEDULE_ROUND_ROBIN, &d);
        CHECK(st == cases[i].st, "prefetch of %d floats at %d: %s (%s)", cases[i].n, cases[i].off, emu_status_name(st),
              d.text);
        if (st == EMU_STATUS_FAULT)
            CHECK(strstr(d.text, "outside device memory") && strstr(d.text, "k_prefetch"), "unclear: %s", d.text);
    }
    emu_set_mem_check(NULL);
    free(buf);
}

/* cp.async lands when its thread waits for its group: a wait that leaves
 * the first group in flight reads 0xff bytes (NaN) in every schedule (each
 * value whose copying thread has not waited yet); the
 * right wait reads the copies, zero-fills included; a misaligned source
 * is a fault. */
static void test_cp_async_groups(void) {
    NEED_IMAGE();
    enum { B = 3, T = 64 };
    static float in[B * 2 * T * 4], out[B * T * 8];
    for (int i = 0; i < B * 2 * T * 4; i++) in[i] = (float)rnd_nonzero(-1000, 1000) / 7.0f;
    for (int si = 0; si < NSCHED; si++)
        for (int c = 0; c < 3; c++) {
            int lag = c == 2 ? 2 : 1, zero = c == 1;
            float *po = out, *pin = in;
            int *pl = &lag, *pz = &zero;
            void *args[4] = {&po, &pin, &pl, &pz};
            memset(out, 0, sizeof out);
            diag d;
            emu_status st = launch("k_async", B, T, 0, args, all_scheds[si], &d);
            CHECK(st == EMU_STATUS_OK, "%s", d.text);
            unsigned wrong_a = 0, wrong_b = 0, poison_a = 0;
            for (int b = 0; b < B; b++)
                for (int t = 0; t < T; t++)
                    for (int e = 0; e < 4; e++) {
                        const float *o = out + (b * T + t) * 8;
                        float wa = in[(b * 2 * T + (t + 1) % T) * 4 + e];
                        float wb = zero ? 0.0f : in[(b * 2 * T + T + (t + 3) % T) * 4 + e];
                        uint32_t bits;
                        memcpy(&bits, &o[e], 4);
                        wrong_a += o[e] != wa;
                        poison_a += bits == 0xffffffffu;
                        wrong_b += o[4 + e] != wb;
                    }
            const char *sn = emu_schedule_name(all_scheds[si]);
            CHECK(wrong_b == 0, "%s, case %d: %u values of the second group wrong", sn, c, wrong_b);
            /* too early a read sees the poison wherever the copying
             * thread has not reached its later wait yet: at least the
             * first reader of every block */
            if (lag == 1) CHECK(wrong_a == 0, "%s, case %d: %u values of the first group wrong", sn, c, wrong_a);
            else CHECK(poison_a >= B && wrong_a == poison_a, "%s: an early read saw %u poisoned values, %u wrong",
                       sn, poison_a, wrong_a);
        }
    float *pin = in;
    void *margs[1] = {&pin};
    diag d;
    emu_status st = launch("k_async_misaligned", 1, 32, 0, margs, EMU_SCHEDULE_ROUND_ROBIN, &d);
    CHECK(st == EMU_STATUS_FAULT && strstr(d.text, "cp.async") && strstr(d.text, "aligned"), "misaligned: %s (%s)",
          emu_status_name(st), d.text);
}

static void test_costs(void) {
    NEED_IMAGE();
    enum { ROWS = 128, COLS = 384 };
    static float in[ROWS * COLS], out[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) in[i] = rnd_float();
    int cols = COLS;
    float *po = out;
    const float *pi = in;
    int *pc = &cols;
    void *args[] = {&po, &pi, &pc};
    diag d;
    diag_init(&d);
    double best = 1e9;
    emu_launch_stats stats = {0};
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_s();
        emu_status st = launch("k_layernorm", ROWS, 128, 0, args, EMU_SCHEDULE_ROUND_ROBIN, &d);
        double t = now_s() - t0;
        CHECK(st == EMU_STATUS_OK, "%s", d.text);
        if (t < best) best = t;
        emu_last_launch_stats(&stats);
    }
    /* check one row against C */
    double mean = 0, var = 0;
    for (int c = 0; c < COLS; c++) mean += in[c];
    mean /= COLS;
    for (int c = 0; c < COLS; c++) var += (in[c] - mean) * (in[c] - mean);
    var /= COLS;
    for (int c = 0; c < COLS; c++) {
        double want = (in[c] - mean) / sqrt(var + 1e-5);
        CHECK(fabs(out[c] - want) < 1e-4, "layernorm[%d] %g want %g", c, (double)out[c], want);
    }
    CHECK(stats.blocks == ROWS && stats.threads == 128, "stats %llu blocks x %llu threads",
          (unsigned long long)stats.blocks, (unsigned long long)stats.threads);
    CHECK(stats.switches > (uint64_t)ROWS * 128 * 3, "only %llu switches", (unsigned long long)stats.switches);
    printf("info: layernorm %dx%d (128 blocks x 128 threads): %.2f ms per launch, %llu switches, %.1f ns per switch "
           "(upper bound: includes the kernel's own work)\n",
           ROWS, COLS, best * 1e3, (unsigned long long)stats.switches, best * 1e9 / (double)stats.switches);

    enum { ITERS = 2000 };
    int iters = ITERS;
    int *pi2 = &iters;
    void *sargs[] = {&pi2};
    for (int sc = 0; sc < 2; sc++) {
        emu_schedule sch = sc ? EMU_SCHEDULE_WARP_GREEDY : EMU_SCHEDULE_ROUND_ROBIN;
        double t0 = now_s();
        emu_status st = launch("k_sync_loop", 1, 128, 0, sargs, sch, &d);
        double t = now_s() - t0;
        CHECK(st == EMU_STATUS_OK, "%s", d.text);
        emu_last_launch_stats(&stats);
        CHECK(stats.switches >= (uint64_t)ITERS * 128, "sync loop: %llu switches", (unsigned long long)stats.switches);
        printf("info: __syncthreads loop, 128 threads, %s: %llu switches, %.1f ns per switch (incl. barrier)\n",
               emu_schedule_name(sch), (unsigned long long)stats.switches, t * 1e9 / (double)stats.switches);
    }

    int x = 0;
    int *px = &x;
    void *eargs[] = {&px};
    unsigned g1[3] = {1, 1, 1}, b32[3] = {32, 1, 1};
    emu_kernel *k = emu_image_kernel(img, "k_empty", &d);
    CHECK(k != NULL, "%s", d.text);
    if (!k) return;
    enum { REPS = 2000 };
    double t0 = now_s();
    for (int i = 0; i < REPS; i++) emu_kernel_launch(k, g1, b32, 0, eargs, EMU_SCHEDULE_ROUND_ROBIN, 0, &d);
    double t = (now_s() - t0) / REPS;
    printf("info: empty kernel, 1 block x 32 threads: %.2f us per launch\n", t * 1e6);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    diag d;
    diag_init(&d);
    const char *units[5] = {core_src, half_src, kimage_faulting_src, pdl_src, async_src};
    double t0 = now_s();
    img = kimage_build("emu_core.so", units, 5, image_load, &d); /* a loaded mapping outlives its file */
    if (!img) snprintf(img_error, sizeof img_error, "%s", d.text);
    else printf("info: built 5 kernel units in %.2f s\n", now_s() - t0);

    CHECK_CASE(test_block_sum);
    CHECK_CASE(test_early_exit);
    CHECK_CASE(test_dynamic_smem);
    CHECK_CASE(test_warp_shuffles);
    CHECK_CASE(test_partial_warp);
    CHECK_CASE(test_votes);
    CHECK_CASE(test_warp_allgather);
    CHECK_CASE(test_atomics);
    CHECK_CASE(test_block_order);
    CHECK_CASE(test_dims_and_scalars);
    CHECK_CASE(test_half_to_float_exhaustive);
    CHECK_CASE(test_float_to_half_rounding);
    CHECK_CASE(test_double_to_half_rounding);
    CHECK_CASE(test_half_arithmetic);
    CHECK_CASE(test_half_shuffle);
    CHECK_CASE(test_missing_syncthreads_detected);
    CHECK_CASE(test_deadlock_reported);
    CHECK_CASE(test_divergent_barrier_reported);
    CHECK_CASE(test_exited_lane_reported);
    CHECK_CASE(test_trap_reported);
    CHECK_CASE(test_launch_limits);
    CHECK_CASE(test_build_and_load_errors);
    CHECK_CASE(test_units_isolated);
    CHECK_CASE(test_units_many);
    CHECK_CASE(test_sanitized_shared_overflow);
    CHECK_CASE(test_concurrent_launches);
    CHECK_CASE(test_pdl_correct_consumer);
    CHECK_CASE(test_pdl_one_waiter);
    CHECK_CASE(test_pdl_early_read_caught);
    CHECK_CASE(test_pdl_plain_and_abandoned);
    CHECK_CASE(test_prefetch_range_checked);
    CHECK_CASE(test_cp_async_groups);
    CHECK_CASE(test_costs);
    emu_image_free(img);
    return check_summary();
}
