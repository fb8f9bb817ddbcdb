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
 * Build: gcc -std=c99 -shared -fPIC -O2 -fvisibility=hidden -I include -o libmixpanel.so
 *        Plugins/Mixpanel/ *.c Plugins/VendorSupport/ *.c -pthread
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
    vendor_json doc;
    vendor_settings_reader r;
    char region[64], strict[8], base[900];
    int eu, timeout_s, rc = -1;
    memset(s, 0, sizeof *s);
    if (vendor_json_parse(&doc, text, len, MP_VENDOR, err, cap) != 0) return -1;
    r.doc = &doc; r.vendor = MP_VENDOR; r.err = err; r.cap = cap;
    if (doc.nodes[0].type != VENDOR_J_OBJECT) { snprintf(err, cap, "Mixpanel: settings must be a JSON object"); goto done; }
    if (vendor_setting_string(&r, "projectToken", s->token, sizeof s->token) != 0) goto done;
    if (!s->token[0] && vendor_setting_string(&r, "token", s->token, sizeof s->token) != 0) goto done;
    if (!s->token[0]) { snprintf(err, cap, "Mixpanel: settings need a non-empty \"token\" or \"projectToken\" string (the project token)"); goto done; }
    if (vendor_setting_string(&r, "apiSecret", s->secret, sizeof s->secret) != 0) goto done;
    if (!s->secret[0] && vendor_setting_string(&r, "apiKey", s->secret, sizeof s->secret) != 0) goto done;
    if (vendor_setting_string(&r, "apiRegion", region, sizeof region) != 0) goto done;
    if (vendor_setting_bool(&r, "enableEuropeanUnionEndpoint", 0, &eu) != 0) goto done;
    if (!region[0] && eu) snprintf(region, sizeof region, "EU");
    if (region_host(region, s->base, sizeof s->base) != 0) {
        snprintf(err, cap, "Mixpanel: \"apiRegion\" must be \"US\", \"EU\" or \"IN\", not \"%s\"", region);
        goto done;
    }
    if (vendor_setting_base_url(&r, "apiHost", base, sizeof base) != 0) goto done;
    if (base[0]) snprintf(s->base, sizeof s->base, "%s", base);
    if (vendor_setting_string(&r, "strictMode", strict, sizeof strict) != 0) goto done;
    if (strict[0] && strcmp(strict, "1") != 0 && strcmp(strict, "0") != 0) {
        snprintf(err, cap, "Mixpanel: \"strictMode\" must be \"1\" or \"0\", not \"%s\"", strict);
        goto done;
    }
    s->strict = strcmp(strict, "0") != 0;
    if (s->secret[0]) {
        char pair[300];
        snprintf(s->events_url, sizeof s->events_url, "%s/import?strict=%d&ip=0", s->base, s->strict);
        snprintf(pair, sizeof pair, "%s:", s->secret);
        memcpy(s->authorization, "Basic ", 6);
        base64(pair, strlen(pair), s->authorization + 6, sizeof s->authorization - 6);
    } else {
        snprintf(s->events_url, sizeof s->events_url, "%s/track?verbose=1&ip=0", s->base);
    }
    /* ip=0 on every request: Mixpanel locates a record by its own ip / $ip only, never by the
     * address of the machine sending it (a server sends for many users), as its SDKs do. */
    snprintf(s->engage_url, sizeof s->engage_url, "%s/engage?verbose=1&ip=0", s->base);
    snprintf(s->groups_url, sizeof s->groups_url, "%s/groups?verbose=1&ip=0", s->base);
    if (vendor_setting_string(&r, "sourceName", s->source_name, sizeof s->source_name) != 0) goto done;
    if (vendor_setting_bool(&r, "people", 1, &s->people) != 0) goto done;
    if (vendor_setting_bool(&r, "setAllTraitsByDefault", 1, &s->set_all_traits) != 0) goto done;
    if (vendor_setting_list(&r, "peopleProperties", s->people_properties, &s->people_properties_count) != 0) goto done;
    if (vendor_setting_list(&r, "setOnceProperties", s->set_once, &s->set_once_count) != 0) goto done;
    if (vendor_setting_list(&r, "groupIdentifierTraits", s->group_traits, &s->group_traits_count) != 0) goto done;
    s->classic_pages = vendor_json_get(&doc, 0, "trackAllPages") >= 0 || vendor_json_get(&doc, 0, "trackNamedPages") >= 0 ||
                       vendor_json_get(&doc, 0, "trackCategorizedPages") >= 0 || vendor_json_get(&doc, 0, "consolidatedPageCalls") >= 0;
    if (vendor_setting_bool(&r, "trackAllPages", 0, &s->track_all_pages) != 0) goto done;
    if (vendor_setting_bool(&r, "trackNamedPages", 1, &s->track_named_pages) != 0) goto done;
    if (vendor_setting_bool(&r, "trackCategorizedPages", 0, &s->track_categorized_pages) != 0) goto done;
    if (vendor_setting_bool(&r, "consolidatedPageCalls", 0, &s->consolidated_page_calls) != 0) goto done;
    if (vendor_setting_bool(&r, "gzip", 1, &s->gzip) != 0) goto done;
    if (vendor_setting_int(&r, "timeoutSeconds", 15, 1, 300, &timeout_s) != 0) goto done;
    /* Mixpanel takes up to 2,000 records and 10 MB (/import) per request. */
    if (vendor_setting_int(&r, "batchSize", 2000, 1, 2000, &s->max_events) != 0) goto done;
    s->timeout_ms = timeout_s * 1000;
    s->max_bytes = 10 * 1000 * 1000;
    rc = 0;
done:
    vendor_json_free(&doc);
    return rc;
}

/* Maps one Segment event and hands its records to the upload. */
static ah_status send_event(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    vendor_buf out = {0};
    char message_id[256], note[600];
    int count = 0, rc;
    ah_status status;
    rc = mp_map_event(&self->settings, json, len, &out, &count, message_id, sizeof message_id, note, sizeof note, err, cap);
    /* Cut or left out to fit Mixpanel's limits: said once, with the event's messageId. */
    if (note[0]) self->host->log(self->host->ctx, AH_LOG_WARN, note, strlen(note));
    if (rc != 0) {
        vendor_buf_free(&out);
        return rc > 0 ? AH_OK : AH_ERR_PERMANENT;
    }
    status = mp_upload_call(self->upload, out.data, out.len, count, message_id, err, cap);
    vendor_buf_free(&out);
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

static const ah_integration mp_integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Mixpanel", MP_VERSION, AH_LANGUAGE_C, NULL,
    mp_create, &mp_hooks,
    /* The host's durable queue: records wait there until Mixpanel acknowledged the request that
     * carried them, so with finish-later what is held here is never the only copy and a SIGKILL
     * loses nothing; a record sent again keeps its $insert_id, which Mixpanel de-duplicates. The
     * settings it reads: mp_schema.c. */
    mp_get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &mp_integration;
}
