/// A number as JavaScript's `String(n)` writes it (ECMA-262 Number::toString), for `to_string`:
/// the shortest digits that read back as the same double, in plain notation when
/// 1e-6 ≤ |n| < 1e21 (`0.00001`, `9500000000000000000`) and in exponent form outside it
/// (`1e-7`, `1.5e+21`); `-0` is `0`.
enum JavaScriptNumberText {
    static func string(_ n: Double) -> String {
        if n.isNaN { return "NaN" }
        if n.isInfinite { return n < 0 ? "-Infinity" : "Infinity" }
        if n == 0 { return "0" }
        // Swift's description has the shortest round-trip digits; only the layout differs.
        let (digits, exponent) = decimal(abs(n))
        let k = digits.count
        let sign = n < 0 ? "-" : ""
        // The value is 0.d1d2…dk × 10^exponent.
        if k <= exponent && exponent <= 21 {
            return sign + digits + String(repeating: "0", count: exponent - k)
        }
        if 0 < exponent && exponent <= 21 {
            let cut = digits.index(digits.startIndex, offsetBy: exponent)
            return sign + digits[..<cut] + "." + digits[cut...]
        }
        if -6 < exponent && exponent <= 0 {
            return sign + "0." + String(repeating: "0", count: -exponent) + digits
        }
        let e = exponent - 1
        let mantissa = k == 1 ? digits : String(digits.first!) + "." + digits.dropFirst()
        return sign + mantissa + "e" + (e < 0 ? "-" : "+") + String(abs(e))
    }

    /// The significant digits (no leading or trailing zeros) and the exponent `e` such that the
    /// value is 0.digits × 10^e.
    private static func decimal(_ x: Double) -> (String, Int) {
        let text = x.description  // "123.45", "1e-07", "1.5e+21", "5e-324"
        var mantissa = Substring(text)
        var power = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = text[..<e]
            power = Int(text[text.index(after: e)...])!
        }
        var integerPart = mantissa
        var fraction: Substring = ""
        if let dot = mantissa.firstIndex(of: ".") {
            integerPart = mantissa[..<dot]
            fraction = mantissa[mantissa.index(after: dot)...]
        }
        var all = Array(integerPart) + Array(fraction)
        var exponent = integerPart.count + power
        while all.first == "0" { all.removeFirst(); exponent -= 1 }
        while all.last == "0" { all.removeLast() }
        return (String(all), exponent)
    }
}
