/*
 * live_internal.h: what the files of the LivePlugins library share (not for companion modules:
 * they use live.h). The objects and their locks:
 *
 *   live_instance   one instance of the library (the host's ah_instance); reference-counted,
 *                   because plugins and bundles may outlive `destroy` by a `release`.
 *   live_gen        one loaded bundle ("generation"): its engine (one JavaScript context) and
 *                   the actions its JavaScript queued during the current call.
 *   live_plugin     one `analytics.add(plugin)` on a host timeline.
 *
 * Lock order: an engine's lock, then the instance's `mutex`. No host call is made with an engine
 * locked: what JavaScript asks for is queued (live_action) and done after unlocking.
 */
#ifndef LIVE_INTERNAL_H
#define LIVE_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "live.h"
#include "live_heap.h"

#define LIVE_MAX_MODULES 8
#define LIVE_MAX_PRELUDES 8

/* Event types, as bits of live_plugin.handles (runtime: handledTypes). */
enum {
    LIVE_HANDLES_TRACK = 1, LIVE_HANDLES_IDENTIFY = 2, LIVE_HANDLES_SCREEN = 4, LIVE_HANDLES_PAGE = 8,
    LIVE_HANDLES_GROUP = 16, LIVE_HANDLES_ALIAS = 32, LIVE_HANDLES_OTHER = 64, LIVE_HANDLES_ALL = 127
};

enum action_kind { ACTION_SEND, ACTION_ADD, ACTION_RESET, ACTION_FLUSH };

typedef struct live_action {
    enum action_kind kind;
    int64_t js_id;               /* ACTION_ADD: the plugin; the others: the client (0: the host's) */
    live_buf text;
    struct live_action *next;
} live_action;

typedef struct live_gen live_gen;

/* One JavaScript plugin on a host timeline. Owned by the library from `add` until `release`. */
typedef struct live_plugin {
    live_gen *gen;               /* holds a reference */
    int64_t js_id;
    uint64_t host_id;
    unsigned handles;            /* LIVE_HANDLES_* bits of the event types it is called for */
    char name[128];
    atomic_int consecutive_timeouts;
    atomic_int disabled;
    atomic_int storm_reported;   /* the first refused send of this plugin was logged */
    int listed;                  /* in live->plugins; guarded by live->mutex */
    struct live_plugin *next;    /* guarded by live->mutex */
} live_plugin;

/* One loaded bundle: its engine, and what its JavaScript asked for during the current call. */
struct live_gen {
    atomic_int refs;
    live_instance *live;         /* holds a reference */
    live_engine *engine;
    int64_t version;
    char file[PATH_MAX];
    /* Guarded by the engine lock: */
    live_action *pending, **pending_tail;
    live_buf result;
    live_buf head;               /* the event without its context, for the call (plugin_process) */
    char context_token[33];      /* 32 random hex digits, private to the runtime (plugin_process) */
    char context_marker[48];     /* "context":"<token>" */
    size_t context_marker_len;
    double next_heap_check;
    live_heap_guard heap_guard;
    /* The storm bound (live_native.c, "send"): how deep the event being processed was made
     * (0: an input event; see live_event_depth), which plugin is being called (NULL: the bundle's
     * top level, update, signals), and how many events this call sent so far. */
    int event_depth;
    live_plugin *calling;
    int call_sends;
    int storm_reported;          /* a refused send outside any plugin was logged */
    int retired;                 /* guarded by live->mutex: no longer active, adds are refused */
};

struct live_instance {
    atomic_int refs;
    const ah_host *host;
    const ah_host_timeline *timeline;
    const ah_host_client *client;
    const ah_host_http *http;
    const ah_host_clients *clients;  /* NULL: the host offers no second clients */

    /* Options (fixed after create). */
    double time_limit, load_time_limit, heap_check_interval;
    size_t max_heap, max_bundle, max_storage;
    uint32_t download_timeout_ms;
    int max_timeouts, fail_closed_all;
    int max_event_depth;         /* maxEventDepth: events made from events made from ... */
    int max_events_per_call;     /* maxEventsPerCall: events one call into JavaScript may send */
    atomic_ullong refused_sends; /* sends refused by those two bounds */
    live_buf data_bridge;        /* dataBridge: a JSON object the bundle reads as `DataBridge` */
    live_buf fail_closed_names;  /* "\nName\nOther\n" */
    live_buf fallback_path;
    char storage_dir[PATH_MAX - 64]; /* room for the file names added to it */
    int has_storage;

    pthread_mutex_t mutex;
    _Atomic(live_gen *) current;
    live_plugin *plugins;
    live_prelude preludes[LIVE_MAX_PRELUDES];
    int prelude_count;
    live_buf write_key;
    int64_t cached_version;      /* -1: no cached bundle */
    int disabled;                /* edgeFunction.downloadURL is "" */
    int started;                 /* the first download check happened */
    live_buf settings;           /* the last settings document; guarded by mutex */
    pthread_mutex_t storage_lock;
    void *module_state[LIVE_MAX_MODULES];
};

static inline double live_now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Files, in one-way order: each calls only the files listed before it (and the engine, JSON
 * helpers, the heap guard (live_heap.c) and the bundle files). A companion module
 * (live_signals.c) sits on top, through live.h.
 *   live_refs.c        logging, small helpers, references, the action queue
 *   live_native.c      what JavaScript may ask of the library (`__live_native`)
 *   live_plugin.c      plugins on host timelines; ending a call (running its actions); retiring
 *                      the active generation
 *   live_generation.c  loading bundles, activating one, cache/fallback/download
 *   live.c             the integration (create, update, lifecycle, destroy), options, and the
 *                      companion-module API (live_call_global, live_add_prelude)
 */

/* live_refs.c */
/* `cap - 1` random hex digits and a NUL (getrandom; a clock-and-address mix if it fails). */
void live_random_hex(char *out, size_t cap);
int live_host_string(int64_t (*get)(void *, char *, size_t), void *ctx, live_buf *out, int *is_null);
void live_format_error(const live_js_error *e, char *out, size_t cap);
void live_release_instance(live_instance *live);
void live_free_actions(live_action *a);
void live_gen_release(live_gen *g);
/* The actions queued during a call (the engine lock is held). */
live_action *live_take_actions(live_gen *g);
int live_queue_action(live_gen *g, enum action_kind kind, int64_t js_id, const char *text, size_t len);

/* live_native.c: `__live_native(op, a, b)` (a live_native_fn; ctx is the live_gen) */
int live_native_op(void *ctx, const char *op, const char *a, size_t a_len, const char *b,
                   size_t b_len, live_buf *out, int *out_null);

/* How deep an event was made by JavaScript, read from its context text (or the whole event):
 * 0 without `__eventOrigin`, else its `depth` (1 when absent). */
int live_event_depth(const char *text, size_t len);

/* live_plugin.c: plugins on host timelines, the queued actions, retiring a generation */
void live_finish_call(live_gen *g);
void live_add_plugins(live_instance *live, live_gen *g, live_action **actions);
/* Drops the ADD actions (their bundle is not loaded), leaving the others. */
void live_add_plugins_refused(live_action **actions);
void live_post_actions(live_instance *live, live_action *actions);
void live_run_actions(live_instance *live, live_gen *g, live_action *actions);
void live_retire_current(live_instance *live, live_gen *replacement);

/* live_generation.c: loading bundles and switching between them */
/* Loads a bundle into a fresh context. NULL (reason in `err`) when it cannot run; a bundle that
 * stopped at an error is returned with `*partial` set and the error in `err`: what it did before
 * stays. `*actions`: what it asked for while loading (NULL when it returns NULL: the events it
 * sent were posted, its plugins not added). */
live_gen *live_load_bundle(live_instance *live, const char *source, size_t len, const char *file,
                           int64_t version, live_action **actions, int *partial, char *err, size_t err_cap);
void live_activate(live_instance *live, live_gen *g, live_action *actions);
void live_load_local(live_instance *live);
void live_apply_settings(live_instance *live, const char *settings, size_t len, int allow_download);
void live_read_write_key(live_instance *live, const char *settings, size_t len);

#endif
