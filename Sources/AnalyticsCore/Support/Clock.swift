import Glibc

/// ISO-8601 timestamps with milliseconds in UTC ("2026-11-22T10:00:00.123Z"), written by hand:
/// DateFormatter costs microseconds and every event needs one.
package enum ISOTimestamp {
    package static func now() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return format(seconds: Int(ts.tv_sec), milliseconds: Int(ts.tv_nsec / 1_000_000))
    }

    package static func format(seconds: Int, milliseconds: Int) -> String {
        var t = time_t(seconds)
        var tm = Glibc.tm()
        gmtime_r(&t, &tm)
        let fields = [Int(tm.tm_year) + 1900, Int(tm.tm_mon) + 1, Int(tm.tm_mday), Int(tm.tm_hour), Int(tm.tm_min), Int(tm.tm_sec), milliseconds]
        return String(unsafeUninitializedCapacity: 24) { buf in
            func put(_ v: Int, _ width: Int, at: Int) {
                var v = v
                for i in stride(from: at + width - 1, through: at, by: -1) { buf[i] = UInt8(48 + v % 10); v /= 10 }
            }
            put(fields[0], 4, at: 0); buf[4] = 45
            put(fields[1], 2, at: 5); buf[7] = 45
            put(fields[2], 2, at: 8); buf[10] = 84
            put(fields[3], 2, at: 11); buf[13] = 58
            put(fields[4], 2, at: 14); buf[16] = 58
            put(fields[5], 2, at: 17); buf[19] = 46
            put(fields[6], 3, at: 20); buf[23] = 90
            return 24
        }
    }
}

extension ISOTimestamp {
    /// Whether `text` is an RFC 3339 date-time (`2026-11-22T10:00:00Z`, fractions of a second and
    /// `+01:00`-style offsets allowed) naming a real calendar date and time of day.
    package static func isValid(_ text: String) -> Bool {
        let b = Array(text.utf8)
        func number(_ at: Int, _ width: Int) -> Int? {
            guard at + width <= b.count else { return nil }
            var v = 0
            for i in at..<(at + width) {
                guard (48...57).contains(b[i]) else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        guard b.count >= 20, let year = number(0, 4), b[4] == 45, let month = number(5, 2), b[7] == 45, let day = number(8, 2),
              b[10] == 84 || b[10] == 116, let hour = number(11, 2), b[13] == 58, let minute = number(14, 2), b[16] == 58,
              let second = number(17, 2) else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...12).contains(month), (1...days[month - 1]).contains(day), hour < 24, minute < 60, second <= 60 else { return false }
        var i = 19
        if b[i] == 46 {  // fraction
            i += 1
            let digits = i
            while i < b.count, (48...57).contains(b[i]) { i += 1 }
            guard i > digits else { return false }
        }
        guard i < b.count else { return false }
        if b[i] == 90 || b[i] == 122 { return i + 1 == b.count }  // Z
        guard b[i] == 43 || b[i] == 45, i + 6 == b.count, let h = number(i + 1, 2), b[i + 3] == 58, let m = number(i + 4, 2) else { return false }
        return h < 24 && m < 60
    }
}

/// Monotonic seconds, for timeouts and rates.
package func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
