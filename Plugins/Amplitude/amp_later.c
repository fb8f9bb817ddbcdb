/* Finish later (ABI 1.3): a call's Amplitude events are held with its completion token and the
 * hook answers AH_PENDING; once `batchSize` events are held (or the host's bound on pending calls
 * is near, or at flush) they go to Amplitude in one request through the host's HTTP client, and
 * its answer completes every call of the request:
 *
 *   2xx            AH_OK
 *   400 naming     the named events are refused (their call: AH_ERR_PERMANENT with Amplitude's
 *   events         reason and the event's insert_id); Amplitude ingested none of the request, so
 *                  the others go again at once in a request of their own (an Order Completed whose
 *                  Product Purchased was refused still has its other events delivered, once)
 *   400 naming none, 413   split in halves, each sent again at once, until the bad event is
 *                  alone (then AH_ERR_PERMANENT)
 *   408, 429, 5xx, no answer   AH_ERR_RETRYABLE (the host backs off and calls again; a
 *                  Retry-After goes to the host first, AH_EXT_RETRY_AFTER, so its wait is at
 *                  least that long)
 *   other 4xx      AH_ERR_PERMANENT
 * A call whose events got different answers: a retryable answer wins over a refusal (the host
 * calls again and every event of the call is sent again): Amplitude drops a re-sent event by its
 * insert_id, so the delivered ones never count twice and the refused one is refused again. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "amplitude.h"

/* One pending call: answered once all of its events are answered. */
typedef struct call {
    uint64_t token;
    int remaining;
    ah_status worst;
    char reason[1800];
} call;

typedef struct item {
    char *json;
    size_t len;
    call *owner;
} item;

/* What a request needs from the settings, copied when it is made: a split half is sent from a
 * host thread while `update` may be replacing the settings on the instance's. */
typedef struct target {
    char url[1024];
    char api_key[256];
    int min_id_length;
    int timeout_ms;
} target;

typedef struct upload {
    vendor_line_link link; /* first: in the line of uploads waiting for a request slot */
    amp_later *later;
    target to;
    int count;
    item *items; /* owned: json strings and the array */
} upload;

struct amp_later {
    const ah_host *host;
    const ah_host_finish_later *fl;
    const ah_host_http_requests *http;
    const ah_host_retry_after *retry; /* NULL: the host has no AH_EXT_RETRY_AFTER */
    const amp_settings *settings;
    pthread_mutex_t lock;   /* guards `held`, `line` and each call's fields */
    item *held;
    int held_count, held_cap, held_calls;
    /* One request at a time, so Amplitude ingests a user's events in the order they happened
     * (an $identify before the events it applies to). */
    vendor_request_line line;
};

amp_later *amp_later_create(const ah_host *host, const amp_settings *settings) {
    const ah_host_finish_later *fl;
    const ah_host_http_requests *http;
    amp_later *later;
    fl = (const ah_host_finish_later *)vendor_host_table(host, AH_EXT_FINISH_LATER, sizeof *fl);
    http = (const ah_host_http_requests *)vendor_host_table(host, AH_EXT_HTTP_REQUESTS, sizeof *http);
    if (!fl || !http) return NULL;
    if (!(later = (amp_later *)calloc(1, sizeof *later))) return NULL;
    later->host = host; later->fl = fl; later->http = http; later->settings = settings;
    later->retry = (const ah_host_retry_after *)vendor_host_table(host, AH_EXT_RETRY_AFTER, sizeof(ah_host_retry_after));
    vendor_line_init(&later->line, http);
    pthread_mutex_init(&later->lock, NULL);
    return later;
}

/* Records one event's answer in its call; completes the call when it was the last. */
static void answer_item(amp_later *later, item *it, ah_status status, const char *why) {
    call *c = it->owner;
    int last;
    pthread_mutex_lock(&later->lock);
    if (status == AH_ERR_RETRYABLE || (status == AH_ERR_PERMANENT && c->worst == AH_OK)) {
        c->worst = status;
        snprintf(c->reason, sizeof c->reason, "%s", why);
    }
    last = --c->remaining == 0;
    pthread_mutex_unlock(&later->lock);
    if (!last) return;
    later->fl->complete(later->host->ctx, c->token, c->worst, c->reason, strlen(c->reason));
    free(c);
}

/* A refused event's answer: Amplitude's reason, naming the event by its insert_id (the
 * messageId, with "-2"... for the extra events of one call). */
static void refuse_item(amp_later *later, item *it, const char *why) {
    char reason[1800], id[200];
    const char *at = it->json ? strstr(it->json, "\"insert_id\":\"") : NULL;
    size_t n = 0;
    if (at) {
        at += 13;
        while (at[n] && at[n] != '"' && n < sizeof id - 1) n++;
        memcpy(id, at, n);
    }
    id[n] = 0;
    snprintf(reason, sizeof reason, "Amplitude: refused the event %s: %.1700s", n ? id : "without insert_id", why);
    answer_item(later, it, AH_ERR_PERMANENT, reason);
}

static void free_upload(upload *u) {
    int i;
    for (i = 0; i < u->count; i++) free(u->items[i].json);
    free(u->items);
    free(u);
}

static void start_upload(upload *u);
static void send_upload(upload *u);
static void request_done(amp_later *later);

static void answer_upload(upload *u, const ah_http_response *r);

/* The host's answer to one request: frees its slot, then answers (and maybe re-sends) its events. */
static void on_answer(void *user, uint64_t request_id, const ah_http_response *r) {
    upload *u = (upload *)user;
    amp_later *later = u->later;
    (void)request_id;
    pthread_mutex_lock(&later->lock);
    vendor_line_leave(&later->line);
    pthread_mutex_unlock(&later->lock);
    answer_upload(u, r);
    request_done(later);
}

static void answer_upload(upload *u, const ah_http_response *r) {
    amp_later *later = u->later;
    char why[1800], body[400];
    int i;
    size_t n = r->body ? (r->body_len < sizeof body - 1 ? r->body_len : sizeof body - 1) : 0;
    if (n) memcpy(body, r->body, n);
    body[n] = 0;
    if (r->outcome != AH_OK) {
        snprintf(why, sizeof why, "Amplitude: POST %s failed: %.*s", u->to.url, (int)(r->error_len < 300 ? r->error_len : 300),
                 r->error ? r->error : "");
        for (i = 0; i < u->count; i++) answer_item(later, &u->items[i], AH_ERR_RETRYABLE, why);
        free_upload(u);
        return;
    }
    snprintf(why, sizeof why, "Amplitude: POST %s answered %d: %s", u->to.url, (int)r->status_code, body);
    if (r->status_code >= 200 && r->status_code < 300) {
        for (i = 0; i < u->count; i++) answer_item(later, &u->items[i], AH_OK, "");
        free_upload(u);
        return;
    }
    if (r->status_code == 400 || r->status_code == 413) {
        char *bad = (char *)calloc((size_t)u->count, 1);
        int named = 0;
        /* The whole body: the named indices may lie past the excerpt kept for the reason. */
        if (bad && r->status_code == 400) {
            char *whole = vendor_body_copy(r);
            if (whole) named = amp_named_in_400(whole, u->count, bad);
            free(whole);
        }
        if (named > 0) {
            /* Only the named events are refused (with Amplitude's reason); the others were not
             * ingested and go again at once, in a request of their own, so an Order Completed
             * whose third event was refused still has its other two delivered, exactly once. */
            int kept = 0;
            for (i = 0; i < u->count; i++) {
                if (!bad[i]) { u->items[kept++] = u->items[i]; continue; }
                refuse_item(later, &u->items[i], why);
                free(u->items[i].json);
            }
            free(bad);
            u->count = kept;
            if (kept > 0) start_upload(u);
            else free_upload(u);
            return;
        }
        free(bad);
        if (u->count > 1) {
            /* Split in halves: each half becomes an upload of its own, sent at once. */
            upload *second = (upload *)calloc(1, sizeof *second);
            int half = u->count / 2;
            if (second && (second->items = (item *)malloc((size_t)(u->count - half) * sizeof(item)))) {
                second->later = later;
                second->to = u->to;
                second->count = u->count - half;
                memcpy(second->items, u->items + half, (size_t)second->count * sizeof(item));
                u->count = half;
                start_upload(u);
                start_upload(second);
                return;
            }
            free(second);
            for (i = 0; i < u->count; i++) answer_item(later, &u->items[i], AH_ERR_RETRYABLE, "Amplitude: out of memory splitting a request");
            free_upload(u);
            return;
        }
        refuse_item(later, &u->items[0], why);
        free_upload(u);
        return;
    }
    if (vendor_transient_status(r->status_code)) vendor_pass_retry_after(later->host, later->retry, r);
    for (i = 0; i < u->count; i++)
        answer_item(later, &u->items[i], vendor_transient_status(r->status_code) ? AH_ERR_RETRYABLE : AH_ERR_PERMANENT, why);
    free_upload(u);
}

/* Starts `u` now when a request slot is free, else queues it. */
static void start_upload(upload *u) {
    amp_later *later = u->later;
    int now;
    pthread_mutex_lock(&later->lock);
    now = vendor_line_enter(&later->line, &u->link);
    pthread_mutex_unlock(&later->lock);
    if (now) send_upload(u);
}

static void upload_held(amp_later *later);

/* A slot came free: start the oldest queued upload, or else send what gathered meanwhile. */
static void request_done(amp_later *later) {
    upload *u;
    int held;
    pthread_mutex_lock(&later->lock);
    u = (upload *)vendor_line_next(&later->line);
    held = !later->line.head && later->held_count > 0;
    pthread_mutex_unlock(&later->lock);
    if (u) send_upload(u);
    else if (held) upload_held(later);
}

static void send_upload(upload *u) {
    amp_later *later = u->later;
    const target *s = &u->to;
    static const char content_type[] = "application/json";
    ah_http_header header = {"Content-Type", 12, content_type, sizeof content_type - 1};
    ah_http_request request;
    vendor_buf body = {0};
    char err[512];
    int i;
    vendor_buf_str(&body, "{\"api_key\":");
    vendor_buf_json_string(&body, s->api_key, strlen(s->api_key));
    vendor_buf_str(&body, ",\"events\":[");
    for (i = 0; i < u->count; i++) {
        if (i) vendor_buf_add(&body, ",", 1);
        vendor_buf_add(&body, u->items[i].json, u->items[i].len);
    }
    vendor_buf_add(&body, "]", 1);
    if (s->min_id_length > 0) {
        char opt[64];
        snprintf(opt, sizeof opt, ",\"options\":{\"min_id_length\":%d}", s->min_id_length);
        vendor_buf_str(&body, opt);
    }
    vendor_buf_add(&body, "}", 1);
    memset(&request, 0, sizeof request);
    request.size = sizeof request;
    request.method = "POST"; request.method_len = 4;
    request.url = s->url; request.url_len = strlen(s->url);
    request.headers = &header; request.header_count = 1;
    request.body = body.data; request.body_len = body.len;
    request.timeout_ms = (uint32_t)s->timeout_ms;
    err[0] = 0;
    if (body.failed) snprintf(err, sizeof err, "Amplitude: out of memory building a request");
    else if (later->http->start(later->host->ctx, &request, on_answer, u, NULL, err, sizeof err) == AH_OK) {
        vendor_buf_free(&body);
        return;
    }
    vendor_buf_free(&body);
    /* Not started (the host is stopping, or out of memory): every call is answered retryable. */
    pthread_mutex_lock(&later->lock);
    vendor_line_leave(&later->line);
    pthread_mutex_unlock(&later->lock);
    for (i = 0; i < u->count; i++) answer_item(later, &u->items[i], AH_ERR_RETRYABLE, err);
    free_upload(u);
    request_done(later);
}

/* Takes what is held (under the lock) and uploads it in requests of at most batchSize events
 * and the byte limit. */
static void upload_held(amp_later *later) {
    item *items;
    int count, start = 0, i;
    size_t bytes = 0;
    pthread_mutex_lock(&later->lock);
    items = later->held; count = later->held_count;
    later->held = NULL; later->held_count = later->held_cap = later->held_calls = 0;
    pthread_mutex_unlock(&later->lock);
    for (i = 0; i <= count; i++) {
        if (i == count || (i > start && (i - start == later->settings->max_events || bytes + items[i].len + 1 > later->settings->max_bytes))) {
            upload *u = (upload *)calloc(1, sizeof *u);
            int n = i - start;
            if (n > 0 && u && (u->items = (item *)malloc((size_t)n * sizeof(item)))) {
                u->later = later; u->count = n;
                snprintf(u->to.url, sizeof u->to.url, "%s", later->settings->url);
                snprintf(u->to.api_key, sizeof u->to.api_key, "%s", later->settings->api_key);
                u->to.min_id_length = later->settings->min_id_length;
                u->to.timeout_ms = later->settings->timeout_ms;
                memcpy(u->items, items + start, (size_t)n * sizeof(item));
                start_upload(u);
            } else if (n > 0) {
                int k;
                for (k = start; k < i; k++) { answer_item(later, &items[k], AH_ERR_RETRYABLE, "Amplitude: out of memory"); free(items[k].json); }
                free(u);
            } else {
                free(u);
            }
            start = i;
            bytes = 0;
        }
        if (i < count) bytes += items[i].len + 1;
    }
    free(items);
}

ah_status amp_later_hold(amp_later *later, const char *events, size_t len, int count, char *err, size_t cap) {
    uint64_t token;
    call *c;
    size_t at = 0;
    int i, ready;
    (void)len;
    if (count == 0) return AH_OK;
    if (!(token = later->fl->token(later->host->ctx))) return AMP_NOT_HELD; /* this call may not pend */
    if (!(c = (call *)calloc(1, sizeof *c))) { snprintf(err, cap, "Amplitude: out of memory"); return AH_ERR_RETRYABLE; }
    c->token = token;
    c->remaining = count;
    c->worst = AH_OK;
    pthread_mutex_lock(&later->lock);
    if (later->held_count + count > later->held_cap) {
        int cap2 = later->held_cap ? later->held_cap * 2 : 256;
        item *grown;
        while (cap2 < later->held_count + count) cap2 *= 2;
        if (!(grown = (item *)realloc(later->held, (size_t)cap2 * sizeof(item)))) {
            pthread_mutex_unlock(&later->lock);
            free(c);
            snprintf(err, cap, "Amplitude: out of memory");
            return AH_ERR_RETRYABLE;
        }
        later->held = grown;
        later->held_cap = cap2;
    }
    for (i = 0; i < count; i++) {
        size_t n = strlen(events + at);
        item *it = &later->held[later->held_count++];
        it->json = (char *)malloc(n + 1);
        if (it->json) memcpy(it->json, events + at, n + 1);
        it->len = it->json ? n : 0;
        it->owner = c;
        at += n + 1;
    }
    later->held_calls++;
    /* Upload at once when a request slot is free (nothing waits idle, so no timer is needed);
     * else events gather while requests run and go when one finishes (request_done), or at
     * batchSize, or before the host's bound on pending calls would stop the hooks. */
    ready = later->line.in_flight < later->line.slots || later->held_count >= later->settings->max_events ||
            later->held_calls >= (int)later->fl->max_pending;
    pthread_mutex_unlock(&later->lock);
    if (ready) upload_held(later);
    return AH_PENDING;
}

void amp_later_flush(amp_later *later) { upload_held(later); }

void amp_later_destroy(amp_later *later) {
    int i;
    if (!later) return;
    for (;;) {
        upload *u = (upload *)vendor_line_take(&later->line);
        if (!u) break;
        for (i = 0; i < u->count; i++) {
            call *c = u->items[i].owner;
            if (--c->remaining == 0) free(c);
        }
        free_upload(u);
    }
    for (i = 0; i < later->held_count; i++) {
        call *c = later->held[i].owner;
        free(later->held[i].json);
        if (--c->remaining == 0) free(c);
    }
    free(later->held);
    pthread_mutex_destroy(&later->lock);
    free(later);
}
