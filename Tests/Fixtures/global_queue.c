/* Fixture: a library that does its work on libdispatch's global concurrent queue, as Swift code
 * does with DispatchQueue.global() or a Task. Each track hands `blocks` blocking work items
 * (`block_ms` each) to that queue and waits for them, so items wait for a worker for longer than
 * a second: libdispatch's monitor then checks its workers through /proc/<tid>/stat (which the
 * jail must let it read, or libdispatch traps). libdispatch is the host's own, found with dlsym. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "analytics_plugin.h"

typedef void *dispatch_queue_global;
typedef dispatch_queue_global (*get_global_fn)(long priority, unsigned long flags);
typedef void (*async_f_fn)(void *queue, void *context, void (*work)(void *));

struct ah_instance {
    get_global_fn get_global;
    async_f_fn async_f;
    int blocks;
    int block_ms;
    pthread_mutex_t lock;
    pthread_cond_t done;
    int finished;
};

static long setting(const char *json, size_t len, const char *name, long fallback) {
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *at = memmem(json, len, key, strlen(key));
    return at ? strtol(at + strlen(key), NULL, 10) : fallback;
}

static void blocking_work(void *context) {
    ah_instance *self = context;
    struct timespec pause = { self->block_ms / 1000, (long)(self->block_ms % 1000) * 1000000L };
    nanosleep(&pause, NULL);
    pthread_mutex_lock(&self->lock);
    self->finished += 1;
    pthread_cond_signal(&self->done);
    pthread_mutex_unlock(&self->lock);
}

static ah_status gq_track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)json; (void)len; (void)err; (void)cap;
    void *queue = self->get_global(0, 0);
    pthread_mutex_lock(&self->lock);
    self->finished = 0;
    pthread_mutex_unlock(&self->lock);
    for (int i = 0; i < self->blocks; i++) self->async_f(queue, self, blocking_work);
    pthread_mutex_lock(&self->lock);
    while (self->finished < self->blocks) pthread_cond_wait(&self->done, &self->lock);
    pthread_mutex_unlock(&self->lock);
    return AH_OK;
}

static ah_status gq_event(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)self; (void)json; (void)len; (void)err; (void)cap;
    return AH_OK;
}

static ah_status gq_plain(ah_instance *self, char *err, size_t cap) {
    (void)self; (void)err; (void)cap;
    return AH_OK;
}

static ah_status gq_update(ah_instance *self, const char *s, size_t len, int32_t kind, char *err, size_t cap) {
    (void)self; (void)s; (void)len; (void)kind; (void)err; (void)cap;
    return AH_OK;
}

static ah_status gq_lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    (void)self; (void)phase; (void)err; (void)cap;
    return AH_OK;
}

static void gq_destroy(ah_instance *self) {
    pthread_mutex_destroy(&self->lock);
    pthread_cond_destroy(&self->done);
    free(self);
}

static ah_instance *gq_create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    (void)host;
    /* POSIX's way to turn dlsym's answer into a function pointer under -pedantic. */
    get_global_fn get_global;
    async_f_fn async_f;
    void *symbol = dlsym(RTLD_DEFAULT, "dispatch_get_global_queue");
    memcpy(&get_global, &symbol, sizeof get_global);
    symbol = dlsym(RTLD_DEFAULT, "dispatch_async_f");
    memcpy(&async_f, &symbol, sizeof async_f);
    if (!get_global || !async_f) {
        snprintf(err, cap, "libdispatch is not loaded in this process");
        return NULL;
    }
    ah_instance *self = calloc(1, sizeof *self);
    if (!self) return NULL;
    self->get_global = get_global;
    self->async_f = async_f;
    self->blocks = (int)setting(settings, len, "blocks", 8);
    self->block_ms = (int)setting(settings, len, "block_ms", 700);
    pthread_mutex_init(&self->lock, NULL);
    pthread_cond_init(&self->done, NULL);
    return self;
}

static const ah_hooks hooks = {
    sizeof(ah_hooks),
    gq_event, gq_track, gq_event, gq_event, gq_event,
    gq_plain, gq_plain, gq_update, gq_destroy, gq_lifecycle,
};

static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "GlobalQueue", "1.0.0", AH_LANGUAGE_C, NULL, gq_create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
