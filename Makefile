# analytics-host: `make run` (the demo on embedded defaults) and `make test` are all a new machine needs.
SWIFT ?= swift
CC ?= gcc
BUILD_DIR := build
PLUGINS_DIR := $(BUILD_DIR)/plugins

.PHONY: build test tsan run bench fuzz plugins swift-plugins live-plugins abi-check clean

build:
	$(SWIFT) build

test: build plugins
	$(SWIFT) test --parallel

# The concurrency, timeline, loader and delivery suites under ThreadSanitizer, in a build directory
# of their own (a few minutes on two cores). Any report fails the run (TSan exits 66).
TSAN_SUITES := ConcurrencyTests|BackpressureTests|TimelineTests|TimelineExtensionTests|HostHTTPExtensionTests|OlderMinorTests|Loader(Tests|HungHookTests|HungHookWhileRunningTests|LateCallTests|NativeDestinationTests|SendEventTests|ExampleIntegrationTests)|SegmentDestinationTests|SegmentOptionTests|Upload(Batch|RetryPolicy|Server)Tests|DurableQueueTests
tsan:
	TSAN_OPTIONS="halt_on_error=1 $(TSAN_OPTIONS)" $(SWIFT) test --sanitize=thread --scratch-path .build-tsan --parallel --filter '$(TSAN_SUITES)'

# The demo: the example integrations loaded from build/plugins, the embedded settings and events in
# examples/, the JavaScript plugins of examples/live.js (LivePlugins, where JavaScriptCore is
# installed), the signals of examples/signals.ndjson (turned into events by live.js's processSignal),
# storage under build/demo (the Segment.io queue stays there while offline). Offline, the
# run does not wait for uploads (--drain-timeout 0) and exits 4, "still queued": that is expected.
run: build plugins
	@rm -rf $(BUILD_DIR)/demo/file-destination.ndjson $(BUILD_DIR)/demo/metrics.json
	@mkdir -p $(BUILD_DIR)/demo
	.build/debug/analytics-host run --settings examples/settings.json --plugins $(PLUGINS_DIR) \
		--storage $(BUILD_DIR)/demo/storage --input examples/events.ndjson --live-plugins examples/live.js \
		--signals examples/signals.ndjson --drain-timeout 0; status=$$?; [ $$status -eq 0 ] || [ $$status -eq 4 ]
	@echo "--- File destination wrote $$(wc -l < $(BUILD_DIR)/demo/file-destination.ndjson) lines to $(BUILD_DIR)/demo/file-destination.ndjson"

bench:
	$(SWIFT) build -c release --product analytics-bench
	$(SWIFT) build -c release --product analytics-host
	.build/release/analytics-bench

# Fuzzing (Tests/Fuzz): every target built with libFuzzer + AddressSanitizer, each run for
# FUZZ_SECONDS from its seed corpus; finds land in build/fuzz/crashes.
FUZZ_SECONDS ?= 60
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) Tests/Fuzz/fuzz.sh run

# The example integrations: one self-contained C file each, the ABI header is all they include.
# Swift ones are SwiftPM dynamic-library products (module AnalyticsIntegration, statically linked),
# built with this toolchain (the host refuses any other) and found by their RUNPATH at run time.
SWIFT_PLUGINS := WebhooksIntegration MetricsIntegration

plugins: $(PLUGINS_DIR)/libfile.so $(PLUGINS_DIR)/libconsole.so $(PLUGINS_DIR)/libhello.so $(PLUGINS_DIR)/libredact.so swift-plugins live-plugins

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
		cp .build/debug/lib$$product.so $(PLUGINS_DIR)/; \
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

# The ABI header must stay plain C99 and valid C++ (it is compiled by both kinds of plugins).
abi-check:
	@mkdir -p $(BUILD_DIR)/abi-check
	$(CC) -std=c99 -Wall -Wextra -pedantic -Werror -I include -c -o $(BUILD_DIR)/abi-check/c99.o Tests/Fixtures/abi_check.c
	$(CXX) -x c++ -Wall -Wextra -pedantic -Werror -I include -c -o $(BUILD_DIR)/abi-check/cxx.o Tests/Fixtures/abi_check.c
	@echo "abi-check: include/analytics_plugin.h compiles as C99 and C++"

clean:
	rm -rf .build $(BUILD_DIR)
