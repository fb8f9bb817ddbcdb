/*
 * The settings amp_settings_parse reads (amplitude.c), declared for the host
 * (AH_EXT_SETTINGS_SCHEMA): `analytics-host plugins` lists them, and check-settings and the host
 * before `create` check a settings object against them. Keep it true to amp_settings_parse.
 */
#include <string.h>
#include "amplitude.h"

static const ah_setting amp_settings_list[] = {
    { "apiKey", AH_SETTING_STRING, 1, NULL, "the Amplitude project's API key (sent in every request body)" },
    { "secretKey", AH_SETTING_STRING, 0, NULL, "Segment's setting, accepted; the HTTP API does not use it" },
    { "endpoint", AH_SETTING_STRING, 0, "\"north_america\"", "the data center: \"north_america\" or \"europe\"" },
    { "apiHost", AH_SETTING_STRING, 0, NULL, "an http(s) base URL replacing Amplitude's host (a proxy, a test server)" },
    { "trackAllPages", AH_SETTING_BOOLEAN, 0, "false", "send every page/screen call as \"Loaded a Page\"" },
    { "trackNamedPages", AH_SETTING_BOOLEAN, 0, "true", "send named page/screen calls as \"Viewed {name}\"" },
    { "trackRevenuePerProduct", AH_SETTING_BOOLEAN, 0, "false", "one revenue event per product of an order" },
    { "traitsToSetOnce", AH_SETTING_ARRAY, 0, NULL, "trait names sent with $setOnce instead of $set" },
    { "traitsToIncrement", AH_SETTING_ARRAY, 0, NULL, "trait names sent with $add instead of $set" },
    { "groupTypeTrait", AH_SETTING_STRING, 0, NULL, "the group call's trait naming the Amplitude group type" },
    { "groupValueTrait", AH_SETTING_STRING, 0, NULL, "the group call's trait naming the group's value" },
    { "minIdLength", AH_SETTING_NUMBER, 0, NULL, "Amplitude's min_id_length option, 1 to 1000 (Amplitude's default 5 when absent)" },
    { "maxAttempts", AH_SETTING_NUMBER, 0, "3", "times a request is tried before its events fail, 1 to 10" },
    { "timeoutSeconds", AH_SETTING_NUMBER, 0, "10", "per-request timeout, 1 to 300" },
    { "batchSize", AH_SETTING_NUMBER, 0, "200", "events per upload, 1 to 2000" },
};

static const ah_settings_schema amp_settings_schema = {
    sizeof(ah_settings_schema), sizeof(ah_setting), sizeof amp_settings_list / sizeof amp_settings_list[0], 0, amp_settings_list,
};

const void *amp_get_extension(const char *id) {
    if (strcmp(id, AH_EXT_SETTINGS_SCHEMA) == 0) return &amp_settings_schema;
    return vendor_durable_extension(id);
}
