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
 *   maxEventDepth         events made while processing an event JavaScript made, and so on: past
 *                         this depth they are refused and reported (default 3)
 *   maxEventsPerCall      events one call into JavaScript may send (default 100)
 *   dataBridge            a JSON object the bundle reads as the global `DataBridge` (analytics-kotlin's
 *                         and substrata's data bridge: values the application shares with JavaScript)
 *
 * Threads and locks: each loaded bundle ("generation") has its own engine, entered under the
 * engine's lock only. What JavaScript asks of the host (events, plugins to add, reset, flush)
 * is queued during the call and done after the lock is released, so no host call is ever made
 * with a context locked and a host callback can never wait for a context this thread holds.
 * `mutex` guards the instance's lists and the active generation.
 *
 * Files (one-way order, see live_internal.h): live_refs.c, live_native.c, live_plugin.c,
 * live_generation.c, then live.c (this: the integration, options, companion-module API); beside
 * them live_bundle.c (files and the download), live_engine.h + live_engine_jsc.c (the JavaScript
 * engine), live_json.c, live_preludes.c + runtime/NAME.js (the JavaScript runtime, embedded),
 * live_modules.c (companion modules).
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

#include "live_bundle.h"
#include "live_internal.h"
#include "live_json.h"

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
    live_outcome outcome = live_engine_call(g->engine, function, -1, json, json_len, 0, NULL, 0, result, e);
    if (outcome == LIVE_THREW || outcome == LIVE_TIMED_OUT || outcome == LIVE_NOT_JSON) {
        char text[1024];
        live_format_error(e, text, sizeof text);
        live_log(live, AH_LOG_ERROR, "%s failed: %s", function, text);
    }
    live_finish_call(g);
    live_gen_release(g);
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
    if (!live->client || live_host_string(live->client->options, live->host->ctx, options, &is_null) || is_null)
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
    live->max_event_depth = (int)option_number(o, n, "maxEventDepth", 3, 1, 64);
    live->max_events_per_call = (int)option_number(o, n, "maxEventsPerCall", 100, 1, 1e6);
    if (live_json_member(o, n, "dataBridge", &s, &e) && !live_json_is(s, e, "null")) {
        if (*s != '{') {
            snprintf(err, err_cap, "option dataBridge must be a JSON object (the values the bundle reads as DataBridge)");
            return -1;
        }
        if (live_buf_set(&live->data_bridge, s, (size_t)(e - s))) { snprintf(err, err_cap, "out of memory"); return -1; }
    }
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
    live->clients = host->get_extension(host->ctx, AH_EXT_CLIENTS);
    if (live->clients && !AH_HAS_FIELD(live->clients, ah_host_clients, flush)) live->clients = NULL;
    pthread_mutex_init(&live->mutex, NULL);
    pthread_mutex_init(&live->storage_lock, NULL);
    live->cached_version = -1;

    live_buf options = {0};
    if (read_options(live, err, err_cap, &options) != 0) goto fail;
    if (live->client) {
        live_buf dir = {0};
        int is_null = 0;
        if (live_host_string(live->client->storage_directory, host->ctx, &dir, &is_null) == 0 && !is_null && dir.len &&
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

    pthread_mutex_lock(&live->mutex);
    live_buf_set(&live->settings, settings, settings_len);
    pthread_mutex_unlock(&live->mutex);
    const char *s, *e;
    live_buf url = {0};
    if (live_json_path(settings, settings_len, "edgeFunction.downloadURL", &s, &e) &&
        live_json_string(s, e, &url) == 0 && url.len == 0) {
        live->disabled = 1;
        live_log(live, AH_LOG_INFO, "edgeFunction.downloadURL is empty: LivePlugins disabled");
    }
    live_buf_free(&url);
    live_read_write_key(live, settings, settings_len);  /* before the first bundle reads its config */
    if (!live->disabled) live_load_local(live);
    /* The live_fetch_bundle (if the settings name a newer version) waits for update/lifecycle, which
     * run on the instance's own thread, so a slow server never delays the host's start. */
    live_apply_settings(live, settings, settings_len, 0);
    return (ah_instance *)live;
fail:
    live_buf_free(&options);
    live_release_instance(live);
    return NULL;
}

static void first_download(live_instance *live) {
    if (live->started) return;
    live->started = 1;
    live_apply_settings(live, live->settings.data, live->settings.len, 1);
}

static ah_status update(ah_instance *self, const char *settings, size_t len, int32_t kind, char *err, size_t cap) {
    (void)kind; (void)err; (void)cap;
    live_instance *live = (live_instance *)self;
    pthread_mutex_lock(&live->mutex);
    live_buf_set(&live->settings, settings, len);
    pthread_mutex_unlock(&live->mutex);
    live->started = 1;
    live_apply_settings(live, settings, len, 1);
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
    live_retire_current(live, NULL);
    unsigned long long refused = atomic_load(&live->refused_sends);
    if (refused)
        live_log(live, AH_LOG_WARN, "%llu events sent by JavaScript were refused in all (maxEventDepth %d, "
                 "maxEventsPerCall %d)", refused, live->max_event_depth, live->max_events_per_call);
    live_release_instance(live);
}

static const ah_hooks hooks = {
    .size = sizeof(ah_hooks), .update = update, .destroy = destroy, .lifecycle = lifecycle,
};

static const ah_role role = {.size = sizeof(ah_role), .flags = AH_ROLE_WHOLE_SETTINGS};

/* Its options come from AH_EXT_CLIENT.options and the top-level "edgeFunction", never from an
 * object under integrations["LivePlugins"] (whose only use is `false`, switching it off): an
 * empty settings schema (AH_EXT_SETTINGS_SCHEMA) so a key written there is reported as unknown. */
static const ah_settings_schema settings_schema = {
    .size = sizeof(ah_settings_schema), .setting_size = sizeof(ah_setting), .count = 0, .settings = NULL,
};

static const void *get_extension(const char *id) {
    if (strcmp(id, AH_EXT_SETTINGS_SCHEMA) == 0) return &settings_schema;
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
