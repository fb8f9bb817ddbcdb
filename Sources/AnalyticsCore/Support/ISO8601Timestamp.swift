/// Reads an ISO-8601 internet date-time (`2026-11-26T01:02:03.456Z`, `…+02:00`) into microseconds
/// since 1970 without Foundation's formatter: an `ISO8601DateFormatter` costs an ICU formatter per
/// instance (tens of microseconds), which was most of an event's cost where one was made per event.
public enum ISO8601Timestamp {
    /// Microseconds since 1970-01-01T00:00:00Z, or nil when `text` is not
    /// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM)` with values in range.
    public static func microseconds(_ text: String) -> Int? {
        var text = text
        return text.withUTF8 { microseconds(utf8: $0) }
    }

    static func microseconds(utf8 s: UnsafeBufferPointer<UInt8>) -> Int? {
        var i = 0
        func digits(_ count: Int) -> Int? {
            guard i + count <= s.count else { return nil }
            var value = 0
            for _ in 0..<count {
                let c = s[i]
                guard c >= 0x30, c <= 0x39 else { return nil }
                value = value * 10 + Int(c - 0x30)
                i += 1
            }
            return value
        }
        func expect(_ c: UInt8) -> Bool {
            guard i < s.count, s[i] == c else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect(0x2D), let month = digits(2), expect(0x2D), let day = digits(2),
              i < s.count, s[i] == 0x54 || s[i] == 0x74 else { return nil }
        i += 1
        guard let hour = digits(2), expect(0x3A), let minute = digits(2), expect(0x3A), let second = digits(2) else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month, year), hour < 24, minute < 60, second < 61 else { return nil }
        var micros = 0
        if i < s.count, s[i] == 0x2E || s[i] == 0x2C {
            i += 1
            var scale = 100_000, any = false
            while i < s.count, s[i] >= 0x30, s[i] <= 0x39 {
                micros += Int(s[i] - 0x30) * scale
                scale /= 10
                any = true
                i += 1
            }
            guard any else { return nil }
        }
        guard i < s.count else { return nil }
        var offset = 0
        switch s[i] {
        case 0x5A, 0x7A:
            i += 1
        case 0x2B, 0x2D:
            let sign = s[i] == 0x2D ? -1 : 1
            i += 1
            guard let h = digits(2) else { return nil }
            _ = expect(0x3A)
            guard let m = digits(2), h < 24, m < 60 else { return nil }
            offset = sign * (h * 3600 + m * 60)
        default:
            return nil
        }
        guard i == s.count else { return nil }
        let seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return seconds * 1_000_000 + micros
    }

    private static func daysIn(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (era arithmetic, exact for any year).
    private static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
