import Glibc

/// ISO-8601 timestamps with milliseconds in UTC ("2026-11-22T10:00:00.123Z"), written by hand:
/// DateFormatter costs microseconds and every event needs one.
package enum ISOTimestamp {
    public static func now() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return format(seconds: Int(ts.tv_sec), milliseconds: Int(ts.tv_nsec / 1_000_000))
    }

    public static func format(seconds: Int, milliseconds: Int) -> String {
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

/// Monotonic seconds, for timeouts and rates.
package func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}
