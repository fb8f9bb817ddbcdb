/* Fixture: a library whose text tries to forge host output and drive the terminal: its log line
 * and its track error carry line breaks, a carriage return and escape sequences. The host must
 * print them escaped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

struct ah_instance { const ah_host *host; };

static ah_status forger_track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    const char *line = "hello\nanalytics-host: forged line\x1b[31m red";
    (void)json; (void)len;
    self->host->log(self->host->ctx, AH_LOG_INFO, line, strlen(line));
    snprintf(err, cap, "bad\rreplaced\x1b]0;title\x07 end");
    return AH_ERR_PERMANENT;
}
static void forger_destroy(ah_instance *self) { free(self); }
static ah_instance *forger_create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)malloc(sizeof *self);
    (void)settings; (void)len; (void)err; (void)cap;
    if (self) self->host = host;
    return self;
}

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, forger_track, NULL, NULL, NULL, NULL, NULL, NULL, forger_destroy, NULL };
static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Forger", "1.0.0", AH_LANGUAGE_C, NULL, forger_create, &hooks, NULL,
};
AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi, char *err, size_t cap) {
    (void)host_abi; (void)err; (void)cap;
    return &integration;
}
