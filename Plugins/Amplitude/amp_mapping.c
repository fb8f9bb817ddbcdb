/* Segment event -> Amplitude HTTP V2 events, the way Segment's Amplitude destination maps them:
 *
 *   track             event_type = event, event_properties = properties; revenue, price,
 *                     quantity, productId, revenueType from properties (revenue = price x
 *                     quantity when both are numbers); "Order Completed" with products adds one
 *                     "Product Purchased" event per product (insert_id "<messageId>-<n>")
 *   identify          "$identify" with user_properties {"$set", "$setOnce", "$add"}
 *   page / screen     "Viewed NAME Page" / "Viewed NAME Screen" (trackNamedPages, default on),
 *                     "Loaded a Page" / "Loaded a Screen" (trackAllPages), else nothing
 *   group             "$identify" with groups {type: value} and the membership in user_properties,
 *                     then "$groupidentify" with group_properties {"$set": traits}
 *   alias             nothing: Amplitude's HTTP API has no alias (its user-mapping API is a
 *                     separate, paid feature)
 *   userId / anonymousId   user_id / device_id (context.device.id first, as Segment does)
 *   timestamp         time (ms); messageId: insert_id; context: app_version, platform, os_name,
 *                     os_version, device_*, carrier, country, region, city, location_lat/lng,
 *                     language, ip, idfa/adid */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "amplitude.h"

typedef struct mapper {
    const amp_settings *s;
    const vendor_json *doc;
    int root, context;
    vendor_buf *out;
    char message_id[256];
    vendor_trimmed trimmed; /* what Amplitude's limits cut or left out */
} mapper;

/* Amplitude's documented limits on an event's properties (event, user and group properties
 * alike): at most 1,024 of them, strings cut at 1,024 characters. A name longer than that is
 * left out rather than cut (two cut names could merge). No nesting limit is documented. */
static const vendor_limits amp_limits = {1024, 1024, 1024, 0, 1};

/* ,"name":<raw value of node> when the node exists with the given type (-1: any but null). */
static void field(mapper *m, const char *name, int node, int type) {
    if (node < 0) return;
    if (type >= 0 && m->doc->nodes[node].type != (enum vendor_jtype)type) return;
    if (m->doc->nodes[node].type == VENDOR_J_NULL) return;
    vendor_buf_member(m->out, name, strlen(name));
    vendor_buf_raw(m->out, m->doc, node);
}

static int ctx(mapper *m, const char *path) { return vendor_json_path(m->doc, m->context, path); }

/* The fields every Amplitude event of this Segment event carries. `suffix` (may be NULL) makes
 * the insert_id of a second event from the same message distinct and stable. */
static int common(mapper *m, const char *suffix, char *err, size_t cap) {
    int user = vendor_json_get(m->doc, m->root, "userId");
    int device = ctx(m, "device.id");
    int ts = vendor_json_typed(m->doc, vendor_json_get(m->doc, m->root, "timestamp"), VENDOR_J_STRING);
    int type_node = ctx(m, "device.type");
    int os = ctx(m, "os.name");
    int ad = ctx(m, "device.advertisingId");
    char text[64];
    if (!vendor_json_nonempty_string(m->doc, device)) device = vendor_json_get(m->doc, m->root, "anonymousId");
    if (!vendor_json_nonempty_string(m->doc, user)) user = -1;
    if (!vendor_json_nonempty_string(m->doc, device)) device = -1;
    if (user < 0 && device < 0) {
        snprintf(err, cap, "Amplitude: the event %s has neither userId nor anonymousId (Amplitude needs user_id or device_id)",
                 m->message_id[0] ? m->message_id : "without messageId");
        return -1;
    }
    field(m, "user_id", user, VENDOR_J_STRING);
    field(m, "device_id", device, VENDOR_J_STRING);
    if (ts >= 0 && vendor_json_string(m->doc, ts, text, sizeof text) == 0) {
        int64_t ms;
        if (vendor_parse_time_ms(text, &ms) == 0) {
            char num[32];
            snprintf(num, sizeof num, ",\"time\":%lld", (long long)ms);
            vendor_buf_str(m->out, num);
        }
    }
    if (m->message_id[0]) {
        char id[300];
        snprintf(id, sizeof id, "%s%s%s", m->message_id, suffix ? "-" : "", suffix ? suffix : "");
        vendor_buf_str(m->out, ",\"insert_id\":");
        vendor_buf_json_string(m->out, id, strlen(id));
    }
    vendor_buf_str(m->out, ",\"library\":\"" AMP_LIBRARY "/" AMP_VERSION "\"");
    /* platform: Amplitude's spelling of the device type (iOS, Android); Web for analytics.js. */
    if (vendor_json_nonempty_string(m->doc, type_node) && vendor_json_string(m->doc, type_node, text, sizeof text) == 0) {
        const char *platform = strcmp(text, "ios") == 0 ? "iOS" : strcmp(text, "android") == 0 ? "Android" : text;
        vendor_buf_str(m->out, ",\"platform\":");
        vendor_buf_json_string(m->out, platform, strlen(platform));
    } else {
        int lib = ctx(m, "library.name");
        if (lib >= 0 && vendor_json_string(m->doc, lib, text, sizeof text) == 0 && strcmp(text, "analytics.js") == 0)
            vendor_buf_str(m->out, ",\"platform\":\"Web\"");
    }
    field(m, "app_version", ctx(m, "app.version"), VENDOR_J_STRING);
    field(m, "os_name", os, VENDOR_J_STRING);
    field(m, "os_version", ctx(m, "os.version"), VENDOR_J_STRING);
    field(m, "device_brand", ctx(m, "device.brand"), VENDOR_J_STRING);
    field(m, "device_manufacturer", ctx(m, "device.manufacturer"), VENDOR_J_STRING);
    field(m, "device_model", ctx(m, "device.model"), VENDOR_J_STRING);
    field(m, "carrier", ctx(m, "network.carrier"), VENDOR_J_STRING);
    field(m, "country", ctx(m, "location.country"), VENDOR_J_STRING);
    field(m, "region", ctx(m, "location.region"), VENDOR_J_STRING);
    field(m, "city", ctx(m, "location.city"), VENDOR_J_STRING);
    field(m, "location_lat", ctx(m, "location.latitude"), VENDOR_J_NUMBER);
    field(m, "location_lng", ctx(m, "location.longitude"), VENDOR_J_NUMBER);
    field(m, "language", ctx(m, "locale"), VENDOR_J_STRING);
    {
        /* Only the event's own address: "$remote" asks Amplitude to locate the event at the
         * sender's address (docs/vendors/amplitude.md, "Geolocation"), so it is never passed on. */
        int ip = ctx(m, "ip");
        if (ip >= 0 && !(m->doc->nodes[ip].raw_len == 9 && memcmp(m->doc->nodes[ip].raw, "\"$remote\"", 9) == 0))
            field(m, "ip", ip, VENDOR_J_STRING);
    }
    if (vendor_json_nonempty_string(m->doc, ad) && vendor_json_string(m->doc, os, text, sizeof text) == 0) {
        if (strcmp(text, "iOS") == 0 || strcmp(text, "iPadOS") == 0) field(m, "idfa", ad, VENDOR_J_STRING);
        else if (strcmp(text, "Android") == 0) field(m, "adid", ad, VENDOR_J_STRING);
    }
    return 0;
}

/* ,"name":value with the shortest text that reads back as the same double (19.99, not
 * 19.990000000000002). */
static void number_field(vendor_buf *b, const char *name, double value) {
    char num[40];
    /* 15 significant digits read back exactly for almost every product of two prices; 17 always. */
    snprintf(num, sizeof num, "%.15g", value);
    if (strtod(num, NULL) != value) {
        int digits;
        for (digits = 16; digits <= 17; digits++) {
            snprintf(num, sizeof num, "%.*g", digits, value);
            if (strtod(num, NULL) == value) break;
        }
    }
    vendor_buf_member(b, name, strlen(name));
    vendor_buf_str(b, num);
}

/* revenue, price, quantity, productId, revenueType from an object (properties or a product). */
static void revenue_fields(mapper *m, int obj) {
    const vendor_json *doc = m->doc;
    int revenue = vendor_json_typed(doc, vendor_json_get(doc, obj, "revenue"), VENDOR_J_NUMBER);
    int price = vendor_json_typed(doc, vendor_json_get(doc, obj, "price"), VENDOR_J_NUMBER);
    int quantity = vendor_json_typed(doc, vendor_json_get(doc, obj, "quantity"), VENDOR_J_NUMBER);
    int product = vendor_json_get(doc, obj, "productId");
    int type = vendor_json_typed(doc, vendor_json_get(doc, obj, "revenueType"), VENDOR_J_STRING);
    double p, q;
    if (!vendor_json_nonempty_string(doc, product)) product = vendor_json_get(doc, obj, "product_id");
    if (revenue < 0 && price < 0) return;
    if (price >= 0 && quantity >= 0 && vendor_json_number(doc, price, &p) == 0 && vendor_json_number(doc, quantity, &q) == 0) {
        number_field(m->out, "revenue", p * q);
    } else {
        field(m, "revenue", revenue, VENDOR_J_NUMBER);
    }
    field(m, "price", price, VENDOR_J_NUMBER);
    if (quantity >= 0 && vendor_json_number(doc, quantity, &q) == 0) {
        char num[48];
        snprintf(num, sizeof num, ",\"quantity\":%lld", (long long)llround(q));
        vendor_buf_str(m->out, num);
    }
    field(m, "productId", product, VENDOR_J_STRING);
    if (type >= 0) field(m, "revenueType", type, VENDOR_J_STRING);
    else vendor_buf_str(m->out, ",\"revenueType\":\"Purchase\"");
}

static void end_event(mapper *m, int *count) {
    vendor_buf_add(m->out, "}", 1);
    vendor_buf_add(m->out, "\0", 1);
    (*count)++;
}

/* {"$set":{...},"$setOnce":{...},"$add":{...}} from traits, by the settings' lists. */
static void user_properties(mapper *m, int traits) {
    const char *ops[3] = {"$set", "$setOnce", "$add"};
    int op, c, first_op = 1, written = 0;
    vendor_buf_str(m->out, ",\"user_properties\":{");
    for (op = 0; op < 3; op++) {
        int first = 1;
        for (c = traits >= 0 ? m->doc->nodes[traits].first_child : -1; c >= 0; c = m->doc->nodes[c].next) {
            const vendor_jnode *n = &m->doc->nodes[c];
            int in_once = vendor_listed(m->s->set_once, m->s->set_once_count, n->key, n->key_len);
            int in_add = n->type == VENDOR_J_NUMBER && vendor_listed(m->s->increment, m->s->increment_count, n->key, n->key_len);
            int which = in_add ? 2 : in_once ? 1 : 0;
            if (which != op) continue;
            if (!vendor_member_fits(m->doc, c, &amp_limits, &m->trimmed)) continue;
            if (++written > amp_limits.max_keys) { m->trimmed.keys_dropped++; continue; }
            if (first) {
                if (!first_op) vendor_buf_add(m->out, ",", 1);
                vendor_buf_str(m->out, "\"");
                vendor_buf_str(m->out, ops[op]);
                vendor_buf_str(m->out, "\":{");
                first = 0;
                first_op = 0;
            } else {
                vendor_buf_add(m->out, ",", 1);
            }
            vendor_buf_add(m->out, "\"", 1);
            vendor_buf_add(m->out, n->key, n->key_len);
            vendor_buf_add(m->out, "\":", 2);
            vendor_buf_value_limited(m->out, m->doc, c, &amp_limits, &m->trimmed);
        }
        if (!first) vendor_buf_add(m->out, "}", 1);
    }
    if (first_op) vendor_buf_str(m->out, "\"$set\":{}");
    vendor_buf_add(m->out, "}", 1);
}

static void properties_field(mapper *m, const char *name, int obj) {
    vendor_buf_member(m->out, name, strlen(name));
    vendor_buf_limited(m->out, m->doc, obj, &amp_limits, &m->trimmed);
}

static int map_track(mapper *m, int *count, char *err, size_t cap) {
    int name = vendor_json_get(m->doc, m->root, "event");
    int props = vendor_json_typed(m->doc, vendor_json_get(m->doc, m->root, "properties"), VENDOR_J_OBJECT);
    int products = vendor_json_typed(m->doc, vendor_json_get(m->doc, props, "products"), VENDOR_J_ARRAY);
    char text[64];
    int purchase = 0, p, n = 1;
    if (!vendor_json_nonempty_string(m->doc, name)) {
        snprintf(err, cap, "Amplitude: the track event %s has no event name", m->message_id[0] ? m->message_id : "without messageId");
        return -1;
    }
    if (vendor_json_string(m->doc, name, text, sizeof text) == 0 && strcmp(text, "Order Completed") == 0 &&
        products >= 0 && m->doc->nodes[products].first_child >= 0)
        purchase = 1;
    vendor_buf_str(m->out, "{\"event_type\":");
    vendor_buf_raw(m->out, m->doc, name);
    if (common(m, NULL, err, cap) != 0) return -1;
    properties_field(m, "event_properties", props);
    if (!(purchase && m->s->track_revenue_per_product)) revenue_fields(m, props);
    end_event(m, count);
    if (!purchase) return 0;
    for (p = m->doc->nodes[products].first_child; p >= 0; p = m->doc->nodes[p].next) {
        char suffix[16];
        if (m->doc->nodes[p].type != VENDOR_J_OBJECT) continue;
        snprintf(suffix, sizeof suffix, "%d", ++n);
        vendor_buf_str(m->out, "{\"event_type\":\"Product Purchased\"");
        if (common(m, suffix, err, cap) != 0) return -1;
        properties_field(m, "event_properties", p);
        if (m->s->track_revenue_per_product) revenue_fields(m, p);
        end_event(m, count);
    }
    return 0;
}

static int map_page(mapper *m, int screen, int *count, char *err, size_t cap) {
    int name = vendor_json_get(m->doc, m->root, "name");
    const char *kind = screen ? "Screen" : "Page";
    char text[1024];
    if (!m->s->classic_pages) {
        /* Segment's Actions preset ("Viewed {{name}}"); a page without a name, which the preset
         * would send as "Viewed " with a dangling space, is "Loaded a Page" / "Loaded a Screen". */
        if (vendor_json_nonempty_string(m->doc, name)) {
            vendor_buf_str(m->out, "{\"event_type\":\"Viewed ");
            vendor_buf_add(m->out, m->doc->nodes[name].raw + 1, m->doc->nodes[name].raw_len - 2);
            vendor_buf_str(m->out, "\"");
        } else {
            snprintf(text, sizeof text, "{\"event_type\":\"Loaded a %s\"", kind);
            vendor_buf_str(m->out, text);
        }
    } else if (vendor_json_nonempty_string(m->doc, name) && m->s->track_named_pages) {
        /* "Viewed " + the name as it is escaped in the event + " Page": still a valid literal. */
        vendor_buf_str(m->out, "{\"event_type\":\"Viewed ");
        vendor_buf_add(m->out, m->doc->nodes[name].raw + 1, m->doc->nodes[name].raw_len - 2);
        snprintf(text, sizeof text, " %s\"", kind);
        vendor_buf_str(m->out, text);
    } else if (m->s->track_all_pages) {
        snprintf(text, sizeof text, "{\"event_type\":\"Loaded a %s\"", kind);
        vendor_buf_str(m->out, text);
    } else {
        return 1;
    }
    if (common(m, NULL, err, cap) != 0) return -1;
    properties_field(m, "event_properties", vendor_json_get(m->doc, m->root, "properties"));
    end_event(m, count);
    return 0;
}

static int map_group(mapper *m, int *count, char *err, size_t cap) {
    int traits = vendor_json_typed(m->doc, vendor_json_get(m->doc, m->root, "traits"), VENDOR_J_OBJECT);
    int group_id = vendor_json_get(m->doc, m->root, "groupId");
    int type = m->s->group_type_trait[0] ? vendor_json_get(m->doc, traits, m->s->group_type_trait) : -1;
    int value = m->s->group_value_trait[0] ? vendor_json_get(m->doc, traits, m->s->group_value_trait) : -1;
    vendor_buf groups = {0};
    if (!vendor_json_nonempty_string(m->doc, type)) type = -1;
    if (!vendor_json_nonempty_string(m->doc, value)) value = vendor_json_nonempty_string(m->doc, group_id) ? group_id : -1;
    if (value < 0) {
        snprintf(err, cap, "Amplitude: the group event %s has no groupId", m->message_id[0] ? m->message_id : "without messageId");
        return -1;
    }
    vendor_buf_add(&groups, "{", 1);
    if (type >= 0) vendor_buf_raw(&groups, m->doc, type);
    else vendor_buf_str(&groups, "\"[Segment] Group\"");
    vendor_buf_add(&groups, ":", 1);
    vendor_buf_raw(&groups, m->doc, value);
    vendor_buf_add(&groups, "}", 1);
    if (groups.failed) { snprintf(err, cap, "Amplitude: out of memory"); vendor_buf_free(&groups); return -1; }

    vendor_buf_str(m->out, "{\"event_type\":\"$identify\"");
    if (common(m, NULL, err, cap) != 0) { vendor_buf_free(&groups); return -1; }
    vendor_buf_str(m->out, ",\"groups\":");
    vendor_buf_add(m->out, groups.data, groups.len);
    vendor_buf_str(m->out, ",\"user_properties\":{\"$set\":");
    vendor_buf_add(m->out, groups.data, groups.len);
    vendor_buf_add(m->out, "}", 1);
    end_event(m, count);

    if (traits >= 0 && m->doc->nodes[traits].first_child >= 0) {
        vendor_buf_str(m->out, "{\"event_type\":\"$groupidentify\"");
        if (common(m, "group", err, cap) != 0) { vendor_buf_free(&groups); return -1; }
        vendor_buf_str(m->out, ",\"groups\":");
        vendor_buf_add(m->out, groups.data, groups.len);
        vendor_buf_str(m->out, ",\"group_properties\":{\"$set\":");
        vendor_buf_limited(m->out, m->doc, traits, &amp_limits, &m->trimmed);
        vendor_buf_add(m->out, "}", 1);
        end_event(m, count);
    }
    vendor_buf_free(&groups);
    return 0;
}

int amp_map_event(const amp_settings *s, const char *json, size_t len, vendor_buf *out, int *count,
                  char *note, size_t note_cap, char *err, size_t cap) {
    vendor_json doc;
    mapper m;
    char type[16];
    int status, type_node;
    if (note_cap) note[0] = 0;
    if (vendor_json_parse(&doc, json, len, AMP_VENDOR, err, cap) != 0) return -1;
    memset(&m, 0, sizeof m);
    m.s = s; m.doc = &doc; m.root = 0; m.out = out;
    m.context = vendor_json_typed(&doc, vendor_json_get(&doc, 0, "context"), VENDOR_J_OBJECT);
    vendor_json_string(&doc, vendor_json_typed(&doc, vendor_json_get(&doc, 0, "messageId"), VENDOR_J_STRING), m.message_id, sizeof m.message_id);
    type_node = vendor_json_typed(&doc, vendor_json_get(&doc, 0, "type"), VENDOR_J_STRING);
    if (doc.nodes[0].type != VENDOR_J_OBJECT || type_node < 0 || vendor_json_string(&doc, type_node, type, sizeof type) != 0) {
        snprintf(err, cap, "Amplitude: the event is not an object with a \"type\"");
        vendor_json_free(&doc);
        return -1;
    }
    if (strcmp(type, "track") == 0) status = map_track(&m, count, err, cap);
    else if (strcmp(type, "identify") == 0) {
        vendor_buf_str(out, "{\"event_type\":\"$identify\"");
        status = common(&m, NULL, err, cap);
        if (status == 0) {
            user_properties(&m, vendor_json_typed(&doc, vendor_json_get(&doc, 0, "traits"), VENDOR_J_OBJECT));
            end_event(&m, count);
        }
    }
    else if (strcmp(type, "screen") == 0) status = map_page(&m, 1, count, err, cap);
    else if (strcmp(type, "page") == 0) status = map_page(&m, 0, count, err, cap);
    else if (strcmp(type, "group") == 0) status = map_group(&m, count, err, cap);
    else status = 1; /* alias: no Amplitude call */
    if (status == 0 && vendor_trimmed_any(&m.trimmed) && note_cap) {
        char what[400];
        vendor_trimmed_text(&m.trimmed, &amp_limits, what, sizeof what);
        snprintf(note, note_cap, "the event %s was sent within Amplitude's limits: %s",
                 m.message_id[0] ? m.message_id : "without messageId", what);
    }
    vendor_json_free(&doc);
    if (status == 0 && out->failed) { snprintf(err, cap, "Amplitude: out of memory"); return -1; }
    return status;
}
