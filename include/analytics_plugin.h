/*
 * analytics_plugin.h: the C ABI between analytics-host and its integration libraries.
 *
 * An integration library is a shared object (.so) that the host opens at start-up. It exports ONE
 * function, `analytics_host_plugin_v1`, and keeps every other symbol hidden. It never links
 * against the host: everything it may ask of the host arrives in the `ah_host` table.
 *
 *   host                                   library
 *   ----                                   -------
 *   dlopen(RTLD_NOW|RTLD_LOCAL|RTLD_NODELETE)
 *   dlsym("analytics_host_plugin_v1")
 *   entry(AH_ABI_VERSION, err)      ---->  returns its static `ah_integration` (or NULL + err)
 *   integration->create(host, settings)->  returns an `ah_instance *` (or NULL + err)
 *   hooks->track(instance, json) ...  ---> AH_OK / AH_ERR_RETRYABLE / AH_ERR_PERMANENT
 *   hooks->destroy(instance)
 *   (the library is never unloaded)
 *
 * Conventions used on every declaration below:
 *   - Text is UTF-8. Inputs arrive as (pointer, length) views that are NOT NUL-terminated unless
 *     stated, are owned by the caller and are valid only for the duration of the call: copy what
 *     you need to keep.
 *   - Outputs go into caller-owned buffers (`err`, `buf`) with their capacity in bytes. A writer
 *     truncates to fit and always NUL-terminates when the capacity is non-zero.
 *   - "[any thread]" means the call may arrive on any thread, including concurrently with itself.
 *     "[serialized]" means the host never makes two such calls on ONE instance at the same time
 *     and orders them (each call happens-before the next), but consecutive calls may come from
 *     different threads. Different instances may be called concurrently.
 *   - Whoever allocates frees. The host never frees plugin memory and vice versa.
 *   - No C++ exception, longjmp or Swift error may cross this boundary.
 *
 * Compatibility rules (the reason every struct starts with `size`):
 *   - The major version is in the entry symbol's name. A new major is a new symbol; a host refuses
 *     a library of another major with a message naming both versions.
 *   - Within a major, structs only grow at the end. Each struct's first field is its size in bytes
 *     as compiled by its writer. A reader never looks at a field that does not lie entirely within
 *     `size` (see AH_HAS_FIELD); a field outside `size` counts as NULL / zero.
 *   - Optional hooks may be NULL: the host then treats the call as a successful no-op.
 *
 * Minor version history (what each 1.x added): docs/c-abi.md in the analytics-host repository.
 */
#ifndef ANALYTICS_PLUGIN_H
#define ANALYTICS_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Nullability, for clang (and therefore for Swift, which imports this header through clang).
 * gcc sees empty macros. AH_NULLABLE: the pointer may be NULL. AH_NONNULL: it never is. Every
 * pointer a library hands to the host is declared nullable, because the host validates it. */
#if defined(__clang__)
#  pragma clang diagnostic push
#  pragma clang diagnostic ignored "-Wnullability-extension"
#  define AH_NULLABLE _Nullable
#  define AH_NONNULL _Nonnull
#else
#  define AH_NULLABLE
#  define AH_NONNULL
#endif

/* Marks the one symbol a library exports, even when it is built with -fvisibility=hidden. */
#if defined(__GNUC__) || defined(__clang__)
#  define AH_EXPORT __attribute__((visibility("default")))
#else
#  define AH_EXPORT
#endif

/* ---------------------------------------------------------------------------------------------
 * Versions
 * ------------------------------------------------------------------------------------------- */

/* The ABI this header describes. A version crosses as one uint32_t: major in the high 16 bits,
 * minor in the low 16 bits. */
#define AH_ABI_MAJOR 1
#define AH_ABI_MINOR 3
#define AH_ABI_VERSION ((AH_ABI_MAJOR << 16) | AH_ABI_MINOR)
#define AH_ABI_VERSION_MAJOR(v) ((uint32_t)(v) >> 16)
#define AH_ABI_VERSION_MINOR(v) ((uint32_t)(v) & 0xFFFFu)

/* The name of the entry function of this major (the generation is part of the name). */
#define AH_ENTRY_SYMBOL "analytics_host_plugin_v1"

/* True when `ptr` (a pointer to a struct of type `type` whose writer stored its size in
 * `ptr->size`) is large enough to contain `field`. Use it before reading any field added after
 * 1.0 in a struct written by the other side. */
#define AH_HAS_FIELD(ptr, type, field) \
    ((size_t)(ptr)->size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* ---------------------------------------------------------------------------------------------
 * Status codes and constants
 * ------------------------------------------------------------------------------------------- */

/* Result of every fallible call. Any value other than these three (and AH_PENDING where a hook
 * may finish later) is treated as AH_ERR_PERMANENT by the host. */
typedef int32_t ah_status;
/* Done. */
#define AH_OK 0
/* Failed for a reason that may go away (network down, rate limited, disk full): the host may
 * call again with the same input later, with backoff. */
#define AH_ERR_RETRYABLE 1
/* Failed for a reason that will not go away (bad input, bad configuration): the host reports it
 * and does not retry. */
#define AH_ERR_PERMANENT 2

/* (1.3) The event hook took a completion token (AH_EXT_FINISH_LATER) and will finish the call
 * later through `complete`. Only a host that offers AH_EXT_FINISH_LATER gives tokens, so only such
 * a host ever sees this value; answering it without having taken a token during the call is a
 * permanent failure. */
#define AH_PENDING 3

/* The smallest `err_cap` the host ever passes (error texts longer than this are truncated). */
#define AH_ERROR_CAPACITY_MIN 256

/* Log levels for ah_host.log. */
#define AH_LOG_DEBUG 0
#define AH_LOG_INFO 1
#define AH_LOG_WARN 2
#define AH_LOG_ERROR 3

/* Kinds of ah_hooks.update: the first settings an instance sees, and any later change. */
#define AH_UPDATE_INITIAL 0
#define AH_UPDATE_REFRESH 1

/* Phases of ah_hooks.lifecycle (1.1). */
#define AH_LIFECYCLE_STARTED 0
#define AH_LIFECYCLE_STOPPING 1

/* Values for ah_integration.language. A NULL language means "c". */
#define AH_LANGUAGE_C "c"
#define AH_LANGUAGE_SWIFT "swift"

/* ---------------------------------------------------------------------------------------------
 * Host services: what a library may ask of the host
 * ------------------------------------------------------------------------------------------- */

/* An instance of an integration. The library defines `struct ah_instance` as it likes; the host
 * only passes the pointer back. Owned by the library from `create` until `destroy` returns. */
typedef struct ah_instance ah_instance;

/* Services the host offers to one instance.
 * Owner: the host. Lifetime: valid from the `create` call that received it until `destroy` on
 * that instance returns, so an instance may keep the pointer. Every function pointer in 1.0 is
 * non-NULL. Every function may be called [any thread], including from inside a hook and from
 * threads the library started, but never after `destroy` returned. (A library that does anyway,
 * from a thread it forgot to stop, finds the table and `ctx` still valid and every call a no-op
 * that answers an error: send_event AH_ERR_PERMANENT, user_id / anonymous_id -1, get_extension
 * NULL; the host logs the first such call. A safety net for bugs, not a feature to rely on.) */
typedef struct ah_host {
    /* sizeof(ah_host) as compiled by the host. Check it (AH_HAS_FIELD) before reading a field
     * added after 1.0. */
    uint32_t size;

    /* The ABI version the host speaks (same value as passed to the entry function). */
    uint32_t abi_version;

    /* Opaque host context: pass it back as the first argument of every function below. Never
     * dereference it. */
    void *AH_NULLABLE ctx;

    /* Writes one log line through the host's logger. `text` is `text_len` bytes, not
     * NUL-terminated, borrowed for the call. `level` is one of AH_LOG_*.
     * [any thread] Cheap; it does not block on I/O for long. */
    void (*AH_NONNULL log)(void *AH_NULLABLE ctx, int32_t level, const char *AH_NULLABLE text,
                           size_t text_len);

    /* Hands a new event (a complete JSON object as text, `json_len` bytes, borrowed for the call)
     * to the host, which runs it through its whole pipeline as if the application had made the
     * call. The host copies the text before returning and processes it later on its own threads,
     * so calling this from inside a hook never re-enters the instance synchronously.
     * Returns AH_OK when accepted: the event then goes to every destination exactly as an
     * application call would (delivered, retried, or counted and reported). Returns
     * AH_ERR_RETRYABLE, having queued it nowhere, when some destination's queue (or the host's
     * queue of events sent back) is full or the host is stopping and can no longer deliver
     * (call again later, or give up; never spin), and
     * AH_ERR_PERMANENT when the text is not a valid event. It never blocks waiting for room.
     * During shutdown the host stops libraries before the destinations they feed (Segment.io
     * last), so events sent from lifecycle(AH_LIFECYCLE_STOPPING) reach every destination and
     * those sent from `destroy` reach the destinations still running (always Segment.io).
     * [any thread] */
    ah_status (*AH_NONNULL send_event)(void *AH_NULLABLE ctx, const char *AH_NULLABLE json,
                                       size_t json_len);

    /* Copies the current userId into `buf` (caller-owned, `buf_cap` bytes), NUL-terminated and
     * truncated to fit. Returns the full length of the id in bytes (excluding the NUL), so a
     * result >= buf_cap means the copy was truncated; returns -1 when no userId is set (then
     * `buf` holds an empty string if buf_cap > 0). `buf` may be NULL when buf_cap is 0.
     * [any thread] */
    int64_t (*AH_NONNULL user_id)(void *AH_NULLABLE ctx, char *AH_NULLABLE buf, size_t buf_cap);

    /* Same contract as `user_id`, for the anonymousId (which the host always has, so -1 only
     * while the host is stopping). [any thread] */
    int64_t (*AH_NONNULL anonymous_id)(void *AH_NULLABLE ctx, char *AH_NULLABLE buf,
                                       size_t buf_cap);

    /* --- 1.2 --- */

    /* Looks up a host capability table by its versioned id (AH_EXT_TIMELINE, AH_EXT_CLIENT,
     * AH_EXT_HTTP, ...; `id` NUL-terminated, borrowed). Returns a table owned by the host, valid
     * for as long as this ah_host is, whose functions take this ah_host's `ctx`; or NULL when the
     * host does not offer that id (an older host, or a capability switched off). Check the
     * table's `size` before reading fields added after its /1 layout.
     * Read this field only when AH_HAS_FIELD(host, ah_host, get_extension).
     * [any thread] Cheap; call it once in `create` and keep the pointer. */
    const void *AH_NULLABLE (*AH_NONNULL get_extension)(void *AH_NULLABLE ctx,
                                                        const char *AH_NONNULL id);

    /* New fields are appended here (and listed in docs/c-abi.md). */
} ah_host;

/* ---------------------------------------------------------------------------------------------
 * Hooks: what the host calls on an instance
 * ------------------------------------------------------------------------------------------- */

/* The per-instance calls, shared by all instances of a library.
 * Owner: the library (normally a `static const` table). Lifetime: until the process exits (the
 * host never unloads a library). Every hook except `destroy` is optional: NULL means "not
 * implemented" and the host treats the call as a successful no-op.
 *
 * Common parameters:
 *   self      the instance returned by `create`.
 *   json      the event: one complete JSON object as compact text (no raw newlines), `json_len`
 *             bytes, NOT NUL-terminated, borrowed for the call only. Its "type" member matches
 *             the hook; "page" events arrive through `screen`.
 *   err       a host-owned buffer of `err_cap` (>= AH_ERROR_CAPACITY_MIN) bytes, holding an empty
 *             string on entry. On failure, write a short NUL-terminated reason into it (truncate
 *             to fit); on success leave it alone. Valid for the call only.
 *   returns   AH_OK, AH_ERR_RETRYABLE (the host retries the same call later, with backoff) or
 *             AH_ERR_PERMANENT (the host reports the failure and moves on).
 *
 * Threads: every hook is [serialized] per instance, and runs on a worker thread dedicated to the
 * instance, so a hook may block (network, disk) without slowing down other integrations. Keep
 * hooks that are called per event cheap anyway: they are on the hot path. */
typedef struct ah_hooks {
    /* sizeof(ah_hooks) as compiled by the library. The host reads only fields within it. */
    uint32_t size;

    /* One event per call, its type known from the hook. [serialized] */
    ah_status (*AH_NULLABLE identify)(ah_instance *AH_NONNULL self, const char *AH_NONNULL json,
                                      size_t json_len, char *AH_NONNULL err, size_t err_cap);
    ah_status (*AH_NULLABLE track)(ah_instance *AH_NONNULL self, const char *AH_NONNULL json,
                                   size_t json_len, char *AH_NONNULL err, size_t err_cap);
    ah_status (*AH_NULLABLE screen)(ah_instance *AH_NONNULL self, const char *AH_NONNULL json,
                                    size_t json_len, char *AH_NONNULL err, size_t err_cap);
    ah_status (*AH_NULLABLE group)(ah_instance *AH_NONNULL self, const char *AH_NONNULL json,
                                   size_t json_len, char *AH_NONNULL err, size_t err_cap);
    ah_status (*AH_NULLABLE alias)(ah_instance *AH_NONNULL self, const char *AH_NONNULL json,
                                   size_t json_len, char *AH_NONNULL err, size_t err_cap);

    /* The user logged out: forget per-user state (userId, traits). [serialized] */
    ah_status (*AH_NULLABLE reset)(ah_instance *AH_NONNULL self, char *AH_NONNULL err,
                                   size_t err_cap);

    /* Deliver everything buffered now and make it durable before returning. Called on the
     * host's flush interval, on an explicit flush and before stopping. [serialized] */
    ah_status (*AH_NULLABLE flush)(ah_instance *AH_NONNULL self, char *AH_NONNULL err,
                                   size_t err_cap);

    /* New settings for this integration: the JSON object stored under its key in the settings'
     * "integrations" (text, `settings_len` bytes, not NUL-terminated, borrowed for the call).
     * `kind` is AH_UPDATE_INITIAL the first time, AH_UPDATE_REFRESH afterwards. [serialized] */
    ah_status (*AH_NULLABLE update)(ah_instance *AH_NONNULL self,
                                    const char *AH_NONNULL settings, size_t settings_len,
                                    int32_t kind, char *AH_NONNULL err, size_t err_cap);

    /* Ends the instance: deliver or drop what is buffered, stop every thread and timer the
     * instance started, release its memory, and return only then. Called exactly once per
     * instance, after every other call on it returned; `self` and the `ah_host` pointer given to
     * `create` are invalid afterwards. Required (non-NULL). [serialized] */
    void (*AH_NULLABLE destroy)(ah_instance *AH_NONNULL self);

    /* --- 1.1 --- */

    /* The host finished starting (AH_LIFECYCLE_STARTED) or begins to stop
     * (AH_LIFECYCLE_STOPPING, followed by `flush` and `destroy`). Optional. [serialized] */
    ah_status (*AH_NULLABLE lifecycle)(ah_instance *AH_NONNULL self, int32_t phase,
                                       char *AH_NONNULL err, size_t err_cap);

    /* New hooks are appended here (and listed in docs/c-abi.md). */
} ah_hooks;

/* ---------------------------------------------------------------------------------------------
 * The integration (factory): what the entry function returns
 * ------------------------------------------------------------------------------------------- */

/* Describes one integration and creates its instances.
 * Owner: the library (normally a `static const` object). Lifetime: until the process exits.
 * The host reads it once after the entry call and copies what it needs. */
typedef struct ah_integration {
    /* sizeof(ah_integration) as compiled by the library. */
    uint32_t size;

    /* AH_ABI_VERSION of the header the library was compiled against. The host refuses another
     * major; a smaller or larger minor is fine (struct sizes tell what exists). */
    uint32_t abi_version;

    /* The integration's stable key, e.g. "File" (NUL-terminated UTF-8, static). The host routes
     * settings and the `integrations` option by it; two loaded libraries may not share a key.
     * Required. */
    const char *AH_NULLABLE key;

    /* The library's own version, e.g. "1.4.2" (NUL-terminated, static). Required. */
    const char *AH_NULLABLE version;

    /* The language the library is written in: NULL or AH_LANGUAGE_C for C (or anything that
     * needs no runtime shared with the host), AH_LANGUAGE_SWIFT for Swift, other names are shown
     * as given. NUL-terminated, static. */
    const char *AH_NULLABLE language;

    /* For Swift libraries: the exact identity of the Swift toolchain that built the library
     * (Swift has no stable ABI on Linux, so the host refuses any other toolchain than its own).
     * Optional for other languages (shown, not checked). NUL-terminated, static. */
    const char *AH_NULLABLE toolchain;

    /* Creates an instance. `host` is valid until `destroy` of the new instance returns.
     * `settings` is this integration's settings object as JSON text (`settings_len` bytes, not
     * NUL-terminated, borrowed for the call; "{}" when there are none). On success returns a new
     * instance owned by the library until `destroy`. On failure returns NULL and writes the
     * reason into `err` (`err_cap` >= AH_ERROR_CAPACITY_MIN bytes, host-owned, empty on entry).
     * A library may have several live instances. Required.
     * [any thread] but never concurrently with another `create` of the same library. */
    ah_instance *AH_NULLABLE (*AH_NULLABLE create)(const ah_host *AH_NONNULL host,
                                                   const char *AH_NONNULL settings,
                                                   size_t settings_len, char *AH_NONNULL err,
                                                   size_t err_cap);

    /* The hooks of every instance of this integration (static). Required. */
    const ah_hooks *AH_NULLABLE hooks;

    /* --- 1.2 --- */

    /* Looks up a capability table the library offers by its versioned id (e.g. AH_EXT_ROLE;
     * `id` NUL-terminated, borrowed). Returns a table owned by the library (normally static),
     * valid until the process exits, or NULL for an id it does not know. Optional (NULL: the
     * library offers nothing beyond the core structs).
     * [any thread] Cheap and free of side effects: the host may call it just to list libraries. */
    const void *AH_NULLABLE (*AH_NULLABLE get_extension)(const char *AH_NONNULL id);

    /* New fields are appended here (and listed in docs/c-abi.md). */
} ah_integration;

/* ---------------------------------------------------------------------------------------------
 * Library capability: its role (ABI 1.2, AH_EXT_ROLE)
 * ------------------------------------------------------------------------------------------- */

/* What the library's instances are and when the host creates them. A library that does not
 * offer this table (or any 1.0/1.1 library) is a destination created when the settings'
 * "integrations" object names its key, which is the default described everywhere above. */
#define AH_EXT_ROLE "analytics-host.role/1"

/* Its instances are destinations: they get per-event hooks through their own worker and
 * timeline, and the settings' "integrations" entry and `integrations` option route to them. */
#define AH_ROLE_DESTINATION 0x1u
/* Created at start-up whatever "integrations" names (unless integrations[key] is exactly false,
 * which switches it off), with the WHOLE settings document as `settings` in `create` and in
 * every `update`, so it can read top-level entries such as "edgeFunction". Without
 * AH_ROLE_DESTINATION the instance is not a destination: it receives no event hooks and adds
 * timeline plugins (AH_EXT_TIMELINE) instead; its reset, flush, update, lifecycle and destroy
 * hooks are called as for any instance, from a host thread dedicated to it (a flush of the
 * client waits for its `flush`). Order at the end: lifecycle(STOPPING), flush, its timeline
 * plugins removed and released, destroy. */
#define AH_ROLE_WHOLE_SETTINGS 0x2u

/* Owner: the library (static). Lifetime: until the process exits. */
typedef struct ah_role {
    /* sizeof(ah_role) as compiled by the library. */
    uint32_t size;
    /* AH_ROLE_* bits. 0 is treated as AH_ROLE_DESTINATION. */
    uint32_t flags;
} ah_role;

/* ---------------------------------------------------------------------------------------------
 * Library capability: application events (AH_EXT_APPLICATION)
 * ------------------------------------------------------------------------------------------- */

/* analytics-ios's application-state and notification callbacks, for libraries that want them.
 * A library offers this table from get_extension(AH_EXT_APPLICATION); one that does not never
 * hears these events (nothing else changes). Any host speaking ABI 1.2 may look it up. */
#define AH_EXT_APPLICATION "analytics-host.application/1"

/* Kinds of application_event, with their meaning on Linux and the members of `json` besides
 * "name" (analytics-ios's name of the callback, e.g. "applicationDidEnterBackground").
 * A library must ignore kinds it does not know (later hosts may add some) and answer AH_OK. */
/* The client finished starting (sent once, at the end of start-up, to the instances that exist
 * then; an instance created later by a settings refresh hears only lifecycle STARTED).
 * "options": {} */
#define AH_APP_DID_FINISH_LAUNCHING 0
/* The process was suspended by job control (SIGTSTP, when the application turned that on) or the
 * application says it went to the background. The host flushes right after it. */
#define AH_APP_DID_ENTER_BACKGROUND 1
/* Resumed (SIGCONT) or the application says it came back. */
#define AH_APP_WILL_ENTER_FOREGROUND 2
/* The client begins to shut down: sent before lifecycle(AH_LIFECYCLE_STOPPING), while every
 * destination still runs. */
#define AH_APP_WILL_TERMINATE 3
/* Sent before DID_ENTER_BACKGROUND on SIGTSTP, or when the application says so. */
#define AH_APP_WILL_RESIGN_ACTIVE 4
/* Sent after WILL_ENTER_FOREGROUND on SIGCONT, or when the application says so. */
#define AH_APP_DID_BECOME_ACTIVE 5
/* Only from an application with its own push channel (Linux has no platform push service).
 * "deviceToken": "<text>" */
#define AH_APP_REGISTERED_FOR_REMOTE_NOTIFICATIONS 6
/* As above. "error": "<text>" */
#define AH_APP_FAILED_TO_REGISTER_FOR_REMOTE_NOTIFICATIONS 7
/* As above. "userInfo": {…} (the notification's payload) */
#define AH_APP_RECEIVED_REMOTE_NOTIFICATION 8
/* The application was opened with a URL (Analytics.openURL, which also tracks "Deep Link
 * Opened"). "url": "<text>", "options": {…} */
#define AH_APP_OPEN_URL 9

/* Owner: the library (static). Lifetime: until the process exits. */
typedef struct ah_application {
    /* sizeof(ah_application) as compiled by the library. */
    uint32_t size;
    /* One application event: `kind` is an AH_APP_* value; `json` is a complete JSON object
     * ({"name": ..., plus the kind's members above}), `json_len` bytes, NOT NUL-terminated,
     * borrowed for the call. Return AH_OK; a failure (reason in `err`, host-owned, `err_cap` >=
     * AH_ERROR_CAPACITY_MIN bytes) is reported with the library's key and NOT retried (the
     * moment has passed). Optional (NULL: the table offers nothing).
     * [serialized] with every other hook of the instance, on the same thread they use (a
     * destination's worker, or the thread of an instance that is not a destination), after the
     * events the application sent before it and after lifecycle(AH_LIFECYCLE_STARTED). Keep it
     * short: DID_ENTER_BACKGROUND delays the process's stop until the flush that follows it. */
    ah_status (*AH_NULLABLE application_event)(ah_instance *AH_NONNULL self, int32_t kind,
                                               const char *AH_NONNULL json, size_t json_len,
                                               char *AH_NONNULL err, size_t err_cap);
} ah_application;

/* ---------------------------------------------------------------------------------------------
 * Library capability: many events per call (ABI 1.3, AH_EXT_BATCH)
 * ------------------------------------------------------------------------------------------- */

/* A destination that prefers whole runs of events to one call per event offers this table. The
 * host then hands it the events that are ready, in order and of any type, in calls of at most
 * `max_events`, instead of calling identify/track/screen/group/alias (those hooks may then be
 * NULL). Other hooks (update, reset, flush, lifecycle, ...) still arrive between runs, in order:
 * the host never holds events back across them. In process mode a run is (part of) one of the
 * runner's batches. */
#define AH_EXT_BATCH "analytics-host.batch/1"

/* One borrowed event: a complete JSON object (compact, no raw newlines), `json_len` bytes, NOT
 * NUL-terminated. Its "type" member says what it is ("track", "identify", "screen", "page",
 * "group", "alias"). Owner: the host; valid for the `events` call only. */
typedef struct ah_event_ref {
    const char *AH_NONNULL json;
    size_t json_len;
} ah_event_ref;

/* Owner: the library (static). Lifetime: until the process exits. */
typedef struct ah_batch {
    /* sizeof(ah_batch) as compiled by the library. */
    uint32_t size;
    /* Most events the library wants per call (0: the host's choice, at most 1000). */
    uint32_t max_events;
    /* `count` (>= 1) events in order. `statuses` is a host-owned array of `count` entries, each
     * AH_OK on entry: set an entry to AH_ERR_RETRYABLE or AH_ERR_PERMANENT for an event that
     * failed (the reason, shared by the failures of the call, goes into `err`) and return AH_OK.
     * Any other return value is the answer for every event of the call (statuses are then not
     * read). The host retries the retryable events (again in order, with backoff) and reports
     * and counts the others, as for the single-event hooks. A batch call does not finish later
     * (AH_PENDING is read as AH_ERR_PERMANENT here).
     * [serialized] with every other hook of the instance, on the same thread. */
    ah_status (*AH_NULLABLE events)(ah_instance *AH_NONNULL self, const ah_event_ref *AH_NONNULL events,
                                    size_t count, ah_status *AH_NONNULL statuses, char *AH_NONNULL err,
                                    size_t err_cap);
} ah_batch;

/* ---------------------------------------------------------------------------------------------
 * Library capability: events kept on disk until finished (ABI 1.3, AH_EXT_DURABLE)
 * ------------------------------------------------------------------------------------------- */

/* A destination that must not lose what the host accepted for it (it batches events in memory
 * and uploads them later) offers this table. The host then keeps every event accepted for the
 * instance in a durable queue of its own on disk (<storage>/destinations/<key>/, the same queue
 * format the Segment.io upload uses: segment files, an acknowledged position, a disk cap past
 * which the oldest events are dropped and reported), and:
 *   - accepting an event for the destination means writing it there (it survives SIGKILL);
 *   - the worker hands the library the events from that queue, in order, through the usual
 *     hooks (one event per call, AH_EXT_BATCH runs, AH_EXT_FINISH_LATER pending answers);
 *   - an event leaves the queue only when its call answered AH_OK (returned, or completed later)
 *     or failed for good (AH_ERR_PERMANENT, retries used up, a pending call past the hook
 *     timeout): those are counted and reported as for any destination;
 *   - what was handed over and not finished when the process ended (killed, or destroyed with
 *     calls still pending) is handed over again, in order, by the next host on the same storage,
 *     after that instance's initial `update`. The library sees such an event twice only if it
 *     had taken it before: use the event's messageId as the vendor's de-duplication id.
 * The operator's settings can ask the same of any destination ("durable": true in its settings
 * object) or switch it off ("durable": false). Works alike in process mode (--isolate).
 * Any 1.3 host reads it; an older host ignores it (events then live in memory, as before). */
#define AH_EXT_DURABLE "analytics-host.durable/1"

/* Owner: the library (static). Lifetime: until the process exits. Read once at load time. */
typedef struct ah_durable {
    /* sizeof(ah_durable) as compiled by the library. */
    uint32_t size;
    /* Reserved: 0. */
    uint32_t flags;
    /* Disk cap of the instance's queue in bytes; 0: the host's default (64 MiB); more than
     * 1 TiB is 1 TiB. Past it the oldest events are dropped, counted and reported. */
    uint64_t max_disk_bytes;
} ah_durable;

/* ---------------------------------------------------------------------------------------------
 * Library capability: the settings it reads (ABI 1.3, AH_EXT_SETTINGS_SCHEMA)
 * ------------------------------------------------------------------------------------------- */

/* A library that declares the settings it reads from its settings object (the object under
 * integrations[key]; for a whole-settings library, that same object, not the whole document)
 * offers this table. The host then:
 *   - lists them (`analytics-host plugins`, like the properties gst-inspect shows);
 *   - checks the settings against them (`analytics-host check-settings --plugins DIR`, and before
 *     it calls `create`, in-process or in process mode): a declared setting of another type, or a required one missing
 *     or null, is an error and the instance is NOT created (the key and the reason are reported,
 *     and `run` lists them under its problems); a key the table does not declare is a warning
 *     naming the nearest declared key ("did you mean"), and `create` is called as usual.
 * The host's own keys of a destination ("durable", "isolation") are known to the host: do not
 * declare them. A library without the table is created without checks, as before.
 * Any 1.3 host may look it up; an older host ignores it. Works alike in process mode (the scan
 * carries the table to the host). */
#define AH_EXT_SETTINGS_SCHEMA "analytics-host.settings-schema/1"

/* The JSON types of a setting (bits: a setting may accept several, e.g. a string or an array).
 * JSON null always counts as "absent". */
#define AH_SETTING_STRING 0x1u
#define AH_SETTING_NUMBER 0x2u
#define AH_SETTING_BOOLEAN 0x4u
#define AH_SETTING_OBJECT 0x8u
#define AH_SETTING_ARRAY 0x10u

/* One setting. Owner: the library (static, like the strings it points to). Lifetime: until the
 * process exits. */
typedef struct ah_setting {
    /* The key, NUL-terminated UTF-8, non-empty; unique within the table. */
    const char *AH_NULLABLE name;
    /* AH_SETTING_* bits, at least one. */
    uint32_t types;
    /* 1: the instance cannot be created without it; 0: optional. */
    uint32_t required;
    /* What applies when it is absent, as JSON text (NUL-terminated: "20", "\"us\"", "true"), or
     * NULL when nothing does (a required setting, or one whose absence switches a feature off). */
    const char *AH_NULLABLE default_json;
    /* One line saying what it does (NUL-terminated, no newline), shown by `plugins`. */
    const char *AH_NULLABLE description;
} ah_setting;

/* Owner: the library (static). Lifetime: until the process exits. Read once at load time, from
 * any thread, so it must not change. A malformed table (count over 1024, an entry with a NULL or
 * empty name, a duplicate name, no known type bit, a default that is not JSON of a declared type)
 * gets the library refused with the reason, as any malformed struct. */
typedef struct ah_settings_schema {
    /* sizeof(ah_settings_schema) as compiled by the library. */
    uint32_t size;
    /* sizeof(ah_setting) as compiled by the library: the stride of `settings` (entries may grow
     * at the end in later generations; the host reads what lies within this size). */
    uint32_t setting_size;
    /* Number of entries of `settings` (0: it reads no settings, so every key is unknown). */
    uint32_t count;
    /* Reserved: 0. */
    uint32_t flags;
    /* `count` entries, `setting_size` bytes apart. */
    const ah_setting *AH_NULLABLE settings;
} ah_settings_schema;

/* ---------------------------------------------------------------------------------------------
 * Host capability: timeline plugins (ABI 1.2, AH_EXT_TIMELINE)
 * ------------------------------------------------------------------------------------------- */

/* Lets any instance add plugins to the client's timeline (before / enrichment / after /
 * utility) or to one destination's own timeline, at any time, and remove them again. */
#define AH_EXT_TIMELINE "analytics-host.timeline/1"

/* Stages, as in analytics-swift's timeline. */
#define AH_PLUGIN_BEFORE 0
#define AH_PLUGIN_ENRICHMENT 1
#define AH_PLUGIN_AFTER 2
/* Sees settings, reset and flush, never events. */
#define AH_PLUGIN_UTILITY 3

/* ah_timeline_plugin.flags */
/* `process` may run on several threads at once (otherwise the host serializes its calls).
 * `update`, `reset` and `flush` still never overlap any other callback of the plugin. */
#define AH_PLUGIN_THREAD_SAFE 0x1u
/* A failed `process` drops the event (otherwise the event goes on unchanged). */
#define AH_PLUGIN_FAIL_CLOSED 0x2u

/* What `process` answers for one event. */
/* The event goes on unchanged (the host makes no copy). */
#define AH_EVENT_KEEP 0
/* The event ends here, for the rest of this timeline. */
#define AH_EVENT_DROP 1
/* The event goes on as the JSON text last written through `out`. */
#define AH_EVENT_REPLACE 2
/* The plugin failed (reason in `err`): the host reports it with the plugin's name, counts it,
 * and the event goes on unchanged, or is dropped under AH_PLUGIN_FAIL_CLOSED. Any value other
 * than the three above means the same. */
#define AH_EVENT_ERROR (-1)

/* Where a replacement event goes. Owner: the host. Lifetime: the `process` call that received
 * it; never keep the pointer. */
typedef struct ah_event_output {
    /* Opaque; pass it back to `write`. */
    void *AH_NULLABLE ctx;
    /* Sets the replacement: one complete JSON object as text, `json_len` bytes, borrowed for
     * this call only (the host parses and copies it before returning). A later write replaces an
     * earlier one. Returns AH_OK, or AH_ERR_PERMANENT when the text is not a JSON object, not a
     * valid event (unknown "type", a track without "event", ...) or exceeds the event size limit
     * (32 KiB); a REPLACE answer after a refused write is then reported with the reason and
     * counted as a failure (the event goes on unchanged, or is dropped under
     * AH_PLUGIN_FAIL_CLOSED). The text is read against the event `process` was given: members
     * written as they came are the event's own values, a number whose value did not change keeps
     * the event's spelling ("1.50" stays "1.50" when 1.5 is written back), and a replacement
     * equal to the event goes on as a KEEP would.
     * [serialized] with the `process` call it belongs to: call it from that call only. */
    ah_status (*AH_NONNULL write)(void *AH_NULLABLE ctx, const char *AH_NULLABLE json,
                                  size_t json_len);
} ah_event_output;

/* Describes a plugin to add. Owner: the caller of `add`; the host copies the struct and its
 * strings before `add` returns, so it may live on the stack. The callbacks and `ctx` must stay
 * valid until `release` is called (or, without `release`, until the instance's `destroy`).
 * `ctx` must be ready before `add` is called: `update` may run before `add` returns. */
typedef struct ah_timeline_plugin {
    /* sizeof(ah_timeline_plugin) as compiled by the library. */
    uint32_t size;
    /* AH_PLUGIN_BEFORE / _ENRICHMENT / _AFTER / _UTILITY. */
    int32_t type;
    /* AH_PLUGIN_THREAD_SAFE | AH_PLUGIN_FAIL_CLOSED, or 0. */
    uint32_t flags;
    /* Shown in reports, counts and `analytics-host plugins` (NUL-terminated; NULL: the
     * library's key). */
    const char *AH_NULLABLE name;
    /* NULL: the client's timeline. A destination key (NUL-terminated): that destination's own
     * timeline, where the plugin runs after the destination's middleware and destination
     * filters (which the host puts first in its before stage), in the order plugins were added
     * to its stage. A key with no destination yet is kept and attached when one is created;
     * when the settings remove that destination and create it again, the plugin follows the key
     * (leaving a destination does not release it). */
    const char *AH_NULLABLE destination;
    /* The library's context, passed back to every callback below. */
    void *AH_NULLABLE ctx;

    /* One event: `json` is a complete JSON object, `json_len` bytes, NOT NUL-terminated,
     * borrowed for the call. Answer AH_EVENT_KEEP, _DROP or _REPLACE (after writing the new
     * event through `out`), or AH_EVENT_ERROR with a reason in `err` (host-owned, `err_cap` >=
     * AH_ERROR_CAPACITY_MIN bytes, empty on entry). Required unless the type is UTILITY.
     * Threads: client-timeline plugins run on the thread that made the call (track() and
     * friends, any thread); destination-scoped ones on that destination's worker. Calls are
     * [serialized] per plugin unless AH_PLUGIN_THREAD_SAFE. Keep it fast: it is on the hot path. */
    int32_t (*AH_NULLABLE process)(void *AH_NULLABLE ctx, const char *AH_NONNULL json,
                                   size_t json_len, const ah_event_output *AH_NONNULL out,
                                   char *AH_NONNULL err, size_t err_cap);
    /* The whole settings document (text, borrowed for the call) on start (AH_UPDATE_INITIAL)
     * and on every refresh (AH_UPDATE_REFRESH). When the timeline already has settings, the
     * INITIAL call comes from inside `add`; a destination-scoped plugin gets an INITIAL call
     * each time it joins a (new) destination's timeline. Optional. [serialized] with `process`. */
    void (*AH_NULLABLE update)(void *AH_NULLABLE ctx, const char *AH_NONNULL settings,
                               size_t settings_len, int32_t kind);
    /* The user was reset / a flush was asked for. Optional. [serialized] with `process`. */
    void (*AH_NULLABLE reset)(void *AH_NULLABLE ctx);
    void (*AH_NULLABLE flush)(void *AH_NULLABLE ctx);
    /* Called exactly once after the plugin left the timeline (`remove`, the instance's
     * destruction, or shutdown) and no other callback of it is running or will run: the library
     * may free `ctx` now. Optional. Any thread. */
    void (*AH_NULLABLE release)(void *AH_NULLABLE ctx);
} ah_timeline_plugin;

/* Owner: the host. Lifetime: as the ah_host it came from. */
typedef struct ah_host_timeline {
    /* sizeof(ah_host_timeline) as compiled by the host. */
    uint32_t size;
    /* Adds a plugin; on success writes its id (never 0) to `*out_id` and returns AH_OK. Returns
     * AH_ERR_PERMANENT with a reason in `err` (caller-owned, `err_cap` bytes) for a description
     * the host cannot use (`size` smaller than the /1 layout, unknown type or flag, NULL
     * `process` for an event stage, empty name, ...), and AH_ERR_RETRYABLE while the host is
     * stopping or the instance is being destroyed. Plugins an instance added are removed, and
     * released, before its `destroy` is called; a `create` that fails should remove those it
     * added (the host removes any left, calling their `release`, before it reports the failure). [any thread], including from `create`, any hook and any plugin
     * callback. */
    ah_status (*AH_NONNULL add)(void *AH_NULLABLE ctx, const ah_timeline_plugin *AH_NONNULL plugin,
                                uint64_t *AH_NONNULL out_id, char *AH_NULLABLE err, size_t err_cap);
    /* Removes a plugin this instance added: no call starts after `remove` returns; `release`
     * follows once a call in progress (if any) has ended, possibly on another thread.
     * Returns AH_ERR_PERMANENT for an unknown id. [any thread], including from the plugin's own
     * callbacks. */
    ah_status (*AH_NONNULL remove)(void *AH_NULLABLE ctx, uint64_t id);
} ah_host_timeline;

/* ---------------------------------------------------------------------------------------------
 * Host capability: the client (ABI 1.2, AH_EXT_CLIENT)
 * ------------------------------------------------------------------------------------------- */

/* The rest of what an application can do with its client (events themselves go through
 * ah_host.send_event; an identify or alias sent that way changes the user as the call would). */
#define AH_EXT_CLIENT "analytics-host.client/1"

/* Owner: the host. Lifetime: as the ah_host it came from. Every function is [any thread]. */
typedef struct ah_host_client {
    /* sizeof(ah_host_client) as compiled by the host. */
    uint32_t size;
    /* Copies the user's traits as JSON object text into `buf` (caller-owned, `buf_cap` bytes),
     * with the same truncation and return contract as ah_host.user_id ("{}" when none). */
    int64_t (*AH_NONNULL traits)(void *AH_NULLABLE ctx, char *AH_NULLABLE buf, size_t buf_cap);
    /* Resets the user (userId and traits cleared, a new anonymousId) before returning, so the
     * next event carries the new identity; the plugins' reset hooks run later on host threads,
     * never inside this call. Source middleware may stop it, as it may stop the application's
     * reset (then nothing changes and AH_OK is still returned). */
    ah_status (*AH_NONNULL reset)(void *AH_NULLABLE ctx);
    /* Asks every destination to flush; returns at once without waiting for delivery. */
    ah_status (*AH_NONNULL flush)(void *AH_NULLABLE ctx);
    /* Copies the path of a directory private to this library's key (created by the host as
     * <storage directory>/plugins/<key>, a "/" in the key read as "_"; survives restarts), same
     * contract as ah_host.user_id (-1 when it cannot be created; the host reports why). */
    int64_t (*AH_NONNULL storage_directory)(void *AH_NULLABLE ctx, char *AH_NULLABLE buf,
                                            size_t buf_cap);
    /* Copies the options the application gave this library's key (a JSON object as text, "{}"
     * when none; e.g. `analytics-host run --live-plugins FILE` gives LivePlugins
     * {"fallbackBundle": FILE}), same contract as ah_host.user_id. */
    int64_t (*AH_NONNULL options)(void *AH_NULLABLE ctx, char *AH_NULLABLE buf, size_t buf_cap);
} ah_host_client;

/* ---------------------------------------------------------------------------------------------
 * Host capability: second clients (ABI 1.2, AH_EXT_CLIENTS)
 * ------------------------------------------------------------------------------------------- */

/* A second client for another write key, as analytics-swift-live's `new Analytics(writeKey)`
 * makes one: its events go to Segment.io under that key (the upload host and retry policy are
 * the host's own), through its own durable queue, with its own user (userId, traits,
 * anonymousId). It shares nothing else with the host's client: no destinations but Segment.io,
 * no middleware, no libraries, no timeline plugins, no application lifecycle events. The host
 * flushes and stops every second client when it stops, after the libraries stopped, so events
 * sent from lifecycle(AH_LIFECYCLE_STOPPING) or `destroy` still go out.
 * Owner: the host. Lifetime: as the ah_host it came from. A client id stays valid until the
 * host stops (there is no close: the host keeps one client per write key, shared by every
 * library that opens that key). No function calls into any library, so each may be called
 * with a library lock held. Every function is [any thread]. */
#define AH_EXT_CLIENTS "analytics-host.clients/1"

typedef struct ah_host_clients {
    /* sizeof(ah_host_clients) as compiled by the host. */
    uint32_t size;
    /* Opens the client for `write_key` (`key_len` bytes, borrowed), or finds the one already
     * open for that key, and writes its id (never 0) to `*out_id`. The host's own write key is
     * refused (use ah_host and AH_EXT_CLIENT for the host's client). Returns AH_OK;
     * AH_ERR_PERMANENT with the reason in `err` (caller-owned, `err_cap` bytes) for an empty or
     * over-long key or when the host allows no more clients; AH_ERR_RETRYABLE while the host
     * is stopping or the client's storage cannot be opened. May take milliseconds (it opens
     * the client's queue on disk) but never waits on the network. */
    ah_status (*AH_NONNULL open)(void *AH_NULLABLE ctx, const char *AH_NULLABLE write_key, size_t key_len,
                                 uint64_t *AH_NONNULL out_id, char *AH_NULLABLE err, size_t err_cap);
    /* As ah_host.send_event, into client `id`'s pipeline (AH_ERR_PERMANENT for an unknown id). */
    ah_status (*AH_NONNULL send_event)(void *AH_NULLABLE ctx, uint64_t id, const char *AH_NULLABLE json,
                                       size_t json_len);
    /* As ah_host.user_id / anonymous_id and AH_EXT_CLIENT's traits, for client `id` (-1 for an
     * unknown id). */
    int64_t (*AH_NONNULL user_id)(void *AH_NULLABLE ctx, uint64_t id, char *AH_NULLABLE buf, size_t buf_cap);
    int64_t (*AH_NONNULL anonymous_id)(void *AH_NULLABLE ctx, uint64_t id, char *AH_NULLABLE buf, size_t buf_cap);
    int64_t (*AH_NONNULL traits)(void *AH_NULLABLE ctx, uint64_t id, char *AH_NULLABLE buf, size_t buf_cap);
    /* As AH_EXT_CLIENT's reset and flush, for client `id`. */
    ah_status (*AH_NONNULL reset)(void *AH_NULLABLE ctx, uint64_t id);
    ah_status (*AH_NONNULL flush)(void *AH_NULLABLE ctx, uint64_t id);
} ah_host_clients;

/* ---------------------------------------------------------------------------------------------
 * Host capability: HTTP downloads (ABI 1.2, AH_EXT_HTTP)
 * ------------------------------------------------------------------------------------------- */

/* The host's HTTP client (https included), so a library needs no TLS stack of its own. */
#define AH_EXT_HTTP "analytics-host.http/1"

/* Receives bytes. Owner: the library that passes it; borrowed by the host for one call. */
typedef struct ah_byte_sink {
    void *AH_NULLABLE ctx;
    /* Takes `len` bytes (borrowed for the call). Return AH_OK to go on; anything else stops the
     * transfer, which then fails with AH_ERR_PERMANENT. */
    ah_status (*AH_NONNULL write)(void *AH_NULLABLE ctx, const char *AH_NONNULL bytes, size_t len);
} ah_byte_sink;

/* Owner: the host. Lifetime: as the ah_host it came from. */
typedef struct ah_host_http {
    /* sizeof(ah_host_http) as compiled by the host. */
    uint32_t size;
    /* GETs `url` (`url_len` bytes, borrowed), following redirects (never away from https, and
     * to plain http only from and to this machine: 127.0.0.0/8, [::1], localhost), within
     * `timeout_ms`. The body goes to `sink` on this thread before the call returns. Returns AH_OK
     * when the server answered (any status; `*status_code` is set, e.g. 200 or 404),
     * AH_ERR_RETRYABLE on a network error or timeout, AH_ERR_PERMANENT for a malformed URL, a
     * refused redirect or a sink that stopped; the reason goes to `err` (caller-owned, `err_cap`
     * bytes). `timeout_ms` 0 means the host's default (15 s); the host's HTTP client counts whole
     * seconds (rounded up). The body is handed to `sink` as it arrives, in pieces of at most
     * 64 KiB; a sink that refuses a piece stops the transfer at once (so a size cap in the sink
     * holds while the bytes come in). Blocking: never call it from a per-event callback.
     * [any thread] */
    ah_status (*AH_NONNULL get)(void *AH_NULLABLE ctx, const char *AH_NONNULL url, size_t url_len,
                                uint32_t timeout_ms, const ah_byte_sink *AH_NONNULL sink,
                                int32_t *AH_NONNULL status_code, char *AH_NULLABLE err,
                                size_t err_cap);
} ah_host_http;

/* ---------------------------------------------------------------------------------------------
 * Host capability: HTTP requests that finish later (ABI 1.3, AH_EXT_HTTP_REQUESTS)
 * ------------------------------------------------------------------------------------------- */

/* Uploads through the host's HTTP client (https, the host's proxy settings and timeouts), so a
 * library that batches and uploads carries no HTTP or TLS stack of its own. Unlike the blocking
 * AH_EXT_HTTP GET, a request here is started and returns at once; its answer arrives later, once,
 * through a callback on a host thread. In process mode the runner forwards the request to the
 * host, which makes it: the library cannot tell the difference. */
#define AH_EXT_HTTP_REQUESTS "analytics-host.http/2"

/* ah_http_request.flags */
/* The host gzips the body and adds `Content-Encoding: gzip` (do not set that header yourself). */
#define AH_HTTP_GZIP 0x1u

/* One header: name and value as (pointer, length) views. Owner: whoever made the struct that
 * points to it; lifetime: as that struct's. */
typedef struct ah_http_header {
    const char *AH_NULLABLE name;
    size_t name_len;
    const char *AH_NULLABLE value;
    size_t value_len;
} ah_http_header;

/* A request to start. Owner: the library; borrowed for the `start` call only: the host copies
 * the method, URL, headers and body before `start` returns, so all of it may live on the stack. */
typedef struct ah_http_request {
    /* sizeof(ah_http_request) as compiled by the library. */
    uint32_t size;
    /* AH_HTTP_GZIP or 0. */
    uint32_t flags;
    /* "POST", "PUT", "GET", ... (NULL or empty: "POST"). */
    const char *AH_NULLABLE method;
    size_t method_len;
    /* An http or https URL. */
    const char *AH_NULLABLE url;
    size_t url_len;
    /* `header_count` request headers (e.g. Content-Type, Authorization); NULL when none. */
    const ah_http_header *AH_NULLABLE headers;
    size_t header_count;
    /* The body, `body_len` bytes (NULL when none). */
    const char *AH_NULLABLE body;
    size_t body_len;
    /* The whole exchange must end within this (0: the host's default, 15 s; the host's client
     * counts whole seconds, rounded up). */
    uint32_t timeout_ms;
} ah_http_request;

/* The answer to one request. Owner: the host; borrowed for the `done` call only (copy what you
 * keep, e.g. the Retry-After value). */
typedef struct ah_http_response {
    /* sizeof(ah_http_response) as compiled by the host. */
    uint32_t size;
    /* AH_OK: the server answered (any status, e.g. 200, 429 or 503). AH_ERR_RETRYABLE: no
     * answer (network error, timeout, or the request was cancelled because the instance is
     * ending); `error` says which. AH_ERR_PERMANENT: the host could not send it at all. */
    ah_status outcome;
    /* The HTTP status, or 0 without an answer. */
    int32_t status_code;
    /* The response headers, names in lower case (e.g. "retry-after"); NULL when none. */
    const ah_http_header *AH_NULLABLE headers;
    size_t header_count;
    /* The response body (already decompressed), `body_len` bytes. */
    const char *AH_NULLABLE body;
    size_t body_len;
    /* Why there is no answer (empty with AH_OK), `error_len` bytes, not NUL-terminated. */
    const char *AH_NULLABLE error;
    size_t error_len;
} ah_http_response;

/* Receives the answer to one request: called exactly once per request that `start` accepted, on
 * a host thread (never from inside `start`, never concurrently with itself for one request;
 * different requests may complete concurrently), at the latest before the instance's `destroy`
 * is called: requests still running then complete with AH_ERR_RETRYABLE "cancelled" first, and
 * `destroy` comes only after every `done` has returned (so it may free what `done` uses).
 * `user` is the value given to `start`. It may start another request. */
typedef void (*ah_http_done_fn)(void *AH_NULLABLE user, uint64_t request_id,
                                const ah_http_response *AH_NONNULL response);

/* Owner: the host. Lifetime: as the ah_host it came from. Every function is [any thread]. */
typedef struct ah_host_http_requests {
    /* sizeof(ah_host_http_requests) as compiled by the host. */
    uint32_t size;
    /* How many requests one instance may have running at once (the bound `start` enforces). */
    uint32_t max_in_flight;
    /* Starts `request` and returns at once. AH_OK: started; its id (never 0) is in `*out_id`
     * (may be NULL) and `done` will be called exactly once. AH_ERR_RETRYABLE: not started,
     * because `max_in_flight` requests of this instance are running (start it again from a
     * `done`) or the host is stopping. AH_ERR_PERMANENT: not started, the request is malformed
     * (not an http(s) URL, `size` too small, ...). Without AH_OK the reason is in `err`
     * (caller-owned, `err_cap` bytes) and `done` is never called. */
    ah_status (*AH_NONNULL start)(void *AH_NULLABLE ctx, const ah_http_request *AH_NONNULL request,
                                  ah_http_done_fn AH_NONNULL done, void *AH_NULLABLE user,
                                  uint64_t *AH_NULLABLE out_id, char *AH_NULLABLE err, size_t err_cap);
} ah_host_http_requests;

/* ---------------------------------------------------------------------------------------------
 * Host capability: finishing an event later (ABI 1.3, AH_EXT_FINISH_LATER)
 * ------------------------------------------------------------------------------------------- */

/* Lets an event hook (identify, track, screen, group, alias) answer "pending" and give its real
 * answer later, from any thread, e.g. once the vendor acknowledged the upload that held the
 * event. The host goes on calling the next hooks meanwhile, so a library can gather many events
 * into one upload without answering AH_OK for events it still only holds in memory.
 *
 * The protocol, for one call:
 *   inside the hook:  token = fl->token(ctx); keep it with the event; return AH_PENDING;
 *   later, any thread: fl->complete(ctx, token, AH_OK or AH_ERR_*, reason, reason_len);
 * The host then treats the answer exactly as if the hook had returned it: AH_OK is delivered,
 * AH_ERR_RETRYABLE is called again later (the same event, with backoff, retried events in the
 * order they first arrived), AH_ERR_PERMANENT is reported and counted.
 *
 * Bounds: at most `max_pending` calls of one instance are pending; the host waits for a
 * completion before it calls the next event hook (its queue fills meanwhile, as behind a slow
 * hook). A call pending for longer than the host's hook timeout, with no completion of any call
 * of the instance for as long, is abandoned, counted and reported as a hung hook would be (a
 * library working through many held calls, completing some, is not hung); when its event is on
 * a durable queue (AH_EXT_DURABLE) it is instead treated as AH_ERR_RETRYABLE (called again), and
 * once its attempts are spent it stays on the queue for the next run. A flush waits (within that timeout) for every pending call
 * of the instance; before `destroy` the host waits for them likewise, then abandons the rest. */
#define AH_EXT_FINISH_LATER "analytics-host.finish-later/1"

/* Owner: the host. Lifetime: as the ah_host it came from. */
typedef struct ah_host_finish_later {
    /* sizeof(ah_host_finish_later) as compiled by the host. */
    uint32_t size;
    /* How many calls of one instance may be pending at once. */
    uint32_t max_pending;
    /* The completion token of the event hook in progress (never 0; the same value if asked twice
     * in one call), or 0 when no event hook of this instance is running on the calling thread's
     * behalf. A token taken by a hook that then returns anything but AH_PENDING is void.
     * [serialized] Call it only from inside an event hook. */
    uint64_t (*AH_NONNULL token)(void *AH_NULLABLE ctx);
    /* Gives the answer of the pending call `token`: `status` AH_OK, AH_ERR_RETRYABLE or
     * AH_ERR_PERMANENT, with `reason` (`reason_len` bytes, borrowed for the call; may be NULL
     * with AH_OK). Exactly once per token. Returns AH_OK when taken; AH_ERR_PERMANENT, doing
     * nothing but a report (logged with the library's key), for a token that is unknown, void,
     * already completed, abandoned after the timeout, or whose instance was destroyed.
     * [any thread], including from inside the hook that took the token, and from a `done` of
     * AH_EXT_HTTP_REQUESTS. Never blocks on the instance's hooks. */
    ah_status (*AH_NONNULL complete)(void *AH_NULLABLE ctx, uint64_t token, ah_status status,
                                     const char *AH_NULLABLE reason, size_t reason_len);
} ah_host_finish_later;

/* ---------------------------------------------------------------------------------------------
 * Host capability: when to try again (ABI 1.3, AH_EXT_RETRY_AFTER)
 * ------------------------------------------------------------------------------------------- */

/* A vendor that throttles says how long to wait (HTTP 429 or 503 with Retry-After). A library
 * that is about to answer AH_ERR_RETRYABLE (returned from an event hook, or given through
 * AH_EXT_FINISH_LATER's `complete`) tells the host first; the host's next retry of this
 * instance's calls then waits at least that long (never less than its own backoff; at most its
 * bound on one wait, 30 s by default: past that the call is retried at the bound and the library
 * says again). Retry-After is about the service, not one event, so the wait is the instance's.
 * In process mode the runner, which retries for its library, honours it the same way.
 * A host without this table answers NULL: the library then waits nothing (the host backs off). */
#define AH_EXT_RETRY_AFTER "analytics-host.retry-after/1"

/* Owner: the host. Lifetime: as the ah_host it came from. */
typedef struct ah_host_retry_after {
    /* sizeof(ah_host_retry_after) as compiled by the host. */
    uint32_t size;
    /* The instance's next retry waits at least `delay_ms` from now (a later, longer delay wins
     * over a shorter one given meanwhile; the wait is used by one retry, then forgotten).
     * Returns AH_OK; AH_ERR_PERMANENT once the instance has ended. [any thread], including a
     * `done` of AH_EXT_HTTP_REQUESTS and inside a hook. Never blocks. */
    ah_status (*AH_NONNULL retry_after)(void *AH_NULLABLE ctx, uint32_t delay_ms);
} ah_host_retry_after;

/* ---------------------------------------------------------------------------------------------
 * Host capability: who the host is and what it logs (ABI 1.3, AH_EXT_HOST_INFO)
 * ------------------------------------------------------------------------------------------- */

#define AH_EXT_HOST_INFO "analytics-host.host/1"

/* Owner: the host. Lifetime: as the ah_host it came from. */
typedef struct ah_host_info {
    /* sizeof(ah_host_info) as compiled by the host. */
    uint32_t size;
    /* The host's name and version, e.g. "analytics-host" and "0.3.0" (NUL-terminated, static:
     * valid until the process exits). */
    const char *AH_NONNULL name;
    const char *AH_NONNULL version;
    /* 1 when a line written through ah_host.log at `level` (AH_LOG_*) would be kept, 0 when it
     * would be thrown away: skip formatting what nobody will read. The answer may change while
     * the host runs (ask again, it is cheap). [any thread] */
    int32_t (*AH_NONNULL log_enabled)(void *AH_NULLABLE ctx, int32_t level);
} ah_host_info;

/* ---------------------------------------------------------------------------------------------
 * Library capability: hearing that it misbehaves (ABI 1.3, AH_EXT_NOTICES)
 * ------------------------------------------------------------------------------------------- */

/* The host refuses or gives up on some of a library's doings without a return value to say so
 * (a completion it ignored, pending calls it abandoned). A library that offers this table hears
 * about each, so that it can log, fix its state or slow down. The host reports them either way. */
#define AH_EXT_NOTICES "analytics-host.notices/1"

/* Kinds of notice. A library must ignore kinds it does not know. */
/* Pending calls passed the hook timeout (or the instance ended first) and were abandoned. */
#define AH_NOTICE_ABANDONED 1
/* A call of the library was refused and did nothing (a completion twice, or with a void or
 * unknown token). */
#define AH_NOTICE_REFUSED 2

/* Owner: the library (static). Lifetime: until the process exits. */
typedef struct ah_notices {
    /* sizeof(ah_notices) as compiled by the library. */
    uint32_t size;
    /* One notice: `kind` is an AH_NOTICE_* value, `text` (`text_len` bytes, borrowed for the
     * call, not NUL-terminated) says what happened in words. Must not block.
     * [serialized] with every other hook of the instance, on the same thread; never after
     * `destroy`. */
    void (*AH_NULLABLE notice)(ah_instance *AH_NONNULL self, int32_t kind, const char *AH_NONNULL text,
                               size_t text_len);
} ah_notices;

/* ---------------------------------------------------------------------------------------------
 * Host capability: signals (ABI 1.2, AH_EXT_SIGNALS)
 * ------------------------------------------------------------------------------------------- */

/* Signals are the breadcrumbs of Analytics Live: small JSON objects
 *   {"anonymousId", "type", "timestamp", "index", "context", "data"}
 * where "type" is "interaction", "navigation", "network", "localData", "instrumentation" or
 * "userDefined" and "data" holds that type's documented fields, in analytics-swift-live 3.x's
 * shapes (navigation: currentScreen, previousScreen?; interaction: target {component, title?,
 * data?}; network: action, url, body?, contentType?, method?, status?, ok?, requestId?;
 * localData: action, identifier, data?; instrumentation: type, rawEvent; userDefined:
 * anything). The earlier shapes (navigation: action, screen; interaction: component, title?,
 * data?; network: statusCode?, data?) are accepted too: such a signal keeps its members and
 * gets today's added (currentScreen; target; status, body, ok).
 * Any library may emit them (e.g. one that watches something on the system), and a library may
 * subscribe to receive every signal as JSON text (LivePlugins hands them to JavaScript's
 * `processSignal`). The host offers this table only when the application enabled signals;
 * otherwise get_extension answers NULL. */
#define AH_EXT_SIGNALS "analytics-host.signals/1"

/* ah_signal_subscriber.flags */
/* Start held: signals wait (in order, the newest maximumBufferSize of them) until
 * `set_ready(id, 1)`, e.g. while a JavaScript bundle loads. Otherwise deliveries start at once. */
#define AH_SIGNALS_START_HELD 0x1u

/* Describes a subscriber. Owner: the caller of `subscribe`; the host copies the struct and
 * `name` before `subscribe` returns. `ctx` and the callbacks must stay valid until `release` is
 * called (or, without `release`, until the subscribing instance's `destroy`). */
typedef struct ah_signal_subscriber {
    /* sizeof(ah_signal_subscriber) as compiled by the library. */
    uint32_t size;
    /* AH_SIGNALS_START_HELD or 0. */
    uint32_t flags;
    /* Shown in reports (NUL-terminated; NULL: the library's key). */
    const char *AH_NULLABLE name;
    /* The library's context, passed back to the callbacks. */
    void *AH_NULLABLE ctx;
    /* One signal: `json` is a complete JSON object, `json_len` bytes, NOT NUL-terminated,
     * borrowed for the call. Called on the host's signals thread, one signal at a time, in
     * `index` order; a slow `deliver` delays every later signal (never the emitters: the host
     * queues, bounded). Signals emitted before the first subscriber existed, and those emitted
     * while a subscriber is held, are delivered first, oldest first. Required. */
    void (*AH_NULLABLE deliver)(void *AH_NULLABLE ctx, const char *AH_NONNULL json, size_t json_len);
    /* Called exactly once after the subscriber was removed (`unsubscribe`, the instance's
     * destruction, or shutdown) and no `deliver` is running or will run. Optional. Any thread. */
    void (*AH_NULLABLE release)(void *AH_NULLABLE ctx);
} ah_signal_subscriber;

/* Owner: the host. Lifetime: as the ah_host it came from. Every function is [any thread],
 * including from inside `deliver`. */
typedef struct ah_host_signals {
    /* sizeof(ah_host_signals) as compiled by the host. */
    uint32_t size;
    /* Emits one signal given as a JSON object (`json_len` bytes, borrowed for the call):
     * "type" and "data" as above; "timestamp" and "anonymousId" are kept when given; the host
     * sets "index" and "context". Returns AH_OK when queued, AH_ERR_PERMANENT with the reason in
     * `err` (caller-owned, `err_cap` bytes) when the text is not a valid signal (the field is
     * named), AH_ERR_RETRYABLE while the host is stopping. Never blocks for long. */
    ah_status (*AH_NONNULL emit)(void *AH_NULLABLE ctx, const char *AH_NULLABLE json, size_t json_len,
                                 char *AH_NULLABLE err, size_t err_cap);
    /* Adds a subscriber; on success writes its id (never 0) to `*out_id`. AH_ERR_PERMANENT
     * (reason in `err`) for a NULL `deliver`; AH_ERR_RETRYABLE while the host is stopping.
     * Subscribers an instance added are removed before its `destroy` is called. */
    ah_status (*AH_NONNULL subscribe)(void *AH_NULLABLE ctx, const ah_signal_subscriber *AH_NONNULL subscriber,
                                      uint64_t *AH_NONNULL out_id, char *AH_NULLABLE err, size_t err_cap);
    /* `ready` 1: deliver what is held, in order, then every new signal. 0: hold new signals
     * again. AH_ERR_PERMANENT for an id this instance does not own. */
    ah_status (*AH_NONNULL set_ready)(void *AH_NULLABLE ctx, uint64_t id, int32_t ready);
    /* Removes a subscriber: no `deliver` starts after it returns (unless called from inside
     * that subscriber's own `deliver`, which then finishes normally). Its `release` has been
     * called when it returns (from inside its own `deliver`: later, on the signals thread).
     * AH_ERR_PERMANENT for an id this instance does not own. */
    ah_status (*AH_NONNULL unsubscribe)(void *AH_NULLABLE ctx, uint64_t id);
    /* Copies the signals configuration in force as a JSON object
     * ({"maximumBufferSize": 1000, "relayCount": 20, "relayInterval": 60, ...}; a JavaScript
     * runtime sizes its buffer from it), same contract as ah_host.user_id. */
    int64_t (*AH_NONNULL configuration)(void *AH_NULLABLE ctx, char *AH_NULLABLE buf, size_t buf_cap);
} ah_host_signals;

/* ---------------------------------------------------------------------------------------------
 * The entry function
 * ------------------------------------------------------------------------------------------- */

/* The one exported symbol. The host passes the ABI version it speaks (AH_ABI_VERSION of its own
 * header). The library returns its integration, or NULL with a reason in `err` (host-owned,
 * `err_cap` >= AH_ERROR_CAPACITY_MIN bytes, empty on entry) when it cannot work with that host,
 * e.g. because it needs a newer minor than the host speaks.
 * It must be cheap and free of side effects (no threads, no I/O): the host may call it just to
 * list libraries. It may be called more than once and returns the same pointer each time.
 * [any thread] */
typedef const ah_integration *AH_NULLABLE (*ah_entry_fn)(uint32_t host_abi_version,
                                                         char *AH_NONNULL err, size_t err_cap);

#if !defined(__swift__)
/* The prototype a C or C++ library implements (Swift code exports it with @_cdecl instead). */
AH_EXPORT const ah_integration *AH_NULLABLE analytics_host_plugin_v1(uint32_t host_abi_version,
                                                                    char *AH_NONNULL err,
                                                                    size_t err_cap);
#endif

/* ---------------------------------------------------------------------------------------------
 * Helper for Swift code (host and Swift-written libraries)
 * ------------------------------------------------------------------------------------------- */

/* Identifies the compiler that compiles this header. Swift code imports the header through the
 * clang inside swiftc, whose version string names the exact llvm-project commit of the Swift
 * toolchain; the host and Swift libraries both derive ah_integration.toolchain from it, so equal
 * strings mean the same toolchain. Returns a static NUL-terminated string. [any thread] */
static inline const char *AH_NONNULL ah_compiler_ident(void) {
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown";
#endif
}

#if defined(__clang__)
#  pragma clang diagnostic pop
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ANALYTICS_PLUGIN_H */
