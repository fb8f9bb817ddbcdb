/* Delivery to Mixpanel through the host's HTTP client (ABI 1.3, AH_EXT_HTTP_REQUESTS).
 *
 * A call's records are held with the call. With AH_EXT_FINISH_LATER the hook answers AH_PENDING
 * and the records go in batches (one request at a time, so Mixpanel sees a user's records in
 * order); without it (or when the host gives the call no token) they go at once and the hook
 * waits for Mixpanel's answer. Each endpoint gets its own requests: events to /import (or
 * /track), profile updates to /engage, group updates to /groups, each a JSON array of at most
 * `batchSize` records and the byte limit. Mixpanel's answer completes every call of a request:
 *
 *   2xx                    AH_OK (a verbose answer with "status":0 counts as a 400 naming none)
 *   400 with failed_records (strict /import): the named records are refused for good
 *                          (AH_ERR_PERMANENT, naming the messageId and Mixpanel's message); the
 *                          others were imported (AH_OK)
 *   400 naming none, 413   split in halves, each sent again at once, until the bad record is
 *                          alone (then AH_ERR_PERMANENT)
 *   408, 429, 5xx, no answer   AH_ERR_RETRYABLE; a Retry-After goes to the host first
 *                          (AH_EXT_RETRY_AFTER), whose retry then waits at least that long
 *   other 4xx (401: a wrong API secret)   AH_ERR_PERMANENT
 * A call whose records got different answers: a retryable answer wins (the host calls again and
 * every record of the call is sent again): Mixpanel drops a re-sent event by its $insert_id, and
 * $set, $set_once, $union and a group's $set are the same sent twice; a refused record is
 * refused again. An /engage $append ($transactions), which would count twice, goes only after
 * every other record of its call was delivered, so a retried call never repeats it. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "mixpanel.h"

typedef struct call call;

typedef struct item {
    char *json;
    size_t len;
    int endpoint;
    call *owner;
} item;

/* One call of a hook: answered once every one of its records is answered. */
struct call {
    uint64_t token;        /* 0: a call answered synchronously (its hook waits on `answered`) */
    int remaining;
    ah_status worst;
    int done, abandoned;   /* synchronous calls only */
    /* A record that would count twice if sent twice (an /engage $append): it goes only once
     * every other record of the call was delivered, so that a retry of the call never repeats
     * it. has_deferred: it still waits. */
    item deferred;
    int has_deferred;
    char message_id[256];
    char reason[1800];
};

/* One request: its records and what it needs from the settings, copied when it is made (a
 * split half is sent from a host thread while `update` may replace the settings). */
typedef struct batch {
    vendor_line_link link; /* first: in the line of batches waiting for a request slot */
    mp_upload *up;
    int endpoint;
    char url[1024];
    char authorization[400];
    int gzip;
    int timeout_ms;
    int count;
    item *items;
} batch;

struct mp_upload {
    const ah_host *host;
    const ah_host_http_requests *http;
    const ah_host_finish_later *fl;      /* NULL: every call is answered synchronously */
    const ah_host_retry_after *retry;    /* NULL: the host has no AH_EXT_RETRY_AFTER */
    mp_settings settings;                /* a copy: update replaces it under the lock */
    pthread_mutex_t lock;                /* guards everything below and each call's fields */
    pthread_cond_t answered;             /* a synchronous call was answered */
    item *held;
    int held_count, held_cap, held_calls;
    vendor_request_line line;            /* one request at a time: a user's records in order */
};

mp_upload *mp_upload_create(const ah_host *host, const mp_settings *settings, char *err, size_t cap) {
    mp_upload *up;
    const ah_host_http_requests *http =
        (const ah_host_http_requests *)vendor_host_table(host, AH_EXT_HTTP_REQUESTS, sizeof(ah_host_http_requests));
    if (!http) {
        snprintf(err, cap, "Mixpanel: this host offers no HTTP requests (ABI 1.3's %s), which the library sends through", AH_EXT_HTTP_REQUESTS);
        return NULL;
    }
    if (!(up = (mp_upload *)calloc(1, sizeof *up))) { snprintf(err, cap, "Mixpanel: out of memory"); return NULL; }
    up->host = host;
    up->http = http;
    up->settings = *settings;
    up->fl = (const ah_host_finish_later *)vendor_host_table(host, AH_EXT_FINISH_LATER, sizeof(ah_host_finish_later));
    up->retry = (const ah_host_retry_after *)vendor_host_table(host, AH_EXT_RETRY_AFTER, sizeof(ah_host_retry_after));
    vendor_line_init(&up->line, http);
    pthread_mutex_init(&up->lock, NULL);
    pthread_cond_init(&up->answered, NULL);
    return up;
}

/* Appends `it` to what is held (under the lock); false when out of memory. */
static int hold(mp_upload *up, const item *it) {
    if (up->held_count == up->held_cap) {
        int grown_cap = up->held_cap ? up->held_cap * 2 : 256;
        item *grown = (item *)realloc(up->held, (size_t)grown_cap * sizeof(item));
        if (!grown) return 0;
        up->held = grown;
        up->held_cap = grown_cap;
    }
    up->held[up->held_count++] = *it;
    return 1;
}

/* Records one record's answer in its call; answers the call when it was the last. */
static void answer_item(mp_upload *up, item *it, ah_status status, const char *why) {
    call *c = it->owner;
    int last, free_it = 0;
    uint64_t token;
    pthread_mutex_lock(&up->lock);
    token = c->token; /* read under the lock: a synchronous call's waiter frees it once done */
    if ((status == AH_ERR_RETRYABLE && c->worst != AH_ERR_RETRYABLE) || (status == AH_ERR_PERMANENT && c->worst == AH_OK)) {
        snprintf(c->reason, sizeof c->reason, "%s", why);
        c->worst = status;
    }
    last = --c->remaining == 0;
    if (last && c->has_deferred) {
        /* The rest of the call is answered: its $append goes now if all of it was delivered,
         * else not at all (the host's retry of the call sends it, once). */
        c->has_deferred = 0;
        if (c->worst == AH_OK && hold(up, &c->deferred)) {
            c->remaining = 1;
            last = 0;
        } else {
            free(c->deferred.json);
        }
    }
    if (last && !token) {
        c->done = 1;
        free_it = c->abandoned;
        pthread_cond_broadcast(&up->answered);
    }
    pthread_mutex_unlock(&up->lock);
    if (!last) return;
    if (token) {
        up->fl->complete(up->host->ctx, token, c->worst, c->reason, strlen(c->reason));
        free(c);
    } else if (free_it) {
        free(c);
    }
}

static void free_batch(batch *b) {
    int i;
    for (i = 0; i < b->count; i++) free(b->items[i].json);
    free(b->items);
    free(b);
}

static void start_batch(batch *b);
static void send_batch(batch *b);
static void request_done(mp_upload *up);

/* Splits `b` in halves, each sent on its own; false when out of memory. */
static int split(batch *b) {
    int half = b->count / 2;
    batch *second = (batch *)malloc(sizeof *second);
    item *items = (item *)malloc((size_t)(b->count - half) * sizeof(item));
    if (!second || !items) { free(second); free(items); return 0; }
    *second = *b;
    memcpy(items, b->items + half, (size_t)(b->count - half) * sizeof(item));
    second->items = items;
    second->count = b->count - half;
    second->link.next = NULL;
    b->count = half;
    start_batch(b);
    start_batch(second);
    return 1;
}

/* A 2xx from /track, /engage or /groups with verbose=1 says {"status":1} or {"status":0,"error"}. */
static int verbose_refusal(const char *body) {
    return body && strstr(body, "\"status\":0") != NULL;
}

static void answer_batch(batch *b, const ah_http_response *r) {
    mp_upload *up = b->up;
    char why[1800], excerpt[400];
    char *whole = vendor_body_copy(r);
    int i, refused_whole;
    snprintf(excerpt, sizeof excerpt, "%s", whole ? whole : "");
    if (r->outcome != AH_OK) {
        snprintf(why, sizeof why, "Mixpanel: POST %s failed: %.*s", b->url, (int)(r->error_len < 300 ? r->error_len : 300),
                 r->error ? r->error : "");
        for (i = 0; i < b->count; i++) answer_item(up, &b->items[i], AH_ERR_RETRYABLE, why);
        goto done;
    }
    snprintf(why, sizeof why, "Mixpanel: POST %s answered %d: %s", b->url, (int)r->status_code, excerpt);
    refused_whole = r->status_code >= 200 && r->status_code < 300 && verbose_refusal(whole);
    if (r->status_code >= 200 && r->status_code < 300 && !refused_whole) {
        for (i = 0; i < b->count; i++) answer_item(up, &b->items[i], AH_OK, "");
        goto done;
    }
    if (r->status_code == 400 || r->status_code == 413 || refused_whole) {
        char *bad = (char *)calloc((size_t)b->count, 1);
        int named = bad && whole && r->status_code == 400 ? mp_failed_records(whole, r->body_len, b->count, bad) : 0;
        if (named > 0) {
            /* Strict /import: only the named records were refused; the others are in. */
            for (i = 0; i < b->count; i++) {
                char one[1800];
                if (!bad[i]) { answer_item(up, &b->items[i], AH_OK, ""); continue; }
                snprintf(one, sizeof one, "Mixpanel: refused the event %.200s: %.1500s", b->items[i].owner->message_id, why);
                answer_item(up, &b->items[i], AH_ERR_PERMANENT, one);
            }
            free(bad);
            goto done;
        }
        free(bad);
        if (b->count > 1) {
            free(whole);
            if (split(b)) return;
            for (i = 0; i < b->count; i++) answer_item(up, &b->items[i], AH_ERR_RETRYABLE, "Mixpanel: out of memory splitting a request");
            free_batch(b);
            return;
        }
        {
            char one[1800];
            snprintf(one, sizeof one, "Mixpanel: refused the event %.200s: %.1500s", b->items[0].owner->message_id, why);
            answer_item(up, &b->items[0], AH_ERR_PERMANENT, one);
        }
        goto done;
    }
    if (vendor_transient_status(r->status_code)) vendor_pass_retry_after(up->host, up->retry, r);
    for (i = 0; i < b->count; i++)
        answer_item(up, &b->items[i], vendor_transient_status(r->status_code) ? AH_ERR_RETRYABLE : AH_ERR_PERMANENT, why);
done:
    free(whole);
    free_batch(b);
}

/* The host's answer to one request: frees its slot, answers its records, starts what waits. */
static void on_answer(void *user, uint64_t request_id, const ah_http_response *r) {
    batch *b = (batch *)user;
    mp_upload *up = b->up;
    (void)request_id;
    pthread_mutex_lock(&up->lock);
    vendor_line_leave(&up->line);
    pthread_mutex_unlock(&up->lock);
    answer_batch(b, r);
    request_done(up);
}

/* Starts `b` now when a request slot is free, else queues it. */
static void start_batch(batch *b) {
    mp_upload *up = b->up;
    int now;
    pthread_mutex_lock(&up->lock);
    now = vendor_line_enter(&up->line, &b->link);
    pthread_mutex_unlock(&up->lock);
    if (now) send_batch(b);
}

static void upload_held(mp_upload *up);

/* A slot came free: start the oldest queued batch, or else send what gathered meanwhile. */
static void request_done(mp_upload *up) {
    batch *b;
    int held;
    pthread_mutex_lock(&up->lock);
    b = (batch *)vendor_line_next(&up->line);
    held = !up->line.head && up->held_count > 0;
    pthread_mutex_unlock(&up->lock);
    if (b) send_batch(b);
    else if (held) upload_held(up);
}

static void send_batch(batch *b) {
    mp_upload *up = b->up;
    static const char content_type[] = "application/json";
    ah_http_header headers[2];
    ah_http_request request;
    vendor_buf body = {0};
    char err[512];
    size_t header_count = 1;
    int i;
    vendor_buf_add(&body, "[", 1);
    for (i = 0; i < b->count; i++) {
        if (i) vendor_buf_add(&body, ",", 1);
        vendor_buf_add(&body, b->items[i].json, b->items[i].len);
    }
    vendor_buf_add(&body, "]", 1);
    headers[0].name = "Content-Type"; headers[0].name_len = 12;
    headers[0].value = content_type; headers[0].value_len = sizeof content_type - 1;
    if (b->authorization[0]) {
        headers[1].name = "Authorization"; headers[1].name_len = 13;
        headers[1].value = b->authorization; headers[1].value_len = strlen(b->authorization);
        header_count = 2;
    }
    memset(&request, 0, sizeof request);
    request.size = sizeof request;
    request.flags = b->gzip ? AH_HTTP_GZIP : 0;
    request.method = "POST"; request.method_len = 4;
    request.url = b->url; request.url_len = strlen(b->url);
    request.headers = headers; request.header_count = header_count;
    request.body = body.data; request.body_len = body.len;
    request.timeout_ms = (uint32_t)b->timeout_ms;
    err[0] = 0;
    if (body.failed) snprintf(err, sizeof err, "Mixpanel: out of memory building a request");
    else if (up->http->start(up->host->ctx, &request, on_answer, b, NULL, err, sizeof err) == AH_OK) {
        vendor_buf_free(&body);
        return;
    }
    vendor_buf_free(&body);
    /* Not started (the host is stopping, or out of memory): every call is answered retryable. */
    pthread_mutex_lock(&up->lock);
    vendor_line_leave(&up->line);
    pthread_mutex_unlock(&up->lock);
    for (i = 0; i < b->count; i++) answer_item(up, &b->items[i], AH_ERR_RETRYABLE, err);
    free_batch(b);
    request_done(up);
}

static const char *url_for(const mp_settings *s, int endpoint) {
    return endpoint == MP_ENGAGE ? s->engage_url : endpoint == MP_GROUPS ? s->groups_url : s->events_url;
}

/* Takes what is held and sends it, per endpoint, in requests within the limits. */
static void upload_held(mp_upload *up) {
    item *items;
    int count, endpoint;
    mp_settings copy;
    const mp_settings *s = &copy;
    pthread_mutex_lock(&up->lock);
    copy = up->settings;
    items = up->held; count = up->held_count;
    up->held = NULL; up->held_count = up->held_cap = up->held_calls = 0;
    pthread_mutex_unlock(&up->lock);
    for (endpoint = MP_EVENTS; endpoint <= MP_GROUPS; endpoint++) {
        batch *b = NULL;
        size_t bytes = 0;
        size_t limit = endpoint == MP_EVENTS && s->secret[0] ? s->max_bytes : (s->max_bytes < 1000000 ? s->max_bytes : 1000000);
        int i;
        for (i = 0; i <= count; i++) {
            int fits = i < count && b && b->count < s->max_events && bytes + items[i].len + 1 <= limit;
            if (b && (i == count || (items[i].endpoint == endpoint && !fits))) {
                start_batch(b);
                b = NULL;
            }
            if (i == count || items[i].endpoint != endpoint) continue;
            if (!b) {
                b = (batch *)calloc(1, sizeof *b);
                if (b) b->items = (item *)malloc((size_t)(count - i < s->max_events ? count - i : s->max_events) * sizeof(item));
                if (!b || !b->items) {
                    free(b);
                    b = NULL;
                    answer_item(up, &items[i], AH_ERR_RETRYABLE, "Mixpanel: out of memory");
                    free(items[i].json);
                    continue;
                }
                b->up = up;
                b->endpoint = endpoint;
                snprintf(b->url, sizeof b->url, "%.1000s", url_for(s, endpoint));
                if (endpoint == MP_EVENTS) snprintf(b->authorization, sizeof b->authorization, "%.390s", s->authorization);
                b->gzip = s->gzip && endpoint == MP_EVENTS && s->secret[0];
                b->timeout_ms = s->timeout_ms;
                bytes = 0;
            }
            b->items[b->count++] = items[i];
            bytes += items[i].len + 1;
        }
    }
    free(items);
}

ah_status mp_upload_call(mp_upload *up, const char *records, size_t len, int count, const char *message_id,
                         char *err, size_t cap) {
    uint64_t token = 0;
    call *c;
    size_t at = 0;
    int i, ready;
    (void)len;
    if (count == 0) return AH_OK;
    if (up->fl) token = up->fl->token(up->host->ctx);
    if (!(c = (call *)calloc(1, sizeof *c))) { snprintf(err, cap, "Mixpanel: out of memory"); return AH_ERR_RETRYABLE; }
    c->token = token;
    c->remaining = count;
    c->worst = AH_OK;
    snprintf(c->message_id, sizeof c->message_id, "%s", message_id);
    pthread_mutex_lock(&up->lock);
    if (up->held_count + count > up->held_cap) {
        int grown_cap = up->held_cap ? up->held_cap * 2 : 256;
        item *grown;
        while (grown_cap < up->held_count + count) grown_cap *= 2;
        if (!(grown = (item *)realloc(up->held, (size_t)grown_cap * sizeof(item)))) {
            pthread_mutex_unlock(&up->lock);
            free(c);
            snprintf(err, cap, "Mixpanel: out of memory");
            return AH_ERR_RETRYABLE;
        }
        up->held = grown;
        up->held_cap = grown_cap;
    }
    for (i = 0; i < count; i++) {
        /* Each record: its endpoint's digit, the JSON object, a NUL. */
        size_t n = strlen(records + at);
        int once = records[at] - '0' == MP_ENGAGE_ONCE && !c->has_deferred;
        item *it = once ? &c->deferred : &up->held[up->held_count++];
        it->endpoint = records[at] - '0' == MP_ENGAGE_ONCE ? MP_ENGAGE : records[at] - '0';
        it->json = (char *)malloc(n);
        if (it->json) memcpy(it->json, records + at + 1, n);
        it->len = it->json ? n - 1 : 0;
        if (it->json) it->json[n - 1] = 0;
        it->owner = c;
        at += n + 1;
        if (once) { c->has_deferred = 1; c->remaining--; }
    }
    if (c->remaining == 0) {
        /* Nothing else in the call: the deferred record goes now (room was made above). */
        up->held[up->held_count++] = c->deferred;
        c->has_deferred = 0;
        c->remaining = 1;
    }
    up->held_calls++;
    /* Send at once when a request slot is free (nothing waits idle, so no timer is needed);
     * else records gather while requests run and go when one finishes, at batchSize, or before
     * the host's bound on pending calls would stop the hooks. A synchronous call goes now. */
    ready = !token || up->line.in_flight < up->line.slots || up->held_count >= up->settings.max_events ||
            (up->fl && up->held_calls >= (int)up->fl->max_pending);
    pthread_mutex_unlock(&up->lock);
    if (ready) upload_held(up);
    if (token) return AH_PENDING;
    {
        /* Synchronous: wait for the answer (the host calls every `done`, at the latest with a
         * timeout of its own; the margin only guards against a host that never does). */
        struct timespec deadline;
        ah_status status;
        int rc = 0, wait_s;
        pthread_mutex_lock(&up->lock);
        wait_s = up->settings.timeout_ms / 1000 + 30;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += wait_s;
        while (!c->done && rc == 0) rc = pthread_cond_timedwait(&up->answered, &up->lock, &deadline);
        if (!c->done) {
            c->abandoned = 1;
            pthread_mutex_unlock(&up->lock);
            snprintf(err, cap, "Mixpanel: no answer from the host's HTTP client within %d s", wait_s);
            return AH_ERR_RETRYABLE;
        }
        pthread_mutex_unlock(&up->lock);
        status = c->worst;
        if (status != AH_OK) snprintf(err, cap, "%s", c->reason);
        free(c);
        return status;
    }
}

void mp_upload_flush(mp_upload *up) { upload_held(up); }

void mp_upload_settings(mp_upload *up, const mp_settings *settings) {
    pthread_mutex_lock(&up->lock);
    up->settings = *settings;
    pthread_mutex_unlock(&up->lock);
}

void mp_upload_destroy(mp_upload *up) {
    int i;
    if (!up) return;
    for (;;) {
        batch *b = (batch *)vendor_line_take(&up->line);
        if (!b) break;
        for (i = 0; i < b->count; i++) {
            call *c = b->items[i].owner;
            if (--c->remaining == 0) { if (c->has_deferred) free(c->deferred.json); free(c); }
        }
        free_batch(b);
    }
    for (i = 0; i < up->held_count; i++) {
        call *c = up->held[i].owner;
        free(up->held[i].json);
        if (--c->remaining == 0) { if (c->has_deferred) free(c->deferred.json); free(c); }
    }
    free(up->held);
    pthread_cond_destroy(&up->answered);
    pthread_mutex_destroy(&up->lock);
    free(up);
}

/* {"code":400,"failed_records":[{"index":3,"$insert_id":"…","field":"…","message":"…"}, …]} */
int mp_failed_records(const char *body, size_t len, int n, char *bad) {
    vendor_json doc;
    char ignored[64];
    int found = 0, list, r;
    if (vendor_json_parse(&doc, body, len, MP_VENDOR, ignored, sizeof ignored) != 0) return 0;
    list = vendor_json_typed(&doc, vendor_json_get(&doc, 0, "failed_records"), VENDOR_J_ARRAY);
    for (r = list >= 0 ? doc.nodes[list].first_child : -1; r >= 0; r = doc.nodes[r].next) {
        double v;
        if (vendor_json_number(&doc, vendor_json_get(&doc, r, "index"), &v) == 0 && v >= 0 && v < n && !bad[(int)v]) {
            bad[(int)v] = 1;
            found++;
        }
    }
    vendor_json_free(&doc);
    return found;
}
