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
 * A fourth index is RoBERTa's position ids (PAD the pad id; transformers'
 * create_position_ids_from_input_ids): PAD where input_ids[s] is PAD, else
 * PAD + the number of non-pad ids in [0, s].  The count is the block's:
 * each thread counts a strided share of ids[0..s] and one block sum adds
 * them (exact: at most 4096 ones in float), so a row costs s / THREADS
 * loads per thread, not s.
 *
 * Everything this kernel reads is the request block or weights, so all of
 * it is issued before the grid-dependency wait; only the store waits.  The
 * token types sit at 4 + B words, so the bucket length B is read from the
 * request block with the real length and the text serves every bucket.
 *
 * Packed (a token bucket's batch): rows are tokens of several sequences
 * end to end, and a row's position is its place in its own sequence, the
 * request block's position[] (at 4 + 3B), not its row, and a pad
 * position counts from the sequence's first row (row - position[row]);
 * everything else is row by row as before, so a sequence's rows equal its
 * rows alone (the pad count is a sum of ones, exact in any order).
 */
#ifndef BERTC_EMBED_LN_CUH
#define BERTC_EMBED_LN_CUH

#define BERTC_INDEX_INPUT_IDS 0
#define BERTC_INDEX_TOKEN_TYPES 1
#define BERTC_INDEX_POSITION 2
#define BERTC_INDEX_PAD_POSITION 3

/* RoBERTa's position id of row s, counting from row `first`, the first
 * row of s's sequence (every thread of the block calls it). */
template <int THREADS, int PAD>
BERTC_INLINE int bertc_embed_pad_position(const int *__restrict__ req, int bucket, int first, int s, int tid,
                                          float *scratch) {
    const int *ids = req + BERTC_REQ_INPUT_IDS(bucket);
    int n = 0;
    for (int t = first + tid; t <= s; t += THREADS) n += ids[t] != PAD;
    const int count = (int)bertc_block_sum<THREADS / 32>((float)n, scratch);
    return ids[s] == PAD ? PAD : PAD + count;
}

/* Row of a table of NROWS rows that position s gathers (padpos: row s's
 * pad-position id).  PACKED: s is a row of a packed batch and its
 * position the request block's position[s]. */
template <int IDX, int NROWS, bool PACKED>
BERTC_INLINE int bertc_embed_index(const int *req, int bucket, int s, int padpos) {
    int id;
    if constexpr (IDX == BERTC_INDEX_PAD_POSITION) {
        id = padpos;
    } else if constexpr (IDX == BERTC_INDEX_INPUT_IDS) {
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

template <typename T, int H, int VEC, int THREADS, int NG, int I0, int N0, int I1, int N1, int I2, int N2, int PAD,
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
    constexpr bool PP = I0 == BERTC_INDEX_PAD_POSITION || (NG > 1 && I1 == BERTC_INDEX_PAD_POSITION) ||
                        (NG > 2 && I2 == BERTC_INDEX_PAD_POSITION);
    int padpos = 0;
    if constexpr (PP) {
        /* packed: the count starts at the sequence's first row (row minus
         * its position, clamped into the batch like every index) */
        int first = 0;
        if constexpr (PACKED) {
            first = row - req[BERTC_REQ_POSITIONS(rl.bucket) + row];
            first = first < 0 ? 0 : (first > row ? row : first);
        }
        padpos = bertc_embed_pad_position<THREADS, PAD>(req, rl.bucket, first, row, tid, scratch);
    }
    bertc_row_load<T, H, VEC, THREADS>(t0 + (size_t)bertc_embed_index<I0, N0, PACKED>(req, rl.bucket, row, padpos) * H,
                                       tid, v);
    if constexpr (NG > 1)
        bertc_embed_add<T, H, VEC, THREADS>(t1, bertc_embed_index<I1, N1, PACKED>(req, rl.bucket, row, padpos), tid, v);
    if constexpr (NG > 2)
        bertc_embed_add<T, H, VEC, THREADS>(t2, bertc_embed_index<I2, N2, PACKED>(req, rl.bucket, row, padpos), tid, v);
    bertc_grid_dependency_wait();
    bertc_trigger_dependents(); /* no activation is read at all */
    bertc_layer_norm_store<T, H, VEC, THREADS>(v, tid, gm, bt, out + (size_t)row * H, eps, scratch);
}

#endif /* BERTC_EMBED_LN_CUH */
