/* fuzz_json — the JSON reader (config.json, tokenizer_config.json, sentence-
 * transformers configs, tokenizer.json) on arbitrary bytes: a parse either
 * succeeds or names a byte inside the input; and every document goes on
 * through the tokenizer.json reader (hf_tokenizer_json_parse), which either
 * builds a description tokdesc_check accepts or names the file. */
#include <string.h>

#include "fuzz.h"
#include "hf_tokenizer.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_doc doc;
    char err[512];
    if (json_parse(&doc, (const char *)data, size, "fuzz.json", err, sizeof err) == 0) json_free(&doc);
    else fuzz_require(!strncmp(err, "fuzz.json", 9), "a JSON error that does not name the file");
    tokdesc t;
    diag d;
    diag_init(&d);
    if (hf_tokenizer_json_parse("fuzz.json", (const char *)data, size, &t, &d) == 0) {
        diag c;
        diag_init(&c);
        fuzz_require(tokdesc_check(&t, &c) == 0, "a tokenizer.json description that tokdesc_check refuses");
        tokdesc_free(&t);
    } else {
        fuzz_require(!strncmp(d.text, "fuzz.json", 9) || d.code == DIAG_CODE_INTERNAL,
                     "a tokenizer.json error that does not name the file");
    }
    return 0;
}
