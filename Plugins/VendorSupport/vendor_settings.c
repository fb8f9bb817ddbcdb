/* Typed reads of a vendor library's settings object (Segment's destination settings), with the
 * rules both libraries apply: an absent or null member takes the default, a member of the wrong
 * type or out of range is an error that names the library and the setting, and an API host
 * override must be an http(s) base URL. Which settings exist and what they default to stays with
 * each library.
 * Threads and lifetime: no state; the reader only points at its caller's parsed settings and
 * error buffer, for the length of one parse. */
#include <stdio.h>
#include <string.h>
#include "vendor_support.h"

/* The member `name` of the settings object, or -1 when it is absent or null. */
static int member(const vendor_settings_reader *r, const char *name) {
    int node = vendor_json_get(r->doc, 0, name);
    return node < 0 || r->doc->nodes[node].type == VENDOR_J_NULL ? -1 : node;
}

int vendor_setting_bool(const vendor_settings_reader *r, const char *name, int fallback, int *out) {
    int node = member(r, name);
    *out = fallback;
    if (node < 0) return 0;
    if (r->doc->nodes[node].type != VENDOR_J_BOOL) {
        snprintf(r->err, r->cap, "%s: \"%s\" must be true or false", r->vendor, name);
        return -1;
    }
    *out = r->doc->nodes[node].raw[0] == 't';
    return 0;
}

int vendor_setting_int(const vendor_settings_reader *r, const char *name, int fallback, int low, int high, int *out) {
    int node = member(r, name);
    double v;
    *out = fallback;
    if (node < 0) return 0;
    if (vendor_json_number(r->doc, node, &v) != 0 || v != (double)(int)v || v < low || v > high) {
        snprintf(r->err, r->cap, "%s: \"%s\" must be an integer from %d to %d", r->vendor, name, low, high);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int vendor_setting_string(const vendor_settings_reader *r, const char *name, char *buf, size_t buf_cap) {
    int node = member(r, name);
    buf[0] = 0;
    if (node < 0) return 0;
    if (r->doc->nodes[node].type != VENDOR_J_STRING || r->doc->nodes[node].raw_len - 2 >= buf_cap) {
        snprintf(r->err, r->cap, "%s: \"%s\" must be a string of at most %zu bytes", r->vendor, name, buf_cap - 1);
        return -1;
    }
    return vendor_json_string(r->doc, node, buf, buf_cap);
}

int vendor_setting_list(const vendor_settings_reader *r, const char *name, char list[][VENDOR_TRAIT_NAME_CAP], int *count) {
    int node = member(r, name), c;
    *count = 0;
    if (node < 0) return 0;
    if (r->doc->nodes[node].type != VENDOR_J_ARRAY) {
        snprintf(r->err, r->cap, "%s: \"%s\" must be an array of trait names", r->vendor, name);
        return -1;
    }
    for (c = r->doc->nodes[node].first_child; c >= 0; c = r->doc->nodes[c].next) {
        if (r->doc->nodes[c].type != VENDOR_J_STRING || *count == VENDOR_MAX_TRAIT_LIST ||
            r->doc->nodes[c].raw_len - 2 >= VENDOR_TRAIT_NAME_CAP) {
            snprintf(r->err, r->cap, "%s: \"%s\" must hold at most %d trait names of under %d bytes", r->vendor, name,
                     VENDOR_MAX_TRAIT_LIST, VENDOR_TRAIT_NAME_CAP);
            return -1;
        }
        vendor_json_string(r->doc, c, list[(*count)++], VENDOR_TRAIT_NAME_CAP);
    }
    return 0;
}

int vendor_setting_base_url(const vendor_settings_reader *r, const char *name, char *buf, size_t buf_cap) {
    size_t n;
    if (vendor_setting_string(r, name, buf, buf_cap) != 0) return -1;
    if (!buf[0]) return 0;
    n = strlen(buf);
    while (n > 0 && buf[n - 1] == '/') buf[--n] = 0;
    /* Checked after trimming: "/" alone is no base URL either. */
    if (strncmp(buf, "http://", 7) != 0 && strncmp(buf, "https://", 8) != 0) {
        snprintf(r->err, r->cap, "%s: \"%s\" must be an http(s) base URL, not \"%s\"", r->vendor, name, buf);
        return -1;
    }
    return 0;
}

int vendor_listed(const char list[][VENDOR_TRAIT_NAME_CAP], int n, const char *key, size_t len) {
    int i;
    for (i = 0; i < n; i++)
        if (strlen(list[i]) == len && memcmp(list[i], key, len) == 0) return 1;
    return 0;
}
