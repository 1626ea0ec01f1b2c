/* fuzz_json — the JSON reader (config.json, tokenizer_config.json, sentence-
 * transformers configs) on arbitrary bytes: a parse either succeeds or
 * names a byte inside the input. */
#include <string.h>

#include "fuzz.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_doc doc;
    char err[512];
    if (json_parse(&doc, (const char *)data, size, "fuzz.json", err, sizeof err) == 0) json_free(&doc);
    else fuzz_require(!strncmp(err, "fuzz.json", 9), "a JSON error that does not name the file");
    return 0;
}
