/* live_native.c: the bridge JavaScript calls into (`__live_native(op, a, b)`), see live_internal.h. */
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

/* ---- the native bridge ------------------------------------------------------------------ */

static void storage_path(live_instance *live, char *out, size_t cap) {
    snprintf(out, cap, "%s/storage.json", live->storage_dir);
}

/* A client id from JavaScript ("" or absent: the host's own client, 0). */
static int64_t client_id(const char *text) {
    return text && text[0] ? strtoll(text, NULL, 10) : 0;
}

/* live_host_string for a second client's getters. */
static int client_string(const ah_host_clients *clients, int64_t (*get)(void *, uint64_t, char *, size_t), void *ctx,
                         uint64_t id, live_buf *out, int *is_null) {
    (void)clients;
    if (live_buf_reserve(out, 256)) return -1;
    for (;;) {
        int64_t n = get(ctx, id, out->data, out->cap);
        if (n < 0) { *is_null = 1; out->len = 0; out->data[0] = 0; return 0; }
        if ((size_t)n < out->cap) { out->len = (size_t)n; *is_null = 0; return 0; }
        if (live_buf_reserve(out, (size_t)n + 1)) return -1;
    }
}

static void append_key(void *ctx, const char *key, size_t len, const char *s, const char *e) {
    (void)s; (void)e;
    live_buf *out = ctx;
    if (out->len > 1) live_buf_append(out, ",", 1);
    live_buf_append(out, "\"", 1);
    live_buf_append(out, key, len);  /* still escaped as in the settings text */
    live_buf_append(out, "\"", 1);
}

/* The destinations this host runs: the keys of the last settings' "integrations". */
static int destination_keys(live_instance *live, live_buf *out) {
    const char *s, *e;
    if (live_buf_set(out, "[", 1)) return -1;
    pthread_mutex_lock(&live->mutex);
    if (live->settings.len && live_json_member(live->settings.data, live->settings.len, "integrations", &s, &e))
        live_json_object_keys(s, e, append_key, out);
    pthread_mutex_unlock(&live->mutex);
    return live_buf_append(out, "]", 1);
}

/* The storm bound: an event made while processing an event that JavaScript made, and so on,
 * past maxEventDepth, and events past maxEventsPerCall in one call, are refused. The first
 * refusal of each plugin (or of the bundle's own code) is logged at error level, naming the
 * plugin and the bundle (the run exits 3); the others are counted and said when the library
 * stops. The event being processed goes on. The engine lock is held. */
static int storm_refused(live_gen *g) {
    live_instance *live = g->live;
    int depth = g->event_depth + 1;
    int deep = depth > live->max_event_depth;
    int many = !deep && ++g->call_sends > live->max_events_per_call;
    if (!deep && !many) return 0;
    atomic_fetch_add(&live->refused_sends, 1);
    int first = g->calling ? !atomic_exchange(&g->calling->storm_reported, 1) : !g->storm_reported;
    if (!g->calling) g->storm_reported = 1;
    if (!first) return 1;
    const char *who = g->calling ? g->calling->name : "(the bundle's own code)";
    if (deep) {
        live_log(live, AH_LOG_ERROR, "plugin %s of bundle %s (version %lld) sent an event %d deep (an event made "
                 "while processing one made by JavaScript, past maxEventDepth %d): refused, as are its later "
                 "ones (counted); the event being processed goes on", who, g->file, (long long)g->version, depth,
                 live->max_event_depth);
    } else {
        live_log(live, AH_LOG_ERROR, "plugin %s of bundle %s (version %lld) sent more than %d events in one call "
                 "(maxEventsPerCall): the rest are refused, as are later ones past the bound (counted); the event "
                 "being processed goes on", who, g->file, (long long)g->version, live->max_events_per_call);
    }
    return 1;
}

int live_native_op(void *ctx, const char *op, const char *a, size_t a_len, const char *b,
                     size_t b_len, live_buf *out, int *out_null) {
    live_gen *g = ctx;
    live_instance *live = g->live;
    if (strcmp(op, "config") == 0) {
        char head[128];
        snprintf(head, sizeof head, "{\"version\":%lld,\"contextToken\":\"%s\",\"writeKey\":", (long long)g->version,
                 g->context_token);
        if (live_buf_set(out, head, strlen(head))) return -1;
        pthread_mutex_lock(&live->mutex);
        int failed = live_json_append_string(out, live->write_key.data ? live->write_key.data : "", live->write_key.len);
        pthread_mutex_unlock(&live->mutex);
        if (!failed) failed = live_buf_append(out, ",\"dataBridge\":", 14) ||
                              (live->data_bridge.len ? live_buf_append(out, live->data_bridge.data, live->data_bridge.len)
                                                     : live_buf_append(out, "{}", 2));
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
    if (strcmp(op, "depth") == 0) {  /* how deep an event sent now is made (1: from an input event) */
        char text[16];
        snprintf(text, sizeof text, "%d", g->event_depth + 1);
        return live_buf_set(out, text, strlen(text));
    }
    if (strcmp(op, "send") == 0) {  /* a: the event, b: the client ("" or absent: the host's) */
        *out_null = 1;
        if (!a) return 0;
        if (storm_refused(g)) return 0;
        if (live_queue_action(g, ACTION_SEND, client_id(b), a, a_len)) { live_buf_set(out, "out of memory", 13); return -1; }
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
        if (live_queue_action(g, ACTION_ADD, strtoll(a, NULL, 10), b, b_len)) { live_buf_set(out, "out of memory", 13); return -1; }
        return 0;
    }
    if (strcmp(op, "reset") == 0 || strcmp(op, "flush") == 0) {  /* a: the client */
        *out_null = 1;
        if (live_queue_action(g, op[0] == 'r' ? ACTION_RESET : ACTION_FLUSH, client_id(a), NULL, 0)) { live_buf_set(out, "out of memory", 13); return -1; }
        return 0;
    }
    if (strcmp(op, "userId") == 0 || strcmp(op, "anonymousId") == 0 || strcmp(op, "traits") == 0) {  /* a: the client */
        int64_t id = client_id(a);
        int traits = op[0] == 't';
        int is_null = 0, failed;
        if (id) {
            if (!live->clients) { *out_null = 1; return 0; }
            failed = client_string(live->clients, op[0] == 'u' ? live->clients->user_id : op[0] == 'a' ? live->clients->anonymous_id
                                   : live->clients->traits, live->host->ctx, (uint64_t)id, out, &is_null);
        } else if (traits) {
            if (!live->client) return live_buf_set(out, "{}", 2);
            failed = live_host_string(live->client->traits, live->host->ctx, out, &is_null);
        } else {
            failed = live_host_string(op[0] == 'u' ? live->host->user_id : live->host->anonymous_id, live->host->ctx, out, &is_null);
        }
        if (failed) return -1;
        if (traits && is_null) return live_buf_set(out, "{}", 2);
        *out_null = is_null;
        return 0;
    }
    if (strcmp(op, "clientOpen") == 0) {  /* a: the write key; answers the client's id */
        char err[512] = "";
        uint64_t id = 0;
        if (!live->clients) {
            snprintf(err, sizeof err, "new Analytics(\"%.100s\"): this host offers no second clients (%s)", a ? a : "", AH_EXT_CLIENTS);
            live_buf_set(out, err, strlen(err));
            return -1;
        }
        if (live->clients->open(live->host->ctx, a ? a : "", a ? a_len : 0, &id, err, sizeof err) != AH_OK) {
            char m[700];
            snprintf(m, sizeof m, "new Analytics(\"%.100s\"): %s", a ? a : "", err[0] ? err : "refused by the host");
            live_buf_set(out, m, strlen(m));
            return -1;
        }
        char text[32];
        snprintf(text, sizeof text, "%llu", (unsigned long long)id);
        return live_buf_set(out, text, strlen(text));
    }
    if (strcmp(op, "destinations") == 0)  /* the keys of the settings' integrations, as a JSON array */
        return destination_keys(live, out);
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
