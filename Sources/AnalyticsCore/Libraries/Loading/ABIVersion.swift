import CAnalyticsABI

/// An ABI version as it crosses the C boundary: major in the high 16 bits, minor in the low 16.
/// Majors must match exactly; minors only tell which struct fields exist.
public struct ABIVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let major: UInt32
    public let minor: UInt32

    public init(major: UInt32, minor: UInt32) {
        self.major = major
        self.minor = minor
    }

    public init(raw: UInt32) { self.init(major: raw >> 16, minor: raw & 0xFFFF) }

    public var raw: UInt32 { major << 16 | (minor & 0xFFFF) }

    /// The version described by the `include/analytics_plugin.h` this host was compiled with.
    public static let host = ABIVersion(major: UInt32(AH_ABI_MAJOR), minor: UInt32(AH_ABI_MINOR))

    public var description: String { "\(major).\(minor)" }

    public static func < (a: ABIVersion, b: ABIVersion) -> Bool { a.raw < b.raw }
}
