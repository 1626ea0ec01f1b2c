/*
 * predict_gpus — the GPUs the performance model knows (predict.h), from
 * their published specifications.  One row per GPU; a new GPU is a row.
 *
 * Sources.  Counts, clocks, bandwidths, L2 sizes and dense FP16 tensor
 * throughput are NVIDIA's data sheets and architecture whitepapers (Turing,
 * Ampere GA100/GA102, Ada, Hopper, Blackwell).  The per-SM limits (registers,
 * shared memory, CTAs and threads per SM, the 1 KB of shared memory the
 * system reserves per CTA from 8.0 on, FP32 lanes per SM) are the CUDA C++
 * Programming Guide's table of compute capabilities.  Two figures have no
 * NVIDIA number: the B200's boost clock and L2 size (Chips and Cheese
 * measured 148 SMs, a 126 MB L2 and H100-like clocks), marked as such.
 *
 * Dense tensor throughput is the FP16/BF16 figure with FP32 accumulation
 * and without sparsity — what bertc's kernels and its cuBLASLt GEMMs (FP32
 * compute type) use.  `warp_mma_share` is the share of it the warp-level
 * mma.sync instruction reaches: 1 up to Ada; on Hopper the peak needs the
 * warpgroup wgmma instruction and mma.sync reaches about two thirds
 * (FlashAttention-3, Shah et al. 2024); Blackwell's tcgen05 is assumed
 * alike.  cuBLASLt uses the full peak on every GPU.
 *
 * The image a GPU runs follows from its compute capability through the
 * runtime's own rule (plan_image_select); the table has no column for it.
 */
#include <string.h>

#include "predict.h"

#define KB 1024

static const predict_gpu predict_gpus[] = {
    {"t4", "Tesla T4", 7, 5, 40, 1590, 320, 4, 65, 1.0, 0, 64, 65536, 64 * KB, 0, 16, 1024,
     "NVIDIA T4 data sheet (65 TFLOPS mixed precision, 320 GB/s, 1590 MHz boost), Turing whitepaper (40 SMs, 4 MB L2)"},
    {"a10", "A10", 8, 6, 72, 1695, 600, 6, 125, 1.0, 1, 128, 65536, 100 * KB, KB, 16, 1536,
     "NVIDIA A10 data sheet (125 TFLOPS FP16 dense, 600 GB/s), GA102 whitepaper (72 SMs, 6 MB L2, 1695 MHz)"},
    {"l4", "L4", 8, 9, 58, 2040, 300, 48, 121, 1.0, 1, 128, 65536, 100 * KB, KB, 24, 1536,
     "NVIDIA L4 data sheet (242 TFLOPS FP16 sparse = 121 dense, 300 GB/s), Ada whitepaper (58 SMs, 48 MB L2, "
     "2040 MHz)"},
    {"l40s", "L40S", 8, 9, 142, 2520, 864, 96, 362, 1.0, 1, 128, 65536, 100 * KB, KB, 24, 1536,
     "NVIDIA L40S data sheet (362 TFLOPS FP16 dense, 864 GB/s, 2520 MHz boost), Ada whitepaper (142 SMs, 96 MB L2)"},
    {"a100", "A100-SXM4-40GB", 8, 0, 108, 1410, 1555, 40, 312, 1.0, 1, 64, 65536, 164 * KB, KB, 32, 2048,
     "NVIDIA A100 data sheet and Ampere GA100 whitepaper (108 SMs, 1410 MHz, 1555 GB/s, 40 MB L2, 312 TFLOPS)"},
    {"h100", "H100-SXM5-80GB", 9, 0, 132, 1980, 3350, 50, 989, 2.0 / 3.0, 1, 128, 65536, 228 * KB, KB, 32, 2048,
     "NVIDIA H100 data sheet and Hopper whitepaper (132 SMs, 1980 MHz, 3.35 TB/s, 50 MB L2, 989 TFLOPS)"},
    {"h200", "H200-SXM-141GB", 9, 0, 132, 1980, 4800, 50, 989, 2.0 / 3.0, 1, 128, 65536, 228 * KB, KB, 32, 2048,
     "NVIDIA H200 data sheet (4.8 TB/s, 989 TFLOPS); GH100 otherwise as H100"},
    {"b200", "B200", 10, 0, 148, 1980, 8000, 126, 2250, 2.0 / 3.0, 1, 128, 65536, 228 * KB, KB, 32, 2048,
     "NVIDIA HGX B200 spec (8 TB/s, 4.5 PFLOPS FP16 sparse = 2250 dense); 148 SMs, 126 MB L2 and H100-like "
     "clocks measured by Chips and Cheese (no NVIDIA figure)"},
};

int predict_gpu_count(void) { return (int)(sizeof predict_gpus / sizeof predict_gpus[0]); }

const predict_gpu *predict_gpu_at(int i) { return i >= 0 && i < predict_gpu_count() ? &predict_gpus[i] : NULL; }

const predict_gpu *predict_gpu_find(const char *name) {
    for (int i = 0; name && i < predict_gpu_count(); i++)
        if (!strcmp(predict_gpus[i].name, name)) return &predict_gpus[i];
    return NULL;
}

const char *predict_gpu_names(void) { return "t4, a10, l4, l40s, a100, h100, h200, b200"; }
