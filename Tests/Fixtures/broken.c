/* Fixture: a library with one deliberate fault, chosen at build time, for the validator:
 *   -DCRASH_IN_CREATE    create dereferences NULL
 *   -DHANG_IN_TRACK      track never returns
 *   -DTHREAD_LEFT        create starts a thread that destroy does not stop
 *   -DCOMPLETE_TWICE     track finishes later and completes its token twice
 *   -DDURABLE_TINY_CAP   asks for the durable queue with a disk cap too small to hold one
 * Without any, it is a well-behaved destination (asking for the durable queue). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "analytics_plugin.h"

struct ah_instance {
    const ah_host *host;
    const ah_host_finish_later *later;
};

#ifdef THREAD_LEFT
static void *forever(void *arg) {
    (void)arg;
    for (;;) sleep(1);
    return NULL;
}
#endif

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)json; (void)len; (void)err; (void)cap;
#ifdef HANG_IN_TRACK
    for (;;) pause();
#endif
#ifdef COMPLETE_TWICE
    uint64_t token = self->later->token(self->host->ctx);
    self->later->complete(self->host->ctx, token, AH_OK, NULL, 0);
    self->later->complete(self->host->ctx, token, AH_OK, NULL, 0);
    return AH_PENDING;
#else
    (void)self;
    return AH_OK;
#endif
}

static void destroy(ah_instance *self) { free(self); }

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    (void)settings; (void)len; (void)err; (void)cap;
#ifdef CRASH_IN_CREATE
    volatile int *nowhere = NULL;
    *nowhere = 1;
#endif
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) return NULL;
    self->host = host;
    self->later = (const ah_host_finish_later *)host->get_extension(host->ctx, AH_EXT_FINISH_LATER);
#ifdef THREAD_LEFT
    pthread_t thread;
    pthread_create(&thread, NULL, forever, NULL);
    pthread_detach(thread);
#endif
    return self;
}

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, track, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL };

#ifdef DURABLE_TINY_CAP
static const ah_durable durable = { sizeof(ah_durable), 0, 1024 };
#else
static const ah_durable durable = { sizeof(ah_durable), 0, 0 };
#endif

static const void *get_extension(const char *id) { return strcmp(id, AH_EXT_DURABLE) == 0 ? &durable : NULL; }

static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Broken", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
