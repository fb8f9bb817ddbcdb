// The JSON parser on arbitrary bytes: it either refuses the input with an offset inside it, or
// parse → encode → parse gives the same value and encoding again gives the same text (key order
// included). The String entry point agrees with the byte one on valid UTF-8.
// libfuzzer-options: -dict=Tests/Fuzz/Targets/JSON.dict -max_len=16384
@testable import AnalyticsCore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSONRoundTrip(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = UnsafeBufferPointer(start: data, count: size)
    let value: JSON
    do {
        value = try JSON(parsingUTF8: input)
    } catch {
        fuzzCheck(error.offset >= 0 && error.offset <= size, "error offset \(error.offset) outside the \(size)-byte input")
        return 0
    }
    let text = value.serializedBytes()
    let again: JSON
    do {
        again = try JSON(parsing: text)
    } catch {
        fuzzFail("the parser refuses its own output \(String(decoding: text, as: UTF8.self)): \(error)")
    }
    fuzzCheck(again == value, "value changed in a round trip: \(String(decoding: text, as: UTF8.self))")
    let text2 = again.serializedBytes()
    fuzzCheck(text2 == text, "encoding changed in a round trip: \(String(decoding: text, as: UTF8.self)) then \(String(decoding: text2, as: UTF8.self))")

    if let string = String(validating: input, as: UTF8.self) {
        guard let fromString = try? JSON(parsing: string), fromString == value else {
            fuzzFail("JSON(parsing: String) disagrees with the byte parser")
        }
    }
    return 0
}
