/* live_plugin.c: each `analytics.add(plugin)` as a plugin on a host timeline (AH_EXT_TIMELINE),
 * and the actions JavaScript queued during a call. See live_internal.h. */
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

/* ---- plugins on the host timeline ------------------------------------------------------- */

static int plugin_is_active(live_plugin *p) {
    return !atomic_load_explicit(&p->disabled, memory_order_relaxed) &&
           atomic_load_explicit(&p->gen->live->current, memory_order_acquire) == p->gen;
}


/* The heap bound, after every call (live_heap.h: cheap unless the heap could have passed it);
 * the engine lock is held. Returns 1 when the bundle went over its heap bound. */
static int heap_over(live_gen *g) {
    live_instance *live = g->live;
    if (!live->max_heap) return 0;
    double now = live_now_seconds();
    int periodic = now >= g->next_heap_check;
    if (periodic) g->next_heap_check = now + live->heap_check_interval;
    size_t heap = 0;
    if (!live_heap_guard_check(&g->heap_guard, g->engine, live->max_heap, now, periodic, &heap)) return 0;
    live_log(live, AH_LOG_ERROR, "the bundle %s uses %zu bytes of JavaScript heap, over the %zu-byte bound "
             "(maxHeapBytes): it is unloaded, its plugins leave the timelines and events go on unchanged",
             g->file, heap, live->max_heap);
    return 1;
}

/* Ends a JS call: takes the queued actions and the heap verdict, unlocks, then acts. */
void live_finish_call(live_gen *g) {
    int over = heap_over(g);
    live_action *actions = live_take_actions(g);
    live_engine_unlock(g->engine);
    live_run_actions(g->live, g, actions);
    if (over) {
        pthread_mutex_lock(&g->live->mutex);
        int still_current = atomic_load(&g->live->current) == g;
        pthread_mutex_unlock(&g->live->mutex);
        if (still_current) live_retire_current(g->live, NULL);
    }
}

static void note_failure(live_plugin *p, live_outcome outcome, const live_js_error *error, char *err, size_t cap) {
    live_instance *live = p->gen->live;
    live_format_error(error, err, cap);
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

/* The LIVE_HANDLES_* bit of an event type name. */
static unsigned type_bit(const char *name, size_t n) {
    static const struct { const char *name; unsigned bit; } types[] = {
        {"track", LIVE_HANDLES_TRACK}, {"identify", LIVE_HANDLES_IDENTIFY}, {"screen", LIVE_HANDLES_SCREEN},
        {"page", LIVE_HANDLES_PAGE}, {"group", LIVE_HANDLES_GROUP}, {"alias", LIVE_HANDLES_ALIAS},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strlen(types[i].name) == n && memcmp(types[i].name, name, n) == 0) return types[i].bit;
    return LIVE_HANDLES_OTHER;
}

/* Whether the plugin does anything with this event's type (see handledTypes in the runtime). */
static int handles_event(const live_plugin *p, const char *json, size_t len) {
    if (p->handles == LIVE_HANDLES_ALL) return 1;
    const char *s, *e;
    if (!live_json_member(json, len, "type", &s, &e) || e - s < 2 || *s != '"') return 1;
    return (p->handles & type_bit(s + 1, (size_t)(e - s - 2))) != 0;
}

/* Where the event's `context` member is, when it is the last member of the event and an object
 * (as the host writes events): `*comma` at the ',' before it (or just after the '{' when it is the
 * only member), `*value` at its '{'; the value runs to the event's closing '}'. 0 otherwise.
 * One backward pass over that last value: outside strings, the first '"' met going backward
 * closes a string, which opens at the previous '"' not preceded by an odd run of backslashes
 * (inside a JSON string a '"' is always escaped). */
static int find_last_context(const char *json, size_t len, size_t *comma, size_t *value) {
    static const char key[] = "\"context\":";
    const size_t n = sizeof key - 1;
    if (len < n + 4 || json[len - 1] != '}' || json[len - 2] != '}') return 0;
    size_t i = len - 2;  /* the last value's closing '}' */
    int depth = 0;
    for (;;) {
        char c = json[i];
        if (c == '"') {
            for (;;) {
                if (i == 0) return 0;
                i--;
                if (json[i] != '"') continue;
                size_t b = i;
                while (b > 0 && json[b - 1] == '\\') b--;
                if (((i - b) & 1) == 0) break;
            }
        } else if (c == '}' || c == ']') {
            depth++;
        } else if (c == '{' || c == '[') {
            if (--depth == 0) break;
        }
        if (i == 0) return 0;
        i--;
    }
    /* json[i] is the '{' that opens the last value. */
    if (json[i] != '{' || i < n + 1 || memcmp(json + i - n, key, n) != 0) return 0;
    size_t before = i - n - 1;
    if (json[before] != ',' && json[before] != '{') return 0;
    *comma = json[before] == ',' ? before : before + 1;
    *value = i;
    return 1;
}

/* Where JavaScript left the event's context untouched, it wrote `"context":"<token>"` in its
 * place (the token is random per bundle load and only the runtime knows it): the original text
 * goes back there, byte for byte. 0 when there is nothing to put back, -1 when out of memory. */
static int restore_context(live_gen *g, const char *context, size_t context_len) {
    const char *at = memmem(g->result.data, g->result.len, g->context_marker, g->context_marker_len);
    if (!at) return 0;
    size_t before = (size_t)(at - g->result.data), after = before + g->context_marker_len;
    if (live_buf_set(&g->head, g->result.data, before + 10) ||  /* through `"context":` */
        live_buf_append(&g->head, context, context_len) ||
        live_buf_append(&g->head, g->result.data + after, g->result.len - after)) return -1;
    live_buf swap = g->result;
    g->result = g->head;
    g->head = swap;
    return 0;
}

static int32_t plugin_process(void *ctx, const char *json, size_t len, const ah_event_output *out,
                              char *err, size_t err_cap) {
    live_plugin *p = ctx;
    if (!plugin_is_active(p) || !handles_event(p, json, len)) return AH_EVENT_KEEP;
    live_gen *g = p->gen;
    live_js_error error;
    live_engine_lock(g->engine);
    /* The event crosses as a string and JSON.parse/JSON.stringify run inside the one call: one
     * VM entry (one watchdog arming) per event, measured faster than parsing through the C API.
     * Its context (about half of its text) crosses as a second string that JavaScript parses
     * only if the plugin touches it (see lazyContext in runtime/liveplugins.js). */
    size_t comma = 0, value = 0;
    int lazy = find_last_context(json, len, &comma, &value);
    g->event_depth = lazy ? live_event_depth(json + value, len - 1 - value) : live_event_depth(json, len);
    g->calling = p;
    if (lazy) {
        /* The event without its context: "{...}" */
        if (live_buf_set(&g->head, json, comma) || live_buf_append(&g->head, "}", 1)) lazy = 0;
    }
    live_outcome outcome = lazy
        ? live_engine_call(g->engine, "__livePluginsProcess", p->js_id, g->head.data, g->head.len, 1,
                           json + value, len - 1 - value, &g->result, &error)
        : live_engine_call(g->engine, "__livePluginsProcess", p->js_id, json, len, 1, NULL, 0, &g->result, &error);
    if (lazy && outcome == LIVE_VALUE && restore_context(g, json + value, len - 1 - value)) {
        snprintf(error.message, sizeof error.message, "out of memory");
        error.file[0] = 0;
        error.line = 0;
        outcome = LIVE_THREW;
    }
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
    g->event_depth = 0;
    g->calling = NULL;
    live_finish_call(g);
    return answer;
}

/* Calls a lifecycle entry of the runtime for one plugin, logging a failure with its name. */
static void plugin_call(live_plugin *p, const char *function, const char *json, size_t len, const char *what) {
    if (!plugin_is_active(p)) return;
    live_gen *g = p->gen;
    live_js_error error;
    live_engine_lock(g->engine);
    live_outcome outcome = live_engine_call(g->engine, function, p->js_id, json, len, 0, NULL, 0, NULL, &error);
    if (outcome == LIVE_THREW || outcome == LIVE_TIMED_OUT || outcome == LIVE_NO_FUNCTION) {
        char text[1024];
        note_failure(p, outcome, &error, text, sizeof text);
        live_log(g->live, AH_LOG_ERROR, "plugin %s failed in %s: %s", p->name, what, text);
    }
    live_finish_call(g);
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
    live_gen_release(p->gen);
    free(p);
}

static int fails_closed(live_instance *live, const char *name) {
    if (live->fail_closed_all) return 1;
    if (!live->fail_closed_names.len) return 0;
    char needle[160];
    snprintf(needle, sizeof needle, "\n%s\n", name);
    return strstr(live->fail_closed_names.data, needle) != NULL;
}

static void add_handled_type(void *ctx, const char *start, const char *stop) {
    unsigned *bits = ctx;
    live_buf name = {0};
    if (live_json_string(start, stop, &name) == 0) *bits |= type_bit(name.data, name.len);
    else *bits = LIVE_HANDLES_ALL;
    live_buf_free(&name);
}

/* The bits of a JSON array of event type names; every type when it is not one. */
static unsigned handled_types(const char *start, const char *stop) {
    unsigned bits = 0;
    if (live_json_array(start, stop, add_handled_type, &bits) != 0) return LIVE_HANDLES_ALL;
    return bits;
}

/* Puts a plugin the bundle added on the host timeline (an ADD action). */
static void live_add_plugin(live_instance *live, live_gen *g, int64_t js_id, const live_buf *descriptor) {
    const char *s, *e;
    live_buf type = {0}, name = {0}, destination = {0};
    int has_destination = 0, fail_closed = 0;
    if (live_json_member(descriptor->data, descriptor->len, "type", &s, &e)) live_json_string(s, e, &type);
    if (live_json_member(descriptor->data, descriptor->len, "name", &s, &e)) live_json_string(s, e, &name);
    if (live_json_member(descriptor->data, descriptor->len, "destination", &s, &e) && !live_json_is(s, e, "null"))
        has_destination = live_json_string(s, e, &destination) == 0;
    if (live_json_member(descriptor->data, descriptor->len, "failClosed", &s, &e)) fail_closed = live_json_bool(s, e) == 1;
    unsigned handles = LIVE_HANDLES_ALL;
    if (live_json_member(descriptor->data, descriptor->len, "handles", &s, &e) && !live_json_is(s, e, "\"all\""))
        handles = handled_types(s, e);

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
    p->handles = handles;
    p->gen = g;
    atomic_fetch_add(&g->refs, 1);

    pthread_mutex_lock(&live->mutex);
    if (g->retired) {
        pthread_mutex_unlock(&live->mutex);
        live_log(live, AH_LOG_WARN, "plugin %s not added: its bundle was replaced", p->name);
        live_gen_release(g);
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

/* Makes `replacement` (may be NULL) the active generation and takes the previous one's plugins
 * off the host timelines. */
void live_retire_current(live_instance *live, live_gen *replacement) {
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
    live_gen_release(old);
}

/* Adds the plugins of ADD actions (outside every lock of ours: the host allows `add` from its
 * callbacks) and leaves the other actions in `*actions`. */
void live_add_plugins(live_instance *live, live_gen *g, live_action **actions) {
    for (live_action **link = actions; *link;) {
        live_action *a = *link;
        if (a->kind != ACTION_ADD) { link = &a->next; continue; }
        *link = a->next;
        live_add_plugin(live, g, a->js_id, &a->text);
        live_buf_free(&a->text);
        free(a);
    }
}

void live_add_plugins_refused(live_action **actions) {
    for (live_action **link = actions; *link;) {
        live_action *a = *link;
        if (a->kind != ACTION_ADD) { link = &a->next; continue; }
        *link = a->next;
        live_buf_free(&a->text);
        free(a);
    }
}

/* Events, resets and flushes, in the order JavaScript asked for them. The host takes each
 * without re-entering the caller: send_event queues the event for its own thread, and the
 * client's reset and flush run the plugins' hooks later. */
void live_post_actions(live_instance *live, live_action *actions) {
    for (live_action *a = actions; a; a = a->next) {
        /* js_id: 0 the host's client, else a second client (new Analytics(writeKey)). */
        uint64_t id = (uint64_t)a->js_id;
        switch (a->kind) {
        case ACTION_SEND: {
            ah_status rc = AH_ERR_PERMANENT;
            if (!id) rc = live->host->send_event(live->host->ctx, a->text.data, a->text.len);
            else if (live->clients) rc = live->clients->send_event(live->host->ctx, id, a->text.data, a->text.len);
            if (rc != AH_OK)
                live_log(live, AH_LOG_WARN, "an event the bundle sent%s was not accepted (%s): %.200s", id ? " through a second client" : "",
                         rc == AH_ERR_RETRYABLE ? "the host is busy or stopping" : "not a valid event", a->text.data);
            break;
        }
        case ACTION_RESET:
            if (!id && live->client) live->client->reset(live->host->ctx);
            else if (id && live->clients) live->clients->reset(live->host->ctx, id);
            break;
        case ACTION_FLUSH:
            if (!id && live->client) live->client->flush(live->host->ctx);
            else if (id && live->clients) live->clients->flush(live->host->ctx, id);
            break;
        case ACTION_ADD: break;
        }
    }
    live_free_actions(actions);
}

void live_run_actions(live_instance *live, live_gen *g, live_action *actions) {
    live_add_plugins(live, g, &actions);
    live_post_actions(live, actions);
}
