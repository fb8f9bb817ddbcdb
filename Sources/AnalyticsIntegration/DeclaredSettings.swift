/// An integration that declares the settings it reads (ABI 1.3 `AH_EXT_SETTINGS_SCHEMA`), like
/// the properties `gst-inspect` shows:
///
/// ```swift
/// extension Webhooks: DeclaredSettings {
///     static let declaredSettings: [SettingDeclaration] = [
///         .string("url", required: true, "where each event is POSTed"),
///         .number("timeoutSeconds", default: 10, "how long a request may take"),
///     ]
/// }
/// ```
///
/// Conforming makes the kit offer the table; the host then lists the settings (`analytics-host
/// plugins`), checks a settings file against them (`check-settings --plugins DIR`) and checks an
/// instance's settings before `init(settings:host:)`: a wrong type or a missing required setting
/// keeps the instance from being created (the key and reason are reported), an unknown key is a
/// warning with "did you mean". Keep it next to the code that reads the settings, and true to it.
public protocol DeclaredSettings: Integration {
    /// Every key the integration reads from its settings object, with its type, whether it is
    /// required, its default and one line on what it does.
    static var declaredSettings: [SettingDeclaration] { get }
}
