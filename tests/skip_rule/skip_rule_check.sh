#!/usr/bin/env bash
# Runs the skip-rule probe's tests (skip_rule_probe.cc) through ctest as CI
# does, with the probe armed, and fails unless ctest reports the suite whose
# setup failed and the bare skip as failed and only the declared environment
# gap as skipped. Usage: skip_rule_check.sh <this directory's build folder>
set -uo pipefail
build_dir=$1
out=$(PERFCAST_SKIP_RULE_PROBE=1 ctest --test-dir "$build_dir" -R '^SkipRuleProbe' 2>&1)
status=0
expect() {  # expect <test name> <ctest's word for its outcome>
  if ! grep -Eq "Test +#[0-9]+: $1 \.+[* ]*$2" <<<"$out"; then
    echo "FAIL: ctest did not report $1 as $2" >&2
    status=1
  fi
}
expect 'SkipRuleProbeSetupFails\.IsReportedFailed' 'Failed'
expect 'SkipRuleProbe\.BareSkipIsReportedFailed' 'Failed'
expect 'SkipRuleProbe\.DeclaredEnvironmentGapIsSkipped' 'Skipped'
if [ "$status" -ne 0 ]; then
  echo "ctest's output:" >&2
  echo "$out" >&2
fi
exit "$status"
