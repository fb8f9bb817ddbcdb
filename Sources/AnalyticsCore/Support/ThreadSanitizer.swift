import Glibc

/// Whether this process was built with ThreadSanitizer (`make tsan`). Its runtime reserves
/// terabytes of address space, so a runner built with it cannot live under `RLIMIT_AS`: the
/// memory limit is not applied there (the tests of that limit run in the ordinary build).
package enum ThreadSanitizer {
    package static let isActive: Bool = dlsym(nil, "__tsan_init") != nil
}
