/*
 * File: an analytics-host integration that appends every event, as one NDJSON line, to a file.
 *
 * Settings (the object under "File" in the settings' "integrations"):
 *   "path"   string, required   the file to append to (created with mode 0644 if missing, and
 *                               its missing directories with mode 0755)
 *   "types"  array of strings   only these event types are written ("track", "identify",
 *                               "screen", "page", "group", "alias"); all of them when absent
 *
 * Lines are collected in a per-instance buffer and written with whole-line write(2) calls on an
 * O_APPEND descriptor, so several instances (or processes) appending to one file never interleave
 * within a line. `flush`, the STOPPING lifecycle phase and `destroy` write the buffer out and
 * fsync the file: after a successful flush the events are on disk.
 *
 * At STOPPING it logs (info) how many of the events it accepted it wrote, and how many of each
 * type its "types" setting left out, so that the host's "delivered" count is explained.
 *
 * Threads: the host serializes calls on an instance (header rule); this library keeps no state
 * outside its instances, so different instances may run concurrently.
 *
 * Build: gcc -std=c99 -shared -fPIC -O2 -I include -o libfile.so Plugins/File/file.c
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analytics_plugin.h"

#define FILE_VERSION "1.0.0"
/* Write the buffer out once it holds this much; a single bigger line grows the buffer. */
#define FILE_DRAIN_THRESHOLD (64 * 1024)

enum {
    TYPE_TRACK = 1 << 0,
    TYPE_IDENTIFY = 1 << 1,
    TYPE_SCREEN = 1 << 2,
    TYPE_PAGE = 1 << 3,
    TYPE_GROUP = 1 << 4,
    TYPE_ALIAS = 1 << 5,
    TYPE_ALL = (1 << 6) - 1
};

struct ah_instance {
    const ah_host *host;
    int fd;
    char *path;        /* owned, NUL-terminated */
    unsigned types;    /* TYPE_* mask of the types written */
    char *buf;         /* pending lines, owned */
    size_t used, cap;
    unsigned long written;          /* events accepted and written (or buffered) */
    unsigned long left_out[6];      /* events accepted but not written, by type index (TYPE_* bit) */
};

static const char *const type_names[6] = { "track", "identify", "screen", "page", "group", "alias" };

/* ---- a minimal JSON reader for the settings object -------------------------------------- */

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* Returns the end of the string token starting at p (which is '"'), or NULL. */
static const char *skip_string(const char *p, const char *end) {
    for (p++; p < end; p++) {
        if (*p == '\\') { p++; continue; }
        if (*p == '"') return p + 1;
    }
    return NULL;
}

/* Returns the end of the JSON value starting at p, or NULL if it is malformed or unterminated. */
static const char *skip_value(const char *p, const char *end) {
    int depth = 0;
    p = skip_ws(p, end);
    if (p >= end) return NULL;
    do {
        if (p >= end) return NULL;
        if (*p == '"') { if (!(p = skip_string(p, end))) return NULL; continue; }
        if (*p == '{' || *p == '[') depth++;
        else if (*p == '}' || *p == ']') depth--;
        else if (depth == 0) {  /* number or literal at top level */
            while (p < end && !strchr(",}] \t\r\n", *p)) p++;
            return p;
        }
        p++;
    } while (depth > 0);
    return p;
}

/* Finds member `name` of the object text [p, end); returns its value's start or NULL. */
static const char *find_member(const char *p, const char *end, const char *name) {
    size_t n = strlen(name);
    p = skip_ws(p, end);
    if (p >= end || *p != '{') return NULL;
    p++;
    for (;;) {
        const char *key, *key_end;
        p = skip_ws(p, end);
        if (p >= end || *p != '"') return NULL;
        key = p + 1;
        if (!(key_end = skip_string(p, end))) return NULL;
        p = skip_ws(key_end, end);
        if (p >= end || *p != ':') return NULL;
        p = skip_ws(p + 1, end);
        if ((size_t)(key_end - 1 - key) == n && memcmp(key, name, n) == 0) return p;
        if (!(p = skip_value(p, end))) return NULL;
        p = skip_ws(p, end);
        if (p >= end || *p != ',') return NULL;
        p++;
    }
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_hex4(const char *p, const char *end, unsigned *out) {
    int i;
    *out = 0;
    if (end - p < 4) return 0;
    for (i = 0; i < 4; i++) {
        int d = hex_digit(p[i]);
        if (d < 0) return 0;
        *out = (*out << 4) | (unsigned)d;
    }
    return 1;
}

/* Decodes the JSON string at p into a new NUL-terminated UTF-8 string (caller frees), or NULL. */
static char *decode_string(const char *p, const char *end) {
    const char *stop;
    char *out, *o;
    if (p >= end || *p != '"' || !(stop = skip_string(p, end))) return NULL;
    if (!(out = (char *)malloc((size_t)(stop - p) + 1))) return NULL;
    for (o = out, p++; p < stop - 1; p++) {
        unsigned cp;
        if (*p != '\\') { *o++ = *p; continue; }
        switch (*++p) {
        case 'n': *o++ = '\n'; break;
        case 't': *o++ = '\t'; break;
        case 'r': *o++ = '\r'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'u':
            if (!read_hex4(p + 1, stop, &cp)) { free(out); return NULL; }
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned low;
                if (p + 2 >= stop || p[1] != '\\' || p[2] != 'u' || !read_hex4(p + 3, stop, &low) ||
                    low < 0xDC00 || low > 0xDFFF) { free(out); return NULL; }
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            if (cp == 0) { free(out); return NULL; }  /* no NUL inside a path */
            if (cp < 0x80) *o++ = (char)cp;
            else if (cp < 0x800) { *o++ = (char)(0xC0 | (cp >> 6)); *o++ = (char)(0x80 | (cp & 0x3F)); }
            else if (cp < 0x10000) {
                *o++ = (char)(0xE0 | (cp >> 12)); *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *o++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *o++ = (char)(0xF0 | (cp >> 18)); *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                *o++ = (char)(0x80 | ((cp >> 6) & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F));
            }
            break;
        default: *o++ = *p; break;  /* \" \\ \/ */
        }
    }
    *o = 0;
    return out;
}

/* ---- settings ---------------------------------------------------------------------------- */

static unsigned type_bit(const char *name) {
    if (!strcmp(name, "track")) return TYPE_TRACK;
    if (!strcmp(name, "identify")) return TYPE_IDENTIFY;
    if (!strcmp(name, "screen")) return TYPE_SCREEN;
    if (!strcmp(name, "page")) return TYPE_PAGE;
    if (!strcmp(name, "group")) return TYPE_GROUP;
    if (!strcmp(name, "alias")) return TYPE_ALIAS;
    return 0;
}

/* Reads "path" (new string in *path) and "types" (mask in *types). Returns 0 or writes err. */
static int parse_settings(const char *s, size_t len, char **path, unsigned *types, char *err, size_t cap) {
    const char *end = s + len, *v;
    *path = NULL;
    *types = TYPE_ALL;
    if (!(v = find_member(s, end, "path")) || !(*path = decode_string(v, end)) || !**path) {
        free(*path);
        *path = NULL;
        snprintf(err, cap, "File: settings need a non-empty \"path\" string");
        return -1;
    }
    if ((v = find_member(s, end, "types")) != NULL) {
        if (*v != '[') goto bad_types;
        *types = 0;
        v = skip_ws(v + 1, end);
        while (v < end && *v != ']') {
            char *name = decode_string(v, end);
            unsigned bit = name ? type_bit(name) : 0;
            if (!bit) {
                snprintf(err, cap, "File: unknown event type \"%s\" in \"types\"", name ? name : "?");
                free(name);
                goto fail;
            }
            free(name);
            *types |= bit;
            v = skip_ws(skip_string(v, end), end);
            if (v < end && *v == ',') v = skip_ws(v + 1, end);
        }
        if (v >= end) goto bad_types;
    }
    return 0;
bad_types:
    snprintf(err, cap, "File: \"types\" must be an array of event type names");
fail:
    free(*path);
    *path = NULL;
    return -1;
}

/* ---- output ------------------------------------------------------------------------------ */

/* Writes the whole buffer out. A failure keeps what was not written and describes itself. */
static ah_status drain(ah_instance *self, char *err, size_t cap) {
    size_t done = 0;
    while (done < self->used) {
        ssize_t n = write(self->fd, self->buf + done, self->used - done);
        if (n < 0) {
            int e = errno;
            if (e == EINTR || e == EAGAIN) continue;
            memmove(self->buf, self->buf + done, self->used - done);
            self->used -= done;
            snprintf(err, cap, "File: writing %s failed: %s", self->path, strerror(e));
            return (e == ENOSPC || e == EDQUOT || e == EIO) ? AH_ERR_RETRYABLE : AH_ERR_PERMANENT;
        }
        done += (size_t)n;
    }
    self->used = 0;
    return AH_OK;
}

static ah_status drain_and_sync(ah_instance *self, char *err, size_t cap) {
    ah_status status = drain(self, err, cap);
    if (status != AH_OK) return status;
    if (fsync(self->fd) != 0 && errno != EINVAL) {  /* EINVAL: a pipe or device, nothing to sync */
        snprintf(err, cap, "File: fsync of %s failed: %s", self->path, strerror(errno));
        return AH_ERR_RETRYABLE;
    }
    return AH_OK;
}

/* Appends one event as one line. Raw newlines cannot occur inside valid JSON strings, so any in
 * the text are formatting whitespace and become spaces. */
static ah_status append(ah_instance *self, unsigned bit, const char *json, size_t len, char *err, size_t cap) {
    size_t i;
    if (!(self->types & bit)) {
        for (i = 0; i < 6; i++) if (bit == 1u << i) self->left_out[i]++;
        return AH_OK;
    }
    if (self->used >= FILE_DRAIN_THRESHOLD) {
        ah_status status = drain(self, err, cap);
        if (status != AH_OK) return status;  /* nothing of this event was buffered: retry is safe */
    }
    if (self->used + len + 1 > self->cap) {
        size_t want = self->used + len + 1;
        char *grown = (char *)realloc(self->buf, want > 2 * self->cap ? want : 2 * self->cap);
        if (!grown) { snprintf(err, cap, "File: out of memory"); return AH_ERR_RETRYABLE; }
        self->buf = grown;
        self->cap = want > 2 * self->cap ? want : 2 * self->cap;
    }
    memcpy(self->buf + self->used, json, len);
    for (i = 0; i < len; i++) {
        char c = self->buf[self->used + i];
        if (c == '\n' || c == '\r') self->buf[self->used + i] = ' ';
    }
    self->used += len;
    self->buf[self->used++] = '\n';
    self->written++;
    return AH_OK;
}

/* Creates the missing directories above the file `path` names (as `mkdir -p` of its parent), so
 * that a fresh checkout's example settings work before anything made build/. Returns 0, or -1
 * with err naming the directory that could not be made. */
static int make_parents(const char *path, char *err, size_t cap) {
    size_t n = strlen(path);
    char *dir = malloc(n + 1);
    if (!dir) { snprintf(err, cap, "File: out of memory"); return -1; }
    memcpy(dir, path, n + 1);
    for (size_t i = 1; i < n; i++) {
        if (dir[i] != '/') continue;
        dir[i] = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            int e = errno;
            snprintf(err, cap, "File: cannot create directory %s for %s: %s", dir, path, strerror(e));
            free(dir);
            return -1;
        }
        dir[i] = '/';
    }
    free(dir);
    return 0;
}

static int open_path(const char *path, char *err, size_t cap) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) {
        if (make_parents(path, err, cap) != 0) return -1;
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    if (fd < 0) snprintf(err, cap, "File: cannot open %s: %s", path, strerror(errno));
    return fd;
}

/* ---- hooks ------------------------------------------------------------------------------- */

/* A screen hook receives "page" events too: tell them apart by the type member. */
static unsigned screen_or_page(const char *json, size_t len) {
    const char *v = find_member(json, json + len, "type");
    return (v && (size_t)(json + len - v) >= 6 && memcmp(v, "\"page\"", 6) == 0) ? TYPE_PAGE : TYPE_SCREEN;
}

static ah_status file_track(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    return append(self, TYPE_TRACK, json, len, err, cap);
}
static ah_status file_identify(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    return append(self, TYPE_IDENTIFY, json, len, err, cap);
}
static ah_status file_screen(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    return append(self, screen_or_page(json, len), json, len, err, cap);
}
static ah_status file_group(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    return append(self, TYPE_GROUP, json, len, err, cap);
}
static ah_status file_alias(ah_instance *self, const char *json, size_t len, char *err, size_t cap) {
    return append(self, TYPE_ALIAS, json, len, err, cap);
}

static ah_status file_flush(ah_instance *self, char *err, size_t cap) {
    return drain_and_sync(self, err, cap);
}

static ah_status file_update(ah_instance *self, const char *settings, size_t len, int32_t kind, char *err, size_t cap) {
    char *path;
    unsigned types;
    (void)kind;
    if (parse_settings(settings, len, &path, &types, err, cap) != 0) return AH_ERR_PERMANENT;
    if (strcmp(path, self->path) != 0) {
        ah_status status = drain_and_sync(self, err, cap);
        int fd;
        if (status != AH_OK) { free(path); return status; }
        if ((fd = open_path(path, err, cap)) < 0) { free(path); return AH_ERR_PERMANENT; }
        close(self->fd);
        self->fd = fd;
        free(self->path);
        self->path = path;
    } else {
        free(path);
    }
    self->types = types;
    return AH_OK;
}

/* "wrote 7 of 9 events to PATH; 2 left out by its "types" setting (group 1, alias 1)" */
static void log_counts(ah_instance *self) {
    char line[512];
    unsigned long left = 0;
    int i, n;
    size_t used;
    for (i = 0; i < 6; i++) left += self->left_out[i];
    n = snprintf(line, sizeof line, "wrote %lu of %lu events to %s", self->written, self->written + left, self->path);
    used = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (left > 0 && used < sizeof line) {
        const char *sep = " (";
        n = snprintf(line + used, sizeof line - used, "; %lu left out by its \"types\" setting", left);
        used += n < 0 ? 0 : (size_t)n;
        for (i = 0; i < 6 && used < sizeof line; i++) {
            if (!self->left_out[i]) continue;
            n = snprintf(line + used, sizeof line - used, "%s%s %lu", sep, type_names[i], self->left_out[i]);
            used += n < 0 ? 0 : (size_t)n;
            sep = ", ";
        }
        if (used < sizeof line) used += (size_t)snprintf(line + used, sizeof line - used, ")");
    }
    if (used >= sizeof line) used = sizeof line - 1;
    self->host->log(self->host->ctx, AH_LOG_INFO, line, used);
}

static ah_status file_lifecycle(ah_instance *self, int32_t phase, char *err, size_t cap) {
    ah_status status;
    if (phase != AH_LIFECYCLE_STOPPING) return AH_OK;
    status = drain_and_sync(self, err, cap);
    if (status == AH_OK) log_counts(self);
    return status;
}

static void file_destroy(ah_instance *self) {
    char err[AH_ERROR_CAPACITY_MIN];
    if (drain_and_sync(self, err, sizeof err) != AH_OK)
        self->host->log(self->host->ctx, AH_LOG_ERROR, err, strlen(err));
    close(self->fd);
    free(self->path);
    free(self->buf);
    free(self);
}

static ah_instance *file_create(const ah_host *host, const char *settings, size_t len, char *err, size_t cap) {
    ah_instance *self = (ah_instance *)calloc(1, sizeof *self);
    if (!self) { snprintf(err, cap, "File: out of memory"); return NULL; }
    self->host = host;
    if (parse_settings(settings, len, &self->path, &self->types, err, cap) != 0) { free(self); return NULL; }
    if ((self->fd = open_path(self->path, err, cap)) < 0) { free(self->path); free(self); return NULL; }
    self->cap = FILE_DRAIN_THRESHOLD;
    if (!(self->buf = (char *)malloc(self->cap))) {
        snprintf(err, cap, "File: out of memory");
        close(self->fd);
        free(self->path);
        free(self);
        return NULL;
    }
    return self;
}

static const ah_hooks file_hooks = {
    sizeof(ah_hooks),
    file_identify, file_track, file_screen, file_group, file_alias,
    NULL, /* reset: nothing per-user is kept */
    file_flush, file_update, file_destroy, file_lifecycle,
};

/* The settings parse_settings reads, declared for the host (AH_EXT_SETTINGS_SCHEMA). */
static const ah_setting file_settings[] = {
    { "path", AH_SETTING_STRING, 1, NULL,
      "the file to append to (created 0644 with its missing directories; relative to the settings file)" },
    { "types", AH_SETTING_ARRAY, 0, NULL,
      "only these event types are written (track, identify, screen, page, group, alias); all when absent" },
};
static const ah_settings_schema file_settings_schema = {
    sizeof(ah_settings_schema), sizeof(ah_setting), sizeof file_settings / sizeof file_settings[0], 0, file_settings,
};

static const void *file_get_extension(const char *id) {
    return strcmp(id, AH_EXT_SETTINGS_SCHEMA) == 0 ? &file_settings_schema : NULL;
}

static const ah_integration file_integration = {
    sizeof(ah_integration), AH_ABI_VERSION, "File", FILE_VERSION, AH_LANGUAGE_C, NULL,
    file_create, &file_hooks, file_get_extension,
};

AH_EXPORT const ah_integration *analytics_host_plugin_v1(uint32_t host_abi_version, char *err, size_t cap) {
    (void)host_abi_version; (void)err; (void)cap;  /* needs nothing newer than 1.0 of the host */
    return &file_integration;
}
