/* Fixture: an integration that offers the AH_EXT_APPLICATION table and writes one line per call
 * to LOG_PATH ("started", "track", "app <kind> <json>", "stopping", "flush", "destroy"), so a test
 * sees which application events arrived, with what JSON, and in what order with the other hooks.
 * -DFAIL_KIND=n: application_event fails for that kind, with FAIL_STATUS (default AH_ERR_PERMANENT).
 * -DCRASH_KIND=n: application_event segfaults for that kind, after its line (a runner's crash).
 * -DSHORT_TABLE: the table declares a size smaller than its /1 layout (the host must refuse it).
 * -DNOT_DESTINATION: the library's role has no AH_ROLE_DESTINATION (a utility instance). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

#ifndef KEY
#define KEY "AppProbe"
#endif
#ifndef FAIL_STATUS
#define FAIL_STATUS AH_ERR_PERMANENT
#endif
#ifndef LOG_PATH
#define LOG_PATH "/dev/null"
#endif

struct ah_instance {
    FILE *log;
};

static void line(ah_instance *self, const char *text, const char *json, size_t len) {
    fputs(text, self->log);
    if (json) { fputc(' ', self->log); fwrite(json, 1, len, self->log); }
    fputc('\n', self->log);
    fflush(self->log);
}

static ah_status probe_track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    (void)json; (void)len; (void)err; (void)cap;
    line(self, "track", NULL, 0);
    return AH_OK;
}

static ah_status probe_flush(ah_instance *self, char *err, size_t cap) {
    (void)err; (void)cap;
    line(self, "flush", NULL, 0);
    return AH_OK;
}

static ah_status probe_lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    (void)err; (void)cap;
    line(self, phase == AH_LIFECYCLE_STARTED ? "started" : "stopping", NULL, 0);
    return AH_OK;
}

static ah_status probe_application_event(ah_instance *self, int32_t kind, const char *json, size_t len,
                                         char *err, size_t cap) {
    char head[32];
    snprintf(head, sizeof head, "app %d", (int)kind);
    line(self, head, json, len);
#ifdef FAIL_KIND
    if (kind == FAIL_KIND) {
        snprintf(err, cap, "probe refuses kind %d", (int)kind);
        return FAIL_STATUS;
    }
#else
    (void)err; (void)cap;
#endif
#ifdef CRASH_KIND
    if (kind == CRASH_KIND) {
        volatile int *nowhere = NULL;
        *nowhere = 1;
    }
#endif
    return AH_OK;
}

static void probe_destroy(ah_instance *self) {
    line(self, "destroy", NULL, 0);
    fclose(self->log);
    free(self);
}

static ah_instance *probe_create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self;
    (void)host; (void)settings; (void)len;
    self = (ah_instance *)malloc(sizeof *self);
    if (!self) { snprintf(err, cap, "out of memory"); return NULL; }
    self->log = fopen(LOG_PATH, "a");
    if (!self->log) { free(self); snprintf(err, cap, "cannot open %s", LOG_PATH); return NULL; }
    return self;
}

static const ah_hooks hooks = {
    sizeof(ah_hooks),
    NULL, probe_track, NULL, NULL, NULL,
    NULL, probe_flush, NULL, probe_destroy, probe_lifecycle,
};

static const ah_application application = {
#ifdef SHORT_TABLE
    sizeof(uint32_t),
#else
    sizeof(ah_application),
#endif
    probe_application_event,
};

#ifdef NOT_DESTINATION
static const ah_role role = { sizeof(ah_role), AH_ROLE_WHOLE_SETTINGS };
#endif

static const void *probe_get_extension(const char *id) {
    if (strcmp(id, AH_EXT_APPLICATION) == 0) return &application;
#ifdef NOT_DESTINATION
    if (strcmp(id, AH_EXT_ROLE) == 0) return &role;
#endif
    return NULL;
}

static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, KEY, "1.0.0", AH_LANGUAGE_C, NULL, probe_create, &hooks,
    probe_get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &integration;
}
