/*
 * VendorSupport: the C that the vendor destination libraries (Plugins/Amplitude, Plugins/Mixpanel)
 * have in common. It is not an integration: it has no entry function, is never built or loaded
 * on its own, and `make plugins` does not build it as a library; every build of a vendor library
 * compiles these files in beside the vendor's own (the Makefile, the tests' builders, the
 * benchmark). Each library thus carries its own copy, and everything declared here has hidden
 * visibility, so two vendor libraries loaded into one process never bind to each other's copy and
 * still export nothing but their ABI entry function (`nm -D`). Nothing here keeps global mutable
 * state: what a function needs comes in its arguments and belongs to its caller, so any thread may
 * call it on objects that thread owns. Errors name the library the caller says it is ("Mixpanel:
 * ..."), as each library's own code did.
 *
 *   vendor_json.c      a JSON reader that keeps every value's raw text (numbers past 2^53 and
 *                      non-ASCII strings are copied byte for byte)
 *   vendor_buffer.c    a growable output buffer and the JSON pieces written into it
 *   vendor_settings.c  typed reads of a settings object, with errors naming library and setting
 *   vendor_limits.c    a vendor's documented limits on properties applied before sending
 *   vendor_time.c      ISO-8601 timestamps to milliseconds since 1970
 *   vendor_host.c      host extension tables, Retry-After, transient statuses, durable queue
 *   vendor_requests.c  the line uploads wait in for the host's HTTP client, one request at a time
 */
#ifndef VENDOR_SUPPORT_H
#define VENDOR_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include "analytics_plugin.h"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* ---- JSON (vendor_json.c) ------------------------------------------------------------------ */

enum vendor_jtype { VENDOR_J_NULL, VENDOR_J_BOOL, VENDOR_J_NUMBER, VENDOR_J_STRING, VENDOR_J_ARRAY, VENDOR_J_OBJECT };

/* One value. `raw` spans its whole text (quotes included for strings); `key` (object members
 * only) spans the member name without quotes, escapes as written. Children by index. */
typedef struct vendor_jnode {
    enum vendor_jtype type;
    const char *raw;
    size_t raw_len;
    const char *key;
    size_t key_len;
    int first_child; /* -1: none */
    int next;        /* next sibling, -1: none */
} vendor_jnode;

typedef struct vendor_json {
    vendor_jnode *nodes;
    int count, cap;
} vendor_json;

/* Parses `len` bytes; returns 0, or -1 with "VENDOR: invalid JSON: why" in `err`. The text must
 * outlive `doc`. */
int vendor_json_parse(vendor_json *doc, const char *text, size_t len, const char *vendor, char *err, size_t cap);
void vendor_json_free(vendor_json *doc);
/* The member `name` of object node `obj`, or -1. */
int vendor_json_get(const vendor_json *doc, int obj, const char *name);
/* Follows a dotted path ("context.device.id") from `obj`; -1 when absent. */
int vendor_json_path(const vendor_json *doc, int obj, const char *path);
/* Node of a given type, or -1. */
int vendor_json_typed(const vendor_json *doc, int node, enum vendor_jtype type);
/* A string node's contents, unescaped, into `buf` (NUL-terminated, truncated); 0 or -1. */
int vendor_json_string(const vendor_json *doc, int node, char *buf, size_t cap);
/* A number node as a double; 0 or -1. */
int vendor_json_number(const vendor_json *doc, int node, double *out);
/* True for a string node with at least one character. */
int vendor_json_nonempty_string(const vendor_json *doc, int node);

/* ---- Output buffer (vendor_buffer.c) ------------------------------------------------------- */

typedef struct vendor_buf {
    char *data;
    size_t len, cap;
    int failed; /* out of memory: every later append is a no-op */
} vendor_buf;

void vendor_buf_add(vendor_buf *b, const char *bytes, size_t len);
void vendor_buf_str(vendor_buf *b, const char *text);
/* `text` as a JSON string literal (quotes, escapes). */
void vendor_buf_json_string(vendor_buf *b, const char *text, size_t len);
/* The raw text of `node`, as it arrived. */
void vendor_buf_raw(vendor_buf *b, const vendor_json *doc, int node);
/* `,"NAME":` with the name's bytes as given (already valid inside a JSON string). */
void vendor_buf_member(vendor_buf *b, const char *name, size_t len);
void vendor_buf_free(vendor_buf *b);

/* ---- Vendor limits (vendor_limits.c) ------------------------------------------------------- */

/* What a vendor documents about the properties of one event (0: no limit of that kind). */
typedef struct vendor_limits {
    int max_keys;            /* members of the properties object */
    size_t max_name_bytes;   /* a member's name, as written */
    size_t max_string_bytes; /* a string value (decoded bytes); longer ones are cut */
    int max_depth;           /* objects/arrays within a property's value (1: a flat object) */
    int characters;          /* 1: the two lengths above count characters (code points), not bytes */
} vendor_limits;

/* What vendor_buf_limited left out or cut (each count added to). */
typedef struct vendor_trimmed {
    int keys_dropped;    /* members past max_keys */
    int names_dropped;   /* members whose name is longer than max_name_bytes */
    int strings_cut;     /* strings cut to max_string_bytes */
    int deep_dropped;    /* values nested deeper than max_depth */
} vendor_trimmed;

/* Writes object node `obj` of `doc` to `b` within `limits`: the first max_keys members whose
 * name fits; a value nested deeper than max_depth left out; a longer string cut at a character
 * boundary (an escape is never split). What is within the limits is copied byte for byte, and an
 * object wholly within them in one copy (the usual case costs one walk over its nodes). */
void vendor_buf_limited(vendor_buf *b, const vendor_json *doc, int obj, const vendor_limits *limits, vendor_trimmed *t);
/* The same, one member at a time (for a caller that renames or filters members): 1 when member
 * `node` may go (its name fits, its value is not nested too deep), else 0 with the reason counted;
 * then its value with strings cut. The caller counts members against max_keys. */
int vendor_member_fits(const vendor_json *doc, int node, const vendor_limits *limits, vendor_trimmed *t);
void vendor_buf_value_limited(vendor_buf *b, const vendor_json *doc, int node, const vendor_limits *limits, vendor_trimmed *t);
/* True when vendor_buf_limited left out or cut something. */
int vendor_trimmed_any(const vendor_trimmed *t);
/* "2 properties past 255 left out, 1 string cut to 255 bytes" (what `t` counts), into `buf`. */
void vendor_trimmed_text(const vendor_trimmed *t, const vendor_limits *limits, char *buf, size_t cap);

/* ---- Settings (vendor_settings.c) ---------------------------------------------------------- */

/* Trait-name lists in settings (traitsToSetOnce, peopleProperties, ...): at most this many names,
 * each shorter than VENDOR_TRAIT_NAME_CAP bytes. */
#define VENDOR_MAX_TRAIT_LIST 32
#define VENDOR_TRAIT_NAME_CAP 128

/* One parse of a settings object (node 0 of `doc`); errors go to `err` and name `vendor`. */
typedef struct vendor_settings_reader {
    const vendor_json *doc;
    const char *vendor;
    char *err;
    size_t cap;
} vendor_settings_reader;

/* Each reads the member `name`: absent or null leaves the default (`fallback`, an empty string,
 * an empty list) and returns 0; the wrong type, a number outside [low, high] or not whole, a
 * string that does not fit `buf_cap`, a list too long returns -1 with the reason. */
int vendor_setting_bool(const vendor_settings_reader *r, const char *name, int fallback, int *out);
int vendor_setting_int(const vendor_settings_reader *r, const char *name, int fallback, int low, int high, int *out);
int vendor_setting_string(const vendor_settings_reader *r, const char *name, char *buf, size_t buf_cap);
int vendor_setting_list(const vendor_settings_reader *r, const char *name, char list[][VENDOR_TRAIT_NAME_CAP], int *count);
/* A base URL replacing the vendor's host ("apiHost"): empty when absent; else trailing '/'
 * removed, and it must start with http:// or https://. */
int vendor_setting_base_url(const vendor_settings_reader *r, const char *name, char *buf, size_t buf_cap);
/* True when `key` (`len` bytes, as written in the event) is one of the `n` names of `list`. */
int vendor_listed(const char list[][VENDOR_TRAIT_NAME_CAP], int n, const char *key, size_t len);

/* ---- Time (vendor_time.c) ------------------------------------------------------------------ */

/* Milliseconds since 1970 from an ISO-8601 timestamp ("2024-05-01T12:00:00.123Z", "+02:00");
 * 0 or -1. */
int vendor_parse_time_ms(const char *text, int64_t *ms);

/* ---- Host (vendor_host.c) ------------------------------------------------------------------ */

/* The host's extension table `id` (AH_EXT_...), or NULL when the host has none or it is smaller
 * than `min_size` (the sizeof the library was compiled with). */
const void *vendor_host_table(const ah_host *host, const char *id, size_t min_size);
/* A Retry-After in seconds among the answer's headers goes to the host through `retry` (the
 * AH_EXT_RETRY_AFTER table; NULL: nothing to do). */
void vendor_pass_retry_after(const ah_host *host, const ah_host_retry_after *retry, const ah_http_response *r);
/* 408, 429 and 5xx but 501/505: worth another try. */
int vendor_transient_status(int status);
/* The whole response body as a NUL-terminated copy to free(); NULL when empty or out of memory. */
char *vendor_body_copy(const ah_http_response *r);
/* An integration's get_extension asking for the host's durable queue (AH_EXT_DURABLE, the
 * host's default disk cap): a library whose events wait there until the vendor acknowledged them. */
const void *vendor_durable_extension(const char *id);

/* ---- Requests in line (vendor_requests.c) ------------------------------------------------- */

/* The first member of a library's request struct, so that the line can hold it (and a pointer to
 * the link is a pointer to the request). */
typedef struct vendor_line_link {
    struct vendor_line_link *next;
} vendor_line_link;

/* Every call below is made under the lock of the object holding the line. */
typedef struct vendor_request_line {
    vendor_line_link *head, *tail; /* waiting for a slot, oldest first */
    int in_flight, slots;          /* slots: 1, or 0 for a host that allows none */
} vendor_request_line;

void vendor_line_init(vendor_request_line *line, const ah_host_http_requests *http);
/* 1: `request` may start now (it holds a slot); 0: it waits in line. */
int vendor_line_enter(vendor_request_line *line, vendor_line_link *request);
/* After a request ended (vendor_line_leave): the oldest waiting request, now holding a slot, or
 * NULL when none waits or no slot is free. */
vendor_line_link *vendor_line_next(vendor_request_line *line);
/* A request ended (answered, or not started after all): its slot is free. */
void vendor_line_leave(vendor_request_line *line);
/* The oldest waiting request out of the line without a slot (tearing down), or NULL. */
vendor_line_link *vendor_line_take(vendor_request_line *line);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
