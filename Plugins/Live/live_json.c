/* live_json.c: see live_json.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live_json.h"

/* ---- buffers ---------------------------------------------------------------------------- */

int live_buf_reserve(live_buf *b, size_t cap) {
    if (cap <= b->cap) return 0;
    size_t want = b->cap ? b->cap : 256;
    while (want < cap) want *= 2;
    char *grown = realloc(b->data, want);
    if (!grown) return -1;
    b->data = grown;
    b->cap = want;
    return 0;
}

int live_buf_set(live_buf *b, const char *text, size_t len) {
    b->len = 0;
    return live_buf_append(b, text, len);
}

int live_buf_append(live_buf *b, const char *text, size_t len) {
    if (live_buf_reserve(b, b->len + len + 1)) return -1;
    if (len) memcpy(b->data + b->len, text, len);
    b->len += len;
    b->data[b->len] = 0;
    return 0;
}

void live_buf_free(live_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---- reading ---------------------------------------------------------------------------- */

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static const char *skip_string(const char *p, const char *end) {
    for (p++; p < end; p++) {
        if (*p == '\\') { p++; continue; }
        if (*p == '"') return p + 1;
    }
    return NULL;
}

/* The end of the JSON value starting at p (after whitespace), or NULL when malformed. */
static const char *skip_value(const char *p, const char *end) {
    int depth = 0;
    p = skip_ws(p, end);
    if (p >= end) return NULL;
    do {
        if (p >= end) return NULL;
        if (*p == '"') { if (!(p = skip_string(p, end))) return NULL; continue; }
        if (*p == '{' || *p == '[') depth++;
        else if (*p == '}' || *p == ']') depth--;
        else if (depth == 0) {
            while (p < end && !strchr(",}] \t\r\n", *p)) p++;
            return p;
        }
        p++;
    } while (depth > 0);
    return p;
}

int live_json_member(const char *json, size_t len, const char *name, const char **start,
                     const char **stop) {
    const char *p = json, *end = json + len;
    size_t n = strlen(name);
    p = skip_ws(p, end);
    if (p >= end || *p != '{') return 0;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') return 0;
    for (;;) {
        const char *key, *key_end, *value_end;
        p = skip_ws(p, end);
        if (p >= end || *p != '"') return 0;
        key = p + 1;
        if (!(key_end = skip_string(p, end))) return 0;
        p = skip_ws(key_end, end);
        if (p >= end || *p != ':') return 0;
        p = skip_ws(p + 1, end);
        if (!(value_end = skip_value(p, end))) return 0;
        /* Keys with escapes never match a plain name, which is what the callers look for. */
        if ((size_t)(key_end - 1 - key) == n && memcmp(key, name, n) == 0) {
            *start = p;
            *stop = value_end;
            return 1;
        }
        p = skip_ws(value_end, end);
        if (p >= end || *p != ',') return 0;
        p++;
    }
}

int live_json_object_keys(const char *start, const char *stop,
                          void (*each)(void *ctx, const char *key, size_t key_len, const char *start, const char *stop),
                          void *ctx) {
    const char *p = skip_ws(start, stop), *end = stop;
    if (p >= end || *p != '{') return -1;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}') return 0;
    for (;;) {
        const char *key, *key_end, *value_end;
        p = skip_ws(p, end);
        if (p >= end || *p != '"') return -1;
        key = p + 1;
        if (!(key_end = skip_string(p, end))) return -1;
        p = skip_ws(key_end, end);
        if (p >= end || *p != ':') return -1;
        p = skip_ws(p + 1, end);
        if (!(value_end = skip_value(p, end))) return -1;
        each(ctx, key, (size_t)(key_end - 1 - key), p, value_end);
        p = skip_ws(value_end, end);
        if (p < end && *p == '}') return 0;
        if (p >= end || *p != ',') return -1;
        p++;
    }
}

int live_json_path(const char *json, size_t len, const char *path, const char **start,
                   const char **stop) {
    char name[128];
    const char *s = json, *e = json + len;
    while (*path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        if (n >= sizeof name) return 0;
        memcpy(name, path, n);
        name[n] = 0;
        if (!live_json_member(s, (size_t)(e - s), name, &s, &e)) return 0;
        path += n + (dot ? 1 : 0);
    }
    *start = s;
    *stop = e;
    return 1;
}

static int hex4(const char *p, const char *end, unsigned *out) {
    unsigned v = 0;
    if (end - p < 4) return -1;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static int put_utf8(live_buf *out, unsigned cp) {
    char b[4];
    size_t n;
    if (cp < 0x80) { b[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { b[0] = (char)(0xC0 | (cp >> 6)); b[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12)); b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        b[0] = (char)(0xF0 | (cp >> 18)); b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); b[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
    }
    return live_buf_append(out, b, n);
}

int live_json_string(const char *start, const char *stop, live_buf *out) {
    const char *p = skip_ws(start, stop);
    if (p >= stop || *p != '"') return -1;
    if (live_buf_set(out, "", 0)) return -1;
    for (p++; p < stop; p++) {
        if (*p == '"') return 0;
        if (*p != '\\') {
            const char *run = p;
            while (p < stop && *p != '"' && *p != '\\') p++;
            if (live_buf_append(out, run, (size_t)(p - run))) return -1;
            p--;
            continue;
        }
        if (++p >= stop) return -1;
        char c = *p, lit = 0;
        switch (c) {
        case '"': lit = '"'; break;
        case '\\': lit = '\\'; break;
        case '/': lit = '/'; break;
        case 'b': lit = '\b'; break;
        case 'f': lit = '\f'; break;
        case 'n': lit = '\n'; break;
        case 'r': lit = '\r'; break;
        case 't': lit = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(p + 1, stop, &cp)) return -1;
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && stop - p > 6 && p[1] == '\\' && p[2] == 'u' &&
                !hex4(p + 3, stop, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            if (put_utf8(out, cp)) return -1;
            continue;
        }
        default: return -1;
        }
        if (live_buf_append(out, &lit, 1)) return -1;
    }
    return -1;
}

int live_json_number(const char *start, const char *stop, double *out) {
    char text[64];
    start = skip_ws(start, stop);
    size_t n = (size_t)(stop - start);
    if (n == 0 || n >= sizeof text) return -1;
    memcpy(text, start, n);
    text[n] = 0;
    char *end;
    double v = strtod(text, &end);
    if (end == text || (*end && !strchr(" \t\r\n", *end))) return -1;
    *out = v;
    return 0;
}

int live_json_is(const char *start, const char *stop, const char *literal) {
    start = skip_ws(start, stop);
    while (stop > start && strchr(" \t\r\n", stop[-1])) stop--;
    size_t n = strlen(literal);
    return (size_t)(stop - start) == n && memcmp(start, literal, n) == 0;
}

int live_json_bool(const char *start, const char *stop) {
    if (live_json_is(start, stop, "true")) return 1;
    if (live_json_is(start, stop, "false")) return 0;
    return -1;
}

int live_json_array(const char *start, const char *stop,
                    void (*each)(void *ctx, const char *start, const char *stop), void *ctx) {
    const char *p = skip_ws(start, stop);
    if (p >= stop || *p != '[') return -1;
    p = skip_ws(p + 1, stop);
    if (p < stop && *p == ']') return 0;
    for (;;) {
        const char *value_end = skip_value(p, stop);
        if (!value_end) return -1;
        each(ctx, skip_ws(p, stop), value_end);
        p = skip_ws(value_end, stop);
        if (p < stop && *p == ']') return 0;
        if (p >= stop || *p != ',') return -1;
        p++;
    }
}

/* ---- writing ---------------------------------------------------------------------------- */

int live_json_append_string(live_buf *out, const char *text, size_t len) {
    if (live_buf_append(out, "\"", 1)) return -1;
    const char *run = text;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        if (live_buf_append(out, run, (size_t)(text + i - run))) return -1;
        char esc[8];
        switch (c) {
        case '"': strcpy(esc, "\\\""); break;
        case '\\': strcpy(esc, "\\\\"); break;
        case '\n': strcpy(esc, "\\n"); break;
        case '\r': strcpy(esc, "\\r"); break;
        case '\t': strcpy(esc, "\\t"); break;
        default: snprintf(esc, sizeof esc, "\\u%04x", c); break;
        }
        if (live_buf_append(out, esc, strlen(esc))) return -1;
        run = text + i + 1;
    }
    if (live_buf_append(out, run, (size_t)(text + len - run))) return -1;
    return live_buf_append(out, "\"", 1);
}
