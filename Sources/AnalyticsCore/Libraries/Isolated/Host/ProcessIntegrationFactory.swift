/// A library in process mode as an integration factory: the same place in the client as
/// `NativeIntegrationFactory` (created from `integrations`, destroyed when the key goes away), but
/// what it makes is a `ProcessDestination` whose library runs in `analytics-plugin-runner`. The
/// host itself never opens the library.
package struct ProcessIntegrationFactory: DeclaresSettingsSchema {
    package let info: NativeLibraryInfo
    package let runner: String

    package init(info: NativeLibraryInfo, runner: String) {
        self.info = info
        self.runner = runner
    }

    package var key: String { info.key }
    package var settingsSchema: SettingsSchema? { info.settingsSchema }

    package func create(settings: JSONObject, analytics: Analytics) throws -> DestinationPlugin {
        ProcessDestination(info: info, runner: runner, settings: settings, analytics: analytics)
    }

    /// As for in-process libraries: whole-settings libraries exist unless `integrations[key]` is false.
    package func creationSettings(from settings: Settings) -> JSONObject? {
        guard info.wantsWholeSettings else { return settings.integrationSettings(forKey: key) }
        return settings.integrations[key] == .bool(false) ? nil : settings.json
    }

    /// A destination becomes a ``ProcessDestination``; a library that only adds timeline plugins
    /// (no `AH_ROLE_DESTINATION`) a ``ProcessUtilityLibrary``, whose plugins the host calls across the
    /// process boundary for every event.
    package func makePlugin(settings: JSONObject, analytics: Analytics) throws -> Plugin {
        let instance = ProcessDestination(info: info, runner: runner, settings: settings, analytics: analytics)
        return info.isDestination ? instance : ProcessUtilityLibrary(instance: instance)
    }
}

/// Start-up loading: every library of the plugins directory is first loaded in a runner (cached);
/// then each is opened in the host (in-process mode) or left to runners (process mode).
enum IsolatedStartup {
    struct Loaded {
        var scan: PluginLoader.ScanResult
        var isolated: [ProcessIntegrationFactory]
    }

    static func load(directory: String, configuration: Configuration, settings: Settings?,
                     log: @Sendable (LogLevel, String) -> Void) -> Loaded {
        let loader = PluginLoader(configuration: .init(allowGroupOrOtherWritable: configuration.allowInsecurePluginPermissions))
        guard let runner = PluginRunnerLocator.find(configured: configuration.pluginRunnerPath) else {
            // No runner: today's in-process scan; process mode cannot be honoured.
            var scan = loader.scan(directory: directory)
            var kept: [NativeLibrary] = []
            for library in scan.libraries {
                if configuration.isolation.mode(forKey: library.key, settings: settings) == .process {
                    scan.problems.append(PluginLoadError(file: library.file, reason: .runnerFailed(
                        "process isolation was asked for \"\(library.key)\" but \(PluginRunnerLocator.executableName) was not found "
                        + "(next to the executable, Configuration.pluginRunnerPath, ANALYTICS_PLUGIN_RUNNER); not used")))
                } else {
                    kept.append(library)
                }
            }
            scan.libraries = kept
            return Loaded(scan: scan, isolated: [])
        }
        var scanner = IsolatedScanner(runner: runner, allowGroupOrOtherWritable: configuration.allowInsecurePluginPermissions)
        scanner.user = configuration.isolation.runnerUser
        let cache = configuration.isolation.scanCacheFile ?? IsolatedScanner.defaultCacheFile()
        scanner.cacheFile = cache.isEmpty ? nil : cache
        let scanned = scanner.scan(directory: directory)
        var problems = scanned.problems
        var inProcess: [NativeLibrary] = []
        var isolated: [ProcessIntegrationFactory] = []
        for info in scanned.libraries {
            if configuration.isolation.mode(for: info, settings: settings) != configuration.isolation.mode(forKey: info.key, settings: settings) {
                log(.info, "\(info.key) runs in-process: isolating every library covers destinations; it adds timeline plugins "
                    + "(role \(info.role)), whose every call would cross a process boundary: name it to isolate it")
            }
            if configuration.isolation.mode(for: info, settings: settings) == .process {
                isolated.append(ProcessIntegrationFactory(info: info, runner: runner))
                continue
            }
            do throws(PluginLoadError) {
                inProcess.append(try loader.load(file: info.file))
            } catch {
                problems.append(error)
            }
        }
        return Loaded(scan: PluginLoader.ScanResult(libraries: inProcess, problems: problems), isolated: isolated)
    }
}
