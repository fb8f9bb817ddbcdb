/* A vendor's documented limits on an event's properties, applied before sending: what the vendor
 * would cut is cut here, what it would drop is left out here, and the library reports both with
 * the event's messageId, instead of sending what the vendor silently drops. */
#include <stdio.h>
#include <string.h>
#include "vendor_support.h"

/* Decoded bytes of a string's raw text (quotes included) and, when it is longer than `limit`,
 * the raw length (from the opening quote) to keep so that at most `limit` decoded bytes remain,
 * cut before an escape or a UTF-8 lead byte. */
static size_t decoded_length(const char *raw, size_t raw_len, size_t limit, int characters, size_t *keep) {
    size_t i = 1, decoded = 0, end = raw_len - 1;
    *keep = raw_len;
    while (i < end) {
        size_t step = 1, bytes = 1;
        unsigned char c = (unsigned char)raw[i];
        int low_half = 0;
        if (c == '\\') {
            if (raw[i + 1] == 'u' && i + 5 < end) {
                unsigned v = 0;
                size_t k;
                for (k = 2; k < 6; k++) {
                    char h = raw[i + k];
                    v = v * 16 + (unsigned)(h >= 'a' ? h - 'a' + 10 : h >= 'A' ? h - 'A' + 10 : h - '0');
                }
                step = 6;
                low_half = v >= 0xDC00 && v < 0xE000;
                bytes = v < 0x80 ? 1 : v < 0x800 ? 2 : (v >= 0xD800 && v < 0xE000) ? 2 : 3; /* a surrogate half: 2 of the pair's 4 */
                if (characters) bytes = low_half ? 0 : 1;
            } else {
                step = 2;
            }
        } else if ((c & 0xC0) == 0x80) {
            bytes = characters ? 0 : 1; /* a continuation byte: never a place to cut before */
        }
        if (bytes && decoded + bytes > limit && *keep == raw_len) {
            /* Cut here, unless this is a continuation byte: then back to its lead byte. */
            size_t at = i;
            while (at > 1 && ((unsigned char)raw[at] & 0xC0) == 0x80) at--;
            if (low_half && at >= 7) at -= 6; /* never half of a surrogate pair */
            *keep = at;
        }
        decoded += bytes;
        i += step;
    }
    return decoded;
}

/* Deepest nesting of containers within `node` (0 for a scalar), stopping past `stop`. */
static int depth_of(const vendor_json *doc, int node, int stop) {
    int c, deepest = 0;
    if (doc->nodes[node].type != VENDOR_J_OBJECT && doc->nodes[node].type != VENDOR_J_ARRAY) return 0;
    if (stop <= 0) return 1;
    for (c = doc->nodes[node].first_child; c >= 0; c = doc->nodes[c].next) {
        int d = depth_of(doc, c, stop - 1);
        if (d > deepest) deepest = d;
        if (deepest >= stop) break;
    }
    return deepest + 1;
}

/* True when every string inside `node` fits. */
static int strings_fit(const vendor_json *doc, int node, size_t limit, int characters) {
    const vendor_jnode *n = &doc->nodes[node];
    int c;
    if (n->type == VENDOR_J_STRING) {
        size_t keep;
        /* Decoded bytes never exceed the raw bytes: most strings need no decoding walk. */
        return n->raw_len - 2 <= limit || decoded_length(n->raw, n->raw_len, limit, characters, &keep) <= limit;
    }
    for (c = n->first_child; c >= 0; c = doc->nodes[c].next)
        if (!strings_fit(doc, c, limit, characters)) return 0;
    return 1;
}

/* Writes `node` with its strings cut to `limit` decoded bytes. */
static void write_cut(vendor_buf *b, const vendor_json *doc, int node, size_t limit, int characters, vendor_trimmed *t) {
    const vendor_jnode *n = &doc->nodes[node];
    int c, first = 1;
    if (n->type == VENDOR_J_STRING) {
        size_t keep;
        if (n->raw_len - 2 > limit && decoded_length(n->raw, n->raw_len, limit, characters, &keep) > limit) {
            vendor_buf_add(b, n->raw, keep);
            vendor_buf_add(b, "\"", 1);
            t->strings_cut++;
        } else {
            vendor_buf_add(b, n->raw, n->raw_len);
        }
        return;
    }
    if (n->type != VENDOR_J_OBJECT && n->type != VENDOR_J_ARRAY) { vendor_buf_add(b, n->raw, n->raw_len); return; }
    vendor_buf_add(b, n->type == VENDOR_J_OBJECT ? "{" : "[", 1);
    for (c = n->first_child; c >= 0; c = doc->nodes[c].next) {
        if (!first) vendor_buf_add(b, ",", 1);
        first = 0;
        if (n->type == VENDOR_J_OBJECT) {
            vendor_buf_add(b, "\"", 1);
            vendor_buf_add(b, doc->nodes[c].key, doc->nodes[c].key_len);
            vendor_buf_add(b, "\":", 2);
        }
        write_cut(b, doc, c, limit, characters, t);
    }
    vendor_buf_add(b, n->type == VENDOR_J_OBJECT ? "}" : "]", 1);
}

/* True when a member's name (as written) is longer than the limit. */
static int name_too_long(const vendor_jnode *k, const vendor_limits *limits) {
    size_t keep;
    if (!limits->max_name_bytes || k->key_len <= limits->max_name_bytes) return 0;
    /* The name's text lies between quotes in the event's text. */
    return decoded_length(k->key - 1, k->key_len + 2, limits->max_name_bytes, limits->characters, &keep) > limits->max_name_bytes;
}

int vendor_member_fits(const vendor_json *doc, int node, const vendor_limits *limits, vendor_trimmed *t) {
    const vendor_jnode *k = &doc->nodes[node];
    if (name_too_long(k, limits)) { t->names_dropped++; return 0; }
    if (limits->max_depth && (k->type == VENDOR_J_OBJECT || k->type == VENDOR_J_ARRAY) &&
        depth_of(doc, node, limits->max_depth + 1) > limits->max_depth) { t->deep_dropped++; return 0; }
    return 1;
}

void vendor_buf_value_limited(vendor_buf *b, const vendor_json *doc, int node, const vendor_limits *limits, vendor_trimmed *t) {
    if (limits->max_string_bytes && !strings_fit(doc, node, limits->max_string_bytes, limits->characters))
        write_cut(b, doc, node, limits->max_string_bytes, limits->characters, t);
    else
        vendor_buf_raw(b, doc, node);
}

void vendor_buf_limited(vendor_buf *b, const vendor_json *doc, int obj, const vendor_limits *limits, vendor_trimmed *t) {
    int c, kept = 0, clean = 1;
    if (obj < 0 || doc->nodes[obj].type != VENDOR_J_OBJECT) { vendor_buf_str(b, "{}"); return; }
    /* One walk: is the whole object within the limits? Then it goes in one copy. */
    for (c = doc->nodes[obj].first_child; c >= 0 && clean; c = doc->nodes[c].next) {
        const vendor_jnode *k = &doc->nodes[c];
        if (limits->max_keys && ++kept > limits->max_keys) clean = 0;
        else if (name_too_long(k, limits)) clean = 0;
        else if (limits->max_depth && (k->type == VENDOR_J_OBJECT || k->type == VENDOR_J_ARRAY) &&
                 depth_of(doc, c, limits->max_depth + 1) > limits->max_depth) clean = 0;
        else if (limits->max_string_bytes && !strings_fit(doc, c, limits->max_string_bytes, limits->characters)) clean = 0;
    }
    if (clean) { vendor_buf_raw(b, doc, obj); return; }
    vendor_buf_add(b, "{", 1);
    kept = 0;
    for (c = doc->nodes[obj].first_child; c >= 0; c = doc->nodes[c].next) {
        const vendor_jnode *k = &doc->nodes[c];
        if (!vendor_member_fits(doc, c, limits, t)) continue;
        if (limits->max_keys && kept >= limits->max_keys) { t->keys_dropped++; continue; }
        if (kept++) vendor_buf_add(b, ",", 1);
        vendor_buf_add(b, "\"", 1);
        vendor_buf_add(b, k->key, k->key_len);
        vendor_buf_add(b, "\":", 2);
        vendor_buf_value_limited(b, doc, c, limits, t);
    }
    vendor_buf_add(b, "}", 1);
}

int vendor_trimmed_any(const vendor_trimmed *t) {
    return t->keys_dropped || t->names_dropped || t->strings_cut || t->deep_dropped;
}

void vendor_trimmed_text(const vendor_trimmed *t, const vendor_limits *limits, char *buf, size_t cap) {
    size_t used = 0;
    const char *unit = limits->characters ? "characters" : "bytes";
    if (!cap) return;
    buf[0] = 0;
#define VENDOR_TRIM_PART(...) do { \
        int n_ = snprintf(buf + used, cap - used, "%s", used ? ", " : ""); \
        if (n_ > 0 && (size_t)n_ < cap - used) used += (size_t)n_; \
        n_ = snprintf(buf + used, cap - used, __VA_ARGS__); \
        if (n_ > 0) used += (size_t)n_ < cap - used ? (size_t)n_ : cap - used - 1; \
    } while (0)
    if (t->keys_dropped) VENDOR_TRIM_PART("%d properties past the first %d left out", t->keys_dropped, limits->max_keys);
    if (t->names_dropped) VENDOR_TRIM_PART("%d properties with a name longer than %zu %s left out", t->names_dropped, limits->max_name_bytes, unit);
    if (t->deep_dropped) VENDOR_TRIM_PART("%d properties nested deeper than %d levels left out", t->deep_dropped, limits->max_depth);
    if (t->strings_cut) VENDOR_TRIM_PART("%d strings cut to %zu %s", t->strings_cut, limits->max_string_bytes, unit);
#undef VENDOR_TRIM_PART
}
