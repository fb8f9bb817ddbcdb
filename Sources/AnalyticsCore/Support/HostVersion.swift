/// The one version number of analytics-host: `context.library.version`, `analytics-host --version`,
/// `plugins --json` and `Analytics.version()` all read it, so they can never disagree.
package enum HostVersion {
    package static let string = "0.3.0"
}
