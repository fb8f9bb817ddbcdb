/*
 * Redact: masks personal data in every event before anything else sees it. An example of an
 * ABI 1.2 library that is not a destination: it adds one timeline plugin (AH_EXT_TIMELINE) at the
 * start of the client's timeline instead of receiving events.
 *
 * Settings: the library's own object in the settings' "integrations", read from the whole
 * settings document (role AH_ROLE_WHOLE_SETTINGS, so it is created even when the settings do not
 * name it; then it masks nothing; `"Redact": false` switches it off):
 *
 *   "integrations": {
 *     "Redact": {
 *       "paths": ["properties.email", "traits.phone", "context.ip"],
 *       "mask": "[REDACTED]"
 *     }
 *   }
 *
 * A path is a dot-separated list of object member names from the top of the event; the member's
 * value, whatever it is (string, number, object...), becomes the mask (a string, default
 * "[REDACTED]"). Events without any of the paths pass unchanged, without a copy. A settings
 * refresh takes effect at once. Up to 64 paths of up to 255 bytes each; names with JSON escapes
 * are compared as written.
 *
 * Thread rules: the plugin is AH_PLUGIN_THREAD_SAFE (its configuration is read-only while events
 * flow); the host never runs `update` at the same time as `process`, so swapping the
 * configuration there needs no lock.
 *
 * Build: gcc -std=c99 -shared -fPIC -O2 -I include -o libredact.so Plugins/Redact/redact.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "analytics_plugin.h"

#define MAX_PATHS 64
#define MAX_PATH_BYTES 255
#define MAX_DEPTH 64
#define DEFAULT_MASK "[REDACTED]"

struct config {
    int count;
    char paths[MAX_PATHS][MAX_PATH_BYTES + 1];
    char mask_json[512];  /* the mask as a JSON string literal, quotes included */
    size_t mask_len;
};

struct ah_instance {
    const ah_host *host;
    const ah_host_timeline *timeline;
    uint64_t plugin_id;
    struct config *config;  /* replaced whole by `update` */
};

static void say(ah_instance *self, int level, const char *fmt, const char *arg) {
    char line[512];
    int n = snprintf(line, sizeof line, fmt, arg);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = (int)sizeof line - 1;
    self->host->log(self->host->ctx, level, line, (size_t)n);
}

/* ---- A minimal JSON scanner: finds values, never builds a tree. ---- */

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* `p` at '"': returns the position after the closing quote, or NULL. */
static const char *skip_string(const char *p, const char *end) {
    for (p++; p < end; p++) {
        if (*p == '\\') { p++; continue; }
        if (*p == '"') return p + 1;
    }
    return NULL;
}

/* Returns the position after the value starting at `p`, or NULL if it is not valid enough. */
static const char *skip_value(const char *p, const char *end, int depth) {
    p = skip_ws(p, end);
    if (p >= end || depth > MAX_DEPTH) return NULL;
    if (*p == '"') return skip_string(p, end);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = skip_ws(p + 1, end);
        if (p < end && *p == close) return p + 1;
        while (p < end) {
            if (close == '}') {
                p = skip_ws(p, end);
                if (p >= end || *p != '"' || !(p = skip_string(p, end))) return NULL;
                p = skip_ws(p, end);
                if (p >= end || *p != ':') return NULL;
                p++;
            }
            if (!(p = skip_value(p, end, depth + 1))) return NULL;
            p = skip_ws(p, end);
            if (p < end && *p == ',') { p++; continue; }
            if (p < end && *p == close) return p + 1;
            return NULL;
        }
        return NULL;
    }
    /* number, true, false, null */
    const char *start = p;
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' && *p != '\t' && *p != '\r') p++;
    return p > start ? p : NULL;
}

/* `obj` at '{': the value of member `name` (raw bytes compared), or NULL. */
static const char *find_member(const char *obj, const char *end, const char *name, size_t name_len) {
    const char *p = skip_ws(obj, end);
    if (p >= end || *p != '{') return NULL;
    p = skip_ws(p + 1, end);
    while (p < end && *p == '"') {
        const char *key = p + 1;
        const char *after = skip_string(p, end);
        if (!after) return NULL;
        size_t key_len = (size_t)(after - 1 - key);
        p = skip_ws(after, end);
        if (p >= end || *p != ':') return NULL;
        p = skip_ws(p + 1, end);
        if (key_len == name_len && memcmp(key, name, name_len) == 0) return p;
        if (!(p = skip_value(p, end, 1))) return NULL;
        p = skip_ws(p, end);
        if (p < end && *p == ',') p = skip_ws(p + 1, end);
    }
    return NULL;
}

/* The value at a dotted path from the top-level object, with its end in *value_end; or NULL. */
static const char *find_path(const char *json, const char *end, const char *path, const char **value_end) {
    const char *value = json;
    while (*path) {
        const char *dot = strchr(path, '.');
        size_t len = dot ? (size_t)(dot - path) : strlen(path);
        if (!(value = find_member(value, end, path, len))) return NULL;
        path += len + (dot ? 1 : 0);
    }
    *value_end = skip_value(value, end, 0);
    return *value_end ? value : NULL;
}

/* Copies a JSON string literal's contents (simple escapes decoded, \u kept as written). */
static int read_string(const char *p, const char *end, char *out, size_t cap) {
    const char *close = (p < end && *p == '"') ? skip_string(p, end) : NULL;
    size_t n = 0;
    if (!close) return 0;
    for (p++; p < close - 1 && n + 1 < cap; p++) {
        char c = *p;
        if (c == '\\' && p + 1 < close - 1) {
            c = *++p;
            if (c == 'n') c = '\n'; else if (c == 't') c = '\t'; else if (c == 'r') c = '\r';
            else if (c == 'b') c = '\b'; else if (c == 'f') c = '\f';
            else if (c == 'u') { out[n++] = '\\'; if (n + 1 >= cap) break; }
        }
        out[n++] = c;
    }
    out[n] = 0;
    return 1;
}

/* Writes `text` as a JSON string literal. */
static size_t json_quote(const char *text, char *out, size_t cap) {
    size_t n = 0;
    out[n++] = '"';
    for (; *text && n + 8 < cap; text++) {
        unsigned char c = (unsigned char)*text;
        if (c == '"' || c == '\\') { out[n++] = '\\'; out[n++] = (char)c; }
        else if (c < 0x20) n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
        else out[n++] = (char)c;
    }
    out[n++] = '"';
    out[n] = 0;
    return n;
}

/* ---- Configuration ---- */

/* Reads integrations.Redact from the whole settings document. Never fails: what it cannot use
 * is left out, and logged unless `quiet` (the host repeats the settings in the first `update`). */
static struct config *read_config(ah_instance *self, const char *settings, size_t len, int quiet) {
    struct config *c = (struct config *)calloc(1, sizeof *c);
    const char *end = settings + len, *own_end = NULL, *paths_end = NULL, *mask_end = NULL;
    char mask[256] = DEFAULT_MASK;
    if (!c) return NULL;
    const char *own = find_path(settings, end, "integrations.Redact", &own_end);
    if (own && *own == '{') {
        const char *paths = find_path(own, own_end, "paths", &paths_end);
        if (paths && *paths == '[') {
            const char *p = skip_ws(paths + 1, paths_end);
            while (p < paths_end && *p != ']') {
                const char *next = skip_value(p, paths_end, 1);
                if (!next) break;
                if (c->count < MAX_PATHS && *p == '"' && read_string(p, next, c->paths[c->count], sizeof c->paths[0])
                    && c->paths[c->count][0]) {
                    c->count++;
                } else if (!quiet) {
                    say(self, AH_LOG_WARN, "%s", "a path that is not a non-empty string (or more than 64) is ignored");
                }
                p = skip_ws(next, paths_end);
                if (p < paths_end && *p == ',') p = skip_ws(p + 1, paths_end);
            }
        } else if (paths && !quiet) {
            say(self, AH_LOG_WARN, "%s", "\"paths\" must be an array of strings; nothing is masked");
        }
        const char *m = find_path(own, own_end, "mask", &mask_end);
        if (m && !read_string(m, mask_end, mask, sizeof mask) && !quiet) say(self, AH_LOG_WARN, "%s", "\"mask\" must be a string");
    }
    c->mask_len = json_quote(mask, c->mask_json, sizeof c->mask_json);
    for (int i = 0; i < c->count && !quiet; i++) say(self, AH_LOG_INFO, "masking %s", c->paths[i]);
    return c;
}

/* ---- The timeline plugin ---- */

struct span { const char *start, *end; };

static int by_start(const void *a, const void *b) {
    const struct span *x = (const struct span *)a, *y = (const struct span *)b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int32_t process(void *ctx, const char *json, size_t len, const ah_event_output *out, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)ctx;
    const struct config *c = self->config;
    const char *end = json + len;
    struct span spans[MAX_PATHS];
    int found = 0;
    if (!c || c->count == 0) return AH_EVENT_KEEP;
    for (int i = 0; i < c->count; i++) {
        const char *value_end = NULL;
        const char *value = find_path(json, end, c->paths[i], &value_end);
        if (value) { spans[found].start = value; spans[found].end = value_end; found++; }
    }
    if (found == 0) return AH_EVENT_KEEP;  /* the common case: no copy at all */
    qsort(spans, (size_t)found, sizeof spans[0], by_start);

    char *copy = (char *)malloc(len + (size_t)found * c->mask_len + 1);
    if (!copy) { snprintf(err, cap, "out of memory"); return AH_EVENT_ERROR; }
    size_t n = 0;
    const char *from = json;
    for (int i = 0; i < found; i++) {
        if (spans[i].start < from) continue;  /* inside a value already masked */
        memcpy(copy + n, from, (size_t)(spans[i].start - from));
        n += (size_t)(spans[i].start - from);
        memcpy(copy + n, c->mask_json, c->mask_len);
        n += c->mask_len;
        from = spans[i].end;
    }
    memcpy(copy + n, from, (size_t)(end - from));
    n += (size_t)(end - from);
    ah_status st = out->write(out->ctx, copy, n);
    free(copy);  /* the host copied it */
    if (st != AH_OK) { snprintf(err, cap, "the host refused the masked event"); return AH_EVENT_ERROR; }
    return AH_EVENT_REPLACE;
}

static void plugin_update(void *ctx, const char *settings, size_t len, int32_t kind) {
    ah_instance *self = (ah_instance *)ctx;
    struct config *next = read_config(self, settings, len, 0);
    (void)kind;
    if (!next) return;  /* keep the old configuration */
    free(self->config);
    self->config = next;
}

/* ---- The instance ---- */

static ah_instance *create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    if (!AH_HAS_FIELD(host, ah_host, get_extension)) { snprintf(err, cap, "needs a host with ABI 1.2"); return NULL; }
    const ah_host_timeline *timeline = (const ah_host_timeline *)host->get_extension(host->ctx, AH_EXT_TIMELINE);
    if (!timeline) { snprintf(err, cap, "the host offers no %s", AH_EXT_TIMELINE); return NULL; }
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) { snprintf(err, cap, "out of memory"); return NULL; }
    self->host = host;
    self->timeline = timeline;
    self->config = read_config(self, settings, len, 1);

    ah_timeline_plugin plugin;
    memset(&plugin, 0, sizeof plugin);
    plugin.size = sizeof plugin;
    plugin.type = AH_PLUGIN_BEFORE;
    plugin.flags = AH_PLUGIN_THREAD_SAFE;
    plugin.name = "Redact";
    plugin.ctx = self;
    plugin.process = process;
    plugin.update = plugin_update;
    /* No release: the plugin lives as long as the instance, and the host removes it before
     * `destroy`, which frees everything. */
    if (timeline->add(host->ctx, &plugin, &self->plugin_id, err, cap) != AH_OK) {
        free(self->config);
        free(self);
        return NULL;
    }
    return self;
}

static void destroy(ah_instance *self) {
    free(self->config);
    free(self);
}

static const ah_hooks hooks = { sizeof(ah_hooks), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, destroy, NULL };

static const ah_role role = { sizeof(ah_role), AH_ROLE_WHOLE_SETTINGS };

/* The settings of its own object (integrations.Redact), declared for the host (AH_EXT_SETTINGS_SCHEMA). */
static const ah_setting redact_settings[] = {
    { "paths", AH_SETTING_ARRAY, 0, "[]", "dot-separated member paths from the top of the event whose values are masked (up to 64)" },
    { "mask", AH_SETTING_STRING, 0, "\"" DEFAULT_MASK "\"", "what each masked value becomes" },
};
static const ah_settings_schema settings_schema = {
    sizeof(ah_settings_schema), sizeof(ah_setting), sizeof redact_settings / sizeof redact_settings[0], 0, redact_settings,
};

static const void *get_extension(const char *id) {
    if (strcmp(id, AH_EXT_SETTINGS_SCHEMA) == 0) return &settings_schema;
    return strcmp(id, AH_EXT_ROLE) == 0 ? &role : NULL;
}

static const ah_integration integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "Redact", "1.0.0", AH_LANGUAGE_C, NULL, create, &hooks, get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    if (AH_ABI_VERSION_MAJOR(host_abi_version) != 1 || AH_ABI_VERSION_MINOR(host_abi_version) < 2) {
        snprintf(err, cap, "Redact needs ABI 1.2 or newer (host speaks %u.%u)", (unsigned)AH_ABI_VERSION_MAJOR(host_abi_version),
                 (unsigned)AH_ABI_VERSION_MINOR(host_abi_version));
        return NULL;
    }
    return &integration;
}
