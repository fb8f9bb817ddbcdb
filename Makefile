# analytics-host: `make run` (the demo on embedded defaults) and `make test` are all a new machine needs.
SWIFT ?= swift
CC ?= gcc
BUILD_DIR := build
PLUGINS_DIR := $(BUILD_DIR)/plugins

.PHONY: build test run bench plugins clean

build:
	$(SWIFT) build

test: build
	$(SWIFT) test --parallel

run: build
	$(SWIFT) run analytics-host

bench:
	$(SWIFT) build -c release --product analytics-bench
	.build/release/analytics-bench

clean:
	rm -rf .build $(BUILD_DIR)
