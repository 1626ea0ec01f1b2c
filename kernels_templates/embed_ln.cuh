/*
 * embed_ln.cuh — out[s] = LayerNorm(sum_g table_g[index_g(s)]) * gamma + beta.
 *
 * The embedding layer in one pass: the word, position and token-type
 * lookups are gathers of whole rows, so this is add_ln with the operand
 * rows chosen by the request instead of by s.  Same geometry (a warp per
 * row up to 1024 elements, else a block per row), same two-pass LayerNorm
 * from registers.  Each index comes from the request block (input_ids,
 * token_type_ids) or is the position itself; ids are clamped into the
 * table, so even an unchecked request cannot read outside it (the runtime
 * validates ids before launching; the clamp is the second line of
 * defence).  A fourth index, RoBERTa's position ids (PAD the pad id):
 * PAD where input_ids[s] is PAD, else PAD + the number of non-pad ids in
 * [0, s] — a prefix count, read by every thread of the row from the
 * request block (at most one bucket of ids, cached).  The tables are summed in float in gather order, as the
 * unfused graph adds them.
 */
#ifndef BERTC_EMBED_LN_CUH
#define BERTC_EMBED_LN_CUH

#define BERTC_INDEX_INPUT_IDS 0
#define BERTC_INDEX_TOKEN_TYPES 1
#define BERTC_INDEX_POSITION 2
#define BERTC_INDEX_PAD_POSITION 3

/* Row of a table of NROWS rows that position s gathers. */
template <int IDX, int BUCKET, int NROWS, int PAD = 0> BERTC_INLINE int bertc_embed_index(const int *req, int s) {
    int id;
    if constexpr (IDX == BERTC_INDEX_PAD_POSITION) {
        const int *ids = req + BERTC_REQ_INPUT_IDS(BUCKET);
        int n = 0;
        for (int t = 0; t <= s; ++t) n += ids[t] != PAD;
        id = ids[s] == PAD ? PAD : PAD + n;
    } else if constexpr (IDX == BERTC_INDEX_INPUT_IDS) {
        id = req[BERTC_REQ_INPUT_IDS(BUCKET) + s];
    } else if constexpr (IDX == BERTC_INDEX_TOKEN_TYPES) {
        id = req[BERTC_REQ_TOKEN_TYPES(BUCKET) + s];
    } else {
        id = s;
    }
    return id < 0 ? 0 : (id >= NROWS ? NROWS - 1 : id);
}

template <typename T, int BUCKET, int H, int VEC, int THREADS, int ROWS, int NG, int I0, int N0, int I1,
          int N1, int I2, int N2, int PAD = 0>
BERTC_INLINE void bertc_embed_ln(T *__restrict__ out, const int *__restrict__ req, const T *__restrict__ t0,
                                 const T *__restrict__ t1, const T *__restrict__ t2,
                                 const T *__restrict__ gamma, const T *__restrict__ beta, float eps) {
    typedef bertc_row_shape<H, VEC, THREADS> S;
    __shared__ float scratch[32];
    const int len = bertc_req_len<BUCKET>(req);
    const int tid = THREADS == 32 ? ((int)threadIdx.x & 31) : (int)threadIdx.x;
    const int row = THREADS == 32 ? (int)blockIdx.x * ROWS + ((int)threadIdx.x >> 5) : (int)blockIdx.x;
    if (row >= len) return;

    const T *r0 = t0 + (size_t)bertc_embed_index<I0, BUCKET, N0, PAD>(req, row) * H;
    const T *r1 = NG > 1 ? t1 + (size_t)bertc_embed_index<I1, BUCKET, N1, PAD>(req, row) * H : t0;
    const T *r2 = NG > 2 ? t2 + (size_t)bertc_embed_index<I2, BUCKET, N2, PAD>(req, row) * H : t0;
    float v[S::ITEMS * VEC];
#pragma unroll
    for (int i = 0; i < S::ITEMS; ++i) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) v[i * VEC + j] = 0.0f;
        if (bertc_row_has<H, VEC, THREADS>(i, tid)) {
            const int col = (i * THREADS + tid) * VEC;
            bertc_load_vec<T, VEC>(r0 + col, v + i * VEC);
            if constexpr (NG > 1) {
                float e[VEC];
                bertc_load_vec<T, VEC>(r1 + col, e);
#pragma unroll
                for (int j = 0; j < VEC; ++j) v[i * VEC + j] += e[j];
            }
            if constexpr (NG > 2) {
                float e[VEC];
                bertc_load_vec<T, VEC>(r2 + col, e);
#pragma unroll
                for (int j = 0; j < VEC; ++j) v[i * VEC + j] += e[j];
            }
        }
    }
    bertc_layer_norm_store<T, H, VEC, THREADS>(v, tid, gamma, beta, out + (size_t)row * H, eps, scratch);
}

#endif /* BERTC_EMBED_LN_CUH */
