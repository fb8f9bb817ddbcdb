/*
 * The settings mp_settings_parse reads (mixpanel.c), declared for the host
 * (AH_EXT_SETTINGS_SCHEMA): `analytics-host plugins` lists them, and check-settings and the host
 * before `create` check a settings object against them. Keep it true to mp_settings_parse.
 * "token" and "projectToken" are each optional here: one of the two is required, which create
 * checks itself.
 */
#include <string.h>
#include "mixpanel.h"

static const ah_setting mp_settings_list[] = {
    { "projectToken", AH_SETTING_STRING, 0, NULL, "the project token (Segment's Actions name; this or \"token\" is required)" },
    { "token", AH_SETTING_STRING, 0, NULL, "the project token (Segment's classic name)" },
    { "apiSecret", AH_SETTING_STRING, 0, NULL, "the API secret: events then go to /import with Basic auth, else to /track" },
    { "apiKey", AH_SETTING_STRING, 0, NULL, "classic name of the API secret" },
    { "apiRegion", AH_SETTING_STRING, 0, "\"US\"", "the data residency: \"US\", \"EU\" or \"IN\"" },
    { "enableEuropeanUnionEndpoint", AH_SETTING_BOOLEAN, 0, "false", "classic switch for the EU endpoint" },
    { "apiHost", AH_SETTING_STRING, 0, NULL, "an http(s) base URL replacing Mixpanel's host (a proxy, a test server)" },
    { "strictMode", AH_SETTING_STRING, 0, "\"1\"", "/import's strict validation: \"1\" or \"0\"" },
    { "sourceName", AH_SETTING_STRING, 0, NULL, "sent as mp_lib's source name" },
    { "people", AH_SETTING_BOOLEAN, 0, "true", "send identify traits to People profiles (/engage)" },
    { "setAllTraitsByDefault", AH_SETTING_BOOLEAN, 0, "true", "every trait goes to the profile, not only peopleProperties" },
    { "peopleProperties", AH_SETTING_ARRAY, 0, NULL, "traits sent to the profile when setAllTraitsByDefault is false" },
    { "setOnceProperties", AH_SETTING_ARRAY, 0, NULL, "traits sent with $set_once" },
    { "groupIdentifierTraits", AH_SETTING_ARRAY, 0, NULL, "group traits whose values are group keys" },
    { "trackAllPages", AH_SETTING_BOOLEAN, 0, "false", "send every page call as \"Loaded a Page\"" },
    { "trackNamedPages", AH_SETTING_BOOLEAN, 0, "true", "send named page calls as \"Viewed {name} Page\"" },
    { "trackCategorizedPages", AH_SETTING_BOOLEAN, 0, "false", "send categorized page calls as \"Viewed {category} Page\"" },
    { "consolidatedPageCalls", AH_SETTING_BOOLEAN, 0, "false", "every page call as one \"Loaded a Page\" with its name as a property" },
    { "gzip", AH_SETTING_BOOLEAN, 0, "true", "gzip request bodies" },
    { "timeoutSeconds", AH_SETTING_NUMBER, 0, "15", "per-request timeout, 1 to 300" },
    { "batchSize", AH_SETTING_NUMBER, 0, "2000", "records per request, 1 to 2000" },
};

static const ah_settings_schema mp_settings_schema = {
    sizeof(ah_settings_schema), sizeof(ah_setting), sizeof mp_settings_list / sizeof mp_settings_list[0], 0, mp_settings_list,
};

const void *mp_get_extension(const char *id) {
    if (strcmp(id, AH_EXT_SETTINGS_SCHEMA) == 0) return &mp_settings_schema;
    return vendor_durable_extension(id);
}
