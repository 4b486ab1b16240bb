#!/usr/bin/env bash
# Issue 11 experiment: does spreading more blocks over more passes make the
# host-bound proxies repeat on one machine? Runs data/plans/host-bound-a.yaml
# (the default plan's timing) and host-bound-b.yaml (12-24 blocks over 4
# passes) alternately, twice each (a1 b1 a2 b2), on one GPU machine, into
# $OUT/repeat-experiment.tgz. Compare with `perfcast compare a1 a2` and b1 b2.
#
#   NODE=h200-sxm-13 data/tools/repeat_experiment.sh DEADLINE_S
set -uo pipefail
T0=$(date +%s)
DEADLINE=${1:?usage: repeat_experiment.sh DEADLINE_S}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-$REPO/out}
NODE=${NODE:-gpu}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/repeat.XXXXXX)
say() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
"$REPO/deploy/gpu/build-agent.sh" > "$WORK/build.log" 2>&1 || { tail -20 "$WORK/build.log"; exit 1; }
TORCH_LIB=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:$TORCH_LIB
AGENT=$REPO/build-gpu/profiler/perfcast-agent
say "built"
runs=(a1 b1 a2 b2)
for i in "${!runs[@]}"; do
  run=${runs[$i]}
  left=$(( DEADLINE - ($(date +%s) - T0) - 10 ))
  share=$(( left / (${#runs[@]} - i) ))
  [ "$share" -lt 20 ] && { say "no time for $run"; break; }
  minutes=$(python3 -c "print('%.2f' % ($share / 60))")
  say "$run: --max-minutes $minutes"
  "$AGENT" run --device cuda --name "$NODE" --plan-file "$REPO/data/plans/host-bound-${run:0:1}.yaml" \
    --out "$WORK/host-bound-$run.sqlite" --max-minutes "$minutes" > "$WORK/run-$run.log" 2>&1
  say "rc=$? $(grep '^perfcast-agent' "$WORK/run-$run.log" | tail -1)"
done
tar czf "$OUT/repeat-experiment.tgz" -C "$WORK" . && say "packed"
