/*
 * live_engine_jsc.c: live_engine.h on JavaScriptCore's C API (Debian libjavascriptcoregtk-4.1).
 *
 * Limits, as far as JavaScriptCore lets a C embedder enforce them:
 *   - Time: JSContextGroupSetExecutionTimeLimit (exported by the library, not in its public
 *     headers, so declared here) arms JavaScriptCore's watchdog on every entry into the VM from
 *     C; when the limit passes, `should_terminate` answers yes and the running script ends with
 *     an uncatchable termination. The context stays usable. The watchdog's granularity is coarse:
 *     a 50 ms limit stops a loop after 50-100 ms.
 *   - Heap: the C API has no heap cap. JSGetMemoryUsageStatistics (also exported, unpublished)
 *     reports the GC heap (`heapSize` + `extraMemorySize`) as of the last collection;
 *     live_engine_measure_heap collects first. The library checks it between calls (live_heap.h),
 *     it is not a cap: one call can allocate past the bound until its time limit ends it, and
 *     memory outside the GC heap (JIT code, parser buffers) is not counted.
 *   - Sandbox: a bare JSGlobalContext has the ECMAScript built-ins only: no network, no file
 *     system, no module loader (import() rejects), no timers. The one bridge to the library is
 *     `__live_native`, which the runtime prelude captures and deletes from the global object.
 */
#define _GNU_SOURCE
#include <JavaScriptCore/JavaScript.h>
#include <pthread.h>
#include <stdint.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live_engine.h"

/* Exported by libjavascriptcoregtk without a public header. */
extern void JSContextGroupSetExecutionTimeLimit(JSContextGroupRef group, double limit,
                                                bool (*should_terminate)(JSContextRef, void *),
                                                void *context);
extern JSObjectRef JSGetMemoryUsageStatistics(JSContextRef ctx);
extern void JSSynchronousGarbageCollectForDebugging(JSContextRef ctx);
/* Public in JavaScriptCore's GLib API (jsc/jsc.h), declared here to keep to the C API's headers. */
extern int jsc_options_set_boolean(const char *option, int value);

/* The watchdog must reach a script on any thread. By default JavaScriptCore stops JIT code by
 * signalling the thread that runs it; a thread that blocks signals (every libdispatch worker,
 * so every Swift concurrency thread) then never stops, and the signalling thread waits forever
 * (measured here: a hang, or a crash). Polling traps make the code itself check at loop edges
 * and calls: no signals. Options must be set before the first VM exists (in a process where
 * something else started JavaScriptCore first, this may come too late: said in docs/liveplugins.md). */
static pthread_once_t options_once = PTHREAD_ONCE_INIT;
static void set_options(void) { jsc_options_set_boolean("usePollingTraps", 1); }

#define LIVE_CACHED_FUNCTIONS 8

struct live_engine {
    pthread_mutex_t lock;
    JSContextGroupRef group;
    JSGlobalContextRef context;
    JSClassRef native_class;
    live_engine_config config;
    double current_limit;
    int timed_out;               /* set by the watchdog callback during a call */
    JSChar *wide;                /* UTF-16 of the input being passed in (reused by every call) */
    size_t wide_cap;             /* in JSChars */
    struct { char *name; JSObjectRef function; } cache[LIVE_CACHED_FUNCTIONS];
    int cached;
};

/* ---- strings ---------------------------------------------------------------------------- */

/* Strings cross as UTF-16, converted here. JavaScriptCore's own UTF-8 entry points
 * (JSStringCreateWithUTF8CString, JSStringGetUTF8CString) decode one character at a time through
 * a generic converter: measured at about 3 µs each way for a 560-byte event, more than the
 * JSON.parse and JSON.stringify of that event together. These loops copy ASCII runs eight bytes
 * at a time and decode the rest; bad UTF-8 becomes U+FFFD (JavaScriptCore's entry point gave an
 * empty string for the whole text), as does a lone surrogate on the way out (JSON.stringify
 * escapes those, so events never carry one). */

static const uint64_t high_bits = 0x8080808080808080ull;

#ifdef __SSE2__
/* Whether no bit of `mask` is set in `v`. */
static inline int none_set_sse2(__m128i v, __m128i mask) {
    return _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(v, mask), _mm_setzero_si128())) == 0xFFFF;
}
#endif

/* The UTF-16 of UTF-8 `text` into e->wide; its length in JSChars, or (size_t)-1 out of memory. */
static size_t utf8_to_wide(live_engine *e, const char *text, size_t len) {
    if (len + 1 > e->wide_cap) {
        size_t cap = e->wide_cap ? e->wide_cap : 1024;
        while (cap < len + 1) cap *= 2;
        JSChar *grown = realloc(e->wide, cap * sizeof *grown);
        if (!grown) return (size_t)-1;
        e->wide = grown;
        e->wide_cap = cap;
    }
    const unsigned char *p = (const unsigned char *)text, *end = p + len;
    JSChar *o = e->wide;
    while (p < end) {
#ifdef __SSE2__
        while (end - p >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            if (_mm_movemask_epi8(v)) break;
            _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi8(v, _mm_setzero_si128()));
            _mm_storeu_si128((__m128i *)(o + 8), _mm_unpackhi_epi8(v, _mm_setzero_si128()));
            o += 16;
            p += 16;
        }
#endif
        while (end - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            if (w & high_bits) break;
            for (int i = 0; i < 8; i++) o[i] = p[i];
            o += 8;
            p += 8;
        }
        if (p >= end) break;
        unsigned c = *p;
        if (c < 0x80) { *o++ = (JSChar)c; p++; continue; }
        unsigned cp = 0xFFFD;
        size_t n = 1;
        if (c >= 0xC2 && c < 0xE0 && end - p >= 2 && (p[1] & 0xC0) == 0x80) {
            cp = (c & 0x1F) << 6 | (p[1] & 0x3F);
            n = 2;
        } else if (c >= 0xE0 && c < 0xF0 && end - p >= 3 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80) {
            unsigned v = (c & 0x0F) << 12 | (p[1] & 0x3F) << 6 | (p[2] & 0x3F);
            if (v >= 0x800 && (v < 0xD800 || v > 0xDFFF)) { cp = v; n = 3; }
        } else if (c >= 0xF0 && c < 0xF5 && end - p >= 4 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80 &&
                   (p[3] & 0xC0) == 0x80) {
            unsigned v = (c & 0x07) << 18 | (p[1] & 0x3F) << 12 | (p[2] & 0x3F) << 6 | (p[3] & 0x3F);
            if (v >= 0x10000 && v <= 0x10FFFF) { cp = v; n = 4; }
        }
        if (cp >= 0x10000) {
            *o++ = (JSChar)(0xD800 + ((cp - 0x10000) >> 10));
            *o++ = (JSChar)(0xDC00 + ((cp - 0x10000) & 0x3FF));
        } else {
            *o++ = (JSChar)cp;
        }
        p += n;
    }
    return (size_t)(o - e->wide);
}

/* JSString from UTF-8 (text, len), not necessarily NUL-terminated. */
static JSStringRef make_string(live_engine *e, const char *text, size_t len) {
    size_t n = utf8_to_wide(e, text, len);
    if (n == (size_t)-1) return NULL;
    return JSStringCreateWithCharacters(e->wide, n);
}

/* The UTF-8 of `s` into `out` (replacing its contents, NUL-terminated). */
static int string_to_buf(JSStringRef s, live_buf *out) {
    size_t n = JSStringGetLength(s);
    if (live_buf_reserve(out, n * 3 + 1)) return -1;
    const JSChar *c = n ? JSStringGetCharactersPtr(s) : NULL;
    unsigned char *o = (unsigned char *)out->data;
    size_t i = 0;
    while (i < n) {
#ifdef __SSE2__
        /* Sixteen ASCII characters at a time. */
        while (n - i >= 16) {
            __m128i a = _mm_loadu_si128((const __m128i *)(c + i)), b = _mm_loadu_si128((const __m128i *)(c + i + 8));
            __m128i ascii_mask = _mm_set1_epi16((short)0xFF80);
            if (!none_set_sse2(_mm_or_si128(a, b), ascii_mask)) break;
            _mm_storeu_si128((__m128i *)o, _mm_packus_epi16(a, b));
            o += 16;
            i += 16;
        }
#endif
        /* Four ASCII characters at a time. */
        while (n - i >= 4) {
            uint64_t w;
            memcpy(&w, c + i, 8);
            if (w & 0xFF80FF80FF80FF80ull) break;
            o[0] = (unsigned char)c[i];
            o[1] = (unsigned char)c[i + 1];
            o[2] = (unsigned char)c[i + 2];
            o[3] = (unsigned char)c[i + 3];
            o += 4;
            i += 4;
        }
        if (i >= n) break;
        unsigned u = c[i++];
        if (u < 0x80) {
            *o++ = (unsigned char)u;
        } else if (u < 0x800) {
            *o++ = (unsigned char)(0xC0 | u >> 6);
            *o++ = (unsigned char)(0x80 | (u & 0x3F));
        } else if (u >= 0xD800 && u < 0xDC00 && i < n && c[i] >= 0xDC00 && c[i] < 0xE000) {
            unsigned cp = 0x10000 + ((u - 0xD800) << 10) + (c[i++] - 0xDC00);
            *o++ = (unsigned char)(0xF0 | cp >> 18);
            *o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            *o++ = (unsigned char)(0x80 | (cp & 0x3F));
        } else {
            if (u >= 0xD800 && u < 0xE000) u = 0xFFFD;  /* a lone surrogate */
            *o++ = (unsigned char)(0xE0 | u >> 12);
            *o++ = (unsigned char)(0x80 | ((u >> 6) & 0x3F));
            *o++ = (unsigned char)(0x80 | (u & 0x3F));
        }
    }
    out->len = (size_t)(o - (unsigned char *)out->data);
    out->data[out->len] = 0;
    return 0;
}

static void value_to_text(JSContextRef ctx, JSValueRef v, char *dst, size_t cap) {
    dst[0] = 0;
    if (!v) return;
    JSStringRef s = JSValueToStringCopy(ctx, v, NULL);
    if (!s) { snprintf(dst, cap, "(unprintable value)"); return; }
    JSStringGetUTF8CString(s, dst, cap);
    JSStringRelease(s);
}

static JSValueRef get_property(JSContextRef ctx, JSObjectRef object, const char *name) {
    JSStringRef key = JSStringCreateWithUTF8CString(name);
    JSValueRef v = JSObjectGetProperty(ctx, object, key, NULL);
    JSStringRelease(key);
    return v;
}

static void describe_exception(live_engine *e, JSValueRef exception, const char *file,
                               live_js_error *error) {
    if (!error) return;
    memset(error, 0, sizeof *error);
    if (e->timed_out) {
        snprintf(error->message, sizeof error->message, "timed out after %.0f ms (stopped)",
                 e->current_limit * 1000);
    } else {
        value_to_text(e->context, exception, error->message, sizeof error->message);
    }
    if (file) snprintf(error->file, sizeof error->file, "%s", file);
    if (exception && JSValueIsObject(e->context, exception)) {
        JSObjectRef o = JSValueToObject(e->context, exception, NULL);
        JSValueRef line = get_property(e->context, o, "line");
        if (line && JSValueIsNumber(e->context, line))
            error->line = (int)JSValueToNumber(e->context, line, NULL);
        JSValueRef url = get_property(e->context, o, "sourceURL");
        if (url && JSValueIsString(e->context, url))
            value_to_text(e->context, url, error->file, sizeof error->file);
    }
}

/* ---- the native bridge ------------------------------------------------------------------ */

static JSValueRef native_call(JSContextRef ctx, JSObjectRef function, JSObjectRef self,
                              size_t argc, const JSValueRef argv[], JSValueRef *exception) {
    (void)self;
    live_engine *e = JSObjectGetPrivate(function);
    char op[64];
    live_buf args[2] = {{0}, {0}};
    const char *a[2] = {NULL, NULL};
    size_t a_len[2] = {0, 0};
    if (!e || argc < 1) return JSValueMakeUndefined(ctx);
    value_to_text(ctx, argv[0], op, sizeof op);
    for (size_t i = 0; i < 2 && i + 1 < argc; i++) {
        JSValueRef v = argv[i + 1];
        if (JSValueIsNull(ctx, v) || JSValueIsUndefined(ctx, v)) continue;
        JSStringRef s = JSValueToStringCopy(ctx, v, exception);
        if (!s) goto done;
        int failed = string_to_buf(s, &args[i]);
        JSStringRelease(s);
        if (failed) goto done;
        a[i] = args[i].data;
        a_len[i] = args[i].len;
    }
    live_buf out = {0};
    int out_null = 0;
    int rc = e->config.native(e->config.native_ctx, op, a[0], a_len[0], a[1], a_len[1], &out, &out_null);
    JSValueRef answer = JSValueMakeUndefined(ctx);
    if (rc != 0) {
        JSStringRef m = JSStringCreateWithUTF8CString(out.data ? out.data : "native call failed");
        JSValueRef msg = JSValueMakeString(ctx, m);
        JSStringRelease(m);
        *exception = JSObjectMakeError(ctx, 1, &msg, NULL);
    } else if (out_null) {
        answer = JSValueMakeNull(ctx);
    } else if (out.data) {
        JSStringRef s = JSStringCreateWithUTF8CString(out.data);
        answer = JSValueMakeString(ctx, s);
        JSStringRelease(s);
    }
    live_buf_free(&out);
    live_buf_free(&args[0]);
    live_buf_free(&args[1]);
    return answer;
done:
    live_buf_free(&args[0]);
    live_buf_free(&args[1]);
    return JSValueMakeUndefined(ctx);
}

static bool should_terminate(JSContextRef ctx, void *context) {
    (void)ctx;
    live_engine *e = context;
    e->timed_out = 1;
    return true;
}

static void set_limit(live_engine *e, double seconds) {
    if (seconds == e->current_limit) return;
    if (seconds > 0)
        JSContextGroupSetExecutionTimeLimit(e->group, seconds, should_terminate, e);
    else
        JSContextGroupSetExecutionTimeLimit(e->group, 1e9, should_terminate, e);
    e->current_limit = seconds;
}

/* ---- lifecycle -------------------------------------------------------------------------- */

const char *live_engine_name(void) { return "JavaScriptCore (javascriptcoregtk-4.1)"; }

live_engine *live_engine_create(const live_engine_config *config, char *err, size_t err_cap) {
    live_engine *e = calloc(1, sizeof *e);
    if (!e) { snprintf(err, err_cap, "out of memory"); return NULL; }
    pthread_once(&options_once, set_options);
    e->config = *config;
    pthread_mutex_init(&e->lock, NULL);
    e->group = JSContextGroupCreate();
    if (!e->group) { snprintf(err, err_cap, "JavaScriptCore: cannot create a context group"); goto fail; }
    e->context = JSGlobalContextCreateInGroup(e->group, NULL);
    if (!e->context) { snprintf(err, err_cap, "JavaScriptCore: cannot create a context"); goto fail; }
    e->current_limit = -1;
    set_limit(e, config->time_limit_seconds);

    JSClassDefinition def = kJSClassDefinitionEmpty;
    def.className = "LiveNative";
    def.callAsFunction = native_call;
    e->native_class = JSClassCreate(&def);
    JSObjectRef native = JSObjectMake(e->context, e->native_class, e);
    JSStringRef name = JSStringCreateWithUTF8CString("__live_native");
    JSObjectSetProperty(e->context, JSContextGetGlobalObject(e->context), name, native,
                        kJSPropertyAttributeDontEnum, NULL);
    JSStringRelease(name);
    return e;
fail:
    live_engine_destroy(e);
    return NULL;
}

void live_engine_destroy(live_engine *e) {
    if (!e) return;
    for (int i = 0; i < e->cached; i++) {
        JSValueUnprotect(e->context, e->cache[i].function);
        free(e->cache[i].name);
    }
    if (e->context) JSGlobalContextRelease(e->context);
    if (e->native_class) JSClassRelease(e->native_class);
    if (e->group) JSContextGroupRelease(e->group);
    free(e->wide);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

void live_engine_lock(live_engine *e) { pthread_mutex_lock(&e->lock); }
void live_engine_unlock(live_engine *e) { pthread_mutex_unlock(&e->lock); }

/* ---- running code ----------------------------------------------------------------------- */

live_outcome live_engine_eval(live_engine *e, const char *source, size_t len, const char *file_name,
                              double time_limit, live_js_error *error) {
    JSStringRef script = make_string(e, source, len);
    JSStringRef url = JSStringCreateWithUTF8CString(file_name ? file_name : "script");
    if (!script) {
        JSStringRelease(url);
        if (error) snprintf(error->message, sizeof error->message, "out of memory");
        return LIVE_THREW;
    }
    set_limit(e, time_limit > 0 ? time_limit : e->config.time_limit_seconds);
    e->timed_out = 0;
    JSValueRef exception = NULL;
    JSEvaluateScript(e->context, script, NULL, url, 1, &exception);
    JSStringRelease(script);
    JSStringRelease(url);
    live_outcome outcome = LIVE_VALUE;
    if (exception || e->timed_out) {
        describe_exception(e, exception, file_name, error);
        outcome = e->timed_out ? LIVE_TIMED_OUT : LIVE_THREW;
    }
    set_limit(e, e->config.time_limit_seconds);
    return outcome;
}

static JSObjectRef find_function(live_engine *e, const char *name) {
    for (int i = 0; i < e->cached; i++)
        if (strcmp(e->cache[i].name, name) == 0) return e->cache[i].function;
    JSValueRef v = get_property(e->context, JSContextGetGlobalObject(e->context), name);
    if (!v || !JSValueIsObject(e->context, v)) return NULL;
    JSObjectRef f = JSValueToObject(e->context, v, NULL);
    if (!f || !JSObjectIsFunction(e->context, f)) return NULL;
    if (e->cached < LIVE_CACHED_FUNCTIONS) {
        char *copy = strdup(name);
        if (copy) {
            JSValueProtect(e->context, f);
            e->cache[e->cached].name = copy;
            e->cache[e->cached].function = f;
            e->cached++;
        }
    }
    return f;
}

live_outcome live_engine_call(live_engine *e, const char *function, int64_t id, const char *json,
                              size_t json_len, int string_arg, const char *extra, size_t extra_len,
                              live_buf *result, live_js_error *error) {
    JSContextRef ctx = e->context;
    JSObjectRef f = find_function(e, function);
    if (!f) {
        if (error) {
            memset(error, 0, sizeof *error);
            snprintf(error->message, sizeof error->message, "no function %s", function);
        }
        return LIVE_NO_FUNCTION;
    }
    JSValueRef argv[3];
    size_t argc = 0;
    if (id >= 0) argv[argc++] = JSValueMakeNumber(ctx, (double)id);
    if (json) {
        JSStringRef s = make_string(e, json, json_len);
        if (!s) goto oom;
        JSValueRef v = string_arg ? JSValueMakeString(ctx, s) : JSValueMakeFromJSONString(ctx, s);
        JSStringRelease(s);
        if (!v) {
            if (error) {
                memset(error, 0, sizeof *error);
                snprintf(error->message, sizeof error->message, "argument is not valid JSON");
            }
            return LIVE_THREW;
        }
        argv[argc++] = v;
    } else {
        argv[argc++] = JSValueMakeUndefined(ctx);
    }
    if (extra && string_arg) {
        JSStringRef s = make_string(e, extra, extra_len);
        if (!s) goto oom;
        argv[argc++] = JSValueMakeString(ctx, s);
        JSStringRelease(s);
    }
    e->timed_out = 0;
    JSValueRef exception = NULL;
    JSValueRef r = JSObjectCallAsFunction(ctx, f, NULL, argc, argv, &exception);
    if (exception || e->timed_out || !r) {
        describe_exception(e, exception, NULL, error);
        return e->timed_out ? LIVE_TIMED_OUT : LIVE_THREW;
    }
    /* One call for the type (every C API call takes and releases the VM's lock). */
    JSType type = JSValueGetType(ctx, r);
    if (type == kJSTypeNull || type == kJSTypeUndefined) return LIVE_NOTHING;
    if (!result) return LIVE_VALUE;
    JSStringRef text;
    if (string_arg && type == kJSTypeString) {
        text = JSValueToStringCopy(ctx, r, NULL);
    } else {
        text = JSValueCreateJSONString(ctx, r, 0, &exception);
    }
    if (!text) {
        if (exception) describe_exception(e, exception, NULL, error);
        else if (error) {
            memset(error, 0, sizeof *error);
            snprintf(error->message, sizeof error->message, "the value has no JSON form");
        }
        return LIVE_NOT_JSON;
    }
    int failed = string_to_buf(text, result);
    JSStringRelease(text);
    if (failed) goto oom;
    return LIVE_VALUE;
oom:
    if (error) {
        memset(error, 0, sizeof *error);
        snprintf(error->message, sizeof error->message, "out of memory");
    }
    return LIVE_THREW;
}

static double number_property(JSContextRef ctx, JSObjectRef o, const char *name) {
    JSValueRef v = get_property(ctx, o, name);
    return v && JSValueIsNumber(ctx, v) ? JSValueToNumber(ctx, v, NULL) : 0;
}

static size_t heap_size(live_engine *e) {
    JSObjectRef stats = JSGetMemoryUsageStatistics(e->context);
    if (!stats) return 0;
    return (size_t)(number_property(e->context, stats, "heapSize") +
                    number_property(e->context, stats, "extraMemorySize"));
}

int live_engine_check_heap(live_engine *e, size_t *heap_bytes) {
    size_t size = heap_size(e);
    if (e->config.max_heap_bytes && size > e->config.max_heap_bytes) {
        JSSynchronousGarbageCollectForDebugging(e->context);
        size = heap_size(e);
    }
    if (heap_bytes) *heap_bytes = size;
    return e->config.max_heap_bytes && size > e->config.max_heap_bytes;
}

size_t live_engine_measure_heap(live_engine *e) {
    /* The statistics are updated by collections only: collect first, or they are stale. */
    JSSynchronousGarbageCollectForDebugging(e->context);
    return heap_size(e);
}
