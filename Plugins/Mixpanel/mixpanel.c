/*
 * Mixpanel: Segment's "Mixpanel" destination as an integration library written in C against
 * include/analytics_plugin.h alone. Each Segment call becomes Mixpanel records (mp_mapping.c)
 * sent in batches through the host's HTTP client (mp_upload.c). docs/vendors/mixpanel.md has
 * the settings, the mapping table and the limits.
 *
 * Settings (Segment's names): "token" or "projectToken" (required), "apiSecret" (or classic
 * "apiKey", labelled "API Secret": events then go to /import with Basic auth, else to /track),
 * "apiRegion" ("US", "EU", "IN", Segment's labels with their flags too) or classic
 * "enableEuropeanUnionEndpoint", "strictMode" ("1" | "0"), "sourceName", "people",
 * "setAllTraitsByDefault", "peopleProperties", "setOnceProperties", "groupIdentifierTraits",
 * "trackAllPages", "trackNamedPages", "trackCategorizedPages", "consolidatedPageCalls";
 * "apiHost" (a base URL replacing Mixpanel's host); and this library's "batchSize", "gzip",
 * "timeoutSeconds".
 *
 * Build: gcc -std=c99 -shared -fPIC -O2 -fvisibility=hidden -I include -o libmixpanel.so Plugins/Mixpanel/ *.c -pthread
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mixpanel.h"

struct ah_instance {
    const ah_host *host;
    mp_settings settings;
    mp_upload *upload;
};

static int read_bool(const mp_json *doc, const char *name, int fallback, int *out, char *err, size_t cap) {
    int node = mp_json_get(doc, 0, name);
    *out = fallback;
    if (node < 0 || doc->nodes[node].type == MP_J_NULL) return 0;
    if (doc->nodes[node].type != MP_J_BOOL) { snprintf(err, cap, "Mixpanel: \"%s\" must be true or false", name); return -1; }
    *out = doc->nodes[node].raw[0] == 't';
    return 0;
}

static int read_int(const mp_json *doc, const char *name, int fallback, int low, int high, int *out, char *err, size_t cap) {
    int node = mp_json_get(doc, 0, name);
    double v;
    *out = fallback;
    if (node < 0 || doc->nodes[node].type == MP_J_NULL) return 0;
    if (mp_json_number(doc, node, &v) != 0 || v != (double)(int)v || v < low || v > high) {
        snprintf(err, cap, "Mixpanel: \"%s\" must be an integer from %d to %d", name, low, high);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int read_string(const mp_json *doc, const char *name, char *buf, size_t buf_cap, char *err, size_t cap) {
    int node = mp_json_get(doc, 0, name);
    buf[0] = 0;
    if (node < 0 || doc->nodes[node].type == MP_J_NULL) return 0;
    if (doc->nodes[node].type != MP_J_STRING || doc->nodes[node].raw_len - 2 >= buf_cap) {
        snprintf(err, cap, "Mixpanel: \"%s\" must be a string of at most %zu bytes", name, buf_cap - 1);
        return -1;
    }
    return mp_json_string(doc, node, buf, buf_cap);
}

static int read_list(const mp_json *doc, const char *name, char list[][128], int *count, char *err, size_t cap) {
    int node = mp_json_get(doc, 0, name), c;
    *count = 0;
    if (node < 0 || doc->nodes[node].type == MP_J_NULL) return 0;
    if (doc->nodes[node].type != MP_J_ARRAY) {
        snprintf(err, cap, "Mixpanel: \"%s\" must be an array of trait names", name);
        return -1;
    }
    for (c = doc->nodes[node].first_child; c >= 0; c = doc->nodes[c].next) {
        if (doc->nodes[c].type != MP_J_STRING || *count == MP_MAX_TRAIT_LIST || doc->nodes[c].raw_len - 2 >= 128) {
            snprintf(err, cap, "Mixpanel: \"%s\" must hold at most %d trait names of under 128 bytes", name, MP_MAX_TRAIT_LIST);
            return -1;
        }
        mp_json_string(doc, c, list[(*count)++], 128);
    }
    return 0;
}

static void base64(const char *in, size_t len, char *out, size_t cap) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i, o = 0;
    for (i = 0; i < len && o + 5 < cap; i += 3) {
        unsigned v = (unsigned char)in[i] << 16;
        if (i + 1 < len) v |= (unsigned char)in[i + 1] << 8;
        if (i + 2 < len) v |= (unsigned char)in[i + 2];
        out[o++] = digits[(v >> 18) & 63];
        out[o++] = digits[(v >> 12) & 63];
        out[o++] = i + 1 < len ? digits[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? digits[v & 63] : '=';
    }
    out[o] = 0;
}

/* The region's host: Segment's labels carry a flag ("EU 🇪🇺"), so the first two letters decide. */
static int region_host(const char *region, char *host, size_t cap) {
    if (!region[0]) { snprintf(host, cap, "https://api.mixpanel.com"); return 0; }
    if (strncmp(region, "US", 2) == 0) snprintf(host, cap, "https://api.mixpanel.com");
    else if (strncmp(region, "EU", 2) == 0) snprintf(host, cap, "https://api-eu.mixpanel.com");
    else if (strncmp(region, "IN", 2) == 0) snprintf(host, cap, "https://api-in.mixpanel.com");
    else return -1;
    return (region[2] == 0 || region[2] == ' ') ? 0 : -1;
}

int mp_settings_parse(mp_settings *s, const char *text, size_t len, char *err, size_t cap) {
    mp_json doc;
    char region[64], strict[8];
    int eu, timeout_s, rc = -1;
    memset(s, 0, sizeof *s);
    if (mp_json_parse(&doc, text, len, err, cap) != 0) return -1;
    if (doc.nodes[0].type != MP_J_OBJECT) { snprintf(err, cap, "Mixpanel: settings must be a JSON object"); goto done; }
    if (read_string(&doc, "projectToken", s->token, sizeof s->token, err, cap) != 0) goto done;
    if (!s->token[0] && read_string(&doc, "token", s->token, sizeof s->token, err, cap) != 0) goto done;
    if (!s->token[0]) { snprintf(err, cap, "Mixpanel: settings need a non-empty \"token\" or \"projectToken\" string (the project token)"); goto done; }
    if (read_string(&doc, "apiSecret", s->secret, sizeof s->secret, err, cap) != 0) goto done;
    if (!s->secret[0] && read_string(&doc, "apiKey", s->secret, sizeof s->secret, err, cap) != 0) goto done;
    if (read_string(&doc, "apiRegion", region, sizeof region, err, cap) != 0) goto done;
    if (read_bool(&doc, "enableEuropeanUnionEndpoint", 0, &eu, err, cap) != 0) goto done;
    if (!region[0] && eu) snprintf(region, sizeof region, "EU");
    if (region_host(region, s->base, sizeof s->base) != 0) {
        snprintf(err, cap, "Mixpanel: \"apiRegion\" must be \"US\", \"EU\" or \"IN\", not \"%s\"", region);
        goto done;
    }
    {
        char base[900];
        if (read_string(&doc, "apiHost", base, sizeof base, err, cap) != 0) goto done;
        if (base[0]) {
            size_t n = strlen(base);
            while (n > 0 && base[n - 1] == '/') base[--n] = 0;
            if (strncmp(base, "http://", 7) != 0 && strncmp(base, "https://", 8) != 0) {
                snprintf(err, cap, "Mixpanel: \"apiHost\" must be an http(s) base URL, not \"%s\"", base);
                goto done;
            }
            snprintf(s->base, sizeof s->base, "%s", base);
        }
    }
    if (read_string(&doc, "strictMode", strict, sizeof strict, err, cap) != 0) goto done;
    if (strict[0] && strcmp(strict, "1") != 0 && strcmp(strict, "0") != 0) {
        snprintf(err, cap, "Mixpanel: \"strictMode\" must be \"1\" or \"0\", not \"%s\"", strict);
        goto done;
    }
    s->strict = strcmp(strict, "0") != 0;
    if (s->secret[0]) {
        char pair[300];
        snprintf(s->events_url, sizeof s->events_url, "%s/import?strict=%d", s->base, s->strict);
        snprintf(pair, sizeof pair, "%s:", s->secret);
        memcpy(s->authorization, "Basic ", 6);
        base64(pair, strlen(pair), s->authorization + 6, sizeof s->authorization - 6);
    } else {
        snprintf(s->events_url, sizeof s->events_url, "%s/track?verbose=1", s->base);
    }
    snprintf(s->engage_url, sizeof s->engage_url, "%s/engage?verbose=1", s->base);
    snprintf(s->groups_url, sizeof s->groups_url, "%s/groups?verbose=1", s->base);
    if (read_string(&doc, "sourceName", s->source_name, sizeof s->source_name, err, cap) != 0) goto done;
    if (read_bool(&doc, "people", 1, &s->people, err, cap) != 0) goto done;
    if (read_bool(&doc, "setAllTraitsByDefault", 1, &s->set_all_traits, err, cap) != 0) goto done;
    if (read_list(&doc, "peopleProperties", s->people_properties, &s->people_properties_count, err, cap) != 0) goto done;
    if (read_list(&doc, "setOnceProperties", s->set_once, &s->set_once_count, err, cap) != 0) goto done;
    if (read_list(&doc, "groupIdentifierTraits", s->group_traits, &s->group_traits_count, err, cap) != 0) goto done;
    if (read_bool(&doc, "trackAllPages", 0, &s->track_all_pages, err, cap) != 0) goto done;
    if (read_bool(&doc, "trackNamedPages", 1, &s->track_named_pages, err, cap) != 0) goto done;
    if (read_bool(&doc, "trackCategorizedPages", 0, &s->track_categorized_pages, err, cap) != 0) goto done;
    if (read_bool(&doc, "consolidatedPageCalls", 0, &s->consolidated_page_calls, err, cap) != 0) goto done;
    if (read_bool(&doc, "gzip", 1, &s->gzip, err, cap) != 0) goto done;
    if (read_int(&doc, "timeoutSeconds", 15, 1, 300, &timeout_s, err, cap) != 0) goto done;
    /* Mixpanel takes up to 2,000 records and 10 MB (/import) per request. */
    if (read_int(&doc, "batchSize", 2000, 1, 2000, &s->max_events, err, cap) != 0) goto done;
    s->timeout_ms = timeout_s * 1000;
    s->max_bytes = 10 * 1000 * 1000;
    rc = 0;
done:
    mp_json_free(&doc);
    return rc;
}

/* Maps one Segment event and hands its records to the upload. */
static ah_status send_event(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    mp_buf out = {0};
    char message_id[256];
    int count = 0, rc;
    ah_status status;
    rc = mp_map_event(&self->settings, json, len, &out, &count, message_id, sizeof message_id, err, cap);
    if (rc != 0) {
        mp_buf_free(&out);
        return rc > 0 ? AH_OK : AH_ERR_PERMANENT;
    }
    status = mp_upload_call(self->upload, out.data, out.len, count, message_id, err, cap);
    mp_buf_free(&out);
    return status;
}

static ah_status mp_identify(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return send_event(s, j, l, e, c); }
static ah_status mp_track(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return send_event(s, j, l, e, c); }
static ah_status mp_screen(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return send_event(s, j, l, e, c); }
static ah_status mp_group(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return send_event(s, j, l, e, c); }
static ah_status mp_alias(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return send_event(s, j, l, e, c); }

static ah_status mp_update(ah_instance *self, const char *settings, size_t len, int32_t kind, char *err, size_t cap) {
    mp_settings next;
    (void)kind;
    if (mp_settings_parse(&next, settings, len, err, cap) != 0) return AH_ERR_PERMANENT;
    /* Held records go under the settings they were mapped with. */
    mp_upload_flush(self->upload);
    mp_upload_settings(self->upload, &next);
    self->settings = next;
    return AH_OK;
}

static ah_status mp_flush(ah_instance *self, char *err, size_t cap) {
    (void)err; (void)cap;
    mp_upload_flush(self->upload);
    return AH_OK;
}

static void mp_destroy(ah_instance *self) {
    mp_upload_destroy(self->upload);
    free(self);
}

static ah_instance *mp_create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) { snprintf(err, cap, "Mixpanel: out of memory"); return NULL; }
    self->host = host;
    if (mp_settings_parse(&self->settings, settings, len, err, cap) != 0) { free(self); return NULL; }
    if (!(self->upload = mp_upload_create(host, &self->settings, err, cap))) { free(self); return NULL; }
    return self;
}

static const ah_hooks mp_hooks = {
    sizeof(ah_hooks),
    mp_identify, mp_track, mp_screen, mp_group, mp_alias,
    NULL, /* reset: the library keeps nothing per user (distinct ids come with each event) */
    mp_flush, /* sends what is held (finish later) */
    mp_update, mp_destroy, NULL,
};

/* Records wait in the host's durable queue until Mixpanel acknowledged the request that carried
 * them (ABI 1.3): with finish-later, what is held here is never the only copy, so a SIGKILL loses
 * nothing, and a record sent again keeps its $insert_id, which Mixpanel de-duplicates. */
static const ah_durable mp_durable = {sizeof(ah_durable), 0, 0};

static const void *mp_get_extension(const char *id) {
    return strcmp(id, AH_EXT_DURABLE) == 0 ? &mp_durable : NULL;
}

static const ah_integration mp_integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Mixpanel", MP_VERSION, AH_LANGUAGE_C, NULL,
    mp_create, &mp_hooks, mp_get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &mp_integration;
}
