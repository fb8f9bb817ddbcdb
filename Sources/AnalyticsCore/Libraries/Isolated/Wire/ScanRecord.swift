/// What loading one library in the runner found, as JSON: the `ready` / `refused` frames carry
/// it, and the scan cache keeps it. Every field of `NativeLibraryInfo` and every reason of
/// `PluginLoadError` round-trips, so a library scanned in the runner is listed and refused with
/// exactly the words an in-process load would use.
///
/// A record comes from a runner (the library's own process) or from the scan cache on disk: both
/// are hostile input. Numbers are written as exact integers and read back without a trapping
/// conversion; a number out of its field's range refuses the library with the reason.
enum ScanRecord {
    static func encode(_ info: NativeLibraryInfo) -> JSONObject {
        var o: JSONObject = ["status": "loaded", "file": .string(info.file), "key": .string(info.key),
                             "version": .string(info.version), "abi": integer(info.abiVersion.raw),
                             "language": .string(info.language), "hooks": integer(info.hooks.rawValue),
                             "role": integer(info.role.rawValue)]
        o["toolchain"] = info.toolchain.map(JSON.string) ?? .null
        if let durable = info.durable { o["durable"] = integer(durable.maxDiskBytes ?? 0) }
        if let schema = info.settingsSchema { o["settingsSchema"] = encode(schema) }
        return o
    }

    static func encode(_ error: PluginLoadError) -> JSONObject {
        var o: JSONObject = ["status": "refused", "file": .string(error.file)]
        switch error.reason {
        case .directoryMissing: o["reason"] = "directoryMissing"
        case .directoryUnreadable(let s): o["reason"] = "directoryUnreadable"; o["text"] = .string(s)
        case .insecurePermissions(let s): o["reason"] = "insecurePermissions"; o["text"] = .string(s)
        case .notARegularFile: o["reason"] = "notARegularFile"
        case .notASharedObject(let s): o["reason"] = "notASharedObject"; o["text"] = .string(s)
        case .noEntrySymbol(let s): o["reason"] = "noEntrySymbol"; o["text"] = .string(s)
        case .abiMajorMismatch(let library, let host, let detail):
            o["reason"] = "abiMajorMismatch"; o["library"] = integer(library); o["host"] = integer(host); o["text"] = .string(detail)
        case .entryRefused(let s): o["reason"] = "entryRefused"; o["text"] = .string(s)
        case .invalidIntegration(let s): o["reason"] = "invalidIntegration"; o["text"] = .string(s)
        case .swiftToolchainMismatch(let library, let host):
            o["reason"] = "swiftToolchainMismatch"; o["library"] = .string(library); o["host"] = .string(host)
        case .duplicateKey(let key, let others):
            o["reason"] = "duplicateKey"; o["key"] = .string(key); o["others"] = .array(others.map(JSON.string))
        case .createFailed(let key, let message): o["reason"] = "createFailed"; o["key"] = .string(key); o["text"] = .string(message)
        case .runnerFailed(let s): o["reason"] = "runnerFailed"; o["text"] = .string(s)
        }
        return o
    }

    /// An exact integer (digits kept past 2^53).
    static func integer<T: BinaryInteger>(_ value: T) -> JSON { .number(JSONNumber(Int(clamping: value))) }

    /// Why a number of a record cannot be honoured.
    struct Unfit: Error { let why: String }

    /// A number of the record that is an integer within `T`'s range, else why not.
    static func read<T: FixedWidthInteger>(_ o: JSONObject, _ name: String, as: T.Type) -> Result<T, Unfit> {
        guard let value = o[name] else { return .failure(Unfit(why: "\"\(name)\" is missing")) }
        guard let number = value.numberValue else { return .failure(Unfit(why: "\"\(name)\" is not a number")) }
        guard let int = number.intValue, let exact = T(exactly: int) else {
            return .failure(Unfit(why: "\"\(name)\" is \(number.text), not an integer in \(T.min)...\(T.max)"))
        }
        return .success(exact)
    }

    /// The info or the error a record describes; nil for a record this host cannot read. A record
    /// of a loaded library whose numbers the host cannot honour refuses it, with the reason.
    static func decode(_ o: JSONObject) -> Result<NativeLibraryInfo, PluginLoadError>? {
        guard let file = o["file"]?.stringValue else { return nil }
        if o["status"]?.stringValue == "loaded" {
            guard let key = o["key"]?.stringValue, let version = o["version"]?.stringValue,
                  let language = o["language"]?.stringValue else { return nil }
            func lie(_ why: String) -> Result<NativeLibraryInfo, PluginLoadError> {
                .failure(PluginLoadError(file: file, reason: .runnerFailed("its scan record cannot be honoured: \(why)")))
            }
            let abi: UInt32, hooks: UInt16, role: UInt32
            switch (read(o, "abi", as: UInt32.self), read(o, "hooks", as: UInt16.self), read(o, "role", as: UInt32.self)) {
            case (.success(let a), .success(let h), .success(let r)): (abi, hooks, role) = (a, h, r)
            case (.failure(let unfit), _, _), (_, .failure(let unfit), _), (_, _, .failure(let unfit)): return lie(unfit.why)
            }
            var durable: NativeDurability?
            if o["durable"] != nil {
                switch read(o, "durable", as: Int64.self) {
                case .failure(let unfit): return lie(unfit.why)
                case .success(let cap) where cap < 0: return lie("\"durable\" is \(cap), not a byte count")
                case .success(let cap): durable = cap == 0 ? NativeDurability() : NativeDurability(maxDiskBytes: NativeDurability.honoured(UInt64(cap)))
                }
            }
            var info = NativeLibraryInfo(file: file, key: key, version: version, abiVersion: ABIVersion(raw: abi),
                                         language: language, toolchain: o["toolchain"]?.stringValue,
                                         hooks: NativeHooks(rawValue: hooks), role: NativeRole(rawValue: role), durable: durable)
            if let schema = o["settingsSchema"] {
                guard let decoded = decodeSchema(schema) else { return lie("its \"settingsSchema\" is malformed") }
                info.settingsSchema = decoded
            }
            return .success(info)
        }
        let text = o["text"]?.stringValue ?? ""
        let reason: PluginLoadError.Reason
        switch o["reason"]?.stringValue {
        case "directoryMissing": reason = .directoryMissing
        case "directoryUnreadable": reason = .directoryUnreadable(text)
        case "insecurePermissions": reason = .insecurePermissions(text)
        case "notARegularFile": reason = .notARegularFile
        case "notASharedObject": reason = .notASharedObject(text)
        case "noEntrySymbol": reason = .noEntrySymbol(text)
        case "abiMajorMismatch":
            reason = .abiMajorMismatch(library: (try? read(o, "library", as: UInt32.self).get()) ?? 0,
                                       host: (try? read(o, "host", as: UInt32.self).get()) ?? 0, detail: text)
        case "entryRefused": reason = .entryRefused(text)
        case "invalidIntegration": reason = .invalidIntegration(text)
        case "swiftToolchainMismatch":
            reason = .swiftToolchainMismatch(library: o["library"]?.stringValue ?? "", host: o["host"]?.stringValue ?? "")
        case "duplicateKey":
            reason = .duplicateKey(key: o["key"]?.stringValue ?? "", otherFiles: o["others"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        case "createFailed": reason = .createFailed(key: o["key"]?.stringValue ?? "", message: text)
        case "runnerFailed": reason = .runnerFailed(text)
        default: return nil
        }
        return .failure(PluginLoadError(file: file, reason: reason))
    }
}
