/*
 * seed_plan — makes the plan reader's seed corpus smaller than any plan
 * bertc writes: reads a plan, drops its images and shortens its kernel
 * sources (neither is looked inside by the reader), and writes it back
 * through the real writer, which checks the result with the real reader.
 *
 *     seed_plan IN.plan OUT.plan
 *
 * tools/make_fuzz_seeds.sh runs it; the output is committed under
 * tests/fuzz/corpus/fuzz_plan*.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "plan_write.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: seed_plan IN.plan OUT.plan\n");
        return 2;
    }
    plan in, out;
    diag d;
    diag_init(&d);
    if (plan_read(&in, argv[1], &d)) {
        fprintf(stderr, "seed_plan: %s\n", d.text);
        return 1;
    }
    out = in;                      /* borrow everything, then replace what shrinks */
    out.map = NULL;
    out.nimages = 0;
    out.images = NULL;
    out.owns_weights = 0;
    plan_kernel *k = calloc((size_t)in.nkernels + 1, sizeof *k);
    for (int i = 0; i < in.nkernels; i++) {
        k[i] = in.kernels[i];
        k[i].source = "// seed\n";
    }
    out.kernels = k;
    int rc = plan_write(&out, argv[2], &d);
    if (rc) fprintf(stderr, "seed_plan: %s\n", d.text);
    free(k);
    plan_free(&in);
    return rc ? 1 : 0;
}
