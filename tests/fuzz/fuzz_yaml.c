/*
 * fuzz_yaml — the graph description loader, then the fusion passes and the
 * lowering, on arbitrary text.  Weights resolve against BERTC_FUZZ_DIR (the
 * seeds say `weights: model.safetensors`).  A graph that loads must fuse
 * and lower (length buckets and a token bucket) or say why; nothing may
 * crash on the way.
 */
#include <string.h>

#include "fuzz.h"
#include "lower.h"
#include "model.h"
#include "passes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    model m;
    diag d;
    diag_init(&d);
    if (model_load_text(&m, "fuzz.yaml", (const char *)data, size, fuzz_dir(), &d) == 0 &&
        passes_run(&m.graph, &m.weights, NULL, &d) == 0) {
        /* length buckets and a token bucket of 24 tokens (3 requests): the
         * packed lowering (embed_ln, attention, pool, slices) too */
        static const int buckets[2] = {8, 16}, tokens[1] = {24};
        lower_options o = {.precision = PLAN_DTYPE_F16,
                           .fusion = PLAN_FUSION_DEFAULT,
                           .buckets = buckets,
                           .nbuckets = m.graph.max_seq_len >= 16 ? 2 : m.graph.max_seq_len >= 8,
                           .token_buckets = tokens,
                           .ntoken_buckets = 1,
                           .max_batch = 3};
        plan p;
        plan_init(&p);
        if (o.nbuckets) (void)lower_model(&m.graph, &m.weights, &o, &p, &d);
        plan_free(&p);
    }
    fuzz_require(d.text[0] != '\0' || d.code == DIAG_CODE_OK, "an error without a message");
    model_free(&m);
    return 0;
}
