/*
 * Amplitude: Segment's "Amplitude" destination as an integration library written in C against
 * include/analytics_plugin.h alone. Each Segment call becomes Amplitude HTTP V2 events
 * (amp_mapping.c) sent to /2/httpapi (amp_delivery.c). docs/vendors/amplitude.md has the
 * settings, the mapping table and the limits.
 *
 * Settings (Segment's names): "apiKey" (required), "secretKey" (accepted; the HTTP API does not
 * use it), "endpoint" ("north_america" | "europe"), "apiHost" (a base URL replacing Amplitude's
 * host), "trackAllPages", "trackNamedPages", "trackRevenuePerProduct", "traitsToSetOnce",
 * "traitsToIncrement", "groupTypeTrait", "groupValueTrait", "minIdLength"; and this library's
 * "maxAttempts", "timeoutSeconds", "batchSize".
 *
 * Delivery: with a host that offers finish-later and HTTP requests (ABI 1.3), a hook holds the
 * call's events and answers AH_PENDING; they go to Amplitude in batches and each call is
 * completed with Amplitude's answer (amp_later.c). Otherwise a hook returns only once Amplitude
 * answered its own request (amp_delivery.c). Either way nothing the host was told is done sits
 * in memory, and a retried call carries the same insert_id (the messageId), so Amplitude drops
 * the duplicate if the first attempt did arrive.
 *
 * Build: gcc -std=c99 -shared -fPIC -O2 -fvisibility=hidden -I include -o libamplitude.so
 *        Plugins/Amplitude/ *.c Plugins/VendorSupport/ *.c -lm -pthread
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "amplitude.h"

struct ah_instance {
    const ah_host *host;
    amp_settings settings;
    amp_host_http http;        /* table NULL: the host has no AH_EXT_HTTP_REQUESTS */
    amp_transport transport;
    amp_later *later;          /* NULL: calls are answered synchronously */
};

int amp_settings_parse(amp_settings *s, const char *text, size_t len, int https_ok, char *err, size_t cap) {
    vendor_json doc;
    vendor_settings_reader r;
    char endpoint[64], host[900], base[900];
    int timeout_s, rc = -1;
    memset(s, 0, sizeof *s);
    if (vendor_json_parse(&doc, text, len, AMP_VENDOR, err, cap) != 0) return -1;
    r.doc = &doc; r.vendor = AMP_VENDOR; r.err = err; r.cap = cap;
    if (doc.nodes[0].type != VENDOR_J_OBJECT) { snprintf(err, cap, "Amplitude: settings must be a JSON object"); goto done; }
    if (vendor_setting_string(&r, "apiKey", s->api_key, sizeof s->api_key) != 0) goto done;
    if (!s->api_key[0]) { snprintf(err, cap, "Amplitude: settings need a non-empty \"apiKey\" string (the project's API key)"); goto done; }
    if (vendor_setting_string(&r, "endpoint", endpoint, sizeof endpoint) != 0) goto done;
    if (!endpoint[0] || strcmp(endpoint, "north_america") == 0) snprintf(host, sizeof host, "https://api2.amplitude.com");
    else if (strcmp(endpoint, "europe") == 0) snprintf(host, sizeof host, "https://api.eu.amplitude.com");
    else { snprintf(err, cap, "Amplitude: \"endpoint\" must be \"north_america\" or \"europe\", not \"%s\"", endpoint); goto done; }
    if (vendor_setting_base_url(&r, "apiHost", base, sizeof base) != 0) goto done;
    if (base[0]) snprintf(host, sizeof host, "%s", base);
    snprintf(s->url, sizeof s->url, "%s/2/httpapi", host);
    s->classic_pages = vendor_json_get(&doc, 0, "trackAllPages") >= 0 || vendor_json_get(&doc, 0, "trackNamedPages") >= 0;
    if (vendor_setting_bool(&r, "trackAllPages", 0, &s->track_all_pages) != 0) goto done;
    if (vendor_setting_bool(&r, "trackNamedPages", 1, &s->track_named_pages) != 0) goto done;
    if (vendor_setting_bool(&r, "trackRevenuePerProduct", 0, &s->track_revenue_per_product) != 0) goto done;
    if (vendor_setting_list(&r, "traitsToSetOnce", s->set_once, &s->set_once_count) != 0) goto done;
    if (vendor_setting_list(&r, "traitsToIncrement", s->increment, &s->increment_count) != 0) goto done;
    if (vendor_setting_string(&r, "groupTypeTrait", s->group_type_trait, sizeof s->group_type_trait) != 0) goto done;
    if (vendor_setting_string(&r, "groupValueTrait", s->group_value_trait, sizeof s->group_value_trait) != 0) goto done;
    if (vendor_setting_int(&r, "minIdLength", 0, 1, 1000, &s->min_id_length) != 0) goto done;
    if (vendor_setting_int(&r, "maxAttempts", 3, 1, 10, &s->max_attempts) != 0) goto done;
    if (vendor_setting_int(&r, "timeoutSeconds", 10, 1, 300, &timeout_s) != 0) goto done;
    /* Amplitude's SDKs send at most 200 events per request; the API takes up to 2,000 and 1 MB. */
    if (vendor_setting_int(&r, "batchSize", 200, 1, 2000, &s->max_events) != 0) goto done;
    s->timeout_ms = timeout_s * 1000;
    s->max_bytes = 1000 * 1000;
    if (!https_ok && strncmp(s->url, "https://", 8) == 0) {
        snprintf(err, cap, "Amplitude: sending to %s needs HTTPS through the host's HTTP client, which this host does not offer "
                 "(ABI 1.3's HTTP requests); set \"apiHost\" to an http:// base URL (a forwarding proxy) meanwhile", s->url);
        goto done;
    }
    rc = 0;
done:
    vendor_json_free(&doc);
    return rc;
}

static void sleep_seconds(void *ctx, double seconds) {
    struct timespec ts;
    (void)ctx;
    if (seconds <= 0) return;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0) {}
}

/* Maps one Segment event and delivers what it maps to; the worst outcome is the hook's. */
static ah_status send_event(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    vendor_buf out = {0};
    amp_event_ref refs[64];
    int count = 0, i, rc, worst = AMP_DELIVERED, n = 0;
    size_t at = 0;
    char note[600];
    rc = amp_map_event(&self->settings, json, len, &out, &count, note, sizeof note, err, cap);
    /* Cut or left out to fit Amplitude's limits: said once, with the event's messageId. */
    if (note[0]) self->host->log(self->host->ctx, AH_LOG_WARN, note, strlen(note));
    if (rc != 0) {
        vendor_buf_free(&out);
        return rc > 0 ? AH_OK : AH_ERR_PERMANENT;
    }
    if (self->later) {
        ah_status status = amp_later_hold(self->later, out.data, out.len, count, err, cap);
        if (status != AMP_NOT_HELD) {
            vendor_buf_free(&out);
            return status;
        }
    }
    for (i = 0; i < count && n < 64; i++) {
        size_t l = strlen(out.data + at);
        refs[n].json = out.data + at;
        refs[n].len = l;
        n++;
        at += l + 1;
    }
    if (count > 64) {
        snprintf(err, cap, "Amplitude: the event maps to %d Amplitude events, more than the 64 one call may send (63 products)", count);
        vendor_buf_free(&out);
        return AH_ERR_PERMANENT;
    }
    amp_deliver(&self->settings, &self->transport, refs, n, sleep_seconds, NULL, err, cap);
    for (i = 0; i < n; i++)
        if (refs[i].outcome == AMP_RETRY_LATER) worst = AMP_RETRY_LATER;
        else if (refs[i].outcome == AMP_REFUSED && worst == AMP_DELIVERED) worst = AMP_REFUSED;
    vendor_buf_free(&out);
    if (worst == AMP_DELIVERED) { if (cap) err[0] = 0; return AH_OK; }
    return worst == AMP_RETRY_LATER ? AH_ERR_RETRYABLE : AH_ERR_PERMANENT;
}

static ah_status amp_identify(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return send_event(s, j, l, e, c); }
static ah_status amp_track(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return send_event(s, j, l, e, c); }
static ah_status amp_screen(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return send_event(s, j, l, e, c); }
static ah_status amp_group(ah_instance *s, const char *j, size_t l, char *e, size_t c) { return send_event(s, j, l, e, c); }

static ah_status amp_update(ah_instance *self, const char *settings, size_t len, int32_t kind, char *err, size_t cap) {
    amp_settings next;
    (void)kind;
    if (amp_settings_parse(&next, settings, len, self->http.table != NULL, err, cap) != 0) return AH_ERR_PERMANENT;
    self->settings = next;
    return AH_OK;
}

static ah_status amp_flush(ah_instance *self, char *err, size_t cap) {
    (void)err; (void)cap;
    if (self->later) amp_later_flush(self->later);
    return AH_OK;
}

static void amp_destroy(ah_instance *self) {
    amp_later_destroy(self->later);
    free(self);
}

static ah_instance *amp_create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) { snprintf(err, cap, "Amplitude: out of memory"); return NULL; }
    self->host = host;
    /* The host's HTTP client when it offers one (https, proxies); else plain http:// of our own. */
    self->http.table = (const ah_host_http_requests *)vendor_host_table(host, AH_EXT_HTTP_REQUESTS, sizeof(ah_host_http_requests));
    if (self->http.table) { self->http.host_ctx = host->ctx; self->transport.post = amp_post_host; self->transport.ctx = &self->http; }
    else { self->transport.post = amp_post_socket; self->transport.ctx = NULL; }
    if (amp_settings_parse(&self->settings, settings, len, self->http.table != NULL, err, cap) != 0) { free(self); return NULL; }
    /* With finish-later and the host's HTTP requests: hold events and upload them in batches. */
    self->later = amp_later_create(host, &self->settings);
    return self;
}

static const ah_hooks amp_hooks = {
    sizeof(ah_hooks),
    amp_identify, amp_track, amp_screen, amp_group,
    NULL, /* alias: Amplitude's HTTP API has none (a documented no-op) */
    NULL, /* reset: nothing per user is kept */
    amp_flush, /* uploads what is held (finish later) */
    amp_update, amp_destroy, NULL,
};

static const ah_integration amp_integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Amplitude", AMP_VERSION, AH_LANGUAGE_C, NULL,
    amp_create, &amp_hooks,
    /* The host's durable queue: events wait there until their upload was acknowledged, so with
     * finish-later a batch held here is never the only copy and a SIGKILL loses nothing. The
     * settings it reads: amp_schema.c. */
    amp_get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &amp_integration;
}
