/*
 * Console: an analytics-host integration that prints one readable line per event on stderr,
 * for watching what an application sends while developing it.
 *
 *   [analytics] track "Order Completed" userId="u-1" properties={"total":30}
 *   [analytics] identify userId="u-1" traits={"plan":"pro"}
 *   [analytics] alias "u-2" <- "u-1"
 *
 * Settings (the object under "Console" in the settings' "integrations"), all optional:
 *   "prefix"       string   printed first on every line (default "[analytics]")
 *   "showPayload"  bool     append the whole event JSON to each line (default false)
 *
 * Values are printed as their JSON text, so control characters in event data stay escaped and
 * cannot drive the terminal. Long properties/traits are cut at a character boundary.
 * Each line is written with one write(2) call, so lines from concurrent instances do not mix.
 *
 * Threads: the host serializes calls on an instance (header rule); no state is shared between
 * instances.
 *
 * Build: gcc -std=c99 -shared -fPIC -O2 -I include -o libconsole.so Plugins/Console/console.c
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analytics_plugin.h"

#define CONSOLE_VERSION "1.0.0"
#define CONSOLE_MAX_VALUE 300  /* bytes of properties/traits shown before "..." */

struct ah_instance {
    const ah_host *host;
    char prefix[64];
    int show_payload;
    char *line;        /* the line being built, owned */
    size_t used, cap;
};

/* ---- a minimal JSON reader (top-level members of an object) ----------------------------- */

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static const char *skip_string(const char *p, const char *end) {
    for (p++; p < end; p++) {
        if (*p == '\\') { p++; continue; }
        if (*p == '"') return p + 1;
    }
    return NULL;
}

/* The end of the JSON value starting at p, or NULL when malformed. */
static const char *skip_value(const char *p, const char *end) {
    int depth = 0;
    p = skip_ws(p, end);
    if (p >= end) return NULL;
    do {
        if (p >= end) return NULL;
        if (*p == '"') { if (!(p = skip_string(p, end))) return NULL; continue; }
        if (*p == '{' || *p == '[') depth++;
        else if (*p == '}' || *p == ']') depth--;
        else if (depth == 0) {
            while (p < end && !strchr(",}] \t\r\n", *p)) p++;
            return p;
        }
        p++;
    } while (depth > 0);
    return p;
}

/* The text [*start, *stop) of member `name` of the object [p, end); 0 when absent. */
static int member(const char *p, const char *end, const char *name, const char **start, const char **stop) {
    size_t n = strlen(name);
    p = skip_ws(p, end);
    if (p >= end || *p != '{') return 0;
    p++;
    for (;;) {
        const char *key, *key_end, *value_end;
        p = skip_ws(p, end);
        if (p >= end || *p != '"') return 0;
        key = p + 1;
        if (!(key_end = skip_string(p, end))) return 0;
        p = skip_ws(key_end, end);
        if (p >= end || *p != ':') return 0;
        p = skip_ws(p + 1, end);
        if (!(value_end = skip_value(p, end))) return 0;
        if ((size_t)(key_end - 1 - key) == n && memcmp(key, name, n) == 0) {
            *start = p;
            *stop = value_end;
            return 1;
        }
        p = skip_ws(value_end, end);
        if (p >= end || *p != ',') return 0;
        p++;
    }
}

/* ---- line building ----------------------------------------------------------------------- */

static int put(ah_instance *self, const char *text, size_t len) {
    if (self->used + len > self->cap) {
        size_t want = self->used + len;
        size_t cap = want > 2 * self->cap ? want : 2 * self->cap;
        char *grown = (char *)realloc(self->line, cap);
        if (!grown) return -1;
        self->line = grown;
        self->cap = cap;
    }
    memcpy(self->line + self->used, text, len);
    self->used += len;
    return 0;
}

static int puts_(ah_instance *self, const char *text) { return put(self, text, strlen(text)); }

/* Appends ` label=<value>` for member `name` when present; values longer than `limit` bytes are
 * cut at a UTF-8 character boundary and marked with "...". */
static int put_member(ah_instance *self, const char *json, size_t len, const char *name, const char *label, size_t limit) {
    const char *start, *stop;
    size_t n;
    if (!member(json, json + len, name, &start, &stop)) return 0;
    n = (size_t)(stop - start);
    if (label) {
        if (puts_(self, " ") || puts_(self, label) || puts_(self, "=")) return -1;
    } else if (puts_(self, " ")) {
        return -1;
    }
    if (n <= limit) return put(self, start, n);
    while (limit > 0 && ((unsigned char)start[limit] & 0xC0) == 0x80) limit--;
    return put(self, start, limit) || puts_(self, "...");
}

/* Either the userId or, for anonymous users, the anonymousId. */
static int put_identity(ah_instance *self, const char *json, size_t len) {
    const char *start, *stop;
    if (member(json, json + len, "userId", &start, &stop) && !(stop - start == 4 && !memcmp(start, "null", 4)))
        return put_member(self, json, len, "userId", "userId", CONSOLE_MAX_VALUE);
    return put_member(self, json, len, "anonymousId", "anonymousId", CONSOLE_MAX_VALUE);
}

static ah_status emit(ah_instance *self, char *err, size_t cap) {
    size_t done = 0;
    while (done < self->used) {
        ssize_t n = write(STDERR_FILENO, self->line + done, self->used - done);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            snprintf(err, cap, "Console: writing to stderr failed: %s", strerror(errno));
            return AH_ERR_PERMANENT;
        }
        done += (size_t)n;
    }
    return AH_OK;
}

typedef int (*describe_fn)(ah_instance *, const char *, size_t);

static ah_status print_event(ah_instance *self, const char *type, describe_fn describe,
                             const char *json, size_t len, char *err, size_t cap) {
    self->used = 0;
    if (puts_(self, self->prefix) || puts_(self, " ") || puts_(self, type) || describe(self, json, len) ||
        (self->show_payload && (puts_(self, " payload=") || put(self, json, len))) || puts_(self, "\n")) {
        snprintf(err, cap, "Console: out of memory");
        return AH_ERR_RETRYABLE;
    }
    return emit(self, err, cap);
}

/* ---- per type ---------------------------------------------------------------------------- */

static int describe_track(ah_instance *self, const char *json, size_t len) {
    return put_member(self, json, len, "event", NULL, CONSOLE_MAX_VALUE) || put_identity(self, json, len) ||
           put_member(self, json, len, "properties", "properties", CONSOLE_MAX_VALUE);
}
static int describe_identify(ah_instance *self, const char *json, size_t len) {
    return put_identity(self, json, len) || put_member(self, json, len, "traits", "traits", CONSOLE_MAX_VALUE);
}
static int describe_screen(ah_instance *self, const char *json, size_t len) {
    return put_member(self, json, len, "name", NULL, CONSOLE_MAX_VALUE) || put_identity(self, json, len) ||
           put_member(self, json, len, "properties", "properties", CONSOLE_MAX_VALUE);
}
static int describe_group(ah_instance *self, const char *json, size_t len) {
    return put_member(self, json, len, "groupId", NULL, CONSOLE_MAX_VALUE) || put_identity(self, json, len) ||
           put_member(self, json, len, "traits", "traits", CONSOLE_MAX_VALUE);
}
static int describe_alias(ah_instance *self, const char *json, size_t len) {
    return put_member(self, json, len, "userId", NULL, CONSOLE_MAX_VALUE) || puts_(self, " <-") ||
           put_member(self, json, len, "previousId", NULL, CONSOLE_MAX_VALUE);
}
static int describe_nothing(ah_instance *self, const char *json, size_t len) {
    (void)self; (void)json; (void)len;
    return 0;
}

static ah_status console_track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    return print_event(self, "track", describe_track, json, len, err, cap);
}
static ah_status console_identify(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    return print_event(self, "identify", describe_identify, json, len, err, cap);
}
static ah_status console_screen(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    const char *start, *stop;
    int page = member(json, json + len, "type", &start, &stop) && stop - start == 6 && !memcmp(start, "\"page\"", 6);
    return print_event(self, page ? "page" : "screen", describe_screen, json, len, err, cap);
}
static ah_status console_group(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    return print_event(self, "group", describe_group, json, len, err, cap);
}
static ah_status console_alias(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    return print_event(self, "alias", describe_alias, json, len, err, cap);
}
static ah_status console_reset(ah_instance *self, char *err, size_t cap) {
    return print_event(self, "reset", describe_nothing, "", 0, err, cap);
}

/* ---- settings and life ------------------------------------------------------------------- */

/* Applies "prefix" (a plain string; escapes are kept as written) and "showPayload". */
static void apply_settings(ah_instance *self, const char *s, size_t len) {
    const char *start, *stop;
    const char *end = s + len;
    strcpy(self->prefix, "[analytics]");
    self->show_payload = 0;
    if (member(s, end, "prefix", &start, &stop) && *start == '"' && stop - start >= 2) {
        size_t n = (size_t)(stop - start) - 2;
        if (n >= sizeof self->prefix) n = sizeof self->prefix - 1;
        memcpy(self->prefix, start + 1, n);
        self->prefix[n] = 0;
    }
    if (member(s, end, "showPayload", &start, &stop))
        self->show_payload = (stop - start == 4 && !memcmp(start, "true", 4));
}

static ah_status console_update(ah_instance *self, const char *settings, size_t len, int32_t kind, char *err, size_t cap) {
    (void)kind; (void)err; (void)cap;
    apply_settings(self, settings, len);
    return AH_OK;
}

static void console_destroy(ah_instance *self) {
    free(self->line);
    free(self);
}

static ah_instance *console_create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (self) {
        self->cap = 512;
        self->line = (char *)malloc(self->cap);
    }
    if (!self || !self->line) {
        free(self);
        snprintf(err, cap, "Console: out of memory");
        return NULL;
    }
    self->host = host;
    apply_settings(self, settings, len);
    return self;
}

static const ah_hooks console_hooks = {
    sizeof(ah_hooks),
    console_identify, console_track, console_screen, console_group, console_alias,
    console_reset,
    NULL, /* flush: every line is written immediately */
    console_update, console_destroy,
    NULL, /* lifecycle: nothing to do */
};

/* The settings apply_settings reads, declared for the host (AH_EXT_SETTINGS_SCHEMA). */
static const ah_setting console_settings[] = {
    { "prefix", AH_SETTING_STRING, 0, "\"[analytics]\"", "printed first on every line" },
    { "showPayload", AH_SETTING_BOOLEAN, 0, "false", "append the whole event JSON to each line" },
};
static const ah_settings_schema console_settings_schema = {
    sizeof(ah_settings_schema), sizeof(ah_setting), sizeof console_settings / sizeof console_settings[0], 0, console_settings,
};

static const void *console_get_extension(const char *id) {
    return strcmp(id, AH_EXT_SETTINGS_SCHEMA) == 0 ? &console_settings_schema : NULL;
}

static const ah_integration console_integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Console", CONSOLE_VERSION, AH_LANGUAGE_C, NULL,
    console_create, &console_hooks, console_get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;
    return &console_integration;
}
