/* The growable output buffer both vendor libraries write request bodies and mapped events into,
 * with the JSON pieces they write alike (string literals, a value's raw text, member names).
 * Out of memory is sticky: the first failed append sets `failed` and every later one is a no-op,
 * so a writer checks once at the end instead of after each append.
 * Threads and lifetime: no state beyond the buffer, which belongs to its caller (one thread at a
 * time); a zeroed buffer is empty and ready, vendor_buf_free releases it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vendor_support.h"

void vendor_buf_add(vendor_buf *b, const char *bytes, size_t len) {
    if (b->failed) return;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        char *data;
        while (cap < b->len + len + 1) cap *= 2;
        if (!(data = (char *)realloc(b->data, cap))) { b->failed = 1; return; }
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, bytes, len);
    b->len += len;
    b->data[b->len] = 0;
}

void vendor_buf_str(vendor_buf *b, const char *text) { vendor_buf_add(b, text, strlen(text)); }

void vendor_buf_json_string(vendor_buf *b, const char *text, size_t len) {
    size_t i, start = 0;
    vendor_buf_add(b, "\"", 1);
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        char esc[8];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        vendor_buf_add(b, text + start, i - start);
        if (c == '"') vendor_buf_add(b, "\\\"", 2);
        else if (c == '\\') vendor_buf_add(b, "\\\\", 2);
        else if (c == '\n') vendor_buf_add(b, "\\n", 2);
        else { snprintf(esc, sizeof esc, "\\u%04x", c); vendor_buf_add(b, esc, 6); }
        start = i + 1;
    }
    vendor_buf_add(b, text + start, len - start);
    vendor_buf_add(b, "\"", 1);
}

void vendor_buf_free(vendor_buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

void vendor_buf_raw(vendor_buf *b, const vendor_json *doc, int node) {
    vendor_buf_add(b, doc->nodes[node].raw, doc->nodes[node].raw_len);
}

void vendor_buf_member(vendor_buf *b, const char *name, size_t len) {
    vendor_buf_add(b, ",\"", 2);
    vendor_buf_add(b, name, len);
    vendor_buf_add(b, "\":", 2);
}
