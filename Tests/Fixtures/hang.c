/* Fixture: a destination whose `track` hook never returns for the event named "Hang" until the
 * test lets it. Settings (file descriptors of pipes the test owns; -1 or absent: unused):
 *   "entered_fd"    `track` writes one byte here when it starts waiting, so the test knows the
 *                   hook is in flight without sleeping;
 *   "release_fd"    `track` waits for one byte from here; absent: it waits for ever;
 *   "destroyed_fd"  `destroy` writes one byte here (the host must not call it on a hung instance).
 * Every other event is accepted at once. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "analytics_plugin.h"

struct ah_instance { int entered_fd, release_fd, destroyed_fd; };

static int contains(const char *text, size_t len, const char *needle) {
    size_t n = strlen(needle), i;
    for (i = 0; i + n <= len; i++)
        if (memcmp(text + i, needle, n) == 0) return 1;
    return 0;
}

static int setting(const char *settings, size_t len, const char *key) {
    size_t k = strlen(key), i;
    for (i = 0; i + k < len; i++)
        if (memcmp(settings + i, key, k) == 0) return atoi(settings + i + k);
    return -1;
}

static ah_status track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    char byte = '!';
    (void)err; (void)cap;
    if (!contains(json, len, "\"event\":\"Hang\"")) return AH_OK;
    if (self->entered_fd >= 0 && write(self->entered_fd, &byte, 1) != 1) return AH_ERR_PERMANENT;
    if (self->release_fd < 0) for (;;) pause();
    if (read(self->release_fd, &byte, 1) != 1) return AH_ERR_PERMANENT;
    return AH_OK;
}

static void destroy(ah_instance *self) {
    char byte = 'd';
    if (self->destroyed_fd >= 0 && write(self->destroyed_fd, &byte, 1) != 1) { /* nothing to do */ }
    free(self);
}

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)malloc(sizeof *self);
    (void)host; (void)err; (void)cap;
    if (!self) return NULL;
    self->entered_fd = setting(settings, len, "\"entered_fd\":");
    self->release_fd = setting(settings, len, "\"release_fd\":");
    self->destroyed_fd = setting(settings, len, "\"destroyed_fd\":");
    return self;
}

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, track, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Hang", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, NULL,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
