/*
 * live_engine.h: the one internal interface between LivePlugins and its JavaScript engine.
 *
 * Everything engine-specific (JavaScriptCore today, see live_engine_jsc.c) lives behind these
 * few calls, so another engine (QuickJS, which has an interrupt handler and a memory limit built
 * in) can replace it by implementing this file alone. Values cross as JSON text and plain
 * strings only; the engine never hands out its own value types.
 *
 * One engine = one JavaScript context with its own global scope (a bundle reload makes a new
 * engine: top-level `let` and `class` declarations persist in a context). Threads: an engine may
 * be used from any thread, but never from two at once: the caller holds live_engine_lock around
 * every eval, call and heap check (so it can also collect what the native callbacks asked for
 * and act on it after unlocking); create and destroy need no lock. Native callbacks run on the
 * calling thread, inside the call, with the lock held.
 */
#ifndef LIVE_ENGINE_H
#define LIVE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

typedef struct live_engine live_engine;

/* A growable byte buffer owned by whoever declared it (free with live_buf_free). */
typedef struct live_buf {
    char *data;   /* NUL-terminated when len > 0 or after live_buf_set */
    size_t len;
    size_t cap;
} live_buf;

int live_buf_reserve(live_buf *b, size_t cap);
int live_buf_set(live_buf *b, const char *text, size_t len);
int live_buf_append(live_buf *b, const char *text, size_t len);
void live_buf_free(live_buf *b);

/* Why a call into JavaScript did not produce a value. */
typedef enum live_outcome {
    LIVE_VALUE = 0,      /* `result` holds the value as JSON text */
    LIVE_NOTHING = 1,    /* the function returned null or undefined */
    LIVE_THREW = 2,      /* an exception: `error` describes it */
    LIVE_TIMED_OUT = 3,  /* stopped by the time limit: `error` says so */
    LIVE_NOT_JSON = 4,   /* the value cannot be written as JSON (function, cycle, ...) */
    LIVE_NO_FUNCTION = 5 /* no global function of that name */
} live_outcome;

/* Where an exception came from. `message` is "Name: text" as JavaScript prints it. */
typedef struct live_js_error {
    char file[256];
    int line;          /* 0 when unknown */
    char message[512];
} live_js_error;

/* What JavaScript may ask of the library: `__live_native(op, a, b)` in the context calls this
 * with the engine lock held. `a` and `b` are the arguments converted to strings (NULL when
 * absent, null or undefined). Return 0 and set `*out_null` or fill `out` to answer a string (or
 * null); return -1 with a message in `out` to throw a JavaScript Error with that message.
 * Must not call back into the engine. */
typedef int (*live_native_fn)(void *ctx, const char *op, const char *a, size_t a_len,
                              const char *b, size_t b_len, live_buf *out, int *out_null);

typedef struct live_engine_config {
    double time_limit_seconds;   /* each call into JavaScript; <= 0: none */
    size_t max_heap_bytes;       /* see live_engine_check_heap; 0: unchecked */
    live_native_fn native;       /* required */
    void *native_ctx;
} live_engine_config;

/* NULL with a reason in `err` when the engine cannot start. */
live_engine *live_engine_create(const live_engine_config *config, char *err, size_t err_cap);
void live_engine_destroy(live_engine *engine);

/* Runs a script in the global scope, as file `file_name` (shown in errors), within `time_limit`
 * seconds (this call only; <= 0: the engine's per-call limit). */
live_outcome live_engine_eval(live_engine *engine, const char *source, size_t len,
                              const char *file_name, double time_limit, live_js_error *error);

/* Calls the global function `function` with the arguments (`id`, value) when `id` >= 0, or
 * (value) otherwise, where value is `json` parsed (`json_len` bytes, need not be
 * NUL-terminated; NULL: undefined). On LIVE_VALUE the result is JSON text in `result`; with
 * `string_arg` the value is passed as the JavaScript string `json` instead of being parsed, and
 * `extra` (when not NULL, `extra_len` bytes) follows it as a second string argument. */
live_outcome live_engine_call(live_engine *engine, const char *function, int64_t id,
                              const char *json, size_t json_len, int string_arg,
                              const char *extra, size_t extra_len,
                              live_buf *result, live_js_error *error);

/* The engine's heap as the engine measures it (bytes); checks it against max_heap_bytes after
 * a full collection when it is over. Returns 1 when still over the bound, 0 otherwise. Costly
 * (it walks the heap): the library calls it after loading a bundle and then at most once per
 * check interval. */
int live_engine_check_heap(live_engine *engine, size_t *heap_bytes);

/* The heap's size in bytes right after a full collection: exact, and costly (a collection and a
 * walk of the heap, about a millisecond or more); see live_heap.h for when the library calls it. */
size_t live_engine_measure_heap(live_engine *engine);

/* The engine's lock (not recursive: never take it from a native callback). */
void live_engine_lock(live_engine *engine);
void live_engine_unlock(live_engine *engine);

/* The name of the engine and its version, for logs ("JavaScriptCore (webkitgtk 4.1)"). */
const char *live_engine_name(void);

#endif
