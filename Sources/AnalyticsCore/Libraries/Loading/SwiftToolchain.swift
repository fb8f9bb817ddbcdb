import CAnalyticsABI
import Glibc

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

    /// The library a debug build of Swift code needs (`swift build` without `-c release`): the
    /// toolchain's prespecializations for unoptimized code. A debug host or runner has it loaded
    /// already; a release one does not, so a debug-built Swift library would need to find the file
    /// itself — which a runner of a root host, another user, may not reach. Loaded by
    /// `provideDebugSupport()`, such a library's need is met by the copy in the process.
    static let debugSupportLibrary = "libswiftSwiftOnoneSupport.so"

    /// Loads `debugSupportLibrary` from this toolchain (the executable's RUNPATH), once, so that a
    /// debug-built Swift library loads in a release host and runner as in a debug one. A runner
    /// calls it before it changes user; the host before it opens a library. False when the
    /// toolchain has no such file (a runtime-only installation): such a library is then refused
    /// with the fix (`PluginLoadError`'s text for it says "build it with -c release").
    @discardableResult
    package static func provideDebugSupport() -> Bool { debugSupportLoaded }

    private static let debugSupportLoaded: Bool = dlopen(debugSupportLibrary, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) != nil
}
