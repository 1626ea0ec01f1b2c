/* check — see check.h. */
#include "check.h"

#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int check_failures_in_case;
int check_cases_failed;
char check_first_failure[1024];
uint64_t check_seed;
static uint64_t check_rng_state;
static int check_cases_run;

void check_init(int argc, char **argv) {
    (void)argc;
    (void)argv;
    const char *s = getenv("BERTC_TEST_SEED");
    check_seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    check_rng_state = check_seed;
}

void check_fail(const char *file, int line, const char *fmt, ...) {
    if (check_failures_in_case++ == 0) {
        int n = snprintf(check_first_failure, sizeof check_first_failure, "%s:%d: ", file, line);
        va_list ap;
        va_start(ap, fmt);
        if (n > 0 && (size_t)n < sizeof check_first_failure)
            vsnprintf(check_first_failure + n, sizeof check_first_failure - (size_t)n, fmt, ap);
        va_end(ap);
    } else if (check_failures_in_case <= 5) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "    also %s:%d: ", file, line);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
    }
}

void check_case_run(const char *name, void (*fn)(void)) {
    check_failures_in_case = 0;
    check_first_failure[0] = '\0';
    fn();
    check_cases_run++;
    if (check_failures_in_case) {
        check_cases_failed++;
        printf("FAIL %s: %s (seed 0x%llx)\n", name, check_first_failure,
               (unsigned long long)check_seed);
    } else {
        printf("PASS %s\n", name);
    }
    fflush(stdout);
}

int check_summary(void) {
    if (check_cases_run == 0) {
        printf("FAIL no-cases: the program ran no test case\n");
        return 1;
    }
    return check_cases_failed ? 1 : 0;
}

uint64_t check_rng_u64(void) {
    uint64_t z = (check_rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double check_rng_uniform(void) { return (double)(check_rng_u64() >> 11) * 0x1.0p-53; }

int64_t check_rng_range(int64_t lo, int64_t hi) {
    return lo + (int64_t)(check_rng_u64() % (uint64_t)(hi - lo + 1));
}

uint32_t check_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

float check_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#if defined(__SANITIZE_ADDRESS__)
#define CHECK_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHECK_SANITIZED 1
#endif
#endif

int check_sanitized(void) {
#ifdef CHECK_SANITIZED
    return 1;
#else
    return 0;
#endif
}

const char *check_build_dir(void) {
    const char *b = getenv("BERTC_BUILD_DIR");
    return b && *b ? b : "build";
}

const char *check_write_temp(const char *name, const void *data, size_t len) {
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    const char *tmp = getenv("TMPDIR");
    snprintf(p, 512, "%s/bertc-test-%d-%s", tmp && *tmp ? tmp : "/tmp", (int)getpid(), name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(data, 1, len, f) != len) {
        if (f) fclose(f);
        return NULL;
    }
    fclose(f);
    return p;
}

char *check_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return NULL; }
    long n = ftell(f);
    if (n < 0) { fclose(f); return NULL; }
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[n] = '\0';
    fclose(f);
    if (len) *len = (size_t)n;
    return buf;
}
