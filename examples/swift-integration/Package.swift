// swift-tools-version:6.0
// A template for an analytics-host integration written in Swift, outside the analytics-host
// repository. Copy this folder, rename the module, and build with one command:
//     swift build -c release        # → .build/release/libTallyIntegration.so
// then drop the .so into the host's plugins directory. Build it with the same Swift toolchain as
// the host: Swift has no stable ABI on Linux, and the host refuses a library from another one.
import PackageDescription

let package = Package(
    name: "TallyIntegration",
    products: [
        // One shared library per integration; its module name must be unique among the libraries
        // a host loads (the Swift runtime looks types up by module name).
        .library(name: "TallyIntegration", type: .dynamic, targets: ["TallyIntegration"]),
    ],
    dependencies: [
        // From a clone: the path of the analytics-host checkout. From a repository, instead:
        //     .package(url: "https://…/analytics-host.git", from: "0.3.0")
        .package(name: "analytics-host", path: "../.."),
    ],
    targets: [
        .target(
            name: "TallyIntegration",
            dependencies: [.product(name: "AnalyticsIntegration", package: "analytics-host")],
            // The export list: only the ABI entry function leaves the library; its private copy of
            // AnalyticsCore stays local, so it never binds to the host's same-named symbols.
            // (Unsafe flags are allowed here because this package is the root of its build, not a
            // dependency of another package.)
            linkerSettings: [.unsafeFlags(["-Xlinker", "--version-script=\(Context.packageDirectory)/exports.map"])]
        ),
    ],
    swiftLanguageModes: [.v6]
)
