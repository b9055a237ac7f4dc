// Just enough JSON for a tool's input and output: read a string member of an object, write strings.
#ifndef CHECKSUM_JSON_H
#define CHECKSUM_JSON_H

#include <stddef.h>

// Finds the member `key` of the JSON object in `json` (`len` bytes). When it is a string, decodes it
// into a malloc'd NUL-terminated UTF-8 string at *out and returns 1. Returns 0 when the member is
// absent or null, -1 when the text is not an object or the member is not a string.
int json_get_string(const char *json, size_t len, const char *key, char **out);

// A growable, NUL-terminated text buffer. `data` is malloc'd; hand it over or free it.
typedef struct {
    char *data;
    size_t len;
    size_t cap;
} strbuf_t;

void sb_append(strbuf_t *b, const char *s, size_t n);
void sb_printf(strbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Appends `s` as a JSON string literal, quoted and escaped.
void sb_json_string(strbuf_t *b, const char *s);

#endif
