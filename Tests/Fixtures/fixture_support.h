/* What the fixture destinations that write each event to a file share (hostile.c, isolated.c):
 * finding a marker in the event text, reading a string setting without a JSON parser, appending
 * the event as one line with one write(2) (nothing half-written is left when the process dies),
 * and the entry function. Include after analytics_plugin.h. */
#ifndef FIXTURE_SUPPORT_H
#define FIXTURE_SUPPORT_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether needle occurs in the len bytes of text. */
static inline int contains(const char *text, size_t len, const char *needle) {
    size_t n = strlen(needle), i;
    for (i = 0; i + n <= len; i++)
        if (memcmp(text + i, needle, n) == 0) return 1;
    return 0;
}

/* Copies the string value of "key" in the settings text into out (no escapes expected). */
static inline void setting(const char *settings, size_t len, const char *key, char *out, size_t cap) {
    size_t k = strlen(key), i, j = 0;
    out[0] = 0;
    for (i = 0; i + k + 1 < len; i++) {
        if (memcmp(settings + i, key, k) == 0 && settings[i + k] == '"') {
            for (i += k + 1; i < len && settings[i] != '"' && j + 1 < cap; i++) out[j++] = settings[i];
            out[j] = 0;
            return;
        }
    }
}

/* Appends the event and a newline to fd (none: -1) in one write; retryable when it cannot. */
static inline ah_status append_line(int fd, const char *json, size_t len) {
    char *line;
    if (fd < 0) return AH_OK;
    line = malloc(len + 1);
    if (!line) return AH_ERR_RETRYABLE;
    memcpy(line, json, len);
    line[len] = '\n';
    if (write(fd, line, len + 1) != (ssize_t)(len + 1)) { free(line); return AH_ERR_RETRYABLE; }
    free(line);
    return AH_OK;
}

/* The entry function, answering with the fixture's integration. */
#define FIXTURE_ENTRY(integration)                                                                    \
    AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) { \
        (void)host_abi_version; (void)err; (void)cap;                                                 \
        return &(integration);                                                                        \
    }

#endif
