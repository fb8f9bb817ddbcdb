/*
 * LivePlugins: JavaScript transformation plugins (Analytics Live) for analytics-host.
 *
 * A library of the AH_ROLE_WHOLE_SETTINGS kind (ABI 1.2): created whatever the settings'
 * "integrations" names, it reads the top-level "edgeFunction" ({version, downloadURL}), keeps
 * the JavaScript bundle it names (downloaded through AH_EXT_HTTP, cached in its storage
 * directory), runs it in a sandboxed JavaScript context, and puts every `analytics.add(plugin)`
 * of the bundle on the client's timeline or on one destination's timeline (AH_EXT_TIMELINE).
 *
 * Options (AH_EXT_CLIENT.options; `analytics-host run --live-plugins FILE` sets fallbackBundle):
 *   fallbackBundle        path of the bundle used on first start, offline, or when a download
 *                         fails (no cached bundle yet)
 *   timeLimitMs           time limit of each call into JavaScript (default 50)
 *   loadTimeLimitMs       time limit of loading a bundle (default 1000)
 *   maxHeapBytes          JavaScript heap bound, checked between calls (default 64 MiB)
 *   heapCheckSeconds      how often the heap is measured (default 1)
 *   maxConsecutiveTimeouts  a plugin that times out this often in a row is disabled (default 3)
 *   failClosed            true, or an array of plugin (class) names: a failing plugin drops the
 *                         event instead of passing it on unchanged (AH_PLUGIN_FAIL_CLOSED)
 *   downloadTimeoutMs     (default 10000)   maxBundleBytes (default 8 MiB)
 *   maxStorageBytes       size bound of the `storage` object (default 1 MiB)
 *
 * Threads and locks: each loaded bundle ("generation") has its own engine, entered under the
 * engine's lock only. What JavaScript asks of the host (events, plugins to add, reset, flush)
 * is queued during the call and done after the lock is released, so no host call is ever made
 * with a context locked and a host callback can never wait for a context this thread holds.
 * `mutex` guards the instance's lists and the active generation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "live.h"
#include "live_bundle.h"
#include "live_json.h"

#define LIVE_MAX_MODULES 8
#define LIVE_MAX_PRELUDES 8

enum action_kind { ACTION_SEND, ACTION_ADD, ACTION_RESET, ACTION_FLUSH };

typedef struct live_action {
    enum action_kind kind;
    int64_t js_id;
    live_buf text;
    struct live_action *next;
} live_action;

typedef struct live_gen live_gen;

/* One JavaScript plugin on a host timeline. Owned by the library from `add` until `release`. */
typedef struct live_plugin {
    live_gen *gen;               /* holds a reference */
    int64_t js_id;
    uint64_t host_id;
    char name[128];
    atomic_int consecutive_timeouts;
    atomic_int disabled;
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
    live_buf result, io;
    double next_heap_check;
    int retired;                 /* guarded by live->mutex: no longer active, adds are refused */
};

struct live_instance {
    atomic_int refs;
    const ah_host *host;
    const ah_host_timeline *timeline;
    const ah_host_client *client;
    const ah_host_http *http;

    /* Options (fixed after create). */
    double time_limit, load_time_limit, heap_check_interval;
    size_t max_heap, max_bundle, max_storage;
    uint32_t download_timeout_ms;
    int max_timeouts, fail_closed_all;
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
    live_buf settings;           /* the last settings document */
    pthread_mutex_t storage_lock;
    void *module_state[LIVE_MAX_MODULES];
};

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- logging and small helpers ---------------------------------------------------------- */

void live_log(live_instance *live, int32_t level, const char *format, ...) {
    char line[1024];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(line, sizeof line, format, args);
    va_end(args);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = sizeof line - 1;
    live->host->log(live->host->ctx, level, line, (size_t)n);
}

const ah_host *live_host(live_instance *live) { return live->host; }

void *live_module_state(live_instance *live, size_t index) {
    return index < LIVE_MAX_MODULES ? live->module_state[index] : NULL;
}

void live_set_module_state(live_instance *live, size_t index, void *state) {
    if (index < LIVE_MAX_MODULES) live->module_state[index] = state;
}

/* Copies a string the host answers with the user_id contract into `out`. */
static int host_string(int64_t (*get)(void *, char *, size_t), void *ctx, live_buf *out, int *is_null) {
    if (live_buf_reserve(out, 256)) return -1;
    for (;;) {
        int64_t n = get(ctx, out->data, out->cap);
        if (n < 0) { *is_null = 1; out->len = 0; out->data[0] = 0; return 0; }
        if ((size_t)n < out->cap) { out->len = (size_t)n; *is_null = 0; return 0; }
        if (live_buf_reserve(out, (size_t)n + 1)) return -1;
    }
}

static void format_error(const live_js_error *e, char *out, size_t cap) {
    if (e->file[0] && e->line > 0) snprintf(out, cap, "%s:%d: %s", e->file, e->line, e->message);
    else if (e->file[0]) snprintf(out, cap, "%s: %s", e->file, e->message);
    else snprintf(out, cap, "%s", e->message);
}

/* ---- references ------------------------------------------------------------------------- */

static void live_release_instance(live_instance *live) {
    if (atomic_fetch_sub(&live->refs, 1) != 1) return;
    live_buf_free(&live->fail_closed_names);
    live_buf_free(&live->fallback_path);
    live_buf_free(&live->write_key);
    live_buf_free(&live->settings);
    for (int i = 0; i < live->prelude_count; i++) {
        free((char *)live->preludes[i].name);
        free((char *)live->preludes[i].source);
    }
    pthread_mutex_destroy(&live->mutex);
    pthread_mutex_destroy(&live->storage_lock);
    free(live);
}

static void free_actions(live_action *a) {
    while (a) {
        live_action *next = a->next;
        live_buf_free(&a->text);
        free(a);
        a = next;
    }
}

static void gen_release(live_gen *g) {
    if (!g || atomic_fetch_sub(&g->refs, 1) != 1) return;
    live_engine_destroy(g->engine);
    free_actions(g->pending);
    live_buf_free(&g->result);
    live_buf_free(&g->io);
    live_instance *live = g->live;
    free(g);
    live_release_instance(live);
}

/* The actions queued during a call; the engine lock is held. */
static live_action *take_actions(live_gen *g) {
    live_action *a = g->pending;
    g->pending = NULL;
    g->pending_tail = &g->pending;
    return a;
}

static int queue_action(live_gen *g, enum action_kind kind, int64_t js_id, const char *text, size_t len) {
    live_action *a = calloc(1, sizeof *a);
    if (!a) return -1;
    a->kind = kind;
    a->js_id = js_id;
    if (text && live_buf_set(&a->text, text, len)) { free(a); return -1; }
    *g->pending_tail = a;
    g->pending_tail = &a->next;
    return 0;
}

/* ---- the native bridge ------------------------------------------------------------------ */

static void storage_path(live_instance *live, char *out, size_t cap) {
    snprintf(out, cap, "%s/storage.json", live->storage_dir);
}

static int native_op(void *ctx, const char *op, const char *a, size_t a_len, const char *b,
                     size_t b_len, live_buf *out, int *out_null) {
    live_gen *g = ctx;
    live_instance *live = g->live;
    if (strcmp(op, "config") == 0) {
        char head[64];
        snprintf(head, sizeof head, "{\"version\":%lld,\"writeKey\":", (long long)g->version);
        if (live_buf_set(out, head, strlen(head))) return -1;
        pthread_mutex_lock(&live->mutex);
        int failed = live_json_append_string(out, live->write_key.data ? live->write_key.data : "", live->write_key.len);
        pthread_mutex_unlock(&live->mutex);
        return failed || live_buf_append(out, "}", 1) ? -1 : 0;
    }
    if (strcmp(op, "warning") == 0) {  /* the runtime's own warnings, without the console prefix */
        if (a) live->host->log(live->host->ctx, AH_LOG_WARN, a, a_len);
        *out_null = 1;
        return 0;
    }
    if (strcmp(op, "log") == 0) {
        int32_t level = AH_LOG_INFO;
        if (a && strcmp(a, "debug") == 0) level = AH_LOG_DEBUG;
        else if (a && strcmp(a, "warn") == 0) level = AH_LOG_WARN;
        else if (a && strcmp(a, "error") == 0) level = AH_LOG_ERROR;
        live_buf line = {0};
        if (live_buf_set(&line, "console: ", 9) == 0 && live_buf_append(&line, b ? b : "", b ? b_len : 0) == 0)
            live->host->log(live->host->ctx, level, line.data, line.len);
        live_buf_free(&line);
        *out_null = 1;
        return 0;
    }
    if (strcmp(op, "send") == 0) {
        *out_null = 1;
        if (!a) return 0;
        if (queue_action(g, ACTION_SEND, 0, a, a_len)) { live_buf_set(out, "out of memory", 13); return -1; }
        return 0;
    }
    if (strcmp(op, "add") == 0) {
        *out_null = 1;
        if (!a || !b) { live_buf_set(out, "add: bad arguments", 18); return -1; }
        pthread_mutex_lock(&live->mutex);
        int retired = g->retired;
        pthread_mutex_unlock(&live->mutex);
        if (retired) {
            const char *m = "add: this bundle is no longer active";
            live_buf_set(out, m, strlen(m));
            return -1;
        }
        if (queue_action(g, ACTION_ADD, strtoll(a, NULL, 10), b, b_len)) { live_buf_set(out, "out of memory", 13); return -1; }
        return 0;
    }
    if (strcmp(op, "reset") == 0 || strcmp(op, "flush") == 0) {
        *out_null = 1;
        if (queue_action(g, op[0] == 'r' ? ACTION_RESET : ACTION_FLUSH, 0, NULL, 0)) { live_buf_set(out, "out of memory", 13); return -1; }
        return 0;
    }
    if (strcmp(op, "userId") == 0)
        return host_string(live->host->user_id, live->host->ctx, out, out_null);
    if (strcmp(op, "anonymousId") == 0)
        return host_string(live->host->anonymous_id, live->host->ctx, out, out_null);
    if (strcmp(op, "traits") == 0) {
        if (!live->client) return live_buf_set(out, "{}", 2);
        int is_null = 0;
        if (host_string(live->client->traits, live->host->ctx, out, &is_null)) return -1;
        return is_null ? live_buf_set(out, "{}", 2) : 0;
    }
    if (strcmp(op, "storageLoad") == 0) {
        char path[PATH_MAX];
        if (!live->has_storage) return live_buf_set(out, "{}", 2);
        storage_path(live, path, sizeof path);
        pthread_mutex_lock(&live->storage_lock);
        int failed = live_read_file(path, live->max_storage, out);
        int e = errno;
        pthread_mutex_unlock(&live->storage_lock);
        if (failed) {
            if (e != ENOENT) live_log(live, AH_LOG_WARN, "storage: cannot read %s (%s); starting empty", path, strerror(e));
            return live_buf_set(out, "{}", 2);
        }
        return 0;
    }
    if (strcmp(op, "storageSave") == 0) {
        char path[PATH_MAX], err[512];
        *out_null = 1;
        if (!a) return 0;
        if (a_len > live->max_storage) {
            snprintf(err, sizeof err, "storage: %zu bytes is over the %zu-byte bound (maxStorageBytes)", a_len, live->max_storage);
            live_buf_set(out, err, strlen(err));
            return -1;
        }
        if (!live->has_storage) return 0;  /* kept in memory only; said once at create */
        storage_path(live, path, sizeof path);
        pthread_mutex_lock(&live->storage_lock);
        int failed = live_write_file_atomically(path, a, a_len, err, sizeof err);
        pthread_mutex_unlock(&live->storage_lock);
        if (failed) { live_buf_set(out, err, strlen(err)); return -1; }
        return 0;
    }
    for (size_t i = 0; live_modules[i]; i++) {
        if (!live_modules[i]->native) continue;
        int r = live_modules[i]->native(live, op, a, a_len, b, b_len, out, out_null);
        if (r == 1) return 0;
        if (r < 0) return -1;
    }
    char m[128];
    snprintf(m, sizeof m, "unknown native operation %s", op);
    live_buf_set(out, m, strlen(m));
    return -1;
}

/* ---- plugins on the host timeline ------------------------------------------------------- */

static int plugin_is_active(live_plugin *p) {
    return !atomic_load_explicit(&p->disabled, memory_order_relaxed) &&
           atomic_load_explicit(&p->gen->live->current, memory_order_acquire) == p->gen;
}

static void run_actions(live_instance *live, live_gen *g, live_action *actions);
static void retire_current(live_instance *live, live_gen *replacement);

/* The heap check, at most once per interval, after a call; the engine lock is held.
 * Returns 1 when the bundle went over its heap bound. */
static int heap_over(live_gen *g) {
    live_instance *live = g->live;
    if (!live->max_heap) return 0;
    double now = now_seconds();
    if (now < g->next_heap_check) return 0;
    g->next_heap_check = now + live->heap_check_interval;
    size_t heap = 0;
    if (!live_engine_check_heap(g->engine, &heap)) return 0;
    live_log(live, AH_LOG_ERROR, "the bundle %s uses %zu bytes of JavaScript heap, over the %zu-byte bound "
             "(maxHeapBytes): it is unloaded, events go on unchanged", g->file, heap, live->max_heap);
    return 1;
}

/* Ends a JS call: takes the queued actions and the heap verdict, unlocks, then acts. */
static void finish_call(live_gen *g) {
    int over = heap_over(g);
    live_action *actions = take_actions(g);
    live_engine_unlock(g->engine);
    run_actions(g->live, g, actions);
    if (over) {
        pthread_mutex_lock(&g->live->mutex);
        int still_current = atomic_load(&g->live->current) == g;
        pthread_mutex_unlock(&g->live->mutex);
        if (still_current) retire_current(g->live, NULL);
    }
}

static void note_failure(live_plugin *p, live_outcome outcome, const live_js_error *error, char *err, size_t cap) {
    live_instance *live = p->gen->live;
    format_error(error, err, cap);
    if (outcome != LIVE_TIMED_OUT) {
        atomic_store(&p->consecutive_timeouts, 0);
        return;
    }
    int n = atomic_fetch_add(&p->consecutive_timeouts, 1) + 1;
    if (n >= live->max_timeouts && !atomic_exchange(&p->disabled, 1)) {
        live_log(live, AH_LOG_ERROR, "plugin %s timed out %d times in a row (limit %.0f ms): disabled until "
                 "the bundle is loaded again", p->name, n, live->time_limit * 1000);
    }
}

static int32_t plugin_process(void *ctx, const char *json, size_t len, const ah_event_output *out,
                              char *err, size_t err_cap) {
    live_plugin *p = ctx;
    if (!plugin_is_active(p)) return AH_EVENT_KEEP;
    live_gen *g = p->gen;
    live_js_error error;
    live_engine_lock(g->engine);
    /* The event crosses as a string and JSON.parse/JSON.stringify run inside the one call: one
     * VM entry (one watchdog arming) per event, measured faster than parsing through the C API. */
    live_outcome outcome = live_engine_call(g->engine, "__livePluginsProcess", p->js_id, json, len, 1,
                                            &g->result, &error);
    int32_t answer = AH_EVENT_KEEP;
    switch (outcome) {
    case LIVE_NOTHING:
        answer = AH_EVENT_DROP;
        atomic_store_explicit(&p->consecutive_timeouts, 0, memory_order_relaxed);
        break;
    case LIVE_VALUE:
        atomic_store_explicit(&p->consecutive_timeouts, 0, memory_order_relaxed);
        if (g->result.len == len && memcmp(g->result.data, json, len) == 0) break;
        if (out->write(out->ctx, g->result.data, g->result.len) == AH_OK) {
            answer = AH_EVENT_REPLACE;
        } else {
            snprintf(err, err_cap, "the host refused the event it returned (see the log)");
            answer = AH_EVENT_ERROR;
        }
        break;
    default:
        note_failure(p, outcome, &error, err, err_cap);
        answer = AH_EVENT_ERROR;
        break;
    }
    finish_call(g);
    return answer;
}

/* Calls a lifecycle entry of the runtime for one plugin, logging a failure with its name. */
static void plugin_call(live_plugin *p, const char *function, const char *json, size_t len, const char *what) {
    if (!plugin_is_active(p)) return;
    live_gen *g = p->gen;
    live_js_error error;
    live_engine_lock(g->engine);
    live_outcome outcome = live_engine_call(g->engine, function, p->js_id, json, len, 0, NULL, &error);
    if (outcome == LIVE_THREW || outcome == LIVE_TIMED_OUT || outcome == LIVE_NO_FUNCTION) {
        char text[1024];
        note_failure(p, outcome, &error, text, sizeof text);
        live_log(g->live, AH_LOG_ERROR, "plugin %s failed in %s: %s", p->name, what, text);
    }
    finish_call(g);
}

static void plugin_update(void *ctx, const char *settings, size_t len, int32_t kind) {
    live_plugin *p = ctx;
    /* {"initial":bool,"settings":<document>}, built without parsing the settings twice. */
    live_buf arg = {0};
    const char *head = kind == AH_UPDATE_INITIAL ? "{\"initial\":true,\"settings\":" : "{\"initial\":false,\"settings\":";
    if (live_buf_set(&arg, head, strlen(head)) == 0 && live_buf_append(&arg, settings, len) == 0 &&
        live_buf_append(&arg, "}", 1) == 0) {
        plugin_call(p, "__livePluginsUpdate", arg.data, arg.len, "update");
    }
    live_buf_free(&arg);
}

static void plugin_reset(void *ctx) { plugin_call(ctx, "__livePluginsReset", NULL, 0, "reset"); }
static void plugin_flush(void *ctx) { plugin_call(ctx, "__livePluginsFlush", NULL, 0, "flush"); }

static void plugin_release(void *ctx) {
    live_plugin *p = ctx;
    live_instance *live = p->gen->live;
    pthread_mutex_lock(&live->mutex);
    if (p->listed) {
        for (live_plugin **link = &live->plugins; *link; link = &(*link)->next) {
            if (*link == p) { *link = p->next; break; }
        }
        p->listed = 0;
    }
    pthread_mutex_unlock(&live->mutex);
    gen_release(p->gen);
    free(p);
}

static int fails_closed(live_instance *live, const char *name) {
    if (live->fail_closed_all) return 1;
    if (!live->fail_closed_names.len) return 0;
    char needle[160];
    snprintf(needle, sizeof needle, "\n%s\n", name);
    return strstr(live->fail_closed_names.data, needle) != NULL;
}

/* Puts a plugin the bundle added on the host timeline (an ADD action). */
static void add_plugin(live_instance *live, live_gen *g, int64_t js_id, const live_buf *descriptor) {
    const char *s, *e;
    live_buf type = {0}, name = {0}, destination = {0};
    int has_destination = 0, fail_closed = 0;
    if (live_json_member(descriptor->data, descriptor->len, "type", &s, &e)) live_json_string(s, e, &type);
    if (live_json_member(descriptor->data, descriptor->len, "name", &s, &e)) live_json_string(s, e, &name);
    if (live_json_member(descriptor->data, descriptor->len, "destination", &s, &e) && !live_json_is(s, e, "null"))
        has_destination = live_json_string(s, e, &destination) == 0;
    if (live_json_member(descriptor->data, descriptor->len, "failClosed", &s, &e)) fail_closed = live_json_bool(s, e) == 1;

    int32_t stage = -1;
    if (type.data && strcmp(type.data, "before") == 0) stage = AH_PLUGIN_BEFORE;
    else if (type.data && strcmp(type.data, "enrichment") == 0) stage = AH_PLUGIN_ENRICHMENT;
    else if (type.data && strcmp(type.data, "after") == 0) stage = AH_PLUGIN_AFTER;
    else if (type.data && strcmp(type.data, "utility") == 0) stage = AH_PLUGIN_UTILITY;

    live_plugin *p = calloc(1, sizeof *p);
    if (!p || stage < 0) {
        live_log(live, AH_LOG_ERROR, "cannot add plugin %s: %s", name.data ? name.data : "?", p ? "unknown type" : "out of memory");
        free(p);
        goto done;
    }
    snprintf(p->name, sizeof p->name, "%s", name.data && name.data[0] ? name.data : "LivePlugin");
    p->js_id = js_id;
    p->gen = g;
    atomic_fetch_add(&g->refs, 1);

    pthread_mutex_lock(&live->mutex);
    if (g->retired) {
        pthread_mutex_unlock(&live->mutex);
        live_log(live, AH_LOG_WARN, "plugin %s not added: its bundle was replaced", p->name);
        gen_release(g);
        free(p);
        goto done;
    }
    p->listed = 1;
    p->next = live->plugins;
    live->plugins = p;
    pthread_mutex_unlock(&live->mutex);

    ah_timeline_plugin desc = {
        .size = sizeof desc,
        .type = stage,
        .flags = (fail_closed || fails_closed(live, p->name)) ? AH_PLUGIN_FAIL_CLOSED : 0,
        .name = p->name,
        .destination = has_destination ? destination.data : NULL,
        .ctx = p,
        .process = stage == AH_PLUGIN_UTILITY ? NULL : plugin_process,
        .update = plugin_update,
        .reset = plugin_reset,
        .flush = plugin_flush,
        .release = plugin_release,
    };
    char err[512] = "";
    uint64_t id = 0;
    if (live->timeline->add(live->host->ctx, &desc, &id, err, sizeof err) != AH_OK) {
        live_log(live, AH_LOG_ERROR, "cannot add plugin %s: %s", p->name, err[0] ? err : "refused by the host");
        plugin_release(p);
        goto done;
    }
    pthread_mutex_lock(&live->mutex);
    p->host_id = id;
    int retired_meanwhile = !p->listed;
    pthread_mutex_unlock(&live->mutex);
    if (retired_meanwhile) live->timeline->remove(live->host->ctx, id);  /* its bundle was replaced during add */
done:
    live_buf_free(&type);
    live_buf_free(&name);
    live_buf_free(&destination);
}

/* Adds the plugins of ADD actions (outside every lock of ours: the host allows `add` from its
 * callbacks) and leaves the other actions in `*actions`. */
static void add_plugins(live_instance *live, live_gen *g, live_action **actions) {
    for (live_action **link = actions; *link;) {
        live_action *a = *link;
        if (a->kind != ACTION_ADD) { link = &a->next; continue; }
        *link = a->next;
        add_plugin(live, g, a->js_id, &a->text);
        live_buf_free(&a->text);
        free(a);
    }
}

/* Events, resets and flushes, in the order JavaScript asked for them. The host takes each
 * without re-entering the caller: send_event queues the event for its own thread, and the
 * client's reset and flush run the plugins' hooks later. */
static void post_actions(live_instance *live, live_action *actions) {
    for (live_action *a = actions; a; a = a->next) {
        switch (a->kind) {
        case ACTION_SEND: {
            ah_status rc = live->host->send_event(live->host->ctx, a->text.data, a->text.len);
            if (rc != AH_OK)
                live_log(live, AH_LOG_WARN, "an event the bundle sent was not accepted (%s): %.200s",
                         rc == AH_ERR_RETRYABLE ? "the host is busy or stopping" : "not a valid event", a->text.data);
            break;
        }
        case ACTION_RESET: if (live->client) live->client->reset(live->host->ctx); break;
        case ACTION_FLUSH: if (live->client) live->client->flush(live->host->ctx); break;
        case ACTION_ADD: break;
        }
    }
    free_actions(actions);
}

static void run_actions(live_instance *live, live_gen *g, live_action *actions) {
    add_plugins(live, g, &actions);
    post_actions(live, actions);
}

/* ---- generations: loading and switching bundles ----------------------------------------- */

static live_gen *load_bundle(live_instance *live, const char *source, size_t len, const char *file,
                             int64_t version, live_action **actions, char *err, size_t err_cap) {
    live_gen *g = calloc(1, sizeof *g);
    if (!g) { snprintf(err, err_cap, "out of memory"); return NULL; }
    atomic_init(&g->refs, 1);
    g->live = live;
    atomic_fetch_add(&live->refs, 1);
    g->version = version;
    g->pending_tail = &g->pending;
    snprintf(g->file, sizeof g->file, "%s", file);
    live_engine_config config = {
        .time_limit_seconds = live->time_limit, .max_heap_bytes = live->max_heap,
        .native = native_op, .native_ctx = g,
    };
    g->engine = live_engine_create(&config, err, err_cap);
    if (!g->engine) { gen_release(g); return NULL; }

    live_js_error error;
    live_engine_lock(g->engine);
    live_outcome outcome = LIVE_VALUE;
    for (size_t i = 0; outcome == LIVE_VALUE && live_builtin_preludes[i].name; i++) {
        const live_prelude *pre = &live_builtin_preludes[i];
        outcome = live_engine_eval(g->engine, pre->source, pre->len ? pre->len : strlen(pre->source), pre->name,
                                   live->load_time_limit, &error);
    }
    pthread_mutex_lock(&live->mutex);
    int extra = live->prelude_count;
    pthread_mutex_unlock(&live->mutex);
    for (int i = 0; outcome == LIVE_VALUE && i < extra; i++) {
        const live_prelude *pre = &live->preludes[i];
        outcome = live_engine_eval(g->engine, pre->source, pre->len, pre->name, live->load_time_limit, &error);
    }
    if (outcome != LIVE_VALUE) {
        char text[900];
        format_error(&error, text, sizeof text);
        snprintf(err, err_cap, "runtime prelude failed: %s", text);
    } else {
        outcome = live_engine_eval(g->engine, source, len, file, live->load_time_limit, &error);
        if (outcome != LIVE_VALUE) format_error(&error, err, err_cap);
    }
    size_t heap = 0;
    if (outcome == LIVE_VALUE && live->max_heap && live_engine_check_heap(g->engine, &heap)) {
        snprintf(err, err_cap, "%s: uses %zu bytes of JavaScript heap after loading, over the %zu-byte bound", file,
                 heap, live->max_heap);
        outcome = LIVE_THREW;
    }
    g->next_heap_check = now_seconds() + live->heap_check_interval;
    *actions = take_actions(g);
    live_engine_unlock(g->engine);
    if (outcome != LIVE_VALUE) {
        free_actions(*actions);
        *actions = NULL;
        gen_release(g);
        return NULL;
    }
    return g;
}

/* Makes `g` (may be NULL: none) the active bundle: its plugins go on the timeline first (inactive
 * until the switch), then the switch, then the previous bundle's plugins leave. */
static void activate(live_instance *live, live_gen *g, live_action *actions) {
    if (g) add_plugins(live, g, &actions);
    retire_current(live, g);
    post_actions(live, actions);  /* after the switch: what the bundle sent meets its own plugins */
    if (g) {
        for (size_t i = 0; live_modules[i]; i++)
            if (live_modules[i]->activated) live_modules[i]->activated(live);
    }
}

static void retire_current(live_instance *live, live_gen *replacement) {
    uint64_t *ids = NULL;
    size_t count = 0, cap = 0;
    pthread_mutex_lock(&live->mutex);
    live_gen *old = atomic_load(&live->current);
    if (old == replacement) { pthread_mutex_unlock(&live->mutex); return; }
    atomic_store_explicit(&live->current, replacement, memory_order_release);
    if (old) {
        old->retired = 1;
        for (live_plugin **link = &live->plugins; *link;) {
            live_plugin *p = *link;
            if (p->gen != old) { link = &p->next; continue; }
            *link = p->next;
            p->listed = 0;
            /* Only the id is kept: once unlisted, `release` may free the plugin at any time. */
            if (p->host_id) {
                if (count == cap) {
                    size_t grown = cap ? cap * 2 : 16;
                    uint64_t *more = realloc(ids, grown * sizeof *ids);
                    if (!more) continue;  /* it stays inert (not active) until the host removes it */
                    ids = more;
                    cap = grown;
                }
                ids[count++] = p->host_id;
            }
        }
    }
    pthread_mutex_unlock(&live->mutex);
    /* Outside the lock: `remove` may wait for a call in progress, and `release` takes the lock.
     * An id the host no longer knows (it removed the plugin itself, e.g. at shutdown) is fine. */
    for (size_t i = 0; i < count; i++) live->timeline->remove(live->host->ctx, ids[i]);
    free(ids);
    gen_release(old);
}

/* Loads a bundle file and makes it active; on failure reports and keeps the active one. */
static int load_file(live_instance *live, const char *path, int64_t version, const char *what) {
    live_buf source = {0};
    char err[1024];
    if (live_read_file(path, live->max_bundle, &source) != 0) {
        live_log(live, AH_LOG_ERROR, "cannot read the %s %s: %s", what, path, strerror(errno));
        return -1;
    }
    live_action *actions = NULL;
    live_gen *g = load_bundle(live, source.data, source.len, path, version, &actions, err, sizeof err);
    live_buf_free(&source);
    if (!g) {
        live_log(live, AH_LOG_ERROR, "the %s failed to load: %s", what, err);
        return -1;
    }
    activate(live, g, actions);
    live_log(live, AH_LOG_INFO, "loaded the %s %s (version %lld)", what, path, (long long)version);
    return 0;
}

/* The cached bundle, else the fallback file. */
static void load_local(live_instance *live) {
    if (live->has_storage && live->cached_version >= 0) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/bundle.js", live->storage_dir);
        if (load_file(live, path, live->cached_version, "cached bundle") == 0) return;
    }
    if (live->fallback_path.len) {
        if (load_file(live, live->fallback_path.data, 0, "fallback bundle") == 0) return;
    }
    if (!atomic_load(&live->current))
        live_log(live, AH_LOG_INFO, "no bundle is active (none cached%s)", live->fallback_path.len ? ", the fallback failed" : ", no fallbackBundle option");
}

static void download(live_instance *live, const char *url, int64_t version) {
    char err[1024];
    if (!live->http) {
        live_log(live, AH_LOG_WARN, "cannot download bundle version %lld: the host offers no %s", (long long)version, AH_EXT_HTTP);
        return;
    }
    if (!live->has_storage) {
        live_log(live, AH_LOG_WARN, "cannot download bundle version %lld: no storage directory to keep it in", (long long)version);
        return;
    }
    live_buf source = {0};
    if (live_download(live->http, live->host->ctx, url, live->download_timeout_ms, live->storage_dir,
                      live->max_bundle, &source, err, sizeof err) != 0) {
        live_log(live, AH_LOG_ERROR, "download of bundle version %lld from %s failed: %s; %s", (long long)version, url, err,
                 atomic_load(&live->current) ? "keeping the active bundle" : "no bundle is active");
        live_buf_free(&source);
        return;
    }
    live_action *actions = NULL;
    live_gen *g = load_bundle(live, source.data, source.len, url, version, &actions, err, sizeof err);
    live_buf_free(&source);
    if (!g) {
        live_discard_download(live->storage_dir);
        live_log(live, AH_LOG_ERROR, "bundle version %lld from %s failed to load: %s; %s", (long long)version, url, err,
                 atomic_load(&live->current) ? "keeping the active bundle" : "no bundle is active");
        return;
    }
    if (live_commit_download(live->storage_dir, version, err, sizeof err) != 0)
        live_log(live, AH_LOG_ERROR, "bundle version %lld could not be cached: %s (it runs until the next start)", (long long)version, err);
    else
        live->cached_version = version;
    activate(live, g, actions);
    live_log(live, AH_LOG_INFO, "loaded bundle version %lld from %s", (long long)version, url);
}

/* Reads edgeFunction from a settings document and acts on it. Runs on the instance's thread. */
static void apply_settings(live_instance *live, const char *settings, size_t len, int allow_download) {
    const char *s, *e;
    live_buf url = {0};
    pthread_mutex_lock(&live->mutex);
    if (live_json_member(settings, len, "integrations", &s, &e) &&
        live_json_member(s, (size_t)(e - s), "Segment.io", &s, &e) &&
        live_json_member(s, (size_t)(e - s), "apiKey", &s, &e)) {
        live_json_string(s, e, &live->write_key);
    }
    pthread_mutex_unlock(&live->mutex);

    if (!live_json_member(settings, len, "edgeFunction", &s, &e)) goto done;
    const char *fs = s, *fe = e;
    int has_url = live_json_member(fs, (size_t)(fe - fs), "downloadURL", &s, &e) && live_json_string(s, e, &url) == 0;
    double version = -1;
    if (live_json_member(fs, (size_t)(fe - fs), "version", &s, &e)) live_json_number(s, e, &version);

    if (has_url && url.len == 0) {
        if (!live->disabled) {
            live->disabled = 1;
            live_log(live, AH_LOG_INFO, "edgeFunction.downloadURL is empty: LivePlugins disabled");
            retire_current(live, NULL);
        }
        goto done;
    }
    if (live->disabled) {
        live->disabled = 0;
        live_log(live, AH_LOG_INFO, "edgeFunction names a bundle again: LivePlugins enabled");
        load_local(live);
    }
    if (allow_download && has_url && version >= 0 && (int64_t)version > live->cached_version)
        download(live, url.data, (int64_t)version);
done:
    live_buf_free(&url);
}

/* ---- companion-module API --------------------------------------------------------------- */

int live_add_prelude(live_instance *live, const char *name, const char *source, size_t len) {
    char *n = strdup(name), *src = malloc(len + 1);
    if (!n || !src) { free(n); free(src); return -1; }
    memcpy(src, source, len);
    src[len] = 0;
    pthread_mutex_lock(&live->mutex);
    if (live->prelude_count >= LIVE_MAX_PRELUDES) {
        pthread_mutex_unlock(&live->mutex);
        free(n);
        free(src);
        return -1;
    }
    live->preludes[live->prelude_count++] = (live_prelude){n, src, len};
    pthread_mutex_unlock(&live->mutex);
    return 0;
}

live_outcome live_call_global(live_instance *live, const char *function, const char *json, size_t json_len,
                              live_buf *result, live_js_error *error) {
    pthread_mutex_lock(&live->mutex);
    live_gen *g = atomic_load(&live->current);
    if (g) atomic_fetch_add(&g->refs, 1);
    pthread_mutex_unlock(&live->mutex);
    if (!g) {
        if (error) {
            memset(error, 0, sizeof *error);
            snprintf(error->message, sizeof error->message, "no bundle is active");
        }
        return LIVE_NO_FUNCTION;
    }
    live_js_error local;
    live_js_error *e = error ? error : &local;
    live_engine_lock(g->engine);
    live_outcome outcome = live_engine_call(g->engine, function, -1, json, json_len, 0, result, e);
    if (outcome == LIVE_THREW || outcome == LIVE_TIMED_OUT || outcome == LIVE_NOT_JSON) {
        char text[1024];
        format_error(e, text, sizeof text);
        live_log(live, AH_LOG_ERROR, "%s failed: %s", function, text);
    }
    finish_call(g);
    gen_release(g);
    return outcome;
}

/* ---- the integration -------------------------------------------------------------------- */

static double option_number(const char *json, size_t len, const char *name, double fallback, double min, double max) {
    const char *s, *e;
    double v;
    if (!live_json_member(json, len, name, &s, &e) || live_json_number(s, e, &v) != 0) return fallback;
    return v < min ? min : v > max ? max : v;
}

static void add_fail_closed_name(void *ctx, const char *s, const char *e) {
    live_instance *live = ctx;
    live_buf name = {0};
    if (live_json_string(s, e, &name) == 0 && name.len) {
        if (!live->fail_closed_names.len) live_buf_set(&live->fail_closed_names, "\n", 1);
        live_buf_append(&live->fail_closed_names, name.data, name.len);
        live_buf_append(&live->fail_closed_names, "\n", 1);
    }
    live_buf_free(&name);
}

static int read_options(live_instance *live, char *err, size_t err_cap, live_buf *options) {
    int is_null = 0;
    if (!live->client || host_string(live->client->options, live->host->ctx, options, &is_null) || is_null)
        live_buf_set(options, "{}", 2);
    const char *o = options->data, *s, *e;
    size_t n = options->len;
    live->time_limit = option_number(o, n, "timeLimitMs", 50, 1, 60000) / 1000.0;
    live->load_time_limit = option_number(o, n, "loadTimeLimitMs", 1000, 1, 600000) / 1000.0;
    live->max_heap = (size_t)option_number(o, n, "maxHeapBytes", 64.0 * 1024 * 1024, 0, 1e12);
    live->heap_check_interval = option_number(o, n, "heapCheckSeconds", 1, 0, 3600);
    live->max_timeouts = (int)option_number(o, n, "maxConsecutiveTimeouts", 3, 1, 1e9);
    live->download_timeout_ms = (uint32_t)option_number(o, n, "downloadTimeoutMs", 10000, 1, 600000);
    live->max_bundle = (size_t)option_number(o, n, "maxBundleBytes", 8.0 * 1024 * 1024, 1, 1e10);
    live->max_storage = (size_t)option_number(o, n, "maxStorageBytes", 1024.0 * 1024, 2, 1e10);
    if (live_json_member(o, n, "failClosed", &s, &e)) {
        if (live_json_bool(s, e) == 1) live->fail_closed_all = 1;
        else if (live_json_bool(s, e) != 0 && live_json_array(s, e, add_fail_closed_name, live) != 0) {
            snprintf(err, err_cap, "option failClosed must be true, false or an array of plugin names");
            return -1;
        }
    }
    if (live_json_member(o, n, "fallbackBundle", &s, &e) && !live_json_is(s, e, "null")) {
        if (live_json_string(s, e, &live->fallback_path) != 0) {
            snprintf(err, err_cap, "option fallbackBundle must be a file path");
            return -1;
        }
        struct stat st;
        if (live->fallback_path.len && stat(live->fallback_path.data, &st) != 0) {
            snprintf(err, err_cap, "fallbackBundle %s: %s", live->fallback_path.data, strerror(errno));
            return -1;
        }
    }
    return 0;
}

static ah_instance *create(const ah_host *host, const char *settings, size_t settings_len, char *err, size_t err_cap) {
    if (!AH_HAS_FIELD(host, ah_host, get_extension)) {
        snprintf(err, err_cap, "LivePlugins needs a host of ABI 1.2 or newer (this one speaks %u.%u)",
                 AH_ABI_VERSION_MAJOR(host->abi_version), AH_ABI_VERSION_MINOR(host->abi_version));
        return NULL;
    }
    const ah_host_timeline *timeline = host->get_extension(host->ctx, AH_EXT_TIMELINE);
    if (!timeline || !AH_HAS_FIELD(timeline, ah_host_timeline, remove)) {
        snprintf(err, err_cap, "LivePlugins needs the host capability %s", AH_EXT_TIMELINE);
        return NULL;
    }
    live_instance *live = calloc(1, sizeof *live);
    if (!live) { snprintf(err, err_cap, "out of memory"); return NULL; }
    atomic_init(&live->refs, 1);
    live->host = host;
    live->timeline = timeline;
    live->client = host->get_extension(host->ctx, AH_EXT_CLIENT);
    if (live->client && !AH_HAS_FIELD(live->client, ah_host_client, options)) live->client = NULL;
    live->http = host->get_extension(host->ctx, AH_EXT_HTTP);
    if (live->http && !AH_HAS_FIELD(live->http, ah_host_http, get)) live->http = NULL;
    pthread_mutex_init(&live->mutex, NULL);
    pthread_mutex_init(&live->storage_lock, NULL);
    live->cached_version = -1;

    live_buf options = {0};
    if (read_options(live, err, err_cap, &options) != 0) goto fail;
    if (live->client) {
        live_buf dir = {0};
        int is_null = 0;
        if (host_string(live->client->storage_directory, host->ctx, &dir, &is_null) == 0 && !is_null && dir.len &&
            dir.len < sizeof live->storage_dir) {
            memcpy(live->storage_dir, dir.data, dir.len + 1);
            live->has_storage = 1;
        }
        live_buf_free(&dir);
    }
    if (!live->has_storage)
        live_log(live, AH_LOG_WARN, "no storage directory: bundles are not cached and `storage` lasts until exit");
    else
        live->cached_version = live_cached_version(live->storage_dir);

    for (size_t i = 0; live_modules[i]; i++) {
        if (live_modules[i]->start && live_modules[i]->start(live, options.data, options.len, err, err_cap) != 0) {
            for (size_t j = i; j-- > 0;)
                if (live_modules[j]->stop) live_modules[j]->stop(live);
            goto fail;
        }
    }
    live_buf_free(&options);

    live_buf_set(&live->settings, settings, settings_len);
    const char *s, *e;
    live_buf url = {0};
    if (live_json_path(settings, settings_len, "edgeFunction.downloadURL", &s, &e) &&
        live_json_string(s, e, &url) == 0 && url.len == 0) {
        live->disabled = 1;
        live_log(live, AH_LOG_INFO, "edgeFunction.downloadURL is empty: LivePlugins disabled");
    }
    live_buf_free(&url);
    if (!live->disabled) load_local(live);
    /* The download (if the settings name a newer version) waits for update/lifecycle, which
     * run on the instance's own thread, so a slow server never delays the host's start. */
    apply_settings(live, settings, settings_len, 0);
    return (ah_instance *)live;
fail:
    live_buf_free(&options);
    live_release_instance(live);
    return NULL;
}

static void first_download(live_instance *live) {
    if (live->started) return;
    live->started = 1;
    apply_settings(live, live->settings.data, live->settings.len, 1);
}

static ah_status update(ah_instance *self, const char *settings, size_t len, int32_t kind, char *err, size_t cap) {
    (void)kind; (void)err; (void)cap;
    live_instance *live = (live_instance *)self;
    live_buf_set(&live->settings, settings, len);
    live->started = 1;
    apply_settings(live, settings, len, 1);
    return AH_OK;
}

static ah_status lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    (void)err; (void)cap;
    if (phase == AH_LIFECYCLE_STARTED) first_download((live_instance *)self);
    return AH_OK;
}

static void destroy(ah_instance *self) {
    live_instance *live = (live_instance *)self;
    for (size_t i = 0; live_modules[i]; i++)
        if (live_modules[i]->stop) live_modules[i]->stop(live);
    retire_current(live, NULL);
    live_release_instance(live);
}

static const ah_hooks hooks = {
    .size = sizeof(ah_hooks), .update = update, .destroy = destroy, .lifecycle = lifecycle,
};

static const ah_role role = {.size = sizeof(ah_role), .flags = AH_ROLE_WHOLE_SETTINGS};

static const void *get_extension(const char *id) {
    return strcmp(id, AH_EXT_ROLE) == 0 ? &role : NULL;
}

static const ah_integration integration = {
    .size = sizeof(ah_integration), .abi_version = AH_ABI_VERSION,
    .key = LIVE_KEY, .version = LIVE_VERSION, .language = AH_LANGUAGE_C,
    .toolchain = "JavaScriptCore (javascriptcoregtk-4.1)",
    .create = create, .hooks = &hooks, .get_extension = get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi, char *err, size_t cap) {
    if (AH_ABI_VERSION_MAJOR(host_abi) == 1 && AH_ABI_VERSION_MINOR(host_abi) < 2) {
        snprintf(err, cap, "LivePlugins needs a host of ABI 1.2 or newer (this one speaks 1.%u)", AH_ABI_VERSION_MINOR(host_abi));
        return NULL;
    }
    return &integration;
}
