import CAnalyticsABI

/// The identity of the Swift toolchain that built this binary.
///
/// Swift has no stable ABI on Linux, so a library written in Swift must come from exactly the
/// host's toolchain. Both sides derive this string the same way: the Swift language version plus
/// the version of the clang embedded in swiftc, which names the toolchain's llvm-project commit.
package enum SwiftToolchain {
    /// E.g. `Swift 6.3 (clang 21.0.0 (https://github.com/swiftlang/llvm-project.git 11673e66…))`.
    package static let current: String = "Swift \(languageVersion) (\(String(cString: ah_compiler_ident())))"

    /// Major.minor of the compiler, resolved at compile time.
    static var languageVersion: String {
        #if compiler(>=7.0)
        return "7+"
        #elseif compiler(>=6.5)
        return "6.5+"
        #elseif compiler(>=6.4)
        return "6.4"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }
}
