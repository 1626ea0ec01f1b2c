/*
 * fuzz — what the libFuzzer targets of tests/fuzz/ share.
 *
 * Each target is one file with LLVMFuzzerTestOneInput over one parser of
 * bertc, built by `make fuzz` with clang, -fsanitize=fuzzer and
 * AddressSanitizer + UndefinedBehaviorSanitizer (build-fuzz/), run by
 * `make fuzz-run FUZZ_SECONDS=N` on a copy of its committed seed corpus
 * (tests/fuzz/corpus/<target>/) with its dictionary (tests/fuzz/<target>.dict).
 * A finding is a crash, a sanitizer report, a leak, a timeout or an
 * abort() from a target's own invariant (fuzz_require); each one found
 * becomes a regression test in the normal suite (docs/testing.md).
 *
 * Targets that need files (a weights file for the YAML loader, a
 * checkpoint for import) find them in BERTC_FUZZ_DIR, the build's tiny-bert
 * fixture by default.
 */
#ifndef BERTC_FUZZ_H
#define BERTC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef BERTC_FUZZ_DEFAULT_DIR
#define BERTC_FUZZ_DEFAULT_DIR "build/hf/tiny-bert"
#endif

/* The folder with the fixture files. */
static inline const char *fuzz_dir(void) {
    const char *e = getenv("BERTC_FUZZ_DIR");
    return e && *e ? e : BERTC_FUZZ_DEFAULT_DIR;
}

/* An invariant of the target: a violation is a finding. */
#define fuzz_require(cond, what)                                                      \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "fuzz: invariant broken: %s (%s:%d)\n", what, __FILE__, __LINE__); \
            abort();                                                                  \
        }                                                                             \
    } while (0)

#endif
