import AnalyticsIntegration

/// The settings `WebhooksConfiguration` reads, declared for the host (ABI 1.3
/// `AH_EXT_SETTINGS_SCHEMA`). "hooks" and "globalHook" are each optional; create needs one URL.
extension Webhooks: DeclaredSettings {
    public static let declaredSettings: [SettingDeclaration] = [
        .array("hooks", "targets: [{\"hook\": \"https://…\", \"headers\": [{\"key\", \"value\"}]}] (Segment's name)"),
        .string("globalHook", "one more target URL for every event"),
        .string("sharedSecret", "signs each body with HMAC-SHA1 in X-Signature"),
        .number("timeoutSeconds", default: 10, "per-request timeout, in (0, 600]"),
    ]
}
