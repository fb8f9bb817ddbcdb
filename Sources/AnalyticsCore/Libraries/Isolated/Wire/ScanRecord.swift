/// What loading one library in the runner found, as JSON: the `ready` / `refused` frames carry
/// it, and the scan cache keeps it. Every field of `NativeLibraryInfo` and every reason of
/// `PluginLoadError` round-trips, so a library scanned in the runner is listed and refused with
/// exactly the words an in-process load would use.
enum ScanRecord {
    static func encode(_ info: NativeLibraryInfo) -> JSONObject {
        var o: JSONObject = ["status": "loaded", "file": .string(info.file), "key": .string(info.key),
                             "version": .string(info.version), "abi": .number(Double(info.abiVersion.raw)),
                             "language": .string(info.language), "hooks": .number(Double(info.hooks.rawValue)),
                             "role": .number(Double(info.role.rawValue))]
        o["toolchain"] = info.toolchain.map(JSON.string) ?? .null
        if let durable = info.durable { o["durable"] = .number(Double(durable.maxDiskBytes ?? 0)) }
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
            o["reason"] = "abiMajorMismatch"; o["library"] = .number(Double(library)); o["host"] = .number(Double(host)); o["text"] = .string(detail)
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

    /// The info or the error a record describes; nil for a record this host cannot read.
    static func decode(_ o: JSONObject) -> Result<NativeLibraryInfo, PluginLoadError>? {
        guard let file = o["file"]?.stringValue else { return nil }
        if o["status"]?.stringValue == "loaded" {
            guard let key = o["key"]?.stringValue, let version = o["version"]?.stringValue,
                  let abi = o["abi"]?.doubleValue, let language = o["language"]?.stringValue,
                  let hooks = o["hooks"]?.doubleValue, let role = o["role"]?.doubleValue else { return nil }
            var info = NativeLibraryInfo(file: file, key: key, version: version, abiVersion: ABIVersion(raw: UInt32(abi)),
                                         language: language, toolchain: o["toolchain"]?.stringValue,
                                         hooks: NativeHooks(rawValue: UInt16(hooks)), role: NativeRole(rawValue: UInt32(role)),
                                         durable: o["durable"]?.doubleValue.map { $0 > 0 ? NativeDurability(maxDiskBytes: Int($0)) : NativeDurability() })
            if let schema = o["settingsSchema"] {
                guard let decoded = decodeSchema(schema) else { return nil }
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
            reason = .abiMajorMismatch(library: UInt32(o["library"]?.doubleValue ?? 0), host: UInt32(o["host"]?.doubleValue ?? 0), detail: text)
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
