/* The JSON reader both vendor libraries read events, settings and vendor answers with. It builds
 * an index of nodes over the caller's text without copying it, so values are forwarded exactly
 * as they arrived (numbers keep all their digits, strings their bytes and escapes). Depth and
 * size are bounded by the host (events are valid JSON before they reach a hook); the reader still
 * checks everything it walks.
 * Threads and lifetime: no state beyond the document, which belongs to its caller; the text must
 * outlive the document, and vendor_json_free releases it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vendor_support.h"

#define VENDOR_JSON_MAX_DEPTH 128

typedef struct reader {
    vendor_json *doc;
    const char *p, *end;
    const char *vendor; /* names the library in errors */
    char *err;
    size_t cap;
} reader;

static int fail(reader *r, const char *what) {
    snprintf(r->err, r->cap, "%s: invalid JSON: %s", r->vendor, what);
    return -1;
}

static void skip_space(reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static int new_node(reader *r, enum vendor_jtype type) {
    vendor_json *d = r->doc;
    if (d->count == d->cap) {
        int cap = d->cap ? d->cap * 2 : 64;
        vendor_jnode *nodes = (vendor_jnode *)realloc(d->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) return -1;
        d->nodes = nodes;
        d->cap = cap;
    }
    memset(&d->nodes[d->count], 0, sizeof d->nodes[0]);
    d->nodes[d->count].type = type;
    d->nodes[d->count].raw = r->p;
    d->nodes[d->count].first_child = -1;
    d->nodes[d->count].next = -1;
    return d->count++;
}

/* Leaves r->p after the closing quote. */
static int skip_string(reader *r) {
    r->p++;
    while (r->p < r->end) {
        unsigned char c = (unsigned char)*r->p;
        if (c == '"') { r->p++; return 0; }
        if (c < 0x20) return fail(r, "control character in a string");
        if (c == '\\') {
            if (r->p + 1 >= r->end) break;
            r->p += 2;
            continue;
        }
        r->p++;
    }
    return fail(r, "unterminated string");
}

static int parse_value(reader *r, int depth);

static int parse_container(reader *r, int node, int depth, int object) {
    int last = -1;
    char close = object ? '}' : ']';
    r->p++;
    skip_space(r);
    if (r->p < r->end && *r->p == close) { r->p++; return 0; }
    for (;;) {
        const char *key = NULL;
        size_t key_len = 0;
        int child;
        skip_space(r);
        if (object) {
            if (r->p >= r->end || *r->p != '"') return fail(r, "expected a member name");
            key = r->p + 1;
            if (skip_string(r) != 0) return -1;
            key_len = (size_t)(r->p - 1 - key);
            skip_space(r);
            if (r->p >= r->end || *r->p != ':') return fail(r, "expected ':'");
            r->p++;
            skip_space(r);
        }
        if ((child = parse_value(r, depth + 1)) < 0) return -1;
        r->doc->nodes[child].key = key;
        r->doc->nodes[child].key_len = key_len;
        if (last < 0) r->doc->nodes[node].first_child = child;
        else r->doc->nodes[last].next = child;
        last = child;
        skip_space(r);
        if (r->p < r->end && *r->p == ',') { r->p++; continue; }
        if (r->p < r->end && *r->p == close) { r->p++; return 0; }
        return fail(r, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int parse_value(reader *r, int depth) {
    int node;
    if (depth > VENDOR_JSON_MAX_DEPTH) return fail(r, "nesting too deep");
    skip_space(r);
    if (r->p >= r->end) return fail(r, "unexpected end");
    switch (*r->p) {
    case '{': case '[': {
        int object = *r->p == '{';
        if ((node = new_node(r, object ? VENDOR_J_OBJECT : VENDOR_J_ARRAY)) < 0) return fail(r, "out of memory");
        if (parse_container(r, node, depth, object) != 0) return -1;
        break;
    }
    case '"':
        if ((node = new_node(r, VENDOR_J_STRING)) < 0) return fail(r, "out of memory");
        if (skip_string(r) != 0) return -1;
        break;
    case 't': case 'f': case 'n': {
        const char *word = *r->p == 't' ? "true" : *r->p == 'f' ? "false" : "null";
        size_t n = strlen(word);
        if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return fail(r, "unknown literal");
        if ((node = new_node(r, *r->p == 'n' ? VENDOR_J_NULL : VENDOR_J_BOOL)) < 0) return fail(r, "out of memory");
        r->p += n;
        break;
    }
    default:
        if (*r->p != '-' && (*r->p < '0' || *r->p > '9')) return fail(r, "unexpected character");
        if ((node = new_node(r, VENDOR_J_NUMBER)) < 0) return fail(r, "out of memory");
        while (r->p < r->end && strchr("+-0123456789.eE", *r->p)) r->p++;
        break;
    }
    r->doc->nodes[node].raw_len = (size_t)(r->p - r->doc->nodes[node].raw);
    return node;
}

int vendor_json_parse(vendor_json *doc, const char *text, size_t len, const char *vendor, char *err, size_t cap) {
    reader r;
    memset(doc, 0, sizeof *doc);
    r.doc = doc; r.p = text; r.end = text + len; r.vendor = vendor; r.err = err; r.cap = cap;
    if (parse_value(&r, 0) != 0) { vendor_json_free(doc); return -1; }
    skip_space(&r);
    if (r.p != r.end) { fail(&r, "text after the value"); vendor_json_free(doc); return -1; }
    return 0;
}

void vendor_json_free(vendor_json *doc) {
    free(doc->nodes);
    memset(doc, 0, sizeof *doc);
}

int vendor_json_get(const vendor_json *doc, int obj, const char *name) {
    size_t n = strlen(name);
    int c;
    if (obj < 0 || doc->nodes[obj].type != VENDOR_J_OBJECT) return -1;
    for (c = doc->nodes[obj].first_child; c >= 0; c = doc->nodes[c].next)
        if (doc->nodes[c].key_len == n && memcmp(doc->nodes[c].key, name, n) == 0) return c;
    return -1;
}

int vendor_json_path(const vendor_json *doc, int obj, const char *path) {
    char part[128];
    const char *dot;
    while (obj >= 0 && *path) {
        size_t n;
        dot = strchr(path, '.');
        n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof part) return -1;
        memcpy(part, path, n);
        part[n] = 0;
        obj = vendor_json_get(doc, obj, part);
        path += n + (dot ? 1 : 0);
    }
    return obj;
}

int vendor_json_typed(const vendor_json *doc, int node, enum vendor_jtype type) {
    return node >= 0 && doc->nodes[node].type == type ? node : -1;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int vendor_json_string(const vendor_json *doc, int node, char *buf, size_t cap) {
    const char *p, *end;
    size_t n = 0;
    if (cap == 0 || node < 0 || doc->nodes[node].type != VENDOR_J_STRING) return -1;
    p = doc->nodes[node].raw + 1;
    end = doc->nodes[node].raw + doc->nodes[node].raw_len - 1;
    while (p < end && n + 4 < cap) {
        if (*p != '\\') { buf[n++] = *p++; continue; }
        p++;
        switch (*p) {
        case 'n': buf[n++] = '\n'; p++; break;
        case 't': buf[n++] = '\t'; p++; break;
        case 'r': buf[n++] = '\r'; p++; break;
        case 'b': buf[n++] = '\b'; p++; break;
        case 'f': buf[n++] = '\f'; p++; break;
        case 'u': {
            unsigned code = 0;
            int i;
            for (i = 1; i <= 4 && p + i < end; i++) {
                int h = hex_value(p[i]);
                if (h < 0) break;
                code = code * 16 + (unsigned)h;
            }
            p += 5;
            /* A surrogate pair becomes one 4-byte sequence; a lone surrogate becomes U+FFFD. */
            if (code >= 0xD800 && code < 0xDC00 && p + 6 <= end && p[0] == '\\' && p[1] == 'u') {
                unsigned low = 0;
                for (i = 2; i < 6; i++) low = low * 16 + (unsigned)(hex_value(p[i]) < 0 ? 0 : hex_value(p[i]));
                if (low >= 0xDC00 && low < 0xE000) { code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00); p += 6; }
            }
            if (code >= 0xD800 && code < 0xE000) code = 0xFFFD;
            if (code < 0x80) buf[n++] = (char)code;
            else if (code < 0x800) { buf[n++] = (char)(0xC0 | (code >> 6)); buf[n++] = (char)(0x80 | (code & 0x3F)); }
            else if (code < 0x10000) {
                buf[n++] = (char)(0xE0 | (code >> 12)); buf[n++] = (char)(0x80 | ((code >> 6) & 0x3F));
                buf[n++] = (char)(0x80 | (code & 0x3F));
            } else {
                buf[n++] = (char)(0xF0 | (code >> 18)); buf[n++] = (char)(0x80 | ((code >> 12) & 0x3F));
                buf[n++] = (char)(0x80 | ((code >> 6) & 0x3F)); buf[n++] = (char)(0x80 | (code & 0x3F));
            }
            break;
        }
        default: buf[n++] = *p++; break; /* \" \\ \/ */
        }
    }
    buf[n] = 0;
    return 0;
}

int vendor_json_number(const vendor_json *doc, int node, double *out) {
    char text[64];
    size_t n;
    if (node < 0 || doc->nodes[node].type != VENDOR_J_NUMBER) return -1;
    n = doc->nodes[node].raw_len;
    if (n >= sizeof text) return -1;
    memcpy(text, doc->nodes[node].raw, n);
    text[n] = 0;
    *out = strtod(text, NULL);
    return 0;
}

int vendor_json_nonempty_string(const vendor_json *doc, int node) {
    return node >= 0 && doc->nodes[node].type == VENDOR_J_STRING && doc->nodes[node].raw_len > 2;
}
