/* live_refs.c: the bottom of the library's files (see "Files, in one-way order" in
 * live_internal.h): logging and small helpers, the references that keep an instance and a
 * generation alive, and the queue of actions JavaScript asks for during a call. It calls no
 * other file of the library. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "live_internal.h"
#include "live_json.h"

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
int live_host_string(int64_t (*get)(void *, char *, size_t), void *ctx, live_buf *out, int *is_null) {
    if (live_buf_reserve(out, 256)) return -1;
    for (;;) {
        int64_t n = get(ctx, out->data, out->cap);
        if (n < 0) { *is_null = 1; out->len = 0; out->data[0] = 0; return 0; }
        if ((size_t)n < out->cap) { out->len = (size_t)n; *is_null = 0; return 0; }
        if (live_buf_reserve(out, (size_t)n + 1)) return -1;
    }
}

void live_format_error(const live_js_error *e, char *out, size_t cap) {
    if (e->file[0] && e->line > 0) snprintf(out, cap, "%s:%d: %s", e->file, e->line, e->message);
    else if (e->file[0]) snprintf(out, cap, "%s: %s", e->file, e->message);
    else snprintf(out, cap, "%s", e->message);
}

/* ---- references ------------------------------------------------------------------------- */

void live_release_instance(live_instance *live) {
    if (atomic_fetch_sub(&live->refs, 1) != 1) return;
    live_buf_free(&live->fail_closed_names);
    live_buf_free(&live->fallback_path);
    live_buf_free(&live->write_key);
    live_buf_free(&live->data_bridge);
    live_buf_free(&live->settings);
    for (int i = 0; i < live->prelude_count; i++) {
        free((char *)live->preludes[i].name);
        free((char *)live->preludes[i].source);
    }
    pthread_mutex_destroy(&live->mutex);
    pthread_mutex_destroy(&live->storage_lock);
    free(live);
}

void live_free_actions(live_action *a) {
    while (a) {
        live_action *next = a->next;
        live_buf_free(&a->text);
        free(a);
        a = next;
    }
}

void live_gen_release(live_gen *g) {
    if (!g || atomic_fetch_sub(&g->refs, 1) != 1) return;
    live_engine_destroy(g->engine);
    live_free_actions(g->pending);
    live_buf_free(&g->result);
    live_buf_free(&g->head);
    live_instance *live = g->live;
    free(g);
    live_release_instance(live);
}

/* The actions queued during a call; the engine lock is held. */
live_action *live_take_actions(live_gen *g) {
    live_action *a = g->pending;
    g->pending = NULL;
    g->pending_tail = &g->pending;
    g->call_sends = 0;
    return a;
}

int live_event_depth(const char *text, size_t len) {
    static const char key[] = "\"__eventOrigin\":{";
    const char *at = memmem(text, len, key, sizeof key - 1);
    if (!at) return 0;
    const char *p = at + sizeof key - 1, *end = text + len;
    const char *close = memchr(p, '}', (size_t)(end - p));
    if (!close) return 1;
    const char *d = memmem(p, (size_t)(close - p), "\"depth\":", 8);
    if (!d) return 1;
    long v = 0;
    for (d += 8; d < close && *d >= '0' && *d <= '9' && v < 1000000; d++) v = v * 10 + (*d - '0');
    return v < 1 ? 1 : (int)v;
}

int live_queue_action(live_gen *g, enum action_kind kind, int64_t js_id, const char *text, size_t len) {
    live_action *a = calloc(1, sizeof *a);
    if (!a) return -1;
    a->kind = kind;
    a->js_id = js_id;
    if (text && live_buf_set(&a->text, text, len)) { free(a); return -1; }
    *g->pending_tail = a;
    g->pending_tail = &a->next;
    return 0;
}

void live_random_hex(char *out, size_t cap) {
    unsigned char bytes[64];
    size_t n = (cap - 1 + 1) / 2;
    if (n > sizeof bytes) n = sizeof bytes;
    if (getrandom(bytes, n, 0) != (ssize_t)n) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        uint64_t x = (uint64_t)t.tv_nsec ^ ((uint64_t)t.tv_sec << 32) ^ (uint64_t)(uintptr_t)out;
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            bytes[i] = (unsigned char)x;
        }
    }
    static const char digits[] = "0123456789abcdef";
    size_t i = 0;
    for (; i + 1 < cap && i / 2 < n; i++) out[i] = digits[(bytes[i / 2] >> ((i % 2) ? 0 : 4)) & 0xf];
    out[i] = 0;
}
