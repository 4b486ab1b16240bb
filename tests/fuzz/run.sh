#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) in build-fuzz/ and
# fuzzes each for FUZZ_SECONDS over a copy of its committed corpus. Prints
# executions, corpus size and any crash per target; exits non-zero if any
# target crashed, leaked or broke an invariant (the inputs are kept under
# build-fuzz/fuzz-out/<target>/).
#
#   tests/fuzz/run.sh                      # every target, 60 s each
#   FUZZ_SECONDS=10 tests/fuzz/run.sh csv_profiles_fuzz
#   FUZZ_MERGE=1 tests/fuzz/run.sh         # then minimise into the committed corpus
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
build="${FUZZ_BUILD_DIR:-$repo/build-fuzz}"
seconds="${FUZZ_SECONDS:-60}"
jobs="${FUZZ_BUILD_JOBS:-2}"
all_targets=(csv_profiles_fuzz jsonl_profiles_fuzz node_spec_fuzz plan_file_fuzz
             agent_sqlite_fuzz rpc_request_fuzz workload_key_fuzz)
if [[ $# -gt 0 ]]; then targets=("$@"); else targets=("${all_targets[@]}"); fi

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  launcher=()
  if command -v ccache > /dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  # Debian's clang-14 package installs versioned names only; "clang" comes with the clang package.
  cc=clang cxx=clang++
  if ! command -v clang++ > /dev/null; then cc=clang-14 cxx=clang++-14; fi
  CC="$cc" CXX="$cxx" cmake -S "$repo" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERFCAST_BUILD_FUZZERS=ON -DPERFCAST_WITH_TORCH=OFF \
    -DPERFCAST_BUILD_BENCHMARKS=OFF "${launcher[@]}" > /dev/null
fi
nice cmake --build "$build" -j"$jobs" --target "${targets[@]}"

out="$build/fuzz-out"
status=0
printf '%-22s %12s %10s %10s  %s\n' target executions exec/s corpus result
for target in "${targets[@]}"; do
  work="$out/$target"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp "$repo/tests/fuzz/corpus/$target/"* "$work/corpus/" 2> /dev/null || true
  extra_dirs=()
  [[ -d "$repo/tests/fuzz/regressions/$target" ]] && extra_dirs=("$repo/tests/fuzz/regressions/$target")
  log="$work/fuzz.log"
  set +e
  (cd "$work" && nice "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 \
     -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
     corpus "${extra_dirs[@]}" > "$log" 2>&1)
  rc=$?
  set -e
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
  files="$(find "$work/corpus" -type f | wc -l)"
  bytes="$(du -sb "$work/corpus" | cut -f1)"
  if [[ $rc -eq 0 ]]; then
    result=ok
  else
    result="CRASH (rc $rc): $(find "$work/artifacts" -type f -printf '%f ')"
    grep -m3 -E 'ERROR: |runtime error|fuzz invariant failed' "$log" || true
    status=1
  fi
  printf '%-22s %12s %10s %10s  %s\n' "$target" "${execs:-?}" "${rate:-?}" \
    "${files}f/${bytes}B" "$result"
  if [[ "${FUZZ_MERGE:-0}" == 1 && $rc -eq 0 ]]; then
    merged="$work/merged"
    mkdir -p "$merged"
    "$build/tests/fuzz/$target" -merge=1 "$merged" "$work/corpus" > "$work/merge.log" 2>&1
    rm -f "$repo/tests/fuzz/corpus/$target/"*
    cp "$merged/"* "$repo/tests/fuzz/corpus/$target/"
    echo "  merged: $(find "$merged" -type f | wc -l) files, $(du -sb "$merged" | cut -f1) bytes"
  fi
done
exit $status
