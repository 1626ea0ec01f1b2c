/*
 * pool.cuh — a sentence embedding: out = pool(x[0..len), mask) [/ ||.||_2].
 *
 * sentence-transformers' Pooling and Normalize modules, for one request.
 * MODE BERTC_POOL_CLS copies row 0 (the [CLS] token); BERTC_POOL_MEAN sums
 * the rows s < len whose attention_mask[s] is not zero and divides by their
 * count, or by 1e-9 when there is none (sentence-transformers' clamp, so an
 * all-masked request gives zeros).  With NORMALIZE the pooled row is then
 * divided by max(||row||_2, 1e-12), torch.nn.functional.normalize.
 *
 * The output is one row, so the kernel is one block, and the design is
 * about reading [len, H] with all of it.  Threads form RG row groups of CT
 * column threads; column thread ct owns vectors ct, ct + CT, ... (ITEMS of
 * them, VEC elements each) and row group rg visits rows rg, rg + RG, ...
 * so consecutive threads read consecutive 16-byte pieces of a row and the
 * block streams RG rows at once.  Each thread sums in float registers; the
 * row groups then meet in shared memory, where row group 0 adds the partial
 * sums in a fixed order (deterministic results, launch after launch).  The
 * norm is one block reduction over row group 0's values.
 *
 * Padding never reaches the result: rows >= len and masked rows are not
 * read at all (a padding row may hold NaN, and NaN * 0 is NaN, so a
 * multiply by the mask would not do).  len, the bucket length and the mask
 * come from the request block, so one captured graph serves every length
 * of the bucket and one kernel every bucket.  The request block is read
 * before the grid-dependency wait, x after it; the divisions are
 * multiplications by a reciprocal (rsqrtf for the norm).
 *
 * Packed (a token bucket's batch): one block per sequence, each doing
 * exactly the one-request block's work on its sequence's rows and mask
 * (from seq_start[]) into its own output row, so a sequence's pooled row
 * is bit for bit its row alone.  MODE BERTC_POOL_ROW (packed only) takes
 * row i of an input with a row per sequence (a lone Normalize after a
 * Dense module), where alone a cls pool takes the one row: the same copy
 * and norm, so the same bits.
 */
#ifndef BERTC_POOL_CUH
#define BERTC_POOL_CUH

#define BERTC_POOL_CLS 0
#define BERTC_POOL_MEAN 1
#define BERTC_POOL_ROW 2

/* One pooled row from the len rows of x and their mask: the block's work
 * for one request (or one sequence of a packed batch).  Called after the
 * request block has been read; it waits for the grid dependency itself. */
template <typename T, int H, int VEC, int CT, int RG, int ITEMS, int THREADS, int MODE, bool NORMALIZE>
BERTC_INLINE void bertc_pool_rows(T *__restrict__ out, const T *__restrict__ x, const int *__restrict__ mask,
                                  int len) {
    constexpr int NV = H / VEC;
    constexpr int ACTIVE = CT * RG;
    const int tid = (int)threadIdx.x;
    const bool active = tid < ACTIVE;
    const int ct = tid % CT, rg = tid / CT;
    const bool owner = active && rg == 0;   /* holds the final values of its columns */

    float acc[ITEMS * VEC];
#pragma unroll
    for (int j = 0; j < ITEMS * VEC; ++j) acc[j] = 0.0f;

    if constexpr (MODE != BERTC_POOL_MEAN) { /* cls, row: one row's copy */
        bertc_grid_dependency_wait();
        if (owner && len > 0) {
#pragma unroll
            for (int i = 0; i < ITEMS; ++i) {
                const int v = i * CT + ct;
                if (v < NV) bertc_load_vec<T, VEC>(x + (size_t)v * VEC, acc + i * VEC);
            }
        }
        bertc_trigger_dependents();
    } else {
        int count = 0;
        bertc_grid_dependency_wait();
        if (active) {
            for (int s = rg; s < len; s += RG) {
                if (mask[s] == 0) continue;
                ++count;
#pragma unroll
                for (int i = 0; i < ITEMS; ++i) {
                    const int v = i * CT + ct;
                    if (v < NV) {
                        float r[VEC];
                        bertc_load_vec<T, VEC>(x + (size_t)s * H + (size_t)v * VEC, r);
#pragma unroll
                        for (int j = 0; j < VEC; ++j) acc[i * VEC + j] += r[j];
                    }
                }
            }
        }
        bertc_trigger_dependents();
        if constexpr (RG > 1) {
            /* ITEMS is 1 whenever there is more than one row group. */
            __shared__ float part[RG * CT * VEC];
            __shared__ int counts[RG];
            if (active) {
#pragma unroll
                for (int j = 0; j < VEC; ++j) part[(rg * CT + ct) * VEC + j] = acc[j];
                if (ct == 0) counts[rg] = count;
            }
            __syncthreads();
            if (owner) {
#pragma unroll
                for (int j = 0; j < VEC; ++j) {
                    float s = 0.0f;
                    for (int g = 0; g < RG; ++g) s += part[(g * CT + ct) * VEC + j];
                    acc[j] = s;
                }
            }
            count = 0;
            for (int g = 0; g < RG; ++g) count += counts[g];
        }
        const float inv = count > 0 ? 1.0f / (float)count : 1e9f; /* sentence-transformers' clamp at 1e-9 */
#pragma unroll
        for (int j = 0; j < ITEMS * VEC; ++j) acc[j] *= inv;
    }

    if constexpr (NORMALIZE) {
        __shared__ float scratch[32];
        float ss = 0.0f;
        if (owner) {
#pragma unroll
            for (int i = 0; i < ITEMS; ++i)
                if (i * CT + ct < NV) {
#pragma unroll
                    for (int j = 0; j < VEC; ++j) ss += acc[i * VEC + j] * acc[i * VEC + j];
                }
        }
        ss = bertc_block_sum<THREADS / 32>(ss, scratch);
        const float inv = ss > 1e-24f ? rsqrtf(ss) : 1e12f; /* 1 / max(||x||, 1e-12) */
#pragma unroll
        for (int j = 0; j < ITEMS * VEC; ++j) acc[j] *= inv;
    }

    if (owner) {
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            const int v = i * CT + ct;
            if (v < NV) bertc_store_vec<T, VEC>(out + (size_t)v * VEC, acc + i * VEC);
        }
    }
}

/* One request: the rows and the mask of the whole block. */
template <typename T, int H, int VEC, int CT, int RG, int ITEMS, int THREADS, int MODE, bool NORMALIZE>
BERTC_INLINE void bertc_pool(T *__restrict__ out, const int *__restrict__ req, const T *__restrict__ x) {
    const bertc_req_lens rl = bertc_req_read(req);
    bertc_pool_rows<T, H, VEC, CT, RG, ITEMS, THREADS, MODE, NORMALIZE>(
        out, x, req + BERTC_REQ_ATTENTION_MASK(rl.bucket), rl.len);
}

/* A packed batch: block i pools sequence i's rows into row i of out
 * (blocks past the batch's n have nothing to do and return at once). */
template <typename T, int H, int VEC, int CT, int RG, int ITEMS, int THREADS, int MODE, bool NORMALIZE>
BERTC_INLINE void bertc_pool_packed(T *__restrict__ out, const int *__restrict__ req, const T *__restrict__ x) {
    const bertc_req_lens rl = bertc_req_read(req);
    const int i = (int)blockIdx.x;
    if (i >= bertc_req_nseq(req)) return;
    const bertc_req_seq sq = bertc_req_seq_rows(req, rl, i);
    const size_t first = MODE == BERTC_POOL_ROW ? (size_t)i : (size_t)sq.start;
    bertc_pool_rows<T, H, VEC, CT, RG, ITEMS, THREADS, MODE, NORMALIZE>(
        out + (size_t)i * H, x + first * H, req + BERTC_REQ_ATTENTION_MASK(rl.bucket) + sq.start, sq.len);
}

#endif /* BERTC_POOL_CUH */
