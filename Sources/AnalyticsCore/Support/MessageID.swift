/// Random version-4 UUID text for `messageId` and `anonymousId`, from the system generator.
public enum MessageID {
    public static func make() -> String {
        var g = SystemRandomNumberGenerator()
        var a = g.next() as UInt64
        var b = g.next() as UInt64
        a = (a & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        b = (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        let hex: StaticString = "0123456789ABCDEF"
        return String(unsafeUninitializedCapacity: 36) { buf in
            var o = 0
            for i in 0..<32 {
                if i == 8 || i == 12 || i == 16 || i == 20 { buf[o] = 45; o += 1 }
                let word = i < 16 ? a : b
                let nibble = Int((word >> UInt64(60 - (i % 16) * 4)) & 0xF)
                buf[o] = hex.utf8Start[nibble]
                o += 1
            }
            return 36
        }
    }
}
