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
    const vendor_json *doc;
    int root, context, properties;
    vendor_buf *out;
    int *count;
    char message_id[256];  /* for reports */
    char insert_id[40];
    char distinct_id[512];
    int user, anonymous;   /* nodes: non-empty userId / anonymousId, or -1 */
    int64_t time_ms;
    char iso_time[40];     /* the event's timestamp as given (for $transactions) */
    int members;           /* members of the record being written */
    int product;           /* node of the product a "Product Purchased" record is written for, or -1 */
    vendor_trimmed trimmed;/* what Mixpanel's limits cut or left out */
} mapper;

/* Mixpanel's documented limits: at most 255 properties per event, names and string values of at
 * most 255 (bytes for values; longer ones Mixpanel truncates), objects nested at most 3 deep. A
 * name longer than that is left out rather than cut (two cut names could merge). */
static const vendor_limits mp_limits = {255, 255, 255, 3, 0};

/* ,"name":<raw node> when the node exists and is not null. */
static void field(mapper *m, const char *name, int node) {
    if (node < 0 || m->doc->nodes[node].type == VENDOR_J_NULL) return;
    if (!vendor_member_fits(m->doc, node, &mp_limits, &m->trimmed)) return;
    vendor_buf_member(m->out, name, strlen(name));
    vendor_buf_value_limited(m->out, m->doc, node, &mp_limits, &m->trimmed);
    m->members++;
}

/* ,"name":"value" as a counted member of the record. */
static void text_field(mapper *m, const char *name, const char *value) {
    vendor_buf_member(m->out, name, strlen(name));
    vendor_buf_json_string(m->out, value, strlen(value));
    m->members++;
}

static void string_field(vendor_buf *b, const char *name, const char *value) {
    vendor_buf_member(b, name, strlen(name));
    vendor_buf_json_string(b, value, strlen(value));
}

static int ctx(mapper *m, const char *path) { return vendor_json_path(m->doc, m->context, path); }

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
static void begin(mapper *m, int endpoint) {
    char marker = (char)('0' + endpoint);
    vendor_buf_add(m->out, &marker, 1);
    vendor_buf_add(m->out, "{", 1);
}

static void end(mapper *m) {
    vendor_buf_add(m->out, "}", 1);
    vendor_buf_add(m->out, "", 1); /* the NUL separator */
    (*m->count)++;
}

/* True when the event's own properties hold `name` (they win over what the context gives). */
static int own(mapper *m, const char *name) { return vendor_json_get(m->doc, m->properties, name) >= 0; }

static void context_field(mapper *m, const char *name, const char *path) {
    int node = ctx(m, path);
    if (node >= 0 && !own(m, name)) field(m, name, node);
}

static void own_members(mapper *m, int obj, int product);

/* An event record: {"event": NAME, "properties": {time, distinct_id, $insert_id, ids, token,
 * context, then the event's properties}}. `extra` (may be NULL) adds members first. */
static void event_record(mapper *m, const char *name, void (*extra)(mapper *), const char *id_suffix) {
    char id[40], number[32];
    int lib = ctx(m, "library.name");
    begin(m, MP_EVENTS);
    m->members = 1; /* time */
    vendor_buf_str(m->out, "\"event\":");
    vendor_buf_json_string(m->out, name, strlen(name));
    vendor_buf_str(m->out, ",\"properties\":{\"time\":");
    snprintf(number, sizeof number, "%lld", (long long)m->time_ms);
    vendor_buf_str(m->out, number);
    text_field(m, "distinct_id", m->distinct_id);
    make_insert_id(m->insert_id, id_suffix, id);
    text_field(m, "$insert_id", id);
    text_field(m, "token", m->s->token);
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
    context_field(m, "timezone", "timezone");
    context_field(m, "mp_country_code", "location.country");
    context_field(m, "$current_url", "page.url");
    context_field(m, "$referrer", "page.referrer");
    context_field(m, "$lib_version", "library.version");
    context_field(m, "utm_campaign", "campaign.name");
    context_field(m, "utm_source", "campaign.source");
    context_field(m, "utm_medium", "campaign.medium");
    context_field(m, "utm_term", "campaign.term");
    context_field(m, "utm_content", "campaign.content");
    if (!own(m, "mp_lib") && vendor_json_nonempty_string(m->doc, lib)) {
        char text[200], label[220];
        vendor_json_string(m->doc, lib, text, sizeof text);
        snprintf(label, sizeof label, "Segment Actions: %s", text);
        text_field(m, "mp_lib", label);
    }
    if (!own(m, "$source")) text_field(m, "$source", "segment");
    if (m->s->source_name[0] && !own(m, "segment_source_name")) text_field(m, "segment_source_name", m->s->source_name);
    /* The event's own properties, as they came (numbers and strings byte for byte), except the
     * members this record sets itself. A "Product Purchased" record has the product's, then the
     * order's but its totals and products (as Segment's trackPurchase). */
    if (m->product >= 0) own_members(m, m->product, -1);
    own_members(m, m->properties, m->product);
    vendor_buf_str(m->out, "}");
    end(m);
}

/* Segment's order-level keys, which a "Product Purchased" record does not repeat. */
static int order_level(const vendor_jnode *k) {
    static const char *const keys[] = {"affiliation", "subtotal", "total", "revenue", "shipping", "tax",
                                       "discount", "coupon", "currency", "order_number", "products"};
    size_t i;
    for (i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strlen(keys[i]) == k->key_len && memcmp(keys[i], k->key, k->key_len) == 0) return 1;
    return 0;
}

/* The members of object `obj` within Mixpanel's limits, but those the record sets itself; with
 * `product` (>= 0), also but the order-level keys and those the product has. */
static void own_members(mapper *m, int obj, int product) {
    int c;
    for (c = obj >= 0 ? m->doc->nodes[obj].first_child : -1; c >= 0; c = m->doc->nodes[c].next) {
        const vendor_jnode *k = &m->doc->nodes[c];
        if (product >= 0) {
            char key[256];
            if (order_level(k)) continue;
            if (k->key_len < sizeof key) {
                memcpy(key, k->key, k->key_len);
                key[k->key_len] = 0;
                if (vendor_json_get(m->doc, product, key) >= 0) continue;
            }
        }
        if ((k->key_len == 4 && memcmp(k->key, "time", 4) == 0) || (k->key_len == 11 && memcmp(k->key, "distinct_id", 11) == 0) ||
            (k->key_len == 10 && memcmp(k->key, "$insert_id", 10) == 0) || (k->key_len == 5 && memcmp(k->key, "token", 5) == 0) ||
            (k->key_len == 8 && memcmp(k->key, "$user_id", 8) == 0) || (k->key_len == 10 && memcmp(k->key, "$device_id", 10) == 0))
            continue;
        if (!vendor_member_fits(m->doc, c, &mp_limits, &m->trimmed)) continue;
        if (m->members >= mp_limits.max_keys) { m->trimmed.keys_dropped++; continue; }
        vendor_buf_member(m->out, k->key, k->key_len);
        vendor_buf_value_limited(m->out, m->doc, c, &mp_limits, &m->trimmed);
        m->members++;
    }
}

/* A profile update: {"$token", "$distinct_id", "$time", "$ip"?, then the caller's operation};
 * `once`: an operation that counts twice if sent twice ($append). */
static void profile_begin(mapper *m, int once) {
    char number[32];
    begin(m, once ? (enum mp_endpoint)MP_ENGAGE_ONCE : MP_ENGAGE);
    vendor_buf_str(m->out, "\"$token\":");
    vendor_buf_json_string(m->out, m->s->token, strlen(m->s->token));
    string_field(m->out, "$distinct_id", m->distinct_id);
    snprintf(number, sizeof number, ",\"$time\":%lld", (long long)m->time_ms);
    vendor_buf_str(m->out, number);
    field(m, "$ip", ctx(m, "ip"));
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
        const vendor_jnode *k = &m->doc->nodes[c];
        const char *name;
        int is_once = vendor_listed(m->s->set_once, m->s->set_once_count, k->key, k->key_len);
        if (is_once != once) continue;
        if (!once && !m->s->set_all_traits && !vendor_listed(m->s->people_properties, m->s->people_properties_count, k->key, k->key_len)) continue;
        if (!vendor_member_fits(m->doc, c, &mp_limits, &m->trimmed)) continue;
        if (!n) { vendor_buf_str(m->out, ",\""); vendor_buf_str(m->out, op); vendor_buf_str(m->out, "\":{\""); }
        else vendor_buf_str(m->out, ",\"");
        name = renamed(k->key, k->key_len);
        if (name) vendor_buf_str(m->out, name);
        else vendor_buf_add(m->out, k->key, k->key_len);
        vendor_buf_str(m->out, "\":");
        vendor_buf_value_limited(m->out, m->doc, c, &mp_limits, &m->trimmed);
        n++;
    }
    if (n) vendor_buf_str(m->out, "}");
    return n;
}

static void identify_extra(mapper *m) {
    field(m, "$identified_id", m->user);
    field(m, "$anon_id", m->anonymous);
}

static int map_identify(mapper *m) {
    int traits = vendor_json_typed(m->doc, vendor_json_get(m->doc, m->root, "traits"), VENDOR_J_OBJECT);
    int before = *m->count;
    m->properties = -1;
    if (m->user >= 0 && m->anonymous >= 0) event_record(m, "$identify", identify_extra, "");
    if (m->s->people && traits >= 0 && m->doc->nodes[traits].first_child >= 0) {
        /* One operation per profile update, as Mixpanel requires: $set, then $set_once. */
        int once;
        for (once = 0; once <= 1; once++) {
            size_t mark = m->out->len;
            profile_begin(m, 0);
            if (trait_object(m, traits, once ? "$set_once" : "$set", once)) end(m);
            else m->out->len = mark;
        }
    }
    return *m->count > before ? 0 : 1;
}

static int map_track(mapper *m, char *err, size_t cap) {
    int name = vendor_json_get(m->doc, m->root, "event");
    int revenue = vendor_json_typed(m->doc, vendor_json_get(m->doc, m->properties, "revenue"), VENDOR_J_NUMBER);
    char text[1024];
    if (!vendor_json_nonempty_string(m->doc, name)) {
        snprintf(err, cap, "Mixpanel: the track event %s has no event name", m->message_id);
        return -1;
    }
    vendor_json_string(m->doc, name, text, sizeof text);
    event_record(m, text, NULL, "");
    if (strcmp(text, "Order Completed") == 0) {
        /* Segment's trackPurchase: one "Product Purchased" per product ($insert_id
         * "<messageId>-2", "-3"...: stable, so a retry dedupes). */
        int products = vendor_json_typed(m->doc, vendor_json_get(m->doc, m->properties, "products"), VENDOR_J_ARRAY);
        int p, n = 1;
        for (p = products >= 0 ? m->doc->nodes[products].first_child : -1; p >= 0; p = m->doc->nodes[p].next) {
            char suffix[16];
            if (m->doc->nodes[p].type != VENDOR_J_OBJECT) continue;
            snprintf(suffix, sizeof suffix, "-%d", ++n);
            m->product = p;
            event_record(m, "Product Purchased", NULL, suffix);
            m->product = -1;
        }
    }
    if (m->s->people && revenue >= 0) {
        profile_begin(m, 1);
        vendor_buf_str(m->out, ",\"$append\":{\"$transactions\":{\"$amount\":");
        vendor_buf_raw(m->out, m->doc, revenue);
        if (m->iso_time[0]) string_field(m->out, "$time", m->iso_time);
        field(m, "$order_id", vendor_json_get(m->doc, m->properties, "order_id"));
        vendor_buf_str(m->out, "}}");
        end(m);
    }
    return 0;
}

static void page_extra(mapper *m) {
    int name = vendor_json_get(m->doc, m->root, "name"), category = vendor_json_get(m->doc, m->root, "category");
    if (!own(m, "name")) field(m, "name", name);
    if (!own(m, "category")) field(m, "category", category);
    if (!own(m, "$current_url")) field(m, "$current_url", vendor_json_typed(m->doc, vendor_json_get(m->doc, m->properties, "url"), VENDOR_J_STRING));
}

static int map_page(mapper *m, int screen) {
    int name = vendor_json_get(m->doc, m->root, "name"), category = vendor_json_get(m->doc, m->root, "category");
    char text[600], event[700];
    const char *kind = screen ? "Screen" : "Page";
    if (!m->s->classic_pages) {
        /* Segment's Actions preset ("Viewed {{name}}"); a page without a name, which the preset
         * would send as "Viewed " with a dangling space, is "Loaded a Page" / "Loaded a Screen". */
        if (vendor_json_nonempty_string(m->doc, name)) {
            vendor_json_string(m->doc, name, text, sizeof text);
            snprintf(event, sizeof event, "Viewed %s", text);
        } else {
            snprintf(event, sizeof event, "Loaded a %s", kind);
        }
    } else if (m->s->consolidated_page_calls) snprintf(event, sizeof event, "Loaded a %s", kind);
    else if (m->s->track_named_pages && vendor_json_nonempty_string(m->doc, name)) {
        vendor_json_string(m->doc, name, text, sizeof text);
        snprintf(event, sizeof event, "Viewed %s %s", text, kind);
    } else if (!screen && m->s->track_categorized_pages && vendor_json_nonempty_string(m->doc, category)) {
        vendor_json_string(m->doc, category, text, sizeof text);
        snprintf(event, sizeof event, "Viewed %s %s", text, kind);
    } else if (m->s->track_all_pages) snprintf(event, sizeof event, "Loaded a %s", kind);
    else return 1;
    event_record(m, event, page_extra, "");
    return 0;
}

/* A group's traits as Segment's Actions destination sets them: `name` as Mixpanel's reserved
 * `$name`, `created` (or `createdAt`, `created_at`) as `$created`; the others as they came. */
static void group_traits(mapper *m, int traits) {
    static const char *const created[] = {"created", "createdAt", "created_at"};
    int c, first = 1, made = -1, i;
    vendor_buf_add(m->out, "{", 1);
    for (i = 0; i < 3 && made < 0; i++) {
        int t = traits >= 0 ? vendor_json_get(m->doc, traits, created[i]) : -1;
        if (t >= 0 && m->doc->nodes[t].type != VENDOR_J_NULL) made = t;
    }
    for (c = traits >= 0 ? m->doc->nodes[traits].first_child : -1; c >= 0; c = m->doc->nodes[c].next) {
        const vendor_jnode *k = &m->doc->nodes[c];
        const char *name = NULL;
        if (k->key_len == 4 && memcmp(k->key, "name", 4) == 0) name = "$name";
        else if ((k->key_len == 7 && memcmp(k->key, "created", 7) == 0) || (k->key_len == 9 && memcmp(k->key, "createdAt", 9) == 0) ||
                 (k->key_len == 10 && memcmp(k->key, "created_at", 10) == 0)) {
            if (c != made) continue;
            name = "$created";
        }
        if (!vendor_member_fits(m->doc, c, &mp_limits, &m->trimmed)) continue;
        if (!first) vendor_buf_add(m->out, ",", 1);
        first = 0;
        vendor_buf_add(m->out, "\"", 1);
        if (name) vendor_buf_str(m->out, name);
        else vendor_buf_add(m->out, k->key, k->key_len);
        vendor_buf_add(m->out, "\":", 2);
        vendor_buf_value_limited(m->out, m->doc, c, &mp_limits, &m->trimmed);
    }
    vendor_buf_add(m->out, "}", 1);
}

static int map_group(mapper *m, char *err, size_t cap) {
    int traits = vendor_json_typed(m->doc, vendor_json_get(m->doc, m->root, "traits"), VENDOR_J_OBJECT);
    int group = vendor_json_get(m->doc, m->root, "groupId");
    char key[128] = "$group_id", id[512];
    int i;
    if (!vendor_json_nonempty_string(m->doc, group)) {
        snprintf(err, cap, "Mixpanel: the group call %s has no groupId", m->message_id);
        return -1;
    }
    vendor_json_string(m->doc, group, id, sizeof id);
    /* groupIdentifierTraits: the first listed trait present names the group key, its value the id. */
    for (i = 0; i < m->s->group_traits_count; i++) {
        int t = vendor_json_get(m->doc, traits, m->s->group_traits[i]);
        if (vendor_json_nonempty_string(m->doc, t)) {
            snprintf(key, sizeof key, "%s", m->s->group_traits[i]);
            vendor_json_string(m->doc, t, id, sizeof id);
            break;
        }
    }
    begin(m, MP_GROUPS);
    vendor_buf_str(m->out, "\"$token\":");
    vendor_buf_json_string(m->out, m->s->token, strlen(m->s->token));
    string_field(m->out, "$group_key", key);
    string_field(m->out, "$group_id", id);
    vendor_buf_str(m->out, ",\"$set\":");
    group_traits(m, traits);
    end(m);
    if (m->s->people && m->distinct_id[0]) {
        profile_begin(m, 0);
        vendor_buf_str(m->out, ",\"$union\":{");
        vendor_buf_json_string(m->out, key, strlen(key));
        vendor_buf_str(m->out, ":[");
        vendor_buf_json_string(m->out, id, strlen(id));
        vendor_buf_str(m->out, "]}");
        end(m);
    }
    return 0;
}

static void merge_extra(mapper *m) {
    int previous = vendor_json_get(m->doc, m->root, "previousId");
    vendor_buf_str(m->out, ",\"$distinct_ids\":[");
    vendor_buf_raw(m->out, m->doc, previous);
    vendor_buf_str(m->out, ",");
    vendor_buf_raw(m->out, m->doc, m->user);
    vendor_buf_str(m->out, "]");
}

static void alias_extra(mapper *m) { field(m, "alias", m->user); }

static int map_alias(mapper *m, char *err, size_t cap) {
    int previous = vendor_json_get(m->doc, m->root, "previousId");
    if (!vendor_json_nonempty_string(m->doc, previous) || m->user < 0) {
        snprintf(err, cap, "Mixpanel: the alias call %s needs a previousId and a userId", m->message_id);
        return -1;
    }
    m->properties = -1;
    if (m->s->secret[0]) {
        /* $merge's own distinct_id is ignored by Mixpanel; the pair is in $distinct_ids. */
        vendor_json_string(m->doc, previous, m->distinct_id, sizeof m->distinct_id);
        event_record(m, "$merge", merge_extra, "");
    } else {
        vendor_json_string(m->doc, previous, m->distinct_id, sizeof m->distinct_id);
        event_record(m, "$create_alias", alias_extra, "");
    }
    return 0;
}

int mp_map_event(const mp_settings *s, const char *json, size_t len, vendor_buf *out, int *count,
                 char *message_id, size_t message_id_cap, char *note, size_t note_cap, char *err, size_t cap) {
    vendor_json doc;
    mapper m;
    char type[32];
    int rc = -1, id, ts;
    memset(&m, 0, sizeof m);
    if (note_cap) note[0] = 0;
    if (vendor_json_parse(&doc, json, len, MP_VENDOR, err, cap) != 0) return -1;
    m.s = s; m.doc = &doc; m.root = 0; m.out = out; m.count = count; m.product = -1;
    if (doc.nodes[0].type != VENDOR_J_OBJECT || vendor_json_string(&doc, vendor_json_get(&doc, 0, "type"), type, sizeof type) != 0) {
        snprintf(err, cap, "Mixpanel: the event is not a Segment event (an object with a \"type\")");
        goto done;
    }
    m.context = vendor_json_typed(&doc, vendor_json_get(&doc, 0, "context"), VENDOR_J_OBJECT);
    m.properties = vendor_json_typed(&doc, vendor_json_get(&doc, 0, "properties"), VENDOR_J_OBJECT);
    id = vendor_json_get(&doc, 0, "messageId");
    if (vendor_json_nonempty_string(&doc, id)) {
        vendor_json_string(&doc, id, m.message_id, sizeof m.message_id);
        make_insert_id(m.message_id, "", m.insert_id);
    } else {
        /* No messageId: a hash of the event's text, so that a re-sent copy still dedupes. */
        char text[512];
        snprintf(text, sizeof text, "%.*s", (int)(len < 500 ? len : 500), json);
        make_insert_id(text, "", m.insert_id);
        snprintf(m.message_id, sizeof m.message_id, "without messageId");
    }
    if (message_id_cap) snprintf(message_id, message_id_cap, "%s", m.message_id);
    m.user = vendor_json_nonempty_string(&doc, vendor_json_get(&doc, 0, "userId")) ? vendor_json_get(&doc, 0, "userId") : -1;
    m.anonymous = vendor_json_nonempty_string(&doc, vendor_json_get(&doc, 0, "anonymousId")) ? vendor_json_get(&doc, 0, "anonymousId") : -1;
    if (m.user < 0 && m.anonymous < 0 && strcmp(type, "group") != 0) {
        snprintf(err, cap, "Mixpanel: the event %s has neither userId nor anonymousId (Mixpanel needs a distinct_id)", m.message_id);
        goto done;
    }
    if (m.user >= 0 || m.anonymous >= 0) vendor_json_string(&doc, m.user >= 0 ? m.user : m.anonymous, m.distinct_id, sizeof m.distinct_id);
    ts = vendor_json_typed(&doc, vendor_json_get(&doc, 0, "timestamp"), VENDOR_J_STRING);
    if (ts < 0) ts = vendor_json_typed(&doc, vendor_json_get(&doc, 0, "originalTimestamp"), VENDOR_J_STRING);
    if (ts >= 0) vendor_json_string(&doc, ts, m.iso_time, sizeof m.iso_time);
    if (!m.iso_time[0] || vendor_parse_time_ms(m.iso_time, &m.time_ms) != 0) {
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
    if (rc == 0 && vendor_trimmed_any(&m.trimmed) && note_cap) {
        char what[400];
        vendor_trimmed_text(&m.trimmed, &mp_limits, what, sizeof what);
        snprintf(note, note_cap, "the event %s was sent within Mixpanel's limits: %s", m.message_id, what);
    }
done:
    vendor_json_free(&doc);
    return rc;
}
