/* Segment event -> Mixpanel records, the way Segment's Mixpanel destinations map them:
 *
 *   track             event = event name, properties = the event's properties plus the context's
 *                     ($os, $app_version_string, $model, $locale, ip, mp_lib, ...); with `people`,
 *                     a `revenue` also appends {"$amount", "$time"} to the profile's $transactions
 *   identify          with userId and anonymousId: a "$identify" event ($identified_id, $anon_id);
 *                     with `people` and traits: a profile update (/engage) with $set (Segment's
 *                     special traits renamed: email -> $email, firstName -> $first_name, ...) and
 *                     $set_once for the traits the settings list
 *   page / screen     "Viewed NAME Page" / "Viewed NAME Screen" (trackNamedPages, default on),
 *                     "Viewed CATEGORY Page" (trackCategorizedPages), "Loaded a Page" / "Loaded a
 *                     Screen" (trackAllPages, or consolidatedPageCalls: every page, name and
 *                     category as properties), else nothing
 *   group             a group profile update (/groups): $group_key, $group_id, $set traits; with
 *                     `people` the user joins it ($union on the user's profile)
 *   alias             with the API secret (/import): "$merge" of previousId and userId; without
 *                     (/track): "$create_alias" {distinct_id: previousId, alias: userId}
 *   ids               distinct_id = userId, else anonymousId; $user_id, $device_id beside it
 *   timestamp         properties.time in milliseconds; messageId: $insert_id (a messageId that
 *                     Mixpanel would not take, more than 36 characters or others than letters,
 *                     digits and '-', becomes a stable 32-digit hash of itself) */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "mixpanel.h"

typedef struct mapper {
    const mp_settings *s;
    const mp_json *doc;
    int root, context, properties;
    mp_buf *out;
    int *count;
    char message_id[256];  /* for reports */
    char insert_id[40];
    char distinct_id[512];
    int user, anonymous;   /* nodes: non-empty userId / anonymousId, or -1 */
    int64_t time_ms;
    char iso_time[40];     /* the event's timestamp as given (for $transactions) */
} mapper;

static void raw(mp_buf *b, const mp_json *doc, int node) { mp_buf_add(b, doc->nodes[node].raw, doc->nodes[node].raw_len); }

/* ,"name":<raw node> when the node exists and is not null. */
static void field(mapper *m, const char *name, int node) {
    if (node < 0 || m->doc->nodes[node].type == MP_J_NULL) return;
    mp_buf_str(m->out, ",\"");
    mp_buf_str(m->out, name);
    mp_buf_str(m->out, "\":");
    raw(m->out, m->doc, node);
}

static void string_field(mp_buf *b, const char *name, const char *value) {
    mp_buf_str(b, ",\"");
    mp_buf_str(b, name);
    mp_buf_str(b, "\":");
    mp_buf_json_string(b, value, strlen(value));
}

static int ctx(mapper *m, const char *path) { return mp_json_path(m->doc, m->context, path); }

/* Days since 1970-01-01 of a civil date (proleptic Gregorian). */
static int64_t days_since_epoch(int64_t y, int64_t mo, int64_t d) {
    int64_t era, yoe, doy, doe;
    y -= mo <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int mp_parse_time_ms(const char *t, int64_t *ms) {
    int y, mo, d, h, mi, s, n = 0;
    int64_t frac = 0, scale = 1000, offset = 0;
    const char *p;
    if (sscanf(t, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) != 6 || n != 19) return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return -1;
    p = t + n;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (scale > 1) { frac = frac * 10 + (*p - '0'); scale /= 10; }
        frac *= scale;
    }
    if (*p == 'Z' || *p == 'z') p++;
    else if (*p == '+' || *p == '-') {
        int oh, om;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2) return -1;
        offset = (int64_t)(oh * 60 + om) * 60 * (*p == '+' ? 1 : -1);
        p += 6;
    } else return -1;
    if (*p) return -1;
    *ms = ((days_since_epoch(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) - offset) * 1000 + frac;
    return 0;
}

/* Mixpanel takes an $insert_id of at most 36 letters, digits and '-': a messageId that is one is
 * kept, any other becomes a hash of itself (the same for every attempt, so retries dedupe). */
static void make_insert_id(const char *message_id, const char *suffix, char out[40]) {
    char joined[600];
    const char *p;
    int fits = 1;
    snprintf(joined, sizeof joined, "%s%s", message_id, suffix);
    for (p = joined; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-')) fits = 0;
    if (fits && p - joined <= 36 && p > joined) { snprintf(out, 40, "%.36s", joined); return; }
    {
        uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
        for (p = joined; *p; p++) {
            a = (a ^ (unsigned char)*p) * 0x100000001b3ull;
            b = (b ^ (unsigned char)*p) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
        }
        snprintf(out, 40, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
    }
}

/* Starts a record for `endpoint`: the marker byte, then the object's opening. */
static void begin(mapper *m, enum mp_endpoint endpoint) {
    char marker = (char)('0' + endpoint);
    mp_buf_add(m->out, &marker, 1);
    mp_buf_add(m->out, "{", 1);
}

static void end(mapper *m) {
    mp_buf_add(m->out, "}", 1);
    mp_buf_add(m->out, "", 1); /* the NUL separator */
    (*m->count)++;
}

/* True when the event's own properties hold `name` (they win over what the context gives). */
static int own(mapper *m, const char *name) { return mp_json_get(m->doc, m->properties, name) >= 0; }

static void context_field(mapper *m, const char *name, const char *path) {
    if (!own(m, name)) field(m, name, ctx(m, path));
}

/* An event record: {"event": NAME, "properties": {time, distinct_id, $insert_id, ids, token,
 * context, then the event's properties}}. `extra` (may be NULL) adds members first. */
static void event_record(mapper *m, const char *name, void (*extra)(mapper *), const char *id_suffix) {
    char id[40], number[32];
    int c, lib = ctx(m, "library.name");
    begin(m, MP_EVENTS);
    mp_buf_str(m->out, "\"event\":");
    mp_buf_json_string(m->out, name, strlen(name));
    mp_buf_str(m->out, ",\"properties\":{\"time\":");
    snprintf(number, sizeof number, "%lld", (long long)m->time_ms);
    mp_buf_str(m->out, number);
    string_field(m->out, "distinct_id", m->distinct_id);
    make_insert_id(m->insert_id, id_suffix, id);
    string_field(m->out, "$insert_id", id);
    string_field(m->out, "token", m->s->token);
    if (m->user >= 0) field(m, "$user_id", m->user);
    if (m->anonymous >= 0) field(m, "$device_id", m->anonymous);
    if (extra) extra(m);
    context_field(m, "ip", "ip");
    context_field(m, "$os", "os.name");
    context_field(m, "$os_version", "os.version");
    context_field(m, "$app_name", "app.name");
    context_field(m, "$app_version_string", "app.version");
    context_field(m, "$app_build_number", "app.build");
    context_field(m, "$app_namespace", "app.namespace");
    context_field(m, "$device", "device.name");
    context_field(m, "$device_type", "device.type");
    context_field(m, "$manufacturer", "device.manufacturer");
    context_field(m, "$model", "device.model");
    context_field(m, "$ios_ifa", "device.advertisingId");
    context_field(m, "$carrier", "network.carrier");
    context_field(m, "$wifi_enabled", "network.wifi");
    context_field(m, "$bluetooth_enabled", "network.bluetooth");
    context_field(m, "$cellular_enabled", "network.cellular");
    context_field(m, "$screen_width", "screen.width");
    context_field(m, "$screen_height", "screen.height");
    context_field(m, "$screen_density", "screen.density");
    context_field(m, "$locale", "locale");
    context_field(m, "$timezone", "timezone");
    context_field(m, "$current_url", "page.url");
    context_field(m, "$referrer", "page.referrer");
    context_field(m, "$lib_version", "library.version");
    context_field(m, "utm_campaign", "campaign.name");
    context_field(m, "utm_source", "campaign.source");
    context_field(m, "utm_medium", "campaign.medium");
    context_field(m, "utm_term", "campaign.term");
    context_field(m, "utm_content", "campaign.content");
    if (!own(m, "mp_lib") && mp_json_nonempty_string(m->doc, lib)) {
        char text[200], label[220];
        mp_json_string(m->doc, lib, text, sizeof text);
        snprintf(label, sizeof label, "Segment: %s", text);
        string_field(m->out, "mp_lib", label);
    }
    if (!own(m, "$source")) string_field(m->out, "$source", "segment");
    if (m->s->source_name[0] && !own(m, "segment_source_name")) string_field(m->out, "segment_source_name", m->s->source_name);
    /* The event's own properties, as they came (numbers and strings byte for byte), except the
     * members this record sets itself. */
    for (c = m->properties >= 0 ? m->doc->nodes[m->properties].first_child : -1; c >= 0; c = m->doc->nodes[c].next) {
        const mp_jnode *k = &m->doc->nodes[c];
        if ((k->key_len == 4 && memcmp(k->key, "time", 4) == 0) || (k->key_len == 11 && memcmp(k->key, "distinct_id", 11) == 0) ||
            (k->key_len == 10 && memcmp(k->key, "$insert_id", 10) == 0) || (k->key_len == 5 && memcmp(k->key, "token", 5) == 0) ||
            (k->key_len == 8 && memcmp(k->key, "$user_id", 8) == 0) || (k->key_len == 10 && memcmp(k->key, "$device_id", 10) == 0))
            continue;
        mp_buf_str(m->out, ",\"");
        mp_buf_add(m->out, k->key, k->key_len);
        mp_buf_str(m->out, "\":");
        raw(m->out, m->doc, c);
    }
    mp_buf_str(m->out, "}");
    end(m);
}

/* A profile update: {"$token", "$distinct_id", "$time", "$ip"?, then the caller's operation}. */
static void profile_begin(mapper *m) {
    char number[32];
    begin(m, MP_ENGAGE);
    mp_buf_str(m->out, "\"$token\":");
    mp_buf_json_string(m->out, m->s->token, strlen(m->s->token));
    string_field(m->out, "$distinct_id", m->distinct_id);
    snprintf(number, sizeof number, ",\"$time\":%lld", (long long)m->time_ms);
    mp_buf_str(m->out, number);
    field(m, "$ip", ctx(m, "ip"));
}

static int listed(const char list[][128], int n, const char *key, size_t len) {
    int i;
    for (i = 0; i < n; i++)
        if (strlen(list[i]) == len && memcmp(list[i], key, len) == 0) return 1;
    return 0;
}

/* Segment's special traits under Mixpanel's reserved profile property names. */
static const char *renamed(const char *key, size_t len) {
    static const char *const pairs[][2] = {
        {"email", "$email"}, {"name", "$name"}, {"firstName", "$first_name"}, {"lastName", "$last_name"},
        {"phone", "$phone"}, {"username", "$username"}, {"created", "$created"}, {"avatar", "$avatar"},
    };
    size_t i;
    for (i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (strlen(pairs[i][0]) == len && memcmp(pairs[i][0], key, len) == 0) return pairs[i][1];
    return NULL;
}

/* Writes "op":{traits} with the traits `once` selects (1: listed in set_once, 0: the others and,
 * without setAllTraitsByDefault, only peopleProperties); returns how many. */
static int trait_object(mapper *m, int traits, const char *op, int once) {
    int c, n = 0;
    for (c = m->doc->nodes[traits].first_child; c >= 0; c = m->doc->nodes[c].next) {
        const mp_jnode *k = &m->doc->nodes[c];
        const char *name;
        int is_once = listed(m->s->set_once, m->s->set_once_count, k->key, k->key_len);
        if (is_once != once) continue;
        if (!once && !m->s->set_all_traits && !listed(m->s->people_properties, m->s->people_properties_count, k->key, k->key_len)) continue;
        if (!n) { mp_buf_str(m->out, ",\""); mp_buf_str(m->out, op); mp_buf_str(m->out, "\":{\""); }
        else mp_buf_str(m->out, ",\"");
        name = renamed(k->key, k->key_len);
        if (name) mp_buf_str(m->out, name);
        else mp_buf_add(m->out, k->key, k->key_len);
        mp_buf_str(m->out, "\":");
        raw(m->out, m->doc, c);
        n++;
    }
    if (n) mp_buf_str(m->out, "}");
    return n;
}

static void identify_extra(mapper *m) {
    field(m, "$identified_id", m->user);
    field(m, "$anon_id", m->anonymous);
}

static int map_identify(mapper *m) {
    int traits = mp_json_typed(m->doc, mp_json_get(m->doc, m->root, "traits"), MP_J_OBJECT);
    int before = *m->count;
    m->properties = -1;
    if (m->user >= 0 && m->anonymous >= 0) event_record(m, "$identify", identify_extra, "");
    if (m->s->people && traits >= 0 && m->doc->nodes[traits].first_child >= 0) {
        /* One operation per profile update, as Mixpanel requires: $set, then $set_once. */
        int once;
        for (once = 0; once <= 1; once++) {
            size_t mark = m->out->len;
            profile_begin(m);
            if (trait_object(m, traits, once ? "$set_once" : "$set", once)) end(m);
            else m->out->len = mark;
        }
    }
    return *m->count > before ? 0 : 1;
}

static int map_track(mapper *m, char *err, size_t cap) {
    int name = mp_json_get(m->doc, m->root, "event");
    int revenue = mp_json_typed(m->doc, mp_json_get(m->doc, m->properties, "revenue"), MP_J_NUMBER);
    char text[1024];
    if (!mp_json_nonempty_string(m->doc, name)) {
        snprintf(err, cap, "Mixpanel: the track event %s has no event name", m->message_id);
        return -1;
    }
    mp_json_string(m->doc, name, text, sizeof text);
    event_record(m, text, NULL, "");
    if (m->s->people && revenue >= 0) {
        profile_begin(m);
        mp_buf_str(m->out, ",\"$append\":{\"$transactions\":{\"$amount\":");
        raw(m->out, m->doc, revenue);
        if (m->iso_time[0]) string_field(m->out, "$time", m->iso_time);
        field(m, "$order_id", mp_json_get(m->doc, m->properties, "order_id"));
        mp_buf_str(m->out, "}}");
        end(m);
    }
    return 0;
}

static void page_extra(mapper *m) {
    int name = mp_json_get(m->doc, m->root, "name"), category = mp_json_get(m->doc, m->root, "category");
    if (!own(m, "name")) field(m, "name", name);
    if (!own(m, "category")) field(m, "category", category);
    if (!own(m, "$current_url")) field(m, "$current_url", mp_json_typed(m->doc, mp_json_get(m->doc, m->properties, "url"), MP_J_STRING));
}

static int map_page(mapper *m, int screen) {
    int name = mp_json_get(m->doc, m->root, "name"), category = mp_json_get(m->doc, m->root, "category");
    char text[600], event[700];
    const char *kind = screen ? "Screen" : "Page";
    if (m->s->consolidated_page_calls) snprintf(event, sizeof event, "Loaded a %s", kind);
    else if (m->s->track_named_pages && mp_json_nonempty_string(m->doc, name)) {
        mp_json_string(m->doc, name, text, sizeof text);
        snprintf(event, sizeof event, "Viewed %s %s", text, kind);
    } else if (!screen && m->s->track_categorized_pages && mp_json_nonempty_string(m->doc, category)) {
        mp_json_string(m->doc, category, text, sizeof text);
        snprintf(event, sizeof event, "Viewed %s %s", text, kind);
    } else if (m->s->track_all_pages) snprintf(event, sizeof event, "Loaded a %s", kind);
    else return 1;
    event_record(m, event, page_extra, "");
    return 0;
}

static int map_group(mapper *m, char *err, size_t cap) {
    int traits = mp_json_typed(m->doc, mp_json_get(m->doc, m->root, "traits"), MP_J_OBJECT);
    int group = mp_json_get(m->doc, m->root, "groupId");
    char key[128] = "group_id", id[512];
    int i;
    if (!mp_json_nonempty_string(m->doc, group)) {
        snprintf(err, cap, "Mixpanel: the group call %s has no groupId", m->message_id);
        return -1;
    }
    mp_json_string(m->doc, group, id, sizeof id);
    /* groupIdentifierTraits: the first listed trait present names the group key, its value the id. */
    for (i = 0; i < m->s->group_traits_count; i++) {
        int t = mp_json_get(m->doc, traits, m->s->group_traits[i]);
        if (mp_json_nonempty_string(m->doc, t)) {
            snprintf(key, sizeof key, "%s", m->s->group_traits[i]);
            mp_json_string(m->doc, t, id, sizeof id);
            break;
        }
    }
    begin(m, MP_GROUPS);
    mp_buf_str(m->out, "\"$token\":");
    mp_buf_json_string(m->out, m->s->token, strlen(m->s->token));
    string_field(m->out, "$group_key", key);
    string_field(m->out, "$group_id", id);
    mp_buf_str(m->out, ",\"$set\":");
    if (traits >= 0) raw(m->out, m->doc, traits);
    else mp_buf_str(m->out, "{}");
    end(m);
    if (m->s->people && m->distinct_id[0]) {
        profile_begin(m);
        mp_buf_str(m->out, ",\"$union\":{");
        mp_buf_json_string(m->out, key, strlen(key));
        mp_buf_str(m->out, ":[");
        mp_buf_json_string(m->out, id, strlen(id));
        mp_buf_str(m->out, "]}");
        end(m);
    }
    return 0;
}

static void merge_extra(mapper *m) {
    int previous = mp_json_get(m->doc, m->root, "previousId");
    mp_buf_str(m->out, ",\"$distinct_ids\":[");
    raw(m->out, m->doc, previous);
    mp_buf_str(m->out, ",");
    raw(m->out, m->doc, m->user);
    mp_buf_str(m->out, "]");
}

static void alias_extra(mapper *m) { field(m, "alias", m->user); }

static int map_alias(mapper *m, char *err, size_t cap) {
    int previous = mp_json_get(m->doc, m->root, "previousId");
    if (!mp_json_nonempty_string(m->doc, previous) || m->user < 0) {
        snprintf(err, cap, "Mixpanel: the alias call %s needs a previousId and a userId", m->message_id);
        return -1;
    }
    m->properties = -1;
    if (m->s->secret[0]) {
        /* $merge's own distinct_id is ignored by Mixpanel; the pair is in $distinct_ids. */
        mp_json_string(m->doc, previous, m->distinct_id, sizeof m->distinct_id);
        event_record(m, "$merge", merge_extra, "");
    } else {
        mp_json_string(m->doc, previous, m->distinct_id, sizeof m->distinct_id);
        event_record(m, "$create_alias", alias_extra, "");
    }
    return 0;
}

int mp_map_event(const mp_settings *s, const char *json, size_t len, mp_buf *out, int *count,
                 char *message_id, size_t message_id_cap, char *err, size_t cap) {
    mp_json doc;
    mapper m;
    char type[32];
    int rc = -1, id, ts;
    memset(&m, 0, sizeof m);
    if (mp_json_parse(&doc, json, len, err, cap) != 0) return -1;
    m.s = s; m.doc = &doc; m.root = 0; m.out = out; m.count = count;
    if (doc.nodes[0].type != MP_J_OBJECT || mp_json_string(&doc, mp_json_get(&doc, 0, "type"), type, sizeof type) != 0) {
        snprintf(err, cap, "Mixpanel: the event is not a Segment event (an object with a \"type\")");
        goto done;
    }
    m.context = mp_json_typed(&doc, mp_json_get(&doc, 0, "context"), MP_J_OBJECT);
    m.properties = mp_json_typed(&doc, mp_json_get(&doc, 0, "properties"), MP_J_OBJECT);
    id = mp_json_get(&doc, 0, "messageId");
    if (mp_json_nonempty_string(&doc, id)) {
        mp_json_string(&doc, id, m.message_id, sizeof m.message_id);
        make_insert_id(m.message_id, "", m.insert_id);
    } else {
        /* No messageId: a hash of the event's text, so that a re-sent copy still dedupes. */
        char text[512];
        snprintf(text, sizeof text, "%.*s", (int)(len < 500 ? len : 500), json);
        make_insert_id(text, "", m.insert_id);
        snprintf(m.message_id, sizeof m.message_id, "without messageId");
    }
    if (message_id_cap) snprintf(message_id, message_id_cap, "%s", m.message_id);
    m.user = mp_json_nonempty_string(&doc, mp_json_get(&doc, 0, "userId")) ? mp_json_get(&doc, 0, "userId") : -1;
    m.anonymous = mp_json_nonempty_string(&doc, mp_json_get(&doc, 0, "anonymousId")) ? mp_json_get(&doc, 0, "anonymousId") : -1;
    if (m.user < 0 && m.anonymous < 0 && strcmp(type, "group") != 0) {
        snprintf(err, cap, "Mixpanel: the event %s has neither userId nor anonymousId (Mixpanel needs a distinct_id)", m.message_id);
        goto done;
    }
    if (m.user >= 0 || m.anonymous >= 0) mp_json_string(&doc, m.user >= 0 ? m.user : m.anonymous, m.distinct_id, sizeof m.distinct_id);
    ts = mp_json_typed(&doc, mp_json_get(&doc, 0, "timestamp"), MP_J_STRING);
    if (ts < 0) ts = mp_json_typed(&doc, mp_json_get(&doc, 0, "originalTimestamp"), MP_J_STRING);
    if (ts >= 0) mp_json_string(&doc, ts, m.iso_time, sizeof m.iso_time);
    if (!m.iso_time[0] || mp_parse_time_ms(m.iso_time, &m.time_ms) != 0) {
        struct timespec now;
        if (m.iso_time[0]) {
            snprintf(err, cap, "Mixpanel: the event %s has a timestamp that is not ISO-8601: \"%s\"", m.message_id, m.iso_time);
            goto done;
        }
        clock_gettime(CLOCK_REALTIME, &now);
        m.time_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    }
    if (strcmp(type, "track") == 0) rc = map_track(&m, err, cap);
    else if (strcmp(type, "identify") == 0) rc = map_identify(&m);
    else if (strcmp(type, "page") == 0) rc = map_page(&m, 0);
    else if (strcmp(type, "screen") == 0) rc = map_page(&m, 1);
    else if (strcmp(type, "group") == 0) {
        if (m.user < 0 && m.anonymous < 0) m.distinct_id[0] = 0;
        rc = map_group(&m, err, cap);
    } else if (strcmp(type, "alias") == 0) rc = map_alias(&m, err, cap);
    else { snprintf(err, cap, "Mixpanel: unknown event type \"%s\"", type); rc = -1; }
    if (rc == 0 && out->failed) { snprintf(err, cap, "Mixpanel: out of memory"); rc = -1; }
done:
    mp_json_free(&doc);
    return rc;
}
