/* Fixture (a library bug on purpose): `create` keeps the host table and starts a thread that
 * `destroy` does NOT stop. The thread waits for one byte on the pipe `trigger_fd` (settings
 * {"trigger_fd": N, "result_fd": M}), then calls every host service through the kept table and
 * writes one line with the results to `result_fd`:
 *   "send=<status> user=<len> anon=<len> ext=<0|1>\n"
 * The test triggers it after `destroy` returned and the host dropped the instance. Built with
 * -DFAIL_CREATE, `create` starts the thread and then fails. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "analytics_plugin.h"

struct ah_instance { int unused; };

struct late_call { const ah_host *host; int trigger_fd; int result_fd; };

static int setting(const char *settings, size_t len, const char *key) {
    size_t k = strlen(key), i;
    for (i = 0; i + k < len; i++)
        if (memcmp(settings + i, key, k) == 0) return atoi(settings + i + k);
    return -1;
}

static void *late(void *arg) {
    struct late_call *call = (struct late_call *)arg;
    const ah_host *host = call->host;
    char byte, user[32], anon[32], line[128];
    const char *event = "{\"type\":\"track\",\"event\":\"Too Late\"}";
    ah_status sent;
    int64_t user_len, anon_len;
    const void *ext = NULL;
    int n;
    if (read(call->trigger_fd, &byte, 1) != 1) return NULL;
    host->log(host->ctx, AH_LOG_INFO, "still here", 10);
    sent = host->send_event(host->ctx, event, strlen(event));
    user_len = host->user_id(host->ctx, user, sizeof user);
    anon_len = host->anonymous_id(host->ctx, anon, sizeof anon);
    if (AH_HAS_FIELD(host, ah_host, get_extension)) ext = host->get_extension(host->ctx, AH_EXT_CLIENT);
    n = snprintf(line, sizeof line, "send=%d user=%lld anon=%lld ext=%d\n", (int)sent, (long long)user_len,
                 (long long)anon_len, ext != NULL);
    if (write(call->result_fd, line, (size_t)n) != n) return NULL;
    free(call);
    return NULL;
}

static void destroy(ah_instance *self) { free(self); /* the thread is left running: the bug */ }

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    struct late_call *call = (struct late_call *)calloc(1, sizeof *call);
    pthread_t thread;
    if (!self || !call) { free(self); free(call); snprintf(err, cap, "out of memory"); return NULL; }
    call->host = host;
    call->trigger_fd = setting(settings, len, "\"trigger_fd\":");
    call->result_fd = setting(settings, len, "\"result_fd\":");
    if (pthread_create(&thread, NULL, late, call) != 0) {
        free(self); free(call); snprintf(err, cap, "pthread_create failed"); return NULL;
    }
    pthread_detach(thread);
#ifdef FAIL_CREATE
    /* Worse still: fail, yet leave the thread holding the table. */
    free(self);
    snprintf(err, cap, "refusing after starting a thread");
    return NULL;
#else
    return self;
#endif
}

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "LateCaller", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
