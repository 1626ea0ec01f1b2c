/*
 * arch — target architectures (arch.h).  The supported list is what NVRTC
 * of the CUDA 13 toolkit compiles for and what the plan's image selection
 * knows how to rank; "emu" is not a GPU architecture but a target of its
 * own (the emulated device's CPU image), so it is a flag, not a name.  The
 * PTX policy (which virtual architecture each generation compiles from,
 * which PTX a plan carries) is argued in arch.h.
 */
#include "arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const arch_all[] = {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"};
static const char *const arch_defaults[] = {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90"};

int arch_supported(const char *arch) {
    for (size_t i = 0; i < sizeof arch_all / sizeof arch_all[0]; i++)
        if (arch && strcmp(arch, arch_all[i]) == 0) return 1;
    return 0;
}

const char *arch_supported_name(int i) {
    return i >= 0 && (size_t)i < sizeof arch_all / sizeof arch_all[0] ? arch_all[i] : NULL;
}

const char *arch_supported_list(void) { return "sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120"; }

int arch_number(const char *arch) {
    const char *digits = !strncmp(arch, "sm_", 3) ? arch + 3 : !strncmp(arch, "compute_", 8) ? arch + 8 : NULL;
    return digits && *digits ? atoi(digits) : -1;
}

int arch_ptx_target(int sm) { return sm < 80 ? 75 : sm < 90 ? 80 : 90; }

int arch_plan_ptx(const char *const *archs, int narchs, int *out) {
    int n = 0;
    static const int targets[2] = {80, 90};
    for (int t = 0; t < 2; t++) {
        int want = targets[t] == 80; /* compute_80 always: the tensor-core path for any newer GPU */
        for (int a = 0; a < narchs; a++) want |= arch_ptx_target(arch_number(archs[a])) == targets[t];
        if (want) out[n++] = targets[t];
    }
    return n;
}

void arch_list_default(arch_list *l) {
    memset(l, 0, sizeof *l);
    for (size_t i = 0; i < sizeof arch_defaults / sizeof arch_defaults[0]; i++)
        snprintf(l->names[l->count++], sizeof l->names[0], "%s", arch_defaults[i]);
}

/* The rules, once: what is wrong with adding `name` to l. */
typedef enum arch_problem {
    ARCH_PROBLEM_NONE,
    ARCH_PROBLEM_UNKNOWN,
    ARCH_PROBLEM_TWICE,
    ARCH_PROBLEM_TOO_MANY,
} arch_problem;

static arch_problem arch_list_problem(const arch_list *l, const char *name) {
    if (!arch_supported(name)) return ARCH_PROBLEM_UNKNOWN;
    for (int k = 0; k < l->count; k++)
        if (!strcmp(l->names[k], name)) return ARCH_PROBLEM_TWICE;
    return l->count == ARCH_MAX ? ARCH_PROBLEM_TOO_MANY : ARCH_PROBLEM_NONE;
}

static void arch_list_push(arch_list *l, const char *name) {
    snprintf(l->names[l->count++], sizeof l->names[0], "%s", name);
}

int arch_list_add(arch_list *l, const char *name, const char *what, diag *d) {
    if (!strcmp(name, "emu")) {
        if (l->emu) return diag_set(d, DIAG_CODE_USAGE, "%s: 'emu' is listed twice", what);
        l->emu = 1;
        return 0;
    }
    switch (arch_list_problem(l, name)) {
    case ARCH_PROBLEM_UNKNOWN:
        return diag_set(d, DIAG_CODE_USAGE, "%s: unknown architecture '%s' (supported: %s emu)", what, name,
                        arch_supported_list());
    case ARCH_PROBLEM_TWICE: return diag_set(d, DIAG_CODE_USAGE, "%s: '%s' is listed twice", what, name);
    case ARCH_PROBLEM_TOO_MANY: return diag_set(d, DIAG_CODE_USAGE, "%s: more than %d architectures", what, ARCH_MAX);
    case ARCH_PROBLEM_NONE: break;
    }
    arch_list_push(l, name);
    return 0;
}

int arch_list_check(const char *const *names, int count, diag *d) {
    arch_list l;
    memset(&l, 0, sizeof l);
    if (count < 1 || count > ARCH_MAX)
        return diag_set(d, DIAG_CODE_USAGE, "%d GPU architectures given (1..%d)", count, ARCH_MAX);
    for (int i = 0; i < count; i++) {
        const char *name = names[i] ? names[i] : "(null)";
        switch (arch_list_problem(&l, name)) {
        case ARCH_PROBLEM_UNKNOWN:
            return diag_set(d, DIAG_CODE_USAGE, "unknown GPU architecture '%s' (supported: %s)", name,
                            arch_supported_list());
        case ARCH_PROBLEM_TWICE: return diag_set(d, DIAG_CODE_USAGE, "GPU architecture '%s' given twice", name);
        case ARCH_PROBLEM_TOO_MANY:
        case ARCH_PROBLEM_NONE: break;
        }
        arch_list_push(&l, name);
    }
    return 0;
}
