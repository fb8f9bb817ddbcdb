/*
 * live.h: the inside of the LivePlugins library, for its own files and for companion modules
 * that extend the JavaScript environment (Signals adds its runtime and a host subscription).
 *
 * To add a module:
 *   1. its JavaScript runtime as Plugins/Live/runtime/NAME.js, embedded with LIVE_EMBED in
 *      live_preludes.c and listed in `live_builtin_preludes` (it runs in every new context, after
 *      liveplugins.js and before the bundle); or, at run time, live_add_prelude();
 *   2. a `live_module` (below) listed in `live_modules` (live_modules.c): started in `create`,
 *      stopped in `destroy`, and asked about `__live_native` ops the core does not know.
 *   3. to run JavaScript from C, live_call_global(): under the context lock and time limit.
 */
#ifndef LIVE_H
#define LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "analytics_plugin.h"
#include "live_engine.h"

#define LIVE_KEY "LivePlugins"
#define LIVE_VERSION "1.0.0"

/* One instance of the library (the ah_instance the host knows). */
typedef struct live_instance live_instance;

/* A JavaScript source run in every new context before the bundle. `source` is static or
 * outlives the process; `name` is what errors show as the file. */
typedef struct live_prelude {
    const char *name;
    const char *source;
    size_t len;          /* 0: `source` is NUL-terminated */
} live_prelude;

/* The embedded preludes, in order, ended by {NULL}: liveplugins.js first (live_preludes.c). */
extern const live_prelude live_builtin_preludes[];

/* Adds a prelude for every context made after this call (the active bundle is not reloaded).
 * The source is copied. Returns 0, or -1 when out of memory. [any thread] */
int live_add_prelude(live_instance *live, const char *name, const char *source, size_t len);

/* Calls global function `function` of the active bundle's context with one argument (`json`
 * parsed; NULL: none), under the context lock and the per-call time limit; failures are logged
 * with the function's name. What JavaScript asked for during the call (events sent, plugins
 * added, reset, flush) happens after the lock is released, on this thread. Returns
 * LIVE_NO_FUNCTION when no bundle is active or it defines no such function.
 * `result` (may be NULL) receives the returned value as JSON text. [any thread] */
live_outcome live_call_global(live_instance *live, const char *function, const char *json,
                              size_t json_len, live_buf *result, live_js_error *error);

/* The host services of the instance (valid until destroy). */
const ah_host *live_host(live_instance *live);

/* Writes a log line through the host ("LivePlugins: ..." is added by the host). */
void live_log(live_instance *live, int32_t level, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* A companion module. Every function is optional. */
typedef struct live_module {
    const char *name;
    /* In `create`, after the options are read and before the first bundle loads. `options` is
     * the whole options object the application gave LivePlugins (JSON text). Non-zero fails
     * `create` with `err`. */
    int (*start)(live_instance *live, const char *options, size_t options_len, char *err,
                 size_t err_cap);
    /* In `destroy`, before the contexts are released: stop threads and subscriptions. */
    void (*stop)(live_instance *live);
    /* After a new context became active (a bundle loaded), outside its lock. */
    void (*activated)(live_instance *live);
    /* `__live_native(op, a, b)` for an op the core does not know, with the context lock held:
     * return 1 when handled (answer as live_native_fn), 0 when not this module's op, -1 to throw
     * (message in `out`). Must not call into JavaScript. */
    int (*native)(live_instance *live, const char *op, const char *a, size_t a_len,
                  const char *b, size_t b_len, live_buf *out, int *out_null);
    /* Per-module state, for the module's own use (set it in `start`). */
} live_module;

/* NULL-terminated; live_modules.c. */
extern const live_module *const live_modules[];

/* A slot per module for its state (index = position in live_modules). */
void *live_module_state(live_instance *live, size_t index);
void live_set_module_state(live_instance *live, size_t index, void *state);

#endif
