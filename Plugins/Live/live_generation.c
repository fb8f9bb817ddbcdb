/* live_generation.c: loading a bundle into a fresh context, switching the active bundle, and
 * where bundles come from (cache, fallback, edgeFunction download). See live_internal.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "live_bundle.h"
#include "live_internal.h"
#include "live_json.h"

/* ---- generations: loading and switching bundles ----------------------------------------- */

live_gen *live_load_bundle(live_instance *live, const char *source, size_t len, const char *file,
                             int64_t version, live_action **actions, int *partial, char *err, size_t err_cap) {
    *partial = 0;
    live_gen *g = calloc(1, sizeof *g);
    if (!g) { snprintf(err, err_cap, "out of memory"); return NULL; }
    atomic_init(&g->refs, 1);
    g->live = live;
    atomic_fetch_add(&live->refs, 1);
    g->version = version;
    g->pending_tail = &g->pending;
    live_random_hex(g->context_token, sizeof g->context_token);
    g->context_marker_len = (size_t)snprintf(g->context_marker, sizeof g->context_marker, "\"context\":\"%s\"", g->context_token);
    snprintf(g->file, sizeof g->file, "%s", file);
    static const char *const runtime_files[] = {"liveplugins.js", "signals.js", NULL};
    live_engine_config config = {
        .time_limit_seconds = live->time_limit, .max_heap_bytes = live->max_heap,
        .native = live_native_op, .native_ctx = g, .runtime_files = runtime_files,
    };
    g->engine = live_engine_create(&config, err, err_cap);
    if (!g->engine) { live_gen_release(g); return NULL; }

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
        live_format_error(&error, text, sizeof text);
        snprintf(err, err_cap, "runtime prelude failed: %s", text);
    } else {
        outcome = live_engine_eval(g->engine, source, len, file, live->load_time_limit, &error);
        if (outcome != LIVE_VALUE) live_format_error(&error, err, err_cap);
        /* The bundle stopped at an error after it did something: what it did (plugins added,
         * events sent) stays, as in the references, and the context is usable. One that did
         * nothing before the error (a syntax error) did not load. */
        if ((outcome == LIVE_THREW || outcome == LIVE_TIMED_OUT) && g->pending) {
            *partial = 1;
            outcome = LIVE_VALUE;
        }
    }
    size_t heap = 0;
    if (outcome == LIVE_VALUE && live->max_heap && live_engine_check_heap(g->engine, &heap)) {
        snprintf(err, err_cap, "%s: uses %zu bytes of JavaScript heap after loading, over the %zu-byte bound", file,
                 heap, live->max_heap);
        outcome = LIVE_THREW;
    }
    g->next_heap_check = live_now_seconds() + live->heap_check_interval;
    *actions = live_take_actions(g);
    live_engine_unlock(g->engine);
    if (outcome != LIVE_VALUE) {
        /* Not loaded (the runtime failed, or the heap is over its bound): its plugins are not
         * added, but the events it sent were accepted by `analytics` and go on. */
        live_add_plugins_refused(actions);
        live_post_actions(live, *actions);
        *actions = NULL;
        live_gen_release(g);
        return NULL;
    }
    return g;
}

/* Makes `g` (may be NULL: none) the active bundle: its plugins go on the timeline first (inactive
 * until the switch), then the switch, then the previous bundle's plugins leave. */
void live_activate(live_instance *live, live_gen *g, live_action *actions) {
    if (g) live_add_plugins(live, g, &actions);
    live_retire_current(live, g);
    live_post_actions(live, actions);  /* after the switch: what the bundle sent meets its own plugins */
    if (g) {
        for (size_t i = 0; live_modules[i]; i++)
            if (live_modules[i]->activated) live_modules[i]->activated(live);
    }
}

/* Loads a bundle file and makes it active; on failure reports and keeps the active one. */
static int live_load_file(live_instance *live, const char *path, int64_t version, const char *what) {
    live_buf source = {0};
    char err[1024];
    if (live_read_file(path, live->max_bundle, &source) != 0) {
        live_log(live, AH_LOG_ERROR, "cannot read the %s %s: %s", what, path, strerror(errno));
        return -1;
    }
    live_action *actions = NULL;
    int partial = 0;
    live_gen *g = live_load_bundle(live, source.data, source.len, path, version, &actions, &partial, err, sizeof err);
    live_buf_free(&source);
    if (!g) {
        live_log(live, AH_LOG_ERROR, "the %s failed to load: %s", what, err);
        return -1;
    }
    live_activate(live, g, actions);
    if (partial)
        live_log(live, AH_LOG_ERROR, "the %s failed to load: %s (what it did before the error stays: plugins added, "
                 "events sent)", what, err);
    else
        live_log(live, AH_LOG_INFO, "loaded the %s %s (version %lld)", what, path, (long long)version);
    return 0;
}

/* The cached bundle, else the fallback file. */
void live_load_local(live_instance *live) {
    if (live->has_storage && live->cached_version >= 0) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/bundle.js", live->storage_dir);
        if (live_load_file(live, path, live->cached_version, "cached bundle") == 0) return;
    }
    if (live->fallback_path.len) {
        if (live_load_file(live, live->fallback_path.data, 0, "fallback bundle") == 0) return;
    }
    if (!atomic_load(&live->current))
        live_log(live, AH_LOG_INFO, "no bundle is active (none cached%s)", live->fallback_path.len ? ", the fallback failed" : ", no fallbackBundle option");
}

static void live_fetch_bundle(live_instance *live, const char *url, int64_t version) {
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
    int partial = 0;
    live_gen *g = live_load_bundle(live, source.data, source.len, url, version, &actions, &partial, err, sizeof err);
    live_buf_free(&source);
    if (g && partial) {
        /* A download that stops at an error does not replace a bundle that loads (nor is it
         * cached): its plugins are not added; the events it sent go on. */
        live_add_plugins_refused(&actions);
        live_post_actions(live, actions);
        actions = NULL;
        live_gen_release(g);
        g = NULL;
    }
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
    live_activate(live, g, actions);
    live_log(live, AH_LOG_INFO, "loaded bundle version %lld from %s", (long long)version, url);
}

/* The client's write key (integrations."Segment.io".apiKey), for JavaScript's config. */
void live_read_write_key(live_instance *live, const char *settings, size_t len) {
    const char *s, *e;
    pthread_mutex_lock(&live->mutex);
    if (live_json_member(settings, len, "integrations", &s, &e) &&
        live_json_member(s, (size_t)(e - s), "Segment.io", &s, &e) &&
        live_json_member(s, (size_t)(e - s), "apiKey", &s, &e)) {
        live_json_string(s, e, &live->write_key);
    }
    pthread_mutex_unlock(&live->mutex);
}

/* Reads edgeFunction from a settings document and acts on it. Runs on the instance's thread. */
void live_apply_settings(live_instance *live, const char *settings, size_t len, int allow_download) {
    const char *s, *e;
    live_buf url = {0};
    live_read_write_key(live, settings, len);

    if (!live_json_member(settings, len, "edgeFunction", &s, &e)) goto done;
    const char *fs = s, *fe = e;
    int has_url = live_json_member(fs, (size_t)(fe - fs), "downloadURL", &s, &e) && live_json_string(s, e, &url) == 0;
    double version = -1;
    if (live_json_member(fs, (size_t)(fe - fs), "version", &s, &e)) live_json_number(s, e, &version);

    if (has_url && url.len == 0) {
        if (!live->disabled) {
            live->disabled = 1;
            live_log(live, AH_LOG_INFO, "edgeFunction.downloadURL is empty: LivePlugins disabled");
            live_retire_current(live, NULL);
        }
        goto done;
    }
    if (live->disabled) {
        live->disabled = 0;
        live_log(live, AH_LOG_INFO, "edgeFunction names a bundle again: LivePlugins enabled");
        live_load_local(live);
    }
    if (allow_download && has_url && version >= 0 && (int64_t)version > live->cached_version)
        live_fetch_bundle(live, url.data, (int64_t)version);
done:
    live_buf_free(&url);
}
