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
 * Minor version history (major 1):
 *   1.0  entry function, ah_integration, ah_hooks (event hooks, reset, flush, update, destroy),
 *        ah_host (log, send_event, user_id, anonymous_id).
 *   1.1  ah_hooks.lifecycle (AH_LIFECYCLE_STARTED / AH_LIFECYCLE_STOPPING).
 *        A 1.0 library simply has a shorter ah_hooks; the host never calls `lifecycle` on it.
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
#define AH_ABI_MINOR 1
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

/* Result of every fallible call. Any value other than these three is treated as
 * AH_ERR_PERMANENT by the host. */
typedef int32_t ah_status;
/* Done. */
#define AH_OK 0
/* Failed for a reason that may go away (network down, rate limited, disk full): the host may
 * call again with the same input later, with backoff. */
#define AH_ERR_RETRYABLE 1
/* Failed for a reason that will not go away (bad input, bad configuration): the host reports it
 * and does not retry. */
#define AH_ERR_PERMANENT 2

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
 * threads the library started, but never after `destroy` returned. */
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
     * Returns AH_OK when accepted, AH_ERR_RETRYABLE when the host is saturated or stopping,
     * AH_ERR_PERMANENT when the text is not a valid event.
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

    /* New fields are appended here (see the minor version history). */
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

    /* New hooks are appended here (see the minor version history). */
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

    /* New fields are appended here (see the minor version history). */
} ah_integration;

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
