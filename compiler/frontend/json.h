/*
 * json — a small, strict JSON reader for the three JSON files bertc meets:
 * Hugging Face's config.json / tokenizer_config.json and the header of a
 * safetensors file.  The last one may be hostile, so the parser is written
 * for that case: it never reads past the given length, limits nesting depth,
 * rejects trailing garbage, invalid escapes and invalid UTF-8, and reports
 * the byte offset (and line:column) of the first problem.
 *
 * The whole document is parsed into a tree of `json_value`s owned by a
 * `json_doc`; strings are NUL-terminated copies (escapes decoded).
 */
#ifndef BERTC_JSON_H
#define BERTC_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum json_type {
    JSON_TYPE_NULL,
    JSON_TYPE_BOOL,
    JSON_TYPE_NUMBER,
    JSON_TYPE_STRING,
    JSON_TYPE_ARRAY,
    JSON_TYPE_OBJECT,
} json_type;

typedef struct json_value json_value;
struct json_value {
    json_type type;
    size_t offset;        /* byte offset of the value in the source */
    int boolean;
    double number;
    int number_is_int;    /* the literal had no fraction/exponent and fits int64 */
    int64_t integer;      /* valid when number_is_int */
    char *string;         /* JSON_TYPE_STRING: decoded, NUL-terminated */
    size_t string_len;    /* may contain embedded NULs from \u0000 */
    size_t count;         /* ARRAY: items; OBJECT: members */
    json_value *items;    /* ARRAY: count values; OBJECT: count values */
    char **keys;          /* OBJECT: count keys (decoded) */
};

typedef struct json_doc {
    json_value root;
} json_doc;

/*
 * Parse `len` bytes.  On failure returns -1 and writes
 * "NAME: byte OFFSET (line L, column C): what was expected" into err.
 */
int json_parse(json_doc *doc, const char *text, size_t len, const char *name,
               char *err, size_t err_cap);
void json_free(json_doc *doc);

/* Member lookup in an object (NULL if absent or not an object). */
const json_value *json_get(const json_value *obj, const char *key);

const char *json_type_name(json_type t);

/* Line and column (1-based, column in bytes) of byte `off` of text[0..len). */
void json_line_col(const char *text, size_t len, size_t off, size_t *line, size_t *col);

#endif
