# analytics-host: `make run` (the demo on embedded defaults) and `make test` are all a new machine needs.
SWIFT ?= swift
CC ?= gcc
BUILD_DIR := build
PLUGINS_DIR := $(BUILD_DIR)/plugins

.PHONY: run-vendors build test validate tsan run bench bench-run bench-plugins fuzz plugins swift-plugins release-plugins live-plugins abi-check clean install install-build install-files uninstall

build:
	$(SWIFT) build

# install-build: the release builds InstallTests installs (as `make install` would).
test: build plugins install-build
	$(SWIFT) test --parallel

# The concurrency, timeline, loader and delivery suites under ThreadSanitizer, in a build directory
# of their own (its duration: docs/benchmarks.md). Any report fails the run (TSan exits 66). The
# backpressure test runs 20,000 lines there (the full 500,000 run under TSan takes minutes).
# handle_segv=0: a library that segfaults on purpose (the isolation tests) must die of SIGSEGV in
# its runner, as without TSan, not be caught and turned into exit status 66.
TSAN_SUITES := ConcurrencyTests|Isolation(Tests|ServicesTests|ScopeTests|CommandTests|ApplicationTests)|SignalsHostTableTests|BackpressureTests|TimelineTests|TimelineExtensionTests|HostHTTPExtensionTests|OlderMinorTests|Loader(Tests|HungHookTests|HungHookWhileRunningTests|LateCallTests|NativeDestinationTests|SendEventTests|ExampleIntegrationTests)|SegmentDestinationTests|SegmentOptionTests|Upload(Batch|RetryPolicy|Server)Tests|DurableQueueTests|ReentryTests|ModeParityTests|\bFinishLaterTests|BatchHookTests|HostHTTPRequestsTests|RefusedBatchSplitTests|SignalsHubTests|DurableDestinationTests|RunnerDispatchTests|CallbackSlotTests|TextFanOutTests|SharedEncodingTests|MiddlewareLateNextTests|UploadFailureReportTests
tsan:
	AH_BACKPRESSURE_LINES=20000 TSAN_OPTIONS="halt_on_error=1 handle_segv=0 $(TSAN_OPTIONS)" $(SWIFT) test --sanitize=thread --scratch-path .build-tsan --parallel --filter '$(TSAN_SUITES)'

# The demo: the example integrations loaded from build/plugins, the embedded settings and events in
# examples/, the JavaScript plugins of examples/live.js (LivePlugins, where JavaScriptCore is
# installed), the signals of examples/signals.ndjson (turned into events by live.js's processSignal),
# storage under build/demo. Segment.io uploads to a local `analytics-host receive` on a free port of
# 127.0.0.1 (nothing leaves the machine), which writes them to build/demo/received.ndjson; the
# receiver is stopped after the run. Every event is delivered: the run exits 0.
DEMO := $(BUILD_DIR)/demo
run: build plugins
	@rm -rf $(DEMO)/file-destination.ndjson $(DEMO)/metrics.json $(DEMO)/received.ndjson $(DEMO)/receiver.log
	@mkdir -p $(DEMO)
	@.build/debug/analytics-host receive --port 0 --out $(DEMO)/received.ndjson --write-key demo-write-key \
		2> $(DEMO)/receiver.log & receiver=$$!; \
	for i in $$(seq 100); do grep -q 'listening on' $(DEMO)/receiver.log && break; sleep 0.1; done; \
	url=$$(sed -n 's|.*listening on \(http://[^ ]*\) .*|\1|p' $(DEMO)/receiver.log); \
	if [ -z "$$url" ]; then cat $(DEMO)/receiver.log; kill $$receiver; exit 1; fi; \
	echo "--- receiver: $$url (analytics-host receive, writing $(DEMO)/received.ndjson)"; \
	set -x; .build/debug/analytics-host run --device --settings examples/settings.json --plugins $(PLUGINS_DIR) \
		--api-host $$url --storage $(DEMO)/storage --input examples/events.ndjson --live-plugins examples/live.js \
		--signals examples/signals.ndjson --drain-timeout 10; status=$$?; set +x; \
	kill -TERM $$receiver; wait $$receiver; \
	echo "--- receiver: $$(tail -n 1 $(DEMO)/receiver.log | sed 's/^analytics-host receive: //')"; \
	echo "--- first event uploaded: $$(head -c 300 $(DEMO)/received.ndjson | head -n 1)"; \
	echo "--- File destination wrote $$(wc -l < $(DEMO)/file-destination.ndjson) lines to $(DEMO)/file-destination.ndjson"; \
	if [ $$status -ne 0 ]; then exit $$status; fi; \
	echo "--- the vendor libraries (Amplitude, PostHog, Mixpanel) to their local fakes"; \
	$(MAKE) --no-print-directory run-vendors

# The vendor libraries (docs/vendors/): examples/events.ndjson through Amplitude (C), PostHog
# (Swift) and Mixpanel (C) to their loopback fakes (`vendor-fake`, the strict fakes of the tests:
# nothing leaves the machine), which write what they accepted to
# build/demo-vendors/{amplitude,posthog,mixpanel}.ndjson.
VENDOR_DEMO := $(BUILD_DIR)/demo-vendors
run-vendors: build plugins
	@rm -rf $(VENDOR_DEMO)
	@mkdir -p $(VENDOR_DEMO)
	@.build/debug/vendor-fake $(VENDOR_DEMO) 2> $(VENDOR_DEMO)/fake.log & fake=$$!; \
	for i in $$(seq 100); do [ "$$(grep -c 'listening on' $(VENDOR_DEMO)/fake.log)" = 4 ] && break; sleep 0.1; done; \
	amplitude=$$(sed -n 's|.*Amplitude listening on \(http://[^ ]*\) .*|\1|p' $(VENDOR_DEMO)/fake.log); \
	posthog=$$(sed -n 's|.*PostHog listening on \(http://[^ ]*\) .*|\1|p' $(VENDOR_DEMO)/fake.log); \
	mixpanel=$$(sed -n 's|.*Mixpanel listening on \(http://[^ ]*\) .*|\1|p' $(VENDOR_DEMO)/fake.log); \
	if [ -z "$$amplitude" ] || [ -z "$$posthog" ] || [ -z "$$mixpanel" ]; then cat $(VENDOR_DEMO)/fake.log; kill $$fake; exit 1; fi; \
	printf '{"integrations":{"Amplitude":{"apiKey":"demo-amplitude-key","apiHost":"%s"},"PostHog":{"apiKey":"phc_demo_project_key","apiHost":"%s"},"Mixpanel":{"projectToken":"demo-mixpanel-token","apiSecret":"demo-mixpanel-secret","apiHost":"%s"}}}\n' \
		"$$amplitude" "$$posthog" "$$mixpanel" > $(VENDOR_DEMO)/settings.json; \
	cat $(VENDOR_DEMO)/fake.log; \
	set -x; .build/debug/analytics-host run --device --settings $(VENDOR_DEMO)/settings.json --plugins $(PLUGINS_DIR) \
		--storage $(VENDOR_DEMO)/storage --input examples/events.ndjson; status=$$?; set +x; \
	kill -TERM $$fake; wait $$fake; tail -n 3 $(VENDOR_DEMO)/fake.log; \
	echo "--- first Amplitude event: $$(head -n 1 $(VENDOR_DEMO)/amplitude.ndjson | head -c 300)"; \
	echo "--- first PostHog event: $$(head -n 1 $(VENDOR_DEMO)/posthog.ndjson | head -c 300)"; \
	echo "--- first Mixpanel event: $$(head -n 1 $(VENDOR_DEMO)/mixpanel.ndjson | head -c 300)"; \
	exit $$status

bench: bench-plugins
	$(SWIFT) build -c release --product analytics-bench
	$(SWIFT) build -c release --product analytics-host
	$(SWIFT) build -c release --product analytics-plugin-runner
	.build/release/analytics-bench

# Only the `run` rows (many users in the input): the floor, run → receive over BENCH_RUN_LINES lines,
# run → python3 http.server, run → each vendor library and all four over BENCH_VENDOR_LINES lines.
BENCH_RUN_LINES ?= 1000000
BENCH_VENDOR_LINES ?= 20000
bench-run: bench-plugins
	$(SWIFT) build -c release --product analytics-bench
	$(SWIFT) build -c release --product analytics-host
	.build/release/analytics-bench run $(BENCH_RUN_LINES) $(BENCH_VENDOR_LINES)

# The Swift vendor libraries optimized, for the benchmark's vendor rows (the C ones it builds
# with -O2 itself; `make plugins` builds Swift ones in debug for the tests).
BENCH_PLUGINS := PostHogIntegration GoogleAnalytics4Integration
bench-plugins:
	@mkdir -p $(BUILD_DIR)/bench-plugins
	@set -e; for product in $(BENCH_PLUGINS); do \
		$(SWIFT) build -c release --product $$product; \
		$(SWIFTC) -emit-library -module-name $$product -o $(BUILD_DIR)/bench-plugins/lib$$product.so -g \
			-L .build/release @.build/release/$$product.product/Objects.LinkFileList \
			-Xlinker --version-script=Plugins/swift-plugin.exports; \
	done

# Fuzzing (Tests/Fuzz): every target built with libFuzzer + AddressSanitizer, each run for
# FUZZ_SECONDS from its seed corpus; finds land in build/fuzz/crashes.
FUZZ_SECONDS ?= 60
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) Tests/Fuzz/fuzz.sh run

# The example integrations: one self-contained C file each, the ABI header is all they include.
# Swift ones are SwiftPM dynamic-library products (module AnalyticsIntegration, statically linked),
# built with this toolchain (the host refuses any other) and found by their RUNPATH at run time.
# SwiftPM compiles them; the link here adds Plugins/swift-plugin.exports, so that only the ABI
# entry function is exported (a linker flag kept out of Package.swift: a package with unsafe flags
# cannot be a dependency of another package).
SWIFT_PLUGINS := WebhooksIntegration MetricsIntegration PostHogIntegration GoogleAnalytics4Integration
# Swift test fixtures, linked the same way into build/fixtures (never installed).
SWIFT_FIXTURES := LaterFixtureIntegration DurableFixtureIntegration
FIXTURES_DIR := $(BUILD_DIR)/fixtures
SWIFTC ?= $(dir $(shell command -v $(SWIFT)))swiftc
SWIFT_BIN := .build/debug

plugins: $(PLUGINS_DIR)/libfile.so $(PLUGINS_DIR)/libconsole.so $(PLUGINS_DIR)/libhello.so $(PLUGINS_DIR)/libredact.so $(PLUGINS_DIR)/libamplitude.so $(PLUGINS_DIR)/libmixpanel.so swift-plugins live-plugins

# LivePlugins (Plugins/Live): JavaScript plugins on JavaScriptCore. Built only where the Debian
# package libjavascriptcoregtk-4.1-dev is installed (`.ci/run` installs it); everything else
# builds and runs without it. The runtime preludes (Plugins/Live/runtime/*.js) are embedded.
JSC_PKG := javascriptcoregtk-4.1
JSC_FOUND := $(shell pkg-config --exists $(JSC_PKG) 2>/dev/null && echo yes)
LIVE_SOURCES := $(wildcard Plugins/Live/*.c)
LIVE_DEPS := $(LIVE_SOURCES) $(wildcard Plugins/Live/*.h) $(wildcard Plugins/Live/runtime/*.js) include/analytics_plugin.h
LIVE_CFLAGS := -std=c11 -shared -fPIC -O2 -fvisibility=hidden -Wall -Wextra -Wmissing-prototypes -Werror -I include \
	-DLIVE_RUNTIME_DIR='"$(abspath Plugins/Live/runtime)"'

ifeq ($(JSC_FOUND),yes)
live-plugins: $(PLUGINS_DIR)/libliveplugins.so
else
live-plugins:
	@echo "LivePlugins not built: pkg-config finds no $(JSC_PKG) (Debian: apt-get install libjavascriptcoregtk-4.1-dev)"
endif

$(PLUGINS_DIR)/libliveplugins.so: $(LIVE_DEPS)
	@mkdir -p $(PLUGINS_DIR)
	$(CC) $(LIVE_CFLAGS) $(shell pkg-config --cflags $(JSC_PKG)) -o $@ $(LIVE_SOURCES) $(shell pkg-config --libs $(JSC_PKG)) -lpthread

swift-plugins:
	@mkdir -p $(PLUGINS_DIR)
	@set -e; for product in $(SWIFT_PLUGINS); do \
		$(SWIFT) build --product $$product; \
		$(SWIFTC) -emit-library -module-name $$product -o $(PLUGINS_DIR)/lib$$product.so -g \
			-L $(SWIFT_BIN) @$(SWIFT_BIN)/$$product.product/Objects.LinkFileList \
			-Xlinker --version-script=Plugins/swift-plugin.exports; \
	done
	@mkdir -p $(FIXTURES_DIR)
	@set -e; for product in $(SWIFT_FIXTURES); do \
		$(SWIFT) build --product $$product; \
		$(SWIFTC) -emit-library -module-name $$product -o $(FIXTURES_DIR)/lib$$product.so -g \
			-L $(SWIFT_BIN) @$(SWIFT_BIN)/$$product.product/Objects.LinkFileList \
			-Xlinker --version-script=Plugins/swift-plugin.exports; \
	done

$(PLUGINS_DIR)/libfile.so: Plugins/File/file.c include/analytics_plugin.h
	@mkdir -p $(PLUGINS_DIR)
	$(CC) -std=c99 -shared -fPIC -O2 -I include -o $@ Plugins/File/file.c

$(PLUGINS_DIR)/libhello.so: Plugins/Hello/hello.c include/analytics_plugin.h
	@mkdir -p $(PLUGINS_DIR)
	$(CC) -std=c99 -shared -fPIC -O2 -I include -o $@ Plugins/Hello/hello.c

$(PLUGINS_DIR)/libconsole.so: Plugins/Console/console.c include/analytics_plugin.h
	@mkdir -p $(PLUGINS_DIR)
	$(CC) -std=c99 -shared -fPIC -O2 -I include -o $@ Plugins/Console/console.c

$(PLUGINS_DIR)/libredact.so: Plugins/Redact/redact.c include/analytics_plugin.h
	@mkdir -p $(PLUGINS_DIR)
	$(CC) -std=c99 -shared -fPIC -O2 -I include -o $@ Plugins/Redact/redact.c

# Every example library of Plugins/ through `analytics-host validate` (each check in a runner
# process, as the user `run`'s runners are: 65534 under a root host), with settings that create an
# instance: File and Metrics write beneath a directory that user may write; the vendors' requests
# are answered by the validator (refused), never sent; so are Webhooks' posts.
VALIDATE_DIR := $(abspath $(BUILD_DIR))/validate
validate: build plugins
	@mkdir -p $(VALIDATE_DIR) && chmod 1777 $(VALIDATE_DIR)
	@set -e; for lib in $(PLUGINS_DIR)/*.so; do \
		echo "--- validate $$lib"; \
		case $$lib in \
		*libfile.so) settings='{"path":"$(VALIDATE_DIR)/file.ndjson"}';; \
		*libMetricsIntegration.so) settings='{"path":"$(VALIDATE_DIR)/metrics.json"}';; \
		*libamplitude.so|*libPostHogIntegration.so) settings='{"apiKey":"validate","apiHost":"http://127.0.0.1:9"}';; \
		*libWebhooksIntegration.so) settings='{"globalHook":"http://127.0.0.1:9/in"}';; \
		*libGoogleAnalytics4Integration.so) settings='{"measurementId":"G-VALIDATE","apiSecret":"validate"}';; \
		*libmixpanel*.so|*libMixpanel*.so) settings='{"token":"validate","apiHost":"http://127.0.0.1:9"}';; \
		*) settings='{}';; \
		esac; \
		.build/debug/analytics-host validate $$lib --settings "$$settings"; \
	done

# The C both vendor libraries compile in (JSON, output buffer, settings readers, host lookups):
# not a plugin of its own, never built alone; its symbols are hidden in each library.
VENDOR_SUPPORT_SOURCES := $(wildcard Plugins/VendorSupport/*.c)
VENDOR_SUPPORT_DEPS := $(VENDOR_SUPPORT_SOURCES) Plugins/VendorSupport/vendor_support.h include/analytics_plugin.h

# Amplitude (docs/vendors/amplitude.md): a real vendor destination in C, several files, the ABI
# header is all it includes; only the entry function is exported (-fvisibility=hidden).
AMPLITUDE_SOURCES := $(wildcard Plugins/Amplitude/*.c) $(VENDOR_SUPPORT_SOURCES)
$(PLUGINS_DIR)/libamplitude.so: $(AMPLITUDE_SOURCES) Plugins/Amplitude/amplitude.h $(VENDOR_SUPPORT_DEPS)
	@mkdir -p $(PLUGINS_DIR)
	$(CC) -std=c99 -shared -fPIC -O2 -fvisibility=hidden -Wall -Wextra -Wmissing-prototypes -Werror -I include -o $@ $(AMPLITUDE_SOURCES) -lm -pthread

# Mixpanel (docs/vendors/mixpanel.md): C, like Amplitude; it sends through the host's HTTP client.
MIXPANEL_SOURCES := $(wildcard Plugins/Mixpanel/*.c) $(VENDOR_SUPPORT_SOURCES)
$(PLUGINS_DIR)/libmixpanel.so: $(MIXPANEL_SOURCES) Plugins/Mixpanel/mixpanel.h $(VENDOR_SUPPORT_DEPS)
	@mkdir -p $(PLUGINS_DIR)
	$(CC) -std=c99 -shared -fPIC -O2 -fvisibility=hidden -Wall -Wextra -Wmissing-prototypes -Werror -I include -o $@ $(MIXPANEL_SOURCES) -pthread

# The ABI header must stay plain C99 and valid C++ (it is compiled by both kinds of plugins).
abi-check:
	@mkdir -p $(BUILD_DIR)/abi-check
	$(CC) -std=c99 -Wall -Wextra -pedantic -Werror -I include -c -o $(BUILD_DIR)/abi-check/c99.o Tests/Fixtures/abi_check.c
	$(CXX) -x c++ -Wall -Wextra -pedantic -Werror -I include -c -o $(BUILD_DIR)/abi-check/cxx.o Tests/Fixtures/abi_check.c
	@echo "abi-check: include/analytics_plugin.h compiles as C99 and C++"

# Installing: `make install PREFIX=/usr/local [DESTDIR=/stage]` puts the command and its runner
# (release builds), the ABI header, its pkg-config file (analytics-plugin.pc: a C author builds with
# `gcc $(pkg-config --cflags analytics-plugin) -shared -fPIC …`), the plugins directory with the
# example integrations (release builds: RELEASE_PLUGINS_DIR) and the manual page in place.
# `install-files` copies without building (HOST_BINARY names the command to install, the runner
# beside it; INSTALL_PLUGINS_DIR the libraries). The command keeps using the Swift runtime of the
# toolchain that built it (its RUNPATH), as do the Swift plugins: the host refuses any other.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR := $(PREFIX)/bin
INCLUDEDIR := $(PREFIX)/include
PKGCONFIGDIR := $(PREFIX)/lib/pkgconfig
PLUGINDIR := $(PREFIX)/lib/analytics-host/plugins
MAN1DIR := $(PREFIX)/share/man/man1
HOST_BINARY ?= .build/release/analytics-host
VERSION := $(shell sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/AnalyticsCore/Support/HostVersion.swift)
RELEASE_PLUGINS_DIR := $(BUILD_DIR)/release-plugins
INSTALL_PLUGINS_DIR ?= $(RELEASE_PLUGINS_DIR)
INSTALLED_PLUGINS = $(notdir $(wildcard $(INSTALL_PLUGINS_DIR)/*.so))

install: install-build
	$(MAKE) install-files

install-build: release-plugins
	$(SWIFT) build -c release --product analytics-host
	$(SWIFT) build -c release --product analytics-plugin-runner

# Every example library as installed: the Swift ones linked from `swift build -c release` objects
# (as `make plugins` links the debug ones), the C ones as `make plugins` builds them (already -O2).
# A debug-built Swift library needs libswiftSwiftOnoneSupport.so, which a release command does
# not load (docs/installing.md says what the host does about it).
release-plugins: plugins
	@mkdir -p $(RELEASE_PLUGINS_DIR)
	@set -e; for lib in $(PLUGINS_DIR)/*.so; do \
		case " $(SWIFT_PLUGINS:%=lib%.so) " in *" $$(basename $$lib) "*) ;; *) cp $$lib $(RELEASE_PLUGINS_DIR)/;; esac; \
	done
	@set -e; for product in $(SWIFT_PLUGINS); do \
		$(SWIFT) build -c release --product $$product; \
		$(SWIFTC) -emit-library -module-name $$product -o $(RELEASE_PLUGINS_DIR)/lib$$product.so -g \
			-L .build/release @.build/release/$$product.product/Objects.LinkFileList \
			-Xlinker --version-script=Plugins/swift-plugin.exports; \
	done

install-files:
	@test -x $(HOST_BINARY) || { echo "install: $(HOST_BINARY) is not built (make install builds it)"; exit 1; }
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(PLUGINDIR) $(DESTDIR)$(MAN1DIR)
	install -m 755 $(HOST_BINARY) $(DESTDIR)$(BINDIR)/analytics-host
	install -m 755 $(dir $(HOST_BINARY))analytics-plugin-runner $(DESTDIR)$(BINDIR)/analytics-plugin-runner
	install -m 644 include/analytics_plugin.h $(DESTDIR)$(INCLUDEDIR)/analytics_plugin.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@PLUGINDIR@|$${prefix}/lib/analytics-host/plugins|' -e 's|@VERSION@|$(VERSION)|' \
		doc/analytics-plugin.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/analytics-plugin.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/analytics-plugin.pc
	install -m 644 doc/analytics-host.1 $(DESTDIR)$(MAN1DIR)/analytics-host.1
	for lib in $(INSTALLED_PLUGINS); do install -m 755 $(INSTALL_PLUGINS_DIR)/$$lib $(DESTDIR)$(PLUGINDIR)/$$lib; done

# Removes what `install` put there (the example plugins by name; the plugins directory only if
# nothing else is left in it).
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/analytics-host $(DESTDIR)$(BINDIR)/analytics-plugin-runner $(DESTDIR)$(INCLUDEDIR)/analytics_plugin.h \
		$(DESTDIR)$(PKGCONFIGDIR)/analytics-plugin.pc $(DESTDIR)$(MAN1DIR)/analytics-host.1
	for lib in $(INSTALLED_PLUGINS); do rm -f $(DESTDIR)$(PLUGINDIR)/$$lib; done
	-rmdir $(DESTDIR)$(PLUGINDIR) $(DESTDIR)$(PREFIX)/lib/analytics-host 2>/dev/null

clean:
	rm -rf .build $(BUILD_DIR)
