/* Fixture: sends an event from lifecycle(AH_LIFECYCLE_STOPPING) ("Stopping") and from `destroy`
 * ("Destroyed") and writes the statuses send_event answered, one line each, to the pipe
 * "result_fd" of its settings: "stopping=<status>\n", "destroyed=<status>\n". */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "analytics_plugin.h"

struct ah_instance { const ah_host *host; int result_fd; };

static void send_and_note(ah_instance *self, const char *name, const char *label) {
    char event[128], line[64];
    int n = snprintf(event, sizeof event, "{\"type\":\"track\",\"event\":\"%s\",\"properties\":{}}", name);
    ah_status status = self->host->send_event(self->host->ctx, event, (size_t)n);
    n = snprintf(line, sizeof line, "%s=%d\n", label, (int)status);
    if (self->result_fd >= 0 && write(self->result_fd, line, (size_t)n) != n) { /* nothing to do */ }
}

static ah_status lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    (void)err; (void)cap;
    if (phase == AH_LIFECYCLE_STOPPING) send_and_note(self, "Stopping", "stopping");
    return AH_OK;
}

static void destroy(ah_instance *self) {
    send_and_note(self, "Destroyed", "destroyed");
    free(self);
}

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)malloc(sizeof *self);
    const char *key = "\"result_fd\":";
    size_t k = strlen(key), i;
    (void)err; (void)cap;
    if (!self) return NULL;
    self->host = host;
    self->result_fd = -1;
    for (i = 0; i + k < len; i++)
        if (memcmp(settings + i, key, k) == 0) { self->result_fd = atoi(settings + i + k); break; }
    return self;
}

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, destroy, lifecycle };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "StopSender", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
