/* Delivery to Amplitude's HTTP V2 API (`POST /2/httpapi`, body {"api_key", "events",
 * "options"}), within the settings' limits (events and bytes per request):
 *
 *   200            every event of the request is in
 *   400            Amplitude names the bad events (events_with_invalid_fields,
 *                  events_with_missing_fields, events_with_invalid_id_lengths, silenced_events):
 *                  those are refused, the others are sent again at once; a 400 that names none
 *                  splits the request in halves (one event alone: refused)
 *   413            too large: split in halves (one event alone: refused)
 *   408, 429, 5xx  (not 501/505) and network errors: tried again with exponential backoff that
 *                  Retry-After can only lengthen, up to max_attempts; then "retry later"
 *   other 4xx      refused (a bad api key, for instance)
 * Amplitude documents no gzip for this endpoint: bodies go uncompressed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "amplitude.h"

typedef struct sender {
    const amp_settings *s;
    const amp_transport *t;
    amp_event_ref *events;
    void (*wait)(void *ctx, double seconds);
    void *wait_ctx;
    char *err;
    size_t cap;
    int requests;
} sender;

static void note(sender *d, const char *text) {
    if (d->err[0] == 0) snprintf(d->err, d->cap, "%s", text);
}

static void mark(sender *d, const int *idx, int n, int outcome, const char *why) {
    int i;
    for (i = 0; i < n; i++) d->events[idx[i]].outcome = outcome;
    note(d, why);
}

static int body_for(sender *d, const int *idx, int n, vendor_buf *b) {
    int i;
    vendor_buf_str(b, "{\"api_key\":");
    vendor_buf_json_string(b, d->s->api_key, strlen(d->s->api_key));
    vendor_buf_str(b, ",\"events\":[");
    for (i = 0; i < n; i++) {
        if (i) vendor_buf_add(b, ",", 1);
        vendor_buf_add(b, d->events[idx[i]].json, d->events[idx[i]].len);
    }
    vendor_buf_add(b, "]", 1);
    if (d->s->min_id_length > 0) {
        char opt[64];
        snprintf(opt, sizeof opt, ",\"options\":{\"min_id_length\":%d}", d->s->min_id_length);
        vendor_buf_str(b, opt);
    }
    vendor_buf_add(b, "}", 1);
    return b->failed ? -1 : 0;
}

int amp_named_in_400(const char *body, int n, char *bad) {
    static const char *const lists[] = {"events_with_invalid_fields", "events_with_missing_fields",
                                        "events_with_invalid_id_lengths"};
    vendor_json doc;
    char ignored[64];
    int found = 0, l, f, i;
    if (vendor_json_parse(&doc, body, strlen(body), AMP_VENDOR, ignored, sizeof ignored) != 0) return 0;
    for (l = 0; l < 3; l++) {
        int obj = vendor_json_typed(&doc, vendor_json_get(&doc, 0, lists[l]), VENDOR_J_OBJECT);
        for (f = obj >= 0 ? doc.nodes[obj].first_child : -1; f >= 0; f = doc.nodes[f].next)
            for (i = doc.nodes[f].type == VENDOR_J_ARRAY ? doc.nodes[f].first_child : -1; i >= 0; i = doc.nodes[i].next) {
                double v;
                if (vendor_json_number(&doc, i, &v) == 0 && v >= 0 && v < n && !bad[(int)v]) { bad[(int)v] = 1; found++; }
            }
    }
    {
        int arr = vendor_json_typed(&doc, vendor_json_get(&doc, 0, "silenced_events"), VENDOR_J_ARRAY);
        for (i = arr >= 0 ? doc.nodes[arr].first_child : -1; i >= 0; i = doc.nodes[i].next) {
            double v;
            if (vendor_json_number(&doc, i, &v) == 0 && v >= 0 && v < n && !bad[(int)v]) { bad[(int)v] = 1; found++; }
        }
    }
    vendor_json_free(&doc);
    return found;
}

static void send_request(sender *d, const int *idx, int n);

static void split(sender *d, const int *idx, int n) {
    send_request(d, idx, n / 2);
    send_request(d, idx + n / 2, n - n / 2);
}

static void send_request(sender *d, const int *idx, int n) {
    vendor_buf body = {0};
    amp_answer answer;
    char why[2600], reason[512];
    double backoff = 0.5;
    int attempt;
    if (n <= 0) return;
    if (body_for(d, idx, n, &body) != 0) {
        vendor_buf_free(&body);
        mark(d, idx, n, AMP_RETRY_LATER, "Amplitude: out of memory building a request");
        return;
    }
    why[0] = 0;
    for (attempt = 1; attempt <= d->s->max_attempts; attempt++) {
        if (attempt > 1) { d->wait(d->wait_ctx, backoff > 30 ? 30 : backoff); backoff *= 2; }
        d->requests++;
        reason[0] = 0;
        if (d->t->post(d->t->ctx, d->s->url, body.data, body.len, d->s->timeout_ms, &answer, reason, sizeof reason) != 0) {
            snprintf(why, sizeof why, "%s", reason);
            continue;
        }
        snprintf(why, sizeof why, "Amplitude: POST %s answered %d: %.400s", d->s->url, answer.status, answer.body);
        if (answer.status >= 200 && answer.status < 300) { vendor_buf_free(&body); return; }
        if (answer.status == 400) {
            char *bad = (char *)calloc((size_t)n, 1);
            int *rest = (int *)malloc((size_t)n * sizeof *rest);
            int named = bad && rest ? amp_named_in_400(answer.body, n, bad) : 0, i, r = 0;
            vendor_buf_free(&body);
            if (named > 0) {
                for (i = 0; i < n; i++) {
                    if (bad[i]) mark(d, idx + i, 1, AMP_REFUSED, why);
                    else rest[r++] = idx[i];
                }
                send_request(d, rest, r);
            } else if (n > 1) {
                split(d, idx, n);
            } else {
                mark(d, idx, 1, AMP_REFUSED, why);
            }
            free(bad);
            free(rest);
            return;
        }
        if (answer.status == 413) {
            vendor_buf_free(&body);
            if (n > 1) split(d, idx, n);
            else mark(d, idx, 1, AMP_REFUSED, why);
            return;
        }
        if (!vendor_transient_status(answer.status)) {
            vendor_buf_free(&body);
            mark(d, idx, n, AMP_REFUSED, why);
            return;
        }
        if (answer.retry_after > backoff) backoff = answer.retry_after;
    }
    vendor_buf_free(&body);
    {
        size_t used = strlen(why);
        snprintf(why + used, sizeof why - used, " (%d attempts)", d->s->max_attempts);
    }
    mark(d, idx, n, AMP_RETRY_LATER, why);
}

int amp_deliver(const amp_settings *s, const amp_transport *transport, amp_event_ref *events, int count,
                void (*wait)(void *ctx, double seconds), void *wait_ctx, char *err, size_t cap) {
    sender d;
    int *idx, i, start = 0;
    size_t bytes = 0;
    memset(&d, 0, sizeof d);
    d.s = s; d.t = transport; d.events = events; d.wait = wait; d.wait_ctx = wait_ctx; d.err = err; d.cap = cap;
    if (cap) err[0] = 0;
    if (!(idx = (int *)malloc((size_t)(count > 0 ? count : 1) * sizeof *idx))) {
        for (i = 0; i < count; i++) events[i].outcome = AMP_RETRY_LATER;
        snprintf(err, cap, "Amplitude: out of memory");
        return 0;
    }
    for (i = 0; i < count; i++) { idx[i] = i; events[i].outcome = AMP_DELIVERED; }
    for (i = 0; i < count; i++) {
        size_t size = events[i].len + 1;
        if (i > start && (i - start == s->max_events || bytes + size > s->max_bytes)) {
            send_request(&d, idx + start, i - start);
            start = i;
            bytes = 0;
        }
        bytes += size;
    }
    send_request(&d, idx + start, count - start);
    free(idx);
    return d.requests;
}
