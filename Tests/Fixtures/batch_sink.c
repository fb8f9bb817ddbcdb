/* Fixture: a destination that takes many events per call (ABI 1.3, AH_EXT_BATCH) and no
 * single-event hooks. Each call logs "events n=<count> names=<name of each event>" (the event's
 * "event" member for a track, else its type). An event whose properties hold
 *   "fail":"permanent"   fails permanently ("refused <name>"),
 *   "fail":"once"        fails retryably the first time this instance sees it,
 *   "fail":"all"         makes the whole call answer AH_ERR_RETRYABLE the first time.
 * flush logs "flush". Build with -DMAX_EVENTS=N to ask for at most N events per call. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

#ifndef MAX_EVENTS
#define MAX_EVENTS 0
#endif

struct ah_instance {
    const ah_host *host;
    int failed_once;
    int failed_all;
};

static int contains(const char *json, size_t len, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++) if (memcmp(json + i, needle, n) == 0) return 1;
    return 0;
}

/* Appends the event's name to `out`. */
static void name_of(const char *json, size_t len, char *out, size_t cap) {
    const char *keys[] = {"\"event\":\"", "\"type\":\""};
    for (int k = 0; k < 2; k++) {
        size_t n = strlen(keys[k]);
        for (size_t i = 0; i + n <= len; i++) {
            if (memcmp(json + i, keys[k], n) != 0) continue;
            size_t at = strlen(out), j = i + n;
            while (j < len && json[j] != '"' && at + 1 < cap) out[at++] = json[j++];
            out[at] = 0;
            return;
        }
    }
}

static ah_status events(ah_instance *self, const ah_event_ref *list, size_t count, ah_status *statuses, char *err, size_t cap) {
    char line[4096];
    snprintf(line, sizeof line, "events n=%zu names=", count);
    for (size_t i = 0; i < count; i++) {
        if (i) strncat(line, ",", sizeof line - strlen(line) - 1);
        name_of(list[i].json, list[i].json_len, line, sizeof line);
    }
    self->host->log(self->host->ctx, AH_LOG_INFO, line, strlen(line));
    for (size_t i = 0; i < count; i++) {
        if (contains(list[i].json, list[i].json_len, "\"fail\":\"all\"") && !self->failed_all) {
            self->failed_all = 1;
            snprintf(err, cap, "vendor busy");
            return AH_ERR_RETRYABLE;
        }
    }
    for (size_t i = 0; i < count; i++) {
        if (contains(list[i].json, list[i].json_len, "\"fail\":\"permanent\"")) {
            statuses[i] = AH_ERR_PERMANENT;
            snprintf(err, cap, "refused by the vendor");
        } else if (contains(list[i].json, list[i].json_len, "\"fail\":\"once\"") && !self->failed_once) {
            self->failed_once = 1;
            statuses[i] = AH_ERR_RETRYABLE;
        }
    }
    return AH_OK;
}

static ah_status flush(ah_instance *self, char *err, size_t cap) {
    (void)err; (void)cap;
    self->host->log(self->host->ctx, AH_LOG_INFO, "flush", 5);
    return AH_OK;
}

static void destroy(ah_instance *self) { free(self); }

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    (void)settings; (void)len; (void)err; (void)cap;
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (self) self->host = host;
    return self;
}

static const ah_batch batch = { sizeof(ah_batch), MAX_EVENTS, events };

static const void *get_extension(const char *id) {
    return strcmp(id, AH_EXT_BATCH) == 0 ? &batch : NULL;
}

static const ah_hooks hooks = {
    sizeof(ah_hooks), NULL, NULL, NULL, NULL, NULL, NULL, flush, NULL, destroy, NULL,
};

static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "BatchSink", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
