/*
 * Mixpanel: the parts of the library shared between its files (not a public header; the ABI
 * header is the only thing the library includes from the host).
 *
 *   mp_mapping.c   Segment event -> Mixpanel records (events, profile and group updates)
 *   mp_upload.c    records held per call, sent in batches through the host's HTTP client, each
 *                  call answered with Mixpanel's answer (refused records alone, split, retry)
 *   mixpanel.c     settings, the instance, the ABI hooks and the entry function
 * The JSON reader, output buffer, settings readers, timestamps and host lookups it shares with
 * Amplitude are in Plugins/VendorSupport (compiled into this library).
 */
#ifndef MIXPANEL_INTERNAL_H
#define MIXPANEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "analytics_plugin.h"
#include "../VendorSupport/vendor_support.h"

#define MP_VENDOR "Mixpanel" /* names the library in every error */
#define MP_VERSION "1.0.0"

/* ---- Settings ------------------------------------------------------------------------------ */

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
    char people_properties[VENDOR_MAX_TRAIT_LIST][VENDOR_TRAIT_NAME_CAP];
    int people_properties_count;
    char set_once[VENDOR_MAX_TRAIT_LIST][VENDOR_TRAIT_NAME_CAP]; /* traits sent with $set_once instead of $set */
    int set_once_count;
    char group_traits[VENDOR_MAX_TRAIT_LIST][VENDOR_TRAIT_NAME_CAP]; /* groupIdentifierTraits */
    int group_traits_count;
    int classic_pages;          /* a classic page setting was given: the four below name pages;
                                 * else Segment's Actions preset, "Viewed NAME" */
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
/* The marker of an /engage update that would count twice if sent twice ($append): a call that
 * delivered one is never answered retryable (see mp_upload.c). */
#define MP_ENGAGE_ONCE 3

/* Appends the Mixpanel records of one Segment event to `out`, each as one byte (enum
 * mp_endpoint, '0' + value, or '0' + MP_ENGAGE_ONCE), then a complete JSON object, then a NUL;
 * `*count` counts them.
 * The event's messageId (for reports) goes to `message_id`; what Mixpanel's limits cut or left
 * out is said in `note` (naming the messageId; empty when nothing was).
 * Returns 0, 1 when the event maps to nothing (a page the settings do not track, identify
 * without people), or -1 with the reason Mixpanel would refuse it in `err`. */
int mp_map_event(const mp_settings *s, const char *json, size_t len, vendor_buf *out, int *count,
                 char *message_id, size_t message_id_cap, char *note, size_t note_cap, char *err, size_t cap);

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

/* The library's capability tables: its settings schema (mp_schema.c), then the durable queue. */
const void *mp_get_extension(const char *id);

#endif
