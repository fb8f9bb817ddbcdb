/// Segment files are named by a decimal sequence number (`00000001.seg`, ...). Numbers only grow,
/// so a (segment, offset) position never refers to a different file later, and name order is
/// delivery order.
enum StorageSegmentName {
    static let suffix = ".seg"

    static func fileName(_ id: UInt64) -> String {
        let digits = String(id)
        return String(repeating: "0", count: max(0, 8 - digits.count)) + digits + suffix
    }

    /// The sequence number of a segment file name, or nil for any other file.
    static func parse(_ name: String) -> UInt64? {
        guard name.hasSuffix(suffix) else { return nil }
        let stem = name.dropLast(suffix.count)
        guard !stem.isEmpty, stem.count <= 19, stem.allSatisfy({ $0 >= "0" && $0 <= "9" }) else { return nil }
        return UInt64(stem)
    }
}
