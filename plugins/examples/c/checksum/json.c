// See json.h. The host has already checked the input against the tool's schema, so this reader only
// needs to be correct, not forgiving: anything unexpected is reported as malformed.
#include "json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p;
    const char *end;
} cursor_t;

static void skip_ws(cursor_t *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int hex4(const char *p, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9') v |= (uint32_t)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') v |= (uint32_t)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') v |= (uint32_t)(ch - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static void put_utf8(strbuf_t *b, uint32_t cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) { u[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { u[0] = (char)(0xc0 | cp >> 6); u[1] = (char)(0x80 | (cp & 0x3f)); n = 2; }
    else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12); u[1] = (char)(0x80 | (cp >> 6 & 0x3f)); u[2] = (char)(0x80 | (cp & 0x3f)); n = 3;
    } else {
        u[0] = (char)(0xf0 | cp >> 18); u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3f)); u[3] = (char)(0x80 | (cp & 0x3f)); n = 4;
    }
    sb_append(b, u, n);
}

// Parses a string literal at c->p; decodes it into `out` when `out` is not NULL.
static int parse_string(cursor_t *c, strbuf_t *out) {
    if (c->p >= c->end || *c->p != '"') return 0;
    c->p++;
    while (c->p < c->end && *c->p != '"') {
        char ch = *c->p++;
        if (ch != '\\') {
            if (out) sb_append(out, &ch, 1);
            continue;
        }
        if (c->p >= c->end) return 0;
        char e = *c->p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (simple && e) {
            static const char DECODED[] = "\"\\/\b\f\n\r\t";
            if (out) sb_append(out, &DECODED[simple - "\"\\/bfnrt"], 1);
        } else if (e == 'u') {
            uint32_t cp, lo;
            if (c->end - c->p < 4 || !hex4(c->p, &cp)) return 0;
            c->p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u' &&
                hex4(c->p + 2, &lo) && lo >= 0xdc00 && lo < 0xe000) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                c->p += 6;
            }
            if (out) put_utf8(out, cp);
        } else {
            return 0;
        }
    }
    if (c->p >= c->end) return 0;
    c->p++;
    return 1;
}

// Skips any JSON value.
static int skip_value(cursor_t *c) {
    skip_ws(c);
    if (c->p >= c->end) return 0;
    if (*c->p == '"') return parse_string(c, NULL);
    if (*c->p == '{' || *c->p == '[') {
        char close = *c->p == '{' ? '}' : ']';
        c->p++;
        skip_ws(c);
        if (c->p < c->end && *c->p == close) { c->p++; return 1; }
        for (;;) {
            if (close == '}') {
                skip_ws(c);
                if (!parse_string(c, NULL)) return 0;
                skip_ws(c);
                if (c->p >= c->end || *c->p++ != ':') return 0;
            }
            if (!skip_value(c)) return 0;
            skip_ws(c);
            if (c->p >= c->end) return 0;
            if (*c->p == ',') { c->p++; continue; }
            if (*c->p++ == close) return 1;
            return 0;
        }
    }
    // A number or a literal: everything up to the next delimiter.
    const char *start = c->p;
    while (c->p < c->end && !strchr(",}] \t\r\n", *c->p)) c->p++;
    return c->p > start;
}

int json_get_string(const char *json, size_t len, const char *key, char **out) {
    cursor_t c = {json, json + len};
    skip_ws(&c);
    if (c.p >= c.end || *c.p++ != '{') return -1;
    skip_ws(&c);
    if (c.p < c.end && *c.p == '}') return 0;
    for (;;) {
        strbuf_t name = {0};
        skip_ws(&c);
        if (!parse_string(&c, &name)) { free(name.data); return -1; }
        sb_append(&name, "", 0);
        int match = strcmp(name.data, key) == 0;
        free(name.data);
        skip_ws(&c);
        if (c.p >= c.end || *c.p++ != ':') return -1;
        skip_ws(&c);
        if (match) {
            if (c.end - c.p >= 4 && memcmp(c.p, "null", 4) == 0) return 0;
            strbuf_t value = {0};
            if (!parse_string(&c, &value)) { free(value.data); return -1; }
            sb_append(&value, "", 0);
            *out = value.data;
            return 1;
        }
        if (!skip_value(&c)) return -1;
        skip_ws(&c);
        if (c.p >= c.end) return -1;
        if (*c.p == ',') { c.p++; continue; }
        return *c.p == '}' ? 0 : -1;
    }
}

static void sb_reserve(strbuf_t *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) cap *= 2;
    char *grown = realloc(b->data, cap);
    if (!grown) abort();
    b->data = grown;
    b->cap = cap;
}

void sb_append(strbuf_t *b, const char *s, size_t n) {
    sb_reserve(b, n);
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void sb_printf(strbuf_t *b, const char *fmt, ...) {
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n >= 0) {
        sb_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
}

void sb_json_string(strbuf_t *b, const char *s) {
    sb_append(b, "\"", 1);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            sb_append(b, esc, 2);
        } else if (ch < 0x20) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", ch);
            sb_append(b, esc, 6);
        } else {
            sb_append(b, (const char *)&ch, 1);
        }
    }
    sb_append(b, "\"", 1);
}
