/*
 * Amplitude: the parts of the library shared between its files (not a public header; the ABI
 * header is the only thing the library includes from the host).
 *
 *   amp_mapping.c   Segment event -> Amplitude HTTP V2 events
 *   amp_delivery.c  batches to /2/httpapi within limits, retries, splits refused batches
 *   amp_transport.c the one function that POSTs (plain http:// over a socket)
 *   amplitude.c     settings, the instance, the ABI hooks and the entry function
 * The JSON reader, output buffer, settings readers, timestamps and host lookups it shares with
 * Mixpanel are in Plugins/VendorSupport (compiled into this library).
 */
#ifndef AMPLITUDE_INTERNAL_H
#define AMPLITUDE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "analytics_plugin.h"
#include "../VendorSupport/vendor_support.h"

#define AMP_VENDOR "Amplitude" /* names the library in every error */
#define AMP_VERSION "1.0.0"
#define AMP_LIBRARY "analytics-host"

/* ---- Settings ------------------------------------------------------------------------------ */

typedef struct amp_settings {
    char api_key[256];
    char url[1024];            /* the full /2/httpapi URL */
    int min_id_length;         /* 0: Amplitude's default (5) */
    int classic_pages;         /* a classic page setting was given: the two below name pages;
                                * else Segment's Actions preset, "Viewed NAME" */
    int track_all_pages;       /* page/screen as "Loaded a Page" / "Loaded a Screen" */
    int track_named_pages;     /* named page/screen as "Viewed NAME Page" / "Viewed NAME Screen" */
    int track_revenue_per_product;
    char set_once[VENDOR_MAX_TRAIT_LIST][VENDOR_TRAIT_NAME_CAP];
    int set_once_count;
    char increment[VENDOR_MAX_TRAIT_LIST][VENDOR_TRAIT_NAME_CAP];
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
 * page tracking off), or -1 with the reason Amplitude would refuse it in `err`. What Amplitude's
 * limits cut or left out is said in `note` (naming the messageId, for the host's log, which names
 * the library; empty when nothing was). */
int amp_map_event(const amp_settings *s, const char *json, size_t len, vendor_buf *out, int *count,
                  char *note, size_t note_cap, char *err, size_t cap);

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

/* The library's capability tables: its settings schema (amp_schema.c), then the durable queue. */
const void *amp_get_extension(const char *id);

#endif
