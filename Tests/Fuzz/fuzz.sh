#!/usr/bin/env bash
# Builds the fuzz targets (Tests/Fuzz/Targets/*.swift) with libFuzzer and AddressSanitizer, and
# runs each for a bounded time from its seed corpus (Tests/Fuzz/Corpus/<target>).
#
#   Tests/Fuzz/fuzz.sh [build|run] [TARGET...]      (default: run, every target)
#
#   FUZZ_SECONDS  seconds per target (default 60)
#   FUZZ_JOBS     targets run at the same time (default: the number of cores)
#   FUZZ_OPT      optimisation flag (default -O)
#
# The code under test is compiled once per module, instrumented, into static libraries under
# build/fuzz/modules (AnalyticsCore, the test-support module holding the HTTP request reader, and
# the command's sources but main.swift), with -enable-testing so the targets can reach internal
# types through @testable import. Modules are rebuilt only when a source, the file list or the
# flags change; sources are found by directory, not listed here.
#
# Each target's new inputs go to build/fuzz/corpus/<target> (never into the repository), a failing
# input to build/fuzz/crashes/<target>/, the output to build/fuzz/logs/<target>.log. Replay one:
#   build/fuzz/bin/<target> build/fuzz/crashes/<target>/crash-…
set -euo pipefail
cd "$(dirname "$0")/../.."

MODE=run
if [ $# -gt 0 ] && { [ "$1" = build ] || [ "$1" = run ]; }; then MODE=$1; shift; fi
SWIFTC=${SWIFTC:-swiftc}
OUT=build/fuzz
SECONDS_EACH=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-$(nproc)}
OPT=${FUZZ_OPT:--O}
FLAGS=(-swift-version 6 "$OPT" -sanitize=fuzzer,address -parse-as-library -package-name analytics_host
       -I include -I Sources/CZlib -I Sources/CProcessControl -I "$OUT/modules")
export SWIFT_BACKTRACE=enable=no   # let libFuzzer, not the Swift runtime, handle crashes

if [ $# -gt 0 ]; then TARGETS=("$@"); else
  TARGETS=(); for f in Tests/Fuzz/Targets/*.swift; do TARGETS+=("$(basename "$f" .swift)"); done
fi
mkdir -p "$OUT/modules" "$OUT/bin" "$OUT/logs"

# True when $1 is missing or older than any later argument.
stale() {
  local out=$1; shift
  [ -e "$out" ] || return 0
  local f; for f in "$@"; do [ "$f" -nt "$out" ] && return 0; done
  return 1
}

# build_module NAME DEPENDENCY_LIBS -- SOURCES...
build_module() {
  local name=$1 deps=$2; shift 3
  local lib="$OUT/modules/lib$name.a" manifest="$OUT/modules/$name.manifest"
  local wanted; wanted=$(printf '%s\n' "${FLAGS[@]}" "$@")
  if [ -e "$manifest" ] && [ "$(cat "$manifest")" = "$wanted" ] && ! stale "$lib" "$@" $deps; then return 0; fi
  echo "fuzz: compiling module $name ($# files)"
  local started=$SECONDS
  "$SWIFTC" -module-name "$name" -emit-module -emit-module-path "$OUT/modules/$name.swiftmodule" \
    -emit-library -static -o "$lib" -enable-testing "${FLAGS[@]}" "$@"
  echo "$wanted" > "$manifest"
  echo "fuzz: module $name built in $((SECONDS - started)) s"
}

mapfile -t core < <(find Sources/AnalyticsCore -name '*.swift' | LC_ALL=C sort)
mapfile -t http < <(find Sources/LoopbackHTTP -name '*.swift' | LC_ALL=C sort)
mapfile -t support < <(find Tests/AnalyticsTestSupport -name '*.swift' | LC_ALL=C sort)
mapfile -t command < <(find Sources/analytics-host -name '*.swift' ! -name main.swift | LC_ALL=C sort)
mapfile -t shared < <(find Tests/Fuzz/Support -name '*.swift' | LC_ALL=C sort)
CORE_LIB="$OUT/modules/libAnalyticsCore.a"
HTTP_LIB="$OUT/modules/libLoopbackHTTP.a"
build_module AnalyticsCore "" -- "${core[@]}"
build_module LoopbackHTTP "$CORE_LIB" -- "${http[@]}"
build_module AnalyticsTestSupport "$CORE_LIB $HTTP_LIB" -- "${support[@]}" &
support_pid=$!
build_module analytics_host "$CORE_LIB $HTTP_LIB" -- "${command[@]}"
wait $support_pid
LIBS=("$OUT/modules/libanalytics_host.a" "$OUT/modules/libAnalyticsTestSupport.a" "$HTTP_LIB" "$CORE_LIB")

# One swiftc per target: its file and the shared support, linked with the modules.
build_target() {
  local name=$1 source="Tests/Fuzz/Targets/$1.swift" bin="$OUT/bin/$1"
  [ -f "$source" ] || { echo "fuzz: no target $name (Tests/Fuzz/Targets/$name.swift)" >&2; return 1; }
  stale "$bin" "$source" "${shared[@]}" "${LIBS[@]}" || return 0
  "$SWIFTC" -module-name "Fuzz$name" "${FLAGS[@]}" -use-ld=lld "$source" "${shared[@]}" \
    -L "$OUT/modules" -lanalytics_host -lAnalyticsTestSupport -lLoopbackHTTP -lAnalyticsCore -lz -o "$bin"
  echo "fuzz: linked $bin"
}

# Runs $1 at most $JOBS at a time over the targets; fails when any run failed.
each_target() {
  local fn=$1 failed=0 running=0 t
  for t in "${TARGETS[@]}"; do
    "$fn" "$t" &
    running=$((running + 1))
    if [ $running -ge "$JOBS" ]; then wait -n || failed=1; running=$((running - 1)); fi
  done
  while [ $running -gt 0 ]; do wait -n || failed=1; running=$((running - 1)); done
  return $failed
}

started=$SECONDS
each_target build_target
echo "fuzz: build done in $((SECONDS - started)) s"
[ "$MODE" = build ] && exit 0

run_target() {
  local name=$1 log="$OUT/logs/$1.log"
  local work="$OUT/corpus/$name" crashes="$OUT/crashes/$name/" tmp="$PWD/$OUT/tmp/$name"
  # Scratch files (queue directories, input files) on tmpfs when there is one: fsync is free there.
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then tmp="/dev/shm/analytics-fuzz-$$-$name"; fi
  local options; options=$(sed -n 's|^// libfuzzer-options:||p' "Tests/Fuzz/Targets/$name.swift")
  mkdir -p "$work" "$crashes" && rm -rf "$tmp" && mkdir -p "$tmp"
  local status=0
  # shellcheck disable=SC2086  # options are words
  TMPDIR="$tmp" timeout -k 10 $((SECONDS_EACH + 120)) "$OUT/bin/$name" -max_total_time="$SECONDS_EACH" \
    -artifact_prefix="$crashes" -print_final_stats=1 $options "$work" "Tests/Fuzz/Corpus/$name" \
    > "$log" 2>&1 || status=$?
  rm -rf "$tmp"
  local runs cov
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  if [ $status -eq 0 ]; then
    echo "fuzz: PASS $name: ${runs:-?} inputs in ${SECONDS_EACH} s, ${cov:-cov: ?}"
  else
    echo "fuzz: FAIL $name (exit $status), input saved in $crashes, log $log:"
    grep -E 'fuzz property failed|ERROR: (AddressSanitizer|libFuzzer)|Fatal error|deadly signal|Test unit written' "$log" | head -20
    return 1
  fi
}

started=$SECONDS
if each_target run_target; then
  echo "fuzz: ${#TARGETS[@]} targets, nothing found, $((SECONDS - started)) s"
else
  echo "fuzz: a target failed (see above)"
  exit 1
fi
