// The `checksum` example plugin (C): the CRC-32, FNV-1a or SHA-256 of a file in a granted directory,
// optionally checked against an expected digest.
//
// Built with clang (wasm32-wasi, wasi-libc), the bindings `wit-bindgen c` generates for the world
// `plugin`, and `wasm-tools component new` with the WASI preview-1 reactor adapter (see build.sh).
// The plugin does no path confinement of its own: fopen() sees only the directories the host preopens
// for it (a granted directory is mounted at ".", so relative paths resolve against it).
//
// Memory: the host owns nothing we return until the call ends; the bindings' post-return functions
// free() every string and list we hand back, so all of them are malloc'd (plugin_string_dup, strbuf_t).
// The strings we are given (`name`, `input`) are ours to free.

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "hash.h"
#include "json.h"
#include "plugin.h"

// Bytes hashed between progress reports.
#define PROGRESS_BYTES (1u << 20)
#define READ_CHUNK (64u << 10)

static const char INPUT_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\",\"minLength\":1,"
    "\"description\":\"The file, relative to the granted directory.\"},"
    "\"algorithm\":{\"type\":\"string\",\"enum\":[\"sha256\",\"crc32\",\"fnv1a64\"],\"default\":\"sha256\","
    "\"description\":\"sha256 (64 hex digits), crc32 (8, as zlib and `cksum -a crc32b`) or fnv1a64 (16).\"},"
    "\"expect\":{\"type\":\"string\",\"pattern\":\"^[0-9a-fA-F]+$\","
    "\"description\":\"The digest the file should have, in hex: the call fails when it differs.\"}},"
    "\"required\":[\"path\"],\"additionalProperties\":false}";

static const char OUTPUT_SCHEMA[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"path\":{\"type\":\"string\"},\"algorithm\":{\"type\":\"string\"},"
    "\"digest\":{\"type\":\"string\",\"description\":\"Lowercase hex.\"},"
    "\"bytes\":{\"type\":\"integer\"},\"matches\":{\"type\":\"boolean\","
    "\"description\":\"Present when `expect` was given.\"}},"
    "\"required\":[\"path\",\"algorithm\",\"digest\",\"bytes\"],\"additionalProperties\":false}";

static void set_some(plugin_option_string_t *opt, const char *s) {
    opt->is_some = true;
    plugin_string_dup(&opt->val, s);
}

void exports_toolhost_plugin_tool_describe(exports_toolhost_plugin_tool_list_tool_spec_t *ret) {
    exports_toolhost_plugin_tool_tool_spec_t *spec = calloc(1, sizeof *spec);
    if (!spec) abort();
    plugin_string_dup(&spec->name, "checksum");
    set_some(&spec->title, "File checksum");
    plugin_string_dup(&spec->description,
                      "Compute the SHA-256, CRC-32 or FNV-1a (64-bit) digest of a file, or check it against "
                      "an expected digest. Reports progress on large files.");
    plugin_string_dup(&spec->input_schema, INPUT_SCHEMA);
    set_some(&spec->output_schema, OUTPUT_SCHEMA);
    spec->hints = TOOLHOST_PLUGIN_TYPES_TOOL_HINTS_READ_ONLY | TOOLHOST_PLUGIN_TYPES_TOOL_HINTS_IDEMPOTENT;
    set_some(&spec->permission_subject, "/path");
    ret->ptr = spec;
    ret->len = 1;
}

// Sets *err to `tag` with the text in `msg` (taking it over) and returns false, for `return fail(...)`.
static bool fail(exports_toolhost_plugin_tool_tool_error_t *err, uint8_t tag, strbuf_t *msg) {
    err->tag = tag;
    plugin_string_t *s = tag == TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_FAILED ? &err->val.failed : &err->val.invalid_input;
    s->ptr = (uint8_t *)msg->data;
    s->len = msg->len;
    *msg = (strbuf_t){0};
    return false;
}

static bool failf(exports_toolhost_plugin_tool_tool_error_t *err, uint8_t tag, const char *text) {
    strbuf_t msg = {0};
    sb_append(&msg, text, strlen(text));
    return fail(err, tag, &msg);
}

static void progress(uint64_t done, uint64_t total, const char *path) {
    strbuf_t msg = {0};
    sb_printf(&msg, "hashed %llu of %llu bytes of %s", (unsigned long long)done, (unsigned long long)total, path);
    plugin_string_t text = {(uint8_t *)msg.data, msg.len};
    toolhost_plugin_host_progress(done, &total, &text);
    free(msg.data);
}

static bool checksum(const char *input, size_t input_len, exports_toolhost_plugin_tool_tool_output_t *ret,
                     exports_toolhost_plugin_tool_tool_error_t *err) {
    const uint8_t INVALID = TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_INVALID_INPUT;
    const uint8_t FAILED = TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_FAILED;
    char *path = NULL, *algo_name = NULL, *expect = NULL;
    bool ok = false;
    strbuf_t msg = {0};
    FILE *f = NULL;

    if (json_get_string(input, input_len, "path", &path) != 1 ||
        json_get_string(input, input_len, "algorithm", &algo_name) < 0 ||
        json_get_string(input, input_len, "expect", &expect) < 0) {
        ok = failf(err, INVALID, "the input must be an object with a string 'path' (and optional 'algorithm', 'expect')");
        goto out;
    }
    algorithm_t algo = ALGO_SHA256;
    if (algo_name && !algorithm_from_name(algo_name, &algo)) {
        sb_printf(&msg, "unknown algorithm '%s': use sha256, crc32 or fnv1a64", algo_name);
        ok = fail(err, INVALID, &msg);
        goto out;
    }
    // The schema checks that `expect` is hex; only the tool knows how long it must be.
    size_t want = digest_hex_len(algo);
    if (expect && strlen(expect) != want) {
        sb_printf(&msg, "'expect' has %zu hex digits, but a %s digest has %zu",
                  strlen(expect), algo_name ? algo_name : "sha256", want);
        ok = fail(err, INVALID, &msg);
        goto out;
    }

    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        sb_printf(&msg, "cannot read '%s': it is a directory, not a file", path);
        ok = fail(err, FAILED, &msg);
        goto out;
    }
    f = fopen(path, "rb");
    if (!f) {
        sb_printf(&msg, "cannot read '%s': %s", path, strerror(errno));
        ok = fail(err, FAILED, &msg);
        goto out;
    }
    uint64_t total = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long end = ftell(f);
        total = end > 0 ? (uint64_t)end : 0;
        rewind(f);
    }
    static uint8_t buf[READ_CHUNK];
    hasher_t h;
    hasher_init(&h, algo);
    uint64_t next_report = PROGRESS_BYTES;
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        hasher_update(&h, buf, n);
        if (h.length >= next_report) {
            progress(h.length, total, path);
            next_report += PROGRESS_BYTES;
        }
    }
    if (ferror(f)) {
        sb_printf(&msg, "cannot read '%s': %s", path, strerror(errno));
        ok = fail(err, FAILED, &msg);
        goto out;
    }
    char digest[65];
    uint64_t bytes = h.length;
    hasher_finish(&h, digest);
    const char *algo_shown = algo_name ? algo_name : "sha256";

    if (expect) {
        for (char *c = expect; *c; c++) *c = (char)(*c >= 'A' && *c <= 'F' ? *c - 'A' + 'a' : *c);
        if (strcmp(expect, digest) != 0) {
            sb_printf(&msg, "'%s' does not match: its %s is %s, expected %s", path, algo_shown, digest, expect);
            ok = fail(err, FAILED, &msg);
            goto out;
        }
    }
    progress(bytes, total > bytes ? total : bytes, path);
    sb_printf(&msg, "%s  %s  (%s, %llu bytes%s)", digest, path, algo_shown, (unsigned long long)bytes,
              expect ? ", as expected" : "");
    ret->content.ptr = (uint8_t *)msg.data;
    ret->content.len = msg.len;
    msg = (strbuf_t){0};

    strbuf_t js = {0};
    sb_append(&js, "{\"path\":", 8);
    sb_json_string(&js, path);
    sb_printf(&js, ",\"algorithm\":\"%s\",\"digest\":\"%s\",\"bytes\":%llu%s}", algo_shown, digest,
              (unsigned long long)bytes, expect ? ",\"matches\":true" : "");
    ret->structured.is_some = true;
    ret->structured.val.ptr = (uint8_t *)js.data;
    ret->structured.val.len = js.len;

    plugin_string_t line;
    plugin_string_set(&line, "checksum: done");
    toolhost_plugin_host_log(TOOLHOST_PLUGIN_HOST_LOG_LEVEL_DEBUG, &line);
    ok = true;
out:
    if (f) fclose(f);
    free(path);
    free(algo_name);
    free(expect);
    free(msg.data);
    return ok;
}

bool exports_toolhost_plugin_tool_call(plugin_string_t *name, plugin_string_t *input,
                                       exports_toolhost_plugin_tool_tool_output_t *ret,
                                       exports_toolhost_plugin_tool_tool_error_t *err) {
    bool ok;
    if (name->len == 8 && memcmp(name->ptr, "checksum", 8) == 0) {
        ok = checksum((const char *)input->ptr, input->len, ret, err);
    } else {
        strbuf_t msg = {0};
        sb_printf(&msg, "unknown tool '%.*s'; this plugin provides only 'checksum'", (int)name->len, name->ptr);
        ok = fail(err, TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_INVALID_INPUT, &msg);
    }
    plugin_string_free(name);
    plugin_string_free(input);
    return ok;
}
