/*
 * check — the tiny test harness every C test uses.
 *
 * A test program is a list of cases.  Each case is a function run through
 * CHECK_CASE(fn); inside it CHECK(cond, fmt, ...) records a failure with the
 * file and line and carries on, so one run shows every broken expectation.
 * Each finished case prints exactly one line, "PASS name" or
 * "FAIL name: first failure", which tests/run.sh counts; the program's exit
 * status is non-zero if any case failed.  Test data comes from
 * check_rng_*, seeded from BERTC_TEST_SEED (printed on failure) so a failing
 * draw can be replayed.
 */
#ifndef BERTC_CHECK_H
#define BERTC_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int check_failures_in_case;
extern int check_cases_failed;
extern char check_first_failure[1024];
extern uint64_t check_seed;

void check_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void check_case_run(const char *name, void (*fn)(void));
int check_summary(void);   /* returns the exit status for main */
void check_init(int argc, char **argv);

#define CHECK(cond, ...)                                             \
    do {                                                             \
        if (!(cond)) check_fail(__FILE__, __LINE__, __VA_ARGS__);    \
    } while (0)
#define CHECK_CASE(fn) check_case_run(#fn, fn)
/* A prerequisite of the rest of the case (an image, a plan): when it does
 * not hold, record the failure and end the case. */
#define CHECK_REQUIRE(cond, ...)                                     \
    do {                                                             \
        if (!(cond)) {                                               \
            check_fail(__FILE__, __LINE__, __VA_ARGS__);             \
            return;                                                  \
        }                                                            \
    } while (0)

/* Deterministic per-seed random numbers (splitmix64). */
uint64_t check_rng_u64(void);
double check_rng_uniform(void);          /* [0, 1) */
int64_t check_rng_range(int64_t lo, int64_t hi);   /* [lo, hi] */

/* The bits of a float and the float of some bits (no aliasing tricks). */
uint32_t check_f32_bits(float f);
float check_bits_f32(uint32_t u);

/* 1 when the test runs under AddressSanitizer (`make sanitize`), where the
 * emulated kernels run about 13 times slower and long cases are trimmed. */
int check_sanitized(void);
/* Path of the repository's build directory (BERTC_BUILD_DIR or "build"). */
const char *check_build_dir(void);
/* Write `len` bytes to a fresh file under the temp dir; returns its path (static buffer rotated). */
const char *check_write_temp(const char *name, const void *data, size_t len);
/* Read a whole file (NUL-terminated); NULL on failure. */
char *check_read_file(const char *path, size_t *len);

#endif
