/*
 * live_json.h: growable buffers and the little JSON reading and writing the C side of
 * LivePlugins needs (settings, options, plugin descriptors). Inputs are (pointer, length) views.
 */
#ifndef LIVE_JSON_H
#define LIVE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "live_engine.h"

/* The text [*start, *stop) of member `name` of the JSON object [json, json+len); 0 when the
 * text is not an object or has no such member. */
int live_json_member(const char *json, size_t len, const char *name, const char **start,
                     const char **stop);

/* The value at a dotted path of objects ("edgeFunction.version"); 0 when absent. */
int live_json_path(const char *json, size_t len, const char *path, const char **start,
                   const char **stop);

/* A JSON string value [start, stop) decoded into `out` (NUL-terminated); -1 when not a string
 * or malformed. */
int live_json_string(const char *start, const char *stop, live_buf *out);

/* A JSON number value as a double; -1 when not a number. */
int live_json_number(const char *start, const char *stop, double *out);

/* 1 for true, 0 for false, -1 otherwise. */
int live_json_bool(const char *start, const char *stop);

/* 1 when [start, stop) is the JSON text `literal` (e.g. "null", "{}" after whitespace). */
int live_json_is(const char *start, const char *stop, const char *literal);

/* Calls `each` with every element of a JSON array; -1 when not an array. */
int live_json_array(const char *start, const char *stop,
                    void (*each)(void *ctx, const char *start, const char *stop), void *ctx);

/* Calls `each` with every member of a JSON object: its key as written between the quotes
 * (escapes left as they are) and its value's text; -1 when not an object. */
int live_json_object_keys(const char *start, const char *stop,
                          void (*each)(void *ctx, const char *key, size_t key_len, const char *start, const char *stop),
                          void *ctx);

/* Appends `text` as a JSON string (quoted, escaped) to `out`. */
int live_json_append_string(live_buf *out, const char *text, size_t len);

#endif
