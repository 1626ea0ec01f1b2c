/*
 * test_pinning — plans pinned by digest (docs/security.md).
 *
 * SHA-256 itself against the FIPS 180-4 / NIST test vectors and against
 * itself fed in random pieces; then the runtime: bertc_plan_sha256 is the
 * digest of the file's bytes, a plan opened with its own digest (either
 * case) opens, one opened with any other digest is refused before use, and
 * a malformed digest is an argument error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bertc.h"
#include "check.h"
#include "sha256.h"

static void test_sha256_vectors(void) {
    static const struct {
        const char *msg;
        const char *hex;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char got[SHA256_HEX_SIZE];
        sha256_hex(v[i].msg, strlen(v[i].msg), got);
        CHECK(!strcmp(got, v[i].hex), "SHA-256(\"%.20s...\") = %s, expected %s", v[i].msg, got, v[i].hex);
    }
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    char got[SHA256_HEX_SIZE];
    sha256_hex(a, 1000000, got);
    CHECK(!strcmp(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "a million a: %s", got);
    free(a);
}

/* The streaming interface in random pieces equals the one-shot digest. */
static void test_sha256_pieces(void) {
    for (int rep = 0; rep < 50; rep++) {
        size_t n = (size_t)check_rng_range(0, 5000);
        unsigned char *buf = malloc(n + 1);
        for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)check_rng_u64();
        char one[SHA256_HEX_SIZE], two[SHA256_HEX_SIZE];
        sha256_hex(buf, n, one);
        sha256_ctx c;
        sha256_init(&c);
        for (size_t at = 0; at < n;) {
            size_t k = (size_t)check_rng_range(0, 130);
            if (k > n - at) k = n - at;
            sha256_update(&c, buf + at, k);
            at += k;
        }
        unsigned char d[SHA256_DIGEST_SIZE];
        sha256_final(&c, d);
        for (int i = 0; i < SHA256_DIGEST_SIZE; i++) sprintf(two + 2 * i, "%02x", d[i]);
        CHECK(!strcmp(one, two), "%zu bytes: one shot %s, in pieces %s", n, one, two);
        free(buf);
    }
    CHECK(sha256_hex_equal("ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789",
                           "abcdef0123456789ABCDEF0123456789abcdef0123456789ABCDEF0123456789"),
          "digests compare without case");
    CHECK(!sha256_hex_valid("abc") && !sha256_hex_valid(NULL), "short digests are not digests");
}

static void test_plan_pinning(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/plans/tiny-bert-fp32.plan", check_build_dir());
    size_t len;
    char *bytes = check_read_file(path, &len);
    CHECK(bytes != NULL, "cannot read %s", path);
    if (!bytes) return;
    char want[SHA256_HEX_SIZE];
    sha256_hex(bytes, len, want);
    free(bytes);
    char err[1024];
    bertc_plan *pl = NULL;
    CHECK(bertc_plan_open(path, &pl, err, sizeof err) == BERTC_STATUS_OK, "%s", err);
    if (pl) CHECK(!strcmp(bertc_plan_sha256(pl), want), "bertc_plan_sha256 %s, the file's %s", bertc_plan_sha256(pl), want);
    bertc_plan_close(pl);

    bertc_plan_options opt;
    bertc_plan_options_init(&opt);
    char upper[SHA256_HEX_SIZE];
    for (int i = 0; i < 65; i++) upper[i] = (char)(want[i] >= 'a' ? want[i] - 32 : want[i]);
    opt.expected_sha256 = upper;
    pl = NULL;
    CHECK(bertc_plan_open_with(path, &opt, &pl, err, sizeof err) == BERTC_STATUS_OK, "pinned to itself: %s", err);
    bertc_plan_close(pl);

    char other[SHA256_HEX_SIZE];
    memcpy(other, want, sizeof other);
    int i = (int)check_rng_range(0, 63);
    other[i] = other[i] == '0' ? '1' : '0';
    opt.expected_sha256 = other;
    pl = NULL;
    bertc_status st = bertc_plan_open_with(path, &opt, &pl, err, sizeof err);
    CHECK(st == BERTC_STATUS_BAD_PLAN && !pl && strstr(err, want) && strstr(err, other) && strstr(err, "not the pinned"),
          "pinned to another digest: status %d, %s", (int)st, err);
    opt.expected_sha256 = "not-a-digest";
    st = bertc_plan_open_with(path, &opt, &pl, err, sizeof err);
    CHECK(st == BERTC_STATUS_INVALID_ARGUMENT && !pl, "a malformed digest: status %d, %s", (int)st, err);
}

int main(int argc, char **argv) {
    check_init(argc, argv);
    CHECK_CASE(test_sha256_vectors);
    CHECK_CASE(test_sha256_pieces);
    CHECK_CASE(test_plan_pinning);
    return check_summary();
}
