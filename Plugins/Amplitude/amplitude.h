/*
 * Amplitude: the parts of the library shared between its files (not a public header; the ABI
 * header is the only thing the library includes from the host).
 *
 *   amp_json.c      a JSON reader that keeps every value's raw text (numbers past 2^53 and
 *                   non-ASCII strings are copied byte for byte) and a growable output buffer
 *   amp_mapping.c   Segment event -> Amplitude HTTP V2 events
 *   amp_delivery.c  batches to /2/httpapi within limits, retries, splits refused batches
 *   amp_transport.c the one function that POSTs (plain http:// over a socket)
 *   amplitude.c     settings, the instance, the ABI hooks and the entry function
 */
#ifndef AMPLITUDE_INTERNAL_H
#define AMPLITUDE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "analytics_plugin.h"

#define AMP_VERSION "1.0.0"
#define AMP_LIBRARY "analytics-host"

/* ---- JSON ---------------------------------------------------------------------------------- */

enum amp_jtype { AMP_J_NULL, AMP_J_BOOL, AMP_J_NUMBER, AMP_J_STRING, AMP_J_ARRAY, AMP_J_OBJECT };

/* One value. `raw` spans its whole text (quotes included for strings); `key` (object members
 * only) spans the member name without quotes, escapes as written. Children by index. */
typedef struct amp_jnode {
    enum amp_jtype type;
    const char *raw;
    size_t raw_len;
    const char *key;
    size_t key_len;
    int first_child; /* -1: none */
    int next;        /* next sibling, -1: none */
} amp_jnode;

typedef struct amp_json {
    amp_jnode *nodes;
    int count, cap;
} amp_json;

/* Parses `len` bytes; returns 0, or -1 with a reason in `err`. The text must outlive `doc`. */
int amp_json_parse(amp_json *doc, const char *text, size_t len, char *err, size_t cap);
void amp_json_free(amp_json *doc);
/* The member `name` of object node `obj`, or -1. */
int amp_json_get(const amp_json *doc, int obj, const char *name);
/* Follows a dotted path ("context.device.id") from `obj`; -1 when absent. */
int amp_json_path(const amp_json *doc, int obj, const char *path);
/* Node of a given type, or -1. */
int amp_json_typed(const amp_json *doc, int node, enum amp_jtype type);
/* A string node's contents, unescaped, into `buf` (NUL-terminated, truncated); 0 or -1. */
int amp_json_string(const amp_json *doc, int node, char *buf, size_t cap);
/* A number node as a double; 0 or -1. */
int amp_json_number(const amp_json *doc, int node, double *out);
/* True for a string node with at least one character. */
int amp_json_nonempty_string(const amp_json *doc, int node);

/* ---- Output buffer ------------------------------------------------------------------------- */

typedef struct amp_buf {
    char *data;
    size_t len, cap;
    int failed; /* out of memory: every later append is a no-op */
} amp_buf;

void amp_buf_add(amp_buf *b, const char *bytes, size_t len);
void amp_buf_str(amp_buf *b, const char *text);
/* `text` as a JSON string literal (quotes, escapes). */
void amp_buf_json_string(amp_buf *b, const char *text, size_t len);
void amp_buf_free(amp_buf *b);

/* ---- Settings ------------------------------------------------------------------------------ */

#define AMP_MAX_TRAIT_LIST 32

typedef struct amp_settings {
    char api_key[256];
    char url[1024];            /* the full /2/httpapi URL */
    int min_id_length;         /* 0: Amplitude's default (5) */
    int track_all_pages;       /* page/screen as "Loaded a Page" / "Loaded a Screen" */
    int track_named_pages;     /* named page/screen as "Viewed NAME Page" / "Viewed NAME Screen" */
    int track_revenue_per_product;
    char set_once[AMP_MAX_TRAIT_LIST][128];
    int set_once_count;
    char increment[AMP_MAX_TRAIT_LIST][128];
    int increment_count;
    char group_type_trait[128];
    char group_value_trait[128];
    int max_events;            /* per request */
    size_t max_bytes;          /* per request body */
    int max_attempts;          /* per request, inside one hook call */
    int timeout_ms;
} amp_settings;

/* `https_ok`: the host's HTTP client is there to send to https URLs. */
int amp_settings_parse(amp_settings *s, const char *text, size_t len, int https_ok, char *err, size_t cap);

/* ---- Mapping ------------------------------------------------------------------------------- */

/* Appends the Amplitude events for one Segment event (of `type`: "track", "identify", "screen",
 * "page", "group") to `out`, each as a complete JSON object followed by a NUL separator byte
 * counted in `*count`. Returns 0, 1 when the event maps to nothing (alias, an unnamed page with
 * page tracking off), or -1 with the reason Amplitude would refuse it in `err`. */
int amp_map_event(const amp_settings *s, const char *json, size_t len, amp_buf *out, int *count,
                  char *err, size_t cap);

/* Milliseconds since 1970 from an ISO-8601 timestamp; 0 or -1. */
int amp_parse_time_ms(const char *text, int64_t *ms);

/* ---- Transport and delivery ---------------------------------------------------------------- */

typedef struct amp_answer {
    int status;           /* HTTP status, 0 when no answer */
    double retry_after;   /* seconds, -1 when absent */
    char body[2048];      /* the start of the body, NUL-terminated */
} amp_answer;

/* How requests leave: `post` POSTs `body` as JSON to `url`; 0 when the server answered (see
 * `answer->status`), -1 with the reason in `err` when it could not be reached. */
typedef struct amp_transport {
    int (*post)(void *ctx, const char *url, const char *body, size_t len, int timeout_ms,
                amp_answer *answer, char *err, size_t cap);
    void *ctx;
} amp_transport;

/* Plain http:// over a socket of its own (hosts without ABI 1.3's HTTP requests, and tools). */
int amp_post_socket(void *ctx, const char *url, const char *body, size_t len, int timeout_ms,
                    amp_answer *answer, char *err, size_t cap);
/* Through the host's HTTP client (AH_EXT_HTTP_REQUESTS; https included): `ctx` is the
 * `amp_host_http` below. Waits for the answer, which the host gives on one of its threads. */
typedef struct amp_host_http {
    const ah_host_http_requests *table;
    void *host_ctx;
} amp_host_http;
int amp_post_host(void *ctx, const char *url, const char *body, size_t len, int timeout_ms,
                  amp_answer *answer, char *err, size_t cap);

enum amp_outcome { AMP_DELIVERED = 0, AMP_REFUSED = 1, AMP_RETRY_LATER = 2 };

typedef struct amp_event_ref {
    const char *json;
    size_t len;
    int outcome;          /* enum amp_outcome, set by amp_deliver */
} amp_event_ref;

/* Sends `events` in requests within the settings' limits; sets each event's outcome and writes
 * the first problem into `err`. `wait` sleeps between attempts (seconds). Returns the number of
 * requests sent. */
int amp_deliver(const amp_settings *s, const amp_transport *transport, amp_event_ref *events, int count,
                void (*wait)(void *ctx, double seconds), void *wait_ctx, char *err, size_t cap);

/* Marks in `bad` (one flag per request position, `n` of them) the events a 400 body names
 * (events_with_invalid_fields, events_with_missing_fields, events_with_invalid_id_lengths,
 * silenced_events); returns how many. */
int amp_named_in_400(const char *body, int n, char *bad);
/* 408, 429 and 5xx but 501/505: worth another try. */
int amp_transient_status(int status);

/* ---- Finish later (ABI 1.3) ---------------------------------------------------------------- */

/* Events held for one upload, answered when Amplitude answers it (amp_later.c). */
typedef struct amp_later amp_later;

/* NULL when the host lacks AH_EXT_FINISH_LATER or AH_EXT_HTTP_REQUESTS (then calls are answered
 * synchronously). `settings` is read at each upload and must outlive the result. */
amp_later *amp_later_create(const ah_host *host, const amp_settings *settings);
/* Holds the `count` Amplitude events of one call (NUL-separated in `events`) under the call's
 * token and answers AH_PENDING, uploading when enough are held; or answers at once (AH_OK for no
 * events, an error it writes to `err`), or AMP_NOT_HELD when the host gave this call no token
 * (a caller that does not let it pend): the caller then delivers it synchronously. */
#define AMP_NOT_HELD (-1)
ah_status amp_later_hold(amp_later *later, const char *events, size_t len, int count, char *err, size_t cap);
/* Uploads whatever is held. */
void amp_later_flush(amp_later *later);
/* Frees what is left (the host has abandoned those tokens). */
void amp_later_destroy(amp_later *later);

#endif
