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
    const amp_json *doc;
    int root, context;
    amp_buf *out;
    char message_id[256];
} mapper;

static void add_raw(amp_buf *b, const amp_json *doc, int node) {
    amp_buf_add(b, doc->nodes[node].raw, doc->nodes[node].raw_len);
}

/* ,"name":<raw value of node> when the node exists with the given type (-1: any but null). */
static void field(mapper *m, const char *name, int node, int type) {
    if (node < 0) return;
    if (type >= 0 && m->doc->nodes[node].type != (enum amp_jtype)type) return;
    if (m->doc->nodes[node].type == AMP_J_NULL) return;
    amp_buf_str(m->out, ",\"");
    amp_buf_str(m->out, name);
    amp_buf_str(m->out, "\":");
    add_raw(m->out, m->doc, node);
}

static int ctx(mapper *m, const char *path) { return amp_json_path(m->doc, m->context, path); }

/* Days since 1970-01-01 of a civil date (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int64_t mo, int64_t d) {
    int64_t era, yoe, doy, doe;
    y -= mo <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int amp_parse_time_ms(const char *t, int64_t *ms) {
    int y, mo, d, h, mi, s, n = 0;
    int64_t frac = 0, scale = 1000, offset = 0;
    const char *p;
    if (sscanf(t, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) != 6 || n != 19) return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return -1;
    p = t + n;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (scale > 1) { frac = frac * 10 + (*p - '0'); scale /= 10; }
            p++;
        }
        frac *= scale;
    }
    if (*p == 'Z' || *p == 'z') p++;
    else if (*p == '+' || *p == '-') {
        int oh, om;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2) return -1;
        offset = (oh * 60 + om) * 60 * (*p == '+' ? 1 : -1);
        p += 6;
    } else return -1;
    if (*p) return -1;
    *ms = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) - offset) * 1000 + frac;
    return 0;
}

/* The fields every Amplitude event of this Segment event carries. `suffix` (may be NULL) makes
 * the insert_id of a second event from the same message distinct and stable. */
static int common(mapper *m, const char *suffix, char *err, size_t cap) {
    int user = amp_json_get(m->doc, m->root, "userId");
    int device = ctx(m, "device.id");
    int ts = amp_json_typed(m->doc, amp_json_get(m->doc, m->root, "timestamp"), AMP_J_STRING);
    int type_node = ctx(m, "device.type");
    int os = ctx(m, "os.name");
    int ad = ctx(m, "device.advertisingId");
    char text[64];
    if (!amp_json_nonempty_string(m->doc, device)) device = amp_json_get(m->doc, m->root, "anonymousId");
    if (!amp_json_nonempty_string(m->doc, user)) user = -1;
    if (!amp_json_nonempty_string(m->doc, device)) device = -1;
    if (user < 0 && device < 0) {
        snprintf(err, cap, "Amplitude: the event %s has neither userId nor anonymousId (Amplitude needs user_id or device_id)",
                 m->message_id[0] ? m->message_id : "without messageId");
        return -1;
    }
    field(m, "user_id", user, AMP_J_STRING);
    field(m, "device_id", device, AMP_J_STRING);
    if (ts >= 0 && amp_json_string(m->doc, ts, text, sizeof text) == 0) {
        int64_t ms;
        if (amp_parse_time_ms(text, &ms) == 0) {
            char num[32];
            snprintf(num, sizeof num, ",\"time\":%lld", (long long)ms);
            amp_buf_str(m->out, num);
        }
    }
    if (m->message_id[0]) {
        char id[300];
        snprintf(id, sizeof id, "%s%s%s", m->message_id, suffix ? "-" : "", suffix ? suffix : "");
        amp_buf_str(m->out, ",\"insert_id\":");
        amp_buf_json_string(m->out, id, strlen(id));
    }
    amp_buf_str(m->out, ",\"library\":\"" AMP_LIBRARY "/" AMP_VERSION "\"");
    /* platform: Amplitude's spelling of the device type (iOS, Android); Web for analytics.js. */
    if (amp_json_nonempty_string(m->doc, type_node) && amp_json_string(m->doc, type_node, text, sizeof text) == 0) {
        const char *platform = strcmp(text, "ios") == 0 ? "iOS" : strcmp(text, "android") == 0 ? "Android" : text;
        amp_buf_str(m->out, ",\"platform\":");
        amp_buf_json_string(m->out, platform, strlen(platform));
    } else {
        int lib = ctx(m, "library.name");
        if (lib >= 0 && amp_json_string(m->doc, lib, text, sizeof text) == 0 && strcmp(text, "analytics.js") == 0)
            amp_buf_str(m->out, ",\"platform\":\"Web\"");
    }
    field(m, "app_version", ctx(m, "app.version"), AMP_J_STRING);
    field(m, "os_name", os, AMP_J_STRING);
    field(m, "os_version", ctx(m, "os.version"), AMP_J_STRING);
    field(m, "device_brand", ctx(m, "device.brand"), AMP_J_STRING);
    field(m, "device_manufacturer", ctx(m, "device.manufacturer"), AMP_J_STRING);
    field(m, "device_model", ctx(m, "device.model"), AMP_J_STRING);
    field(m, "carrier", ctx(m, "network.carrier"), AMP_J_STRING);
    field(m, "country", ctx(m, "location.country"), AMP_J_STRING);
    field(m, "region", ctx(m, "location.region"), AMP_J_STRING);
    field(m, "city", ctx(m, "location.city"), AMP_J_STRING);
    field(m, "location_lat", ctx(m, "location.latitude"), AMP_J_NUMBER);
    field(m, "location_lng", ctx(m, "location.longitude"), AMP_J_NUMBER);
    field(m, "language", ctx(m, "locale"), AMP_J_STRING);
    field(m, "ip", ctx(m, "ip"), AMP_J_STRING);
    if (amp_json_nonempty_string(m->doc, ad) && amp_json_string(m->doc, os, text, sizeof text) == 0) {
        if (strcmp(text, "iOS") == 0 || strcmp(text, "iPadOS") == 0) field(m, "idfa", ad, AMP_J_STRING);
        else if (strcmp(text, "Android") == 0) field(m, "adid", ad, AMP_J_STRING);
    }
    return 0;
}

/* ,"name":value with the shortest text that reads back as the same double (19.99, not
 * 19.990000000000002). */
static void number_field(amp_buf *b, const char *name, double value) {
    char num[40];
    int digits;
    for (digits = 1; digits <= 17; digits++) {
        snprintf(num, sizeof num, "%.*g", digits, value);
        if (strtod(num, NULL) == value) break;
    }
    amp_buf_str(b, ",\"");
    amp_buf_str(b, name);
    amp_buf_str(b, "\":");
    amp_buf_str(b, num);
}

/* revenue, price, quantity, productId, revenueType from an object (properties or a product). */
static void revenue_fields(mapper *m, int obj) {
    const amp_json *doc = m->doc;
    int revenue = amp_json_typed(doc, amp_json_get(doc, obj, "revenue"), AMP_J_NUMBER);
    int price = amp_json_typed(doc, amp_json_get(doc, obj, "price"), AMP_J_NUMBER);
    int quantity = amp_json_typed(doc, amp_json_get(doc, obj, "quantity"), AMP_J_NUMBER);
    int product = amp_json_get(doc, obj, "productId");
    int type = amp_json_typed(doc, amp_json_get(doc, obj, "revenueType"), AMP_J_STRING);
    double p, q;
    if (!amp_json_nonempty_string(doc, product)) product = amp_json_get(doc, obj, "product_id");
    if (revenue < 0 && price < 0) return;
    if (price >= 0 && quantity >= 0 && amp_json_number(doc, price, &p) == 0 && amp_json_number(doc, quantity, &q) == 0) {
        number_field(m->out, "revenue", p * q);
    } else {
        field(m, "revenue", revenue, AMP_J_NUMBER);
    }
    field(m, "price", price, AMP_J_NUMBER);
    if (quantity >= 0 && amp_json_number(doc, quantity, &q) == 0) {
        char num[48];
        snprintf(num, sizeof num, ",\"quantity\":%lld", (long long)llround(q));
        amp_buf_str(m->out, num);
    }
    field(m, "productId", product, AMP_J_STRING);
    if (type >= 0) field(m, "revenueType", type, AMP_J_STRING);
    else amp_buf_str(m->out, ",\"revenueType\":\"Purchase\"");
}

static void end_event(mapper *m, int *count) {
    amp_buf_add(m->out, "}", 1);
    amp_buf_add(m->out, "\0", 1);
    (*count)++;
}

static int listed(const char list[][128], int n, const char *key, size_t len) {
    int i;
    for (i = 0; i < n; i++)
        if (strlen(list[i]) == len && memcmp(list[i], key, len) == 0) return 1;
    return 0;
}

/* {"$set":{...},"$setOnce":{...},"$add":{...}} from traits, by the settings' lists. */
static void user_properties(mapper *m, int traits) {
    const char *ops[3] = {"$set", "$setOnce", "$add"};
    int op, c, first_op = 1;
    amp_buf_str(m->out, ",\"user_properties\":{");
    for (op = 0; op < 3; op++) {
        int first = 1;
        for (c = traits >= 0 ? m->doc->nodes[traits].first_child : -1; c >= 0; c = m->doc->nodes[c].next) {
            const amp_jnode *n = &m->doc->nodes[c];
            int in_once = listed(m->s->set_once, m->s->set_once_count, n->key, n->key_len);
            int in_add = n->type == AMP_J_NUMBER && listed(m->s->increment, m->s->increment_count, n->key, n->key_len);
            int which = in_add ? 2 : in_once ? 1 : 0;
            if (which != op) continue;
            if (first) {
                if (!first_op) amp_buf_add(m->out, ",", 1);
                amp_buf_str(m->out, "\"");
                amp_buf_str(m->out, ops[op]);
                amp_buf_str(m->out, "\":{");
                first = 0;
                first_op = 0;
            } else {
                amp_buf_add(m->out, ",", 1);
            }
            amp_buf_add(m->out, "\"", 1);
            amp_buf_add(m->out, n->key, n->key_len);
            amp_buf_add(m->out, "\":", 2);
            add_raw(m->out, m->doc, c);
        }
        if (!first) amp_buf_add(m->out, "}", 1);
    }
    if (first_op) amp_buf_str(m->out, "\"$set\":{}");
    amp_buf_add(m->out, "}", 1);
}

static void properties_field(mapper *m, const char *name, int obj) {
    amp_buf_str(m->out, ",\"");
    amp_buf_str(m->out, name);
    amp_buf_str(m->out, "\":");
    if (obj >= 0 && m->doc->nodes[obj].type == AMP_J_OBJECT) add_raw(m->out, m->doc, obj);
    else amp_buf_str(m->out, "{}");
}

static int map_track(mapper *m, int *count, char *err, size_t cap) {
    int name = amp_json_get(m->doc, m->root, "event");
    int props = amp_json_typed(m->doc, amp_json_get(m->doc, m->root, "properties"), AMP_J_OBJECT);
    int products = amp_json_typed(m->doc, amp_json_get(m->doc, props, "products"), AMP_J_ARRAY);
    char text[64];
    int purchase = 0, p, n = 1;
    if (!amp_json_nonempty_string(m->doc, name)) {
        snprintf(err, cap, "Amplitude: the track event %s has no event name", m->message_id[0] ? m->message_id : "without messageId");
        return -1;
    }
    if (amp_json_string(m->doc, name, text, sizeof text) == 0 && strcmp(text, "Order Completed") == 0 &&
        products >= 0 && m->doc->nodes[products].first_child >= 0)
        purchase = 1;
    amp_buf_str(m->out, "{\"event_type\":");
    add_raw(m->out, m->doc, name);
    if (common(m, NULL, err, cap) != 0) return -1;
    properties_field(m, "event_properties", props);
    if (!(purchase && m->s->track_revenue_per_product)) revenue_fields(m, props);
    end_event(m, count);
    if (!purchase) return 0;
    for (p = m->doc->nodes[products].first_child; p >= 0; p = m->doc->nodes[p].next) {
        char suffix[16];
        if (m->doc->nodes[p].type != AMP_J_OBJECT) continue;
        snprintf(suffix, sizeof suffix, "%d", ++n);
        amp_buf_str(m->out, "{\"event_type\":\"Product Purchased\"");
        if (common(m, suffix, err, cap) != 0) return -1;
        properties_field(m, "event_properties", p);
        if (m->s->track_revenue_per_product) revenue_fields(m, p);
        end_event(m, count);
    }
    return 0;
}

static int map_page(mapper *m, int screen, int *count, char *err, size_t cap) {
    int name = amp_json_get(m->doc, m->root, "name");
    const char *kind = screen ? "Screen" : "Page";
    char text[1024];
    if (amp_json_nonempty_string(m->doc, name) && m->s->track_named_pages) {
        /* "Viewed " + the name as it is escaped in the event + " Page": still a valid literal. */
        amp_buf_str(m->out, "{\"event_type\":\"Viewed ");
        amp_buf_add(m->out, m->doc->nodes[name].raw + 1, m->doc->nodes[name].raw_len - 2);
        snprintf(text, sizeof text, " %s\"", kind);
        amp_buf_str(m->out, text);
    } else if (m->s->track_all_pages) {
        snprintf(text, sizeof text, "{\"event_type\":\"Loaded a %s\"", kind);
        amp_buf_str(m->out, text);
    } else {
        return 1;
    }
    if (common(m, NULL, err, cap) != 0) return -1;
    properties_field(m, "event_properties", amp_json_get(m->doc, m->root, "properties"));
    end_event(m, count);
    return 0;
}

static int map_group(mapper *m, int *count, char *err, size_t cap) {
    int traits = amp_json_typed(m->doc, amp_json_get(m->doc, m->root, "traits"), AMP_J_OBJECT);
    int group_id = amp_json_get(m->doc, m->root, "groupId");
    int type = m->s->group_type_trait[0] ? amp_json_get(m->doc, traits, m->s->group_type_trait) : -1;
    int value = m->s->group_value_trait[0] ? amp_json_get(m->doc, traits, m->s->group_value_trait) : -1;
    amp_buf groups = {0};
    if (!amp_json_nonempty_string(m->doc, type)) type = -1;
    if (!amp_json_nonempty_string(m->doc, value)) value = amp_json_nonempty_string(m->doc, group_id) ? group_id : -1;
    if (value < 0) {
        snprintf(err, cap, "Amplitude: the group event %s has no groupId", m->message_id[0] ? m->message_id : "without messageId");
        return -1;
    }
    amp_buf_add(&groups, "{", 1);
    if (type >= 0) add_raw(&groups, m->doc, type);
    else amp_buf_str(&groups, "\"[Segment] Group\"");
    amp_buf_add(&groups, ":", 1);
    add_raw(&groups, m->doc, value);
    amp_buf_add(&groups, "}", 1);
    if (groups.failed) { snprintf(err, cap, "Amplitude: out of memory"); amp_buf_free(&groups); return -1; }

    amp_buf_str(m->out, "{\"event_type\":\"$identify\"");
    if (common(m, NULL, err, cap) != 0) { amp_buf_free(&groups); return -1; }
    amp_buf_str(m->out, ",\"groups\":");
    amp_buf_add(m->out, groups.data, groups.len);
    amp_buf_str(m->out, ",\"user_properties\":{\"$set\":");
    amp_buf_add(m->out, groups.data, groups.len);
    amp_buf_add(m->out, "}", 1);
    end_event(m, count);

    if (traits >= 0 && m->doc->nodes[traits].first_child >= 0) {
        amp_buf_str(m->out, "{\"event_type\":\"$groupidentify\"");
        if (common(m, "group", err, cap) != 0) { amp_buf_free(&groups); return -1; }
        amp_buf_str(m->out, ",\"groups\":");
        amp_buf_add(m->out, groups.data, groups.len);
        amp_buf_str(m->out, ",\"group_properties\":{\"$set\":");
        add_raw(m->out, m->doc, traits);
        amp_buf_add(m->out, "}", 1);
        end_event(m, count);
    }
    amp_buf_free(&groups);
    return 0;
}

int amp_map_event(const amp_settings *s, const char *json, size_t len, amp_buf *out, int *count,
                  char *err, size_t cap) {
    amp_json doc;
    mapper m;
    char type[16];
    int status, type_node;
    if (amp_json_parse(&doc, json, len, err, cap) != 0) return -1;
    memset(&m, 0, sizeof m);
    m.s = s; m.doc = &doc; m.root = 0; m.out = out;
    m.context = amp_json_typed(&doc, amp_json_get(&doc, 0, "context"), AMP_J_OBJECT);
    amp_json_string(&doc, amp_json_typed(&doc, amp_json_get(&doc, 0, "messageId"), AMP_J_STRING), m.message_id, sizeof m.message_id);
    type_node = amp_json_typed(&doc, amp_json_get(&doc, 0, "type"), AMP_J_STRING);
    if (doc.nodes[0].type != AMP_J_OBJECT || type_node < 0 || amp_json_string(&doc, type_node, type, sizeof type) != 0) {
        snprintf(err, cap, "Amplitude: the event is not an object with a \"type\"");
        amp_json_free(&doc);
        return -1;
    }
    if (strcmp(type, "track") == 0) status = map_track(&m, count, err, cap);
    else if (strcmp(type, "identify") == 0) {
        amp_buf_str(out, "{\"event_type\":\"$identify\"");
        status = common(&m, NULL, err, cap);
        if (status == 0) {
            user_properties(&m, amp_json_typed(&doc, amp_json_get(&doc, 0, "traits"), AMP_J_OBJECT));
            end_event(&m, count);
        }
    }
    else if (strcmp(type, "screen") == 0) status = map_page(&m, 1, count, err, cap);
    else if (strcmp(type, "page") == 0) status = map_page(&m, 0, count, err, cap);
    else if (strcmp(type, "group") == 0) status = map_group(&m, count, err, cap);
    else status = 1; /* alias: no Amplitude call */
    amp_json_free(&doc);
    if (status == 0 && out->failed) { snprintf(err, cap, "Amplitude: out of memory"); return -1; }
    return status;
}
