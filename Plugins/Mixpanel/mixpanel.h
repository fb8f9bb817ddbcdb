/*
 * Mixpanel: the parts of the library shared between its files (not a public header; the ABI
 * header is the only thing the library includes from the host).
 *
 *   mp_json.c      a JSON reader that keeps every value's raw text (numbers past 2^53 and
 *                  non-ASCII strings are copied byte for byte) and a growable output buffer
 *   mp_mapping.c   Segment event -> Mixpanel records (events, profile and group updates)
 *   mp_upload.c    records held per call, sent in batches through the host's HTTP client, each
 *                  call answered with Mixpanel's answer (refused records alone, split, retry)
 *   mixpanel.c     settings, the instance, the ABI hooks and the entry function
 */
#ifndef MIXPANEL_INTERNAL_H
#define MIXPANEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "analytics_plugin.h"

#define MP_VERSION "1.0.0"

/* ---- JSON ---------------------------------------------------------------------------------- */

enum mp_jtype { MP_J_NULL, MP_J_BOOL, MP_J_NUMBER, MP_J_STRING, MP_J_ARRAY, MP_J_OBJECT };

/* One value. `raw` spans its whole text (quotes included for strings); `key` (object members
 * only) spans the member name without quotes, escapes as written. Children by index. */
typedef struct mp_jnode {
    enum mp_jtype type;
    const char *raw;
    size_t raw_len;
    const char *key;
    size_t key_len;
    int first_child; /* -1: none */
    int next;        /* next sibling, -1: none */
} mp_jnode;

typedef struct mp_json {
    mp_jnode *nodes;
    int count, cap;
} mp_json;

/* Parses `len` bytes; returns 0, or -1 with a reason in `err`. The text must outlive `doc`. */
int mp_json_parse(mp_json *doc, const char *text, size_t len, char *err, size_t cap);
void mp_json_free(mp_json *doc);
/* The member `name` of object node `obj`, or -1. */
int mp_json_get(const mp_json *doc, int obj, const char *name);
/* Follows a dotted path ("context.device.id") from `obj`; -1 when absent. */
int mp_json_path(const mp_json *doc, int obj, const char *path);
/* Node of a given type, or -1. */
int mp_json_typed(const mp_json *doc, int node, enum mp_jtype type);
/* A string node's contents, unescaped, into `buf` (NUL-terminated, truncated); 0 or -1. */
int mp_json_string(const mp_json *doc, int node, char *buf, size_t cap);
/* A number node as a double; 0 or -1. */
int mp_json_number(const mp_json *doc, int node, double *out);
/* True for a string node with at least one character. */
int mp_json_nonempty_string(const mp_json *doc, int node);

/* ---- Output buffer ------------------------------------------------------------------------- */

typedef struct mp_buf {
    char *data;
    size_t len, cap;
    int failed; /* out of memory: every later append is a no-op */
} mp_buf;

void mp_buf_add(mp_buf *b, const char *bytes, size_t len);
void mp_buf_str(mp_buf *b, const char *text);
/* `text` as a JSON string literal (quotes, escapes). */
void mp_buf_json_string(mp_buf *b, const char *text, size_t len);
void mp_buf_free(mp_buf *b);

/* ---- Settings ------------------------------------------------------------------------------ */

#define MP_MAX_TRAIT_LIST 32

typedef struct mp_settings {
    char token[256];
    char secret[256];           /* empty: events go to /track, else to /import with Basic auth */
    char base[900];             /* https://api.mixpanel.com, api-eu, api-in, or apiHost */
    char events_url[1024];      /* {base}/import?strict=1&project_token=… or {base}/track?verbose=1 */
    char engage_url[1024];
    char groups_url[1024];
    char authorization[400];    /* "Basic …" of "secret:" (empty without a secret) */
    int strict;                 /* strictMode "1": Mixpanel names each refused record */
    int people;                 /* identify -> /engage $set; revenue -> $append $transactions */
    int set_all_traits;         /* setAllTraitsByDefault; else only peopleProperties */
    char people_properties[MP_MAX_TRAIT_LIST][128];
    int people_properties_count;
    char set_once[MP_MAX_TRAIT_LIST][128]; /* traits sent with $set_once instead of $set */
    int set_once_count;
    char group_traits[MP_MAX_TRAIT_LIST][128]; /* groupIdentifierTraits */
    int group_traits_count;
    int track_all_pages;        /* "Loaded a Page" / "Loaded a Screen" */
    int track_named_pages;      /* "Viewed NAME Page" / "Viewed NAME Screen" */
    int track_categorized_pages;/* "Viewed CATEGORY Page" */
    int consolidated_page_calls;/* "Loaded a Page" with name and category as properties */
    char source_name[256];      /* sourceName -> segment_source_name */
    int max_events;             /* records per request (Mixpanel: at most 2,000) */
    size_t max_bytes;           /* per request body (Mixpanel /import: 10 MB) */
    int gzip;                   /* the host gzips request bodies */
    int timeout_ms;
} mp_settings;

/* 0, or -1 with the reason (naming the setting) in `err`. */
int mp_settings_parse(mp_settings *s, const char *text, size_t len, char *err, size_t cap);

/* ---- Mapping ------------------------------------------------------------------------------- */

/* Where a record goes. */
enum mp_endpoint { MP_EVENTS = 0, MP_ENGAGE = 1, MP_GROUPS = 2 };

/* Appends the Mixpanel records of one Segment event to `out`, each as one byte (enum
 * mp_endpoint, '0' + value), then a complete JSON object, then a NUL; `*count` counts them.
 * The event's messageId (for reports) goes to `message_id`.
 * Returns 0, 1 when the event maps to nothing (a page the settings do not track, identify
 * without people), or -1 with the reason Mixpanel would refuse it in `err`. */
int mp_map_event(const mp_settings *s, const char *json, size_t len, mp_buf *out, int *count,
                 char *message_id, size_t message_id_cap, char *err, size_t cap);

/* Milliseconds since 1970 from an ISO-8601 timestamp; 0 or -1. */
int mp_parse_time_ms(const char *text, int64_t *ms);

/* ---- Upload -------------------------------------------------------------------------------- */

typedef struct mp_upload mp_upload;

/* Needs AH_EXT_HTTP_REQUESTS; AH_EXT_FINISH_LATER and AH_EXT_RETRY_AFTER are used when offered.
 * `settings` is copied. NULL with a reason. */
mp_upload *mp_upload_create(const ah_host *host, const mp_settings *settings, char *err, size_t cap);
/* Sends the `count` records of one call (as mp_map_event wrote them). Inside a hook that may
 * finish later: holds them under the call's token and answers AH_PENDING; otherwise sends them
 * at once and waits for Mixpanel's answer. Errors are written to `err`. */
ah_status mp_upload_call(mp_upload *u, const char *records, size_t len, int count, const char *message_id,
                         char *err, size_t cap);
/* Sends whatever is held. */
void mp_upload_flush(mp_upload *u);
/* New settings for the requests made from now on. */
void mp_upload_settings(mp_upload *u, const mp_settings *settings);
/* Frees what is left (the host has abandoned those tokens). */
void mp_upload_destroy(mp_upload *u);

/* The failed_records indices of a strict /import 400 body: marks `bad` (n flags); returns how many. */
int mp_failed_records(const char *body, size_t len, int n, char *bad);

#endif
