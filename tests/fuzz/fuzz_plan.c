/* fuzz_plan — the plan reader on arbitrary bytes, checksums as they are:
 * mostly the header and table checks are reached (fuzz_plan_sealed goes
 * deeper). */
#include "fuzz.h"
#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    plan p;
    diag d;
    diag_init(&d);
    if (plan_read_memory(&p, data, size, "fuzz.plan", &d) == 0) plan_free(&p);
    return 0;
}
