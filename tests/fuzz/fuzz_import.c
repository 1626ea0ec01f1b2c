/*
 * fuzz_import — bertc import on a hostile config.json and
 * tokenizer_config.json (the input, split at its first NUL), beside the
 * fixture's weights and vocabulary.  Import either fails with a message or
 * writes a graph description that loads (import checks that itself; this
 * target checks it again from the file).
 */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "hf_import.h"
#include "model.h"

static char fuzz_tmp[256];

static void fuzz_write(const char *name, const uint8_t *data, size_t len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", fuzz_tmp, name);
    FILE *f = fopen(path, "wb");
    fuzz_require(f != NULL, "a scratch file");
    fuzz_require(fwrite(data, 1, len, f) == len, "writing a scratch file");
    fclose(f);
}

static void fuzz_setup(void) {
    snprintf(fuzz_tmp, sizeof fuzz_tmp, "%s/bertc-fuzz-import-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    fuzz_require(mkdtemp(fuzz_tmp) != NULL, "a scratch folder");
    const char *names[2] = {"model.safetensors", "vocab.txt"};
    for (int i = 0; i < 2; i++) {
        char from[1024], to[512];
        snprintf(from, sizeof from, "%s/%s", fuzz_dir(), names[i]);
        snprintf(to, sizeof to, "%s/%s", fuzz_tmp, names[i]);
        char *real = realpath(from, NULL);
        fuzz_require(real && symlink(real, to) == 0, "the fixture (set BERTC_FUZZ_DIR)");
        free(real);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!fuzz_tmp[0]) fuzz_setup();
    const uint8_t *nul = memchr(data, 0, size);
    size_t cl = nul ? (size_t)(nul - data) : size;
    fuzz_write("config.json", data, cl);
    char tc[512];
    snprintf(tc, sizeof tc, "%s/tokenizer_config.json", fuzz_tmp);
    if (nul) fuzz_write("tokenizer_config.json", nul + 1, size - cl - 1);
    else unlink(tc);
    char out[512];
    snprintf(out, sizeof out, "%s/out.yaml", fuzz_tmp);
    unlink(out);
    diag d;
    diag_init(&d);
    if (hf_import_run(fuzz_tmp, out, &d) == 0) {
        model m;
        diag_init(&d);
        int rc = model_load(&m, out, &d);
        if (rc) fprintf(stderr, "fuzz: %s\n", d.text);
        fuzz_require(rc == 0, "import wrote a graph description that does not load");
        model_free(&m);
    } else {
        fuzz_require(d.text[0] != '\0', "an import error without a message");
    }
    return 0;
}
