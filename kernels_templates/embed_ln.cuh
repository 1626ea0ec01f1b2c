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
 * defence).  The tables are summed in float in gather order, as the
 * unfused graph adds them.
 *
 * Everything this kernel reads is the request block or weights, so all of
 * it is issued before the grid-dependency wait; only the store waits.  The
 * token types sit at 4 + B words, so the bucket length B is read from the
 * request block with the real length and the text serves every bucket.
 *
 * Packed (a token bucket's batch): rows are tokens of several sequences
 * end to end, and a row's position is its place in its own sequence, the
 * request block's position[] (at 4 + 3B), not its row; everything else is
 * row by row as before, so a sequence's rows equal its rows alone.
 */
#ifndef BERTC_EMBED_LN_CUH
#define BERTC_EMBED_LN_CUH

#define BERTC_INDEX_INPUT_IDS 0
#define BERTC_INDEX_TOKEN_TYPES 1
#define BERTC_INDEX_POSITION 2

/* Row of a table of NROWS rows that position s gathers.  PACKED: s is a
 * row of a packed batch and its position the request block's position[s]. */
template <int IDX, int NROWS, bool PACKED> BERTC_INLINE int bertc_embed_index(const int *req, int bucket, int s) {
    int id;
    if constexpr (IDX == BERTC_INDEX_INPUT_IDS) {
        id = req[BERTC_REQ_INPUT_IDS(bucket) + s];
    } else if constexpr (IDX == BERTC_INDEX_TOKEN_TYPES) {
        id = req[BERTC_REQ_TOKEN_TYPES(bucket) + s];
    } else if constexpr (PACKED) {
        id = req[BERTC_REQ_POSITIONS(bucket) + s];
    } else {
        id = s;
    }
    return id < 0 ? 0 : (id >= NROWS ? NROWS - 1 : id);
}

/* Adds row `idx` of table t (H wide) into v. */
template <typename T, int H, int VEC, int THREADS>
BERTC_INLINE void bertc_embed_add(const T *__restrict__ t, int idx, int tid, float *v) {
    float e[bertc_row_shape<H, VEC, THREADS>::ITEMS * VEC];
    bertc_row_load<T, H, VEC, THREADS>(t + (size_t)idx * H, tid, e);
#pragma unroll
    for (int j = 0; j < bertc_row_shape<H, VEC, THREADS>::ITEMS * VEC; ++j) v[j] += e[j];
}

template <typename T, int H, int VEC, int THREADS, int NG, int I0, int N0, int I1, int N1, int I2, int N2,
          bool PACKED>
BERTC_INLINE void bertc_embed_ln(T *__restrict__ out, const int *__restrict__ req, const T *__restrict__ t0,
                                 const T *__restrict__ t1, const T *__restrict__ t2,
                                 const T *__restrict__ gamma, const T *__restrict__ beta, float eps) {
    typedef bertc_row_shape<H, VEC, THREADS> S;
    constexpr int N = S::ITEMS * VEC;
    __shared__ float scratch[32];
    const int tid = (int)threadIdx.x, row = (int)blockIdx.x;
    const bertc_req_lens rl = bertc_req_read(req);
    if (row >= rl.len) return;

    float gm[N], bt[N], v[N];
    bertc_row_load<T, H, VEC, THREADS>(gamma, tid, gm);
    bertc_row_load<T, H, VEC, THREADS>(beta, tid, bt);
    bertc_row_load<T, H, VEC, THREADS>(t0 + (size_t)bertc_embed_index<I0, N0, PACKED>(req, rl.bucket, row) * H, tid, v);
    if constexpr (NG > 1) bertc_embed_add<T, H, VEC, THREADS>(t1, bertc_embed_index<I1, N1, PACKED>(req, rl.bucket, row), tid, v);
    if constexpr (NG > 2) bertc_embed_add<T, H, VEC, THREADS>(t2, bertc_embed_index<I2, N2, PACKED>(req, rl.bucket, row), tid, v);
    bertc_grid_dependency_wait();
    bertc_trigger_dependents(); /* no activation is read at all */
    bertc_layer_norm_store<T, H, VEC, THREADS>(v, tid, gm, bt, out + (size_t)row * H, eps, scratch);
}

#endif /* BERTC_EMBED_LN_CUH */
