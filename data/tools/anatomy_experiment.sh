#!/usr/bin/env bash
# Issue 11 experiment: does the plain PyTorch loop repeat itself, and where
# does its extra time go? On one GPU machine: the agent on
# data/plans/anatomy.yaml, the plain loop on the same keys, both again (A1 P1
# A2 P2: each side's own repeatability beside the agent-vs-loop gap), then
# profiler/validation/step_anatomy.py (one process per key) on the keys in
# data/plans/anatomy-keys.txt. Everything lands in $OUT.
#
#   NODE=h100-sxm-14 data/tools/anatomy_experiment.sh
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-$REPO/out}
NODE=${NODE:?NODE: the machine name}
T0=$(date +%s)
say() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
say "build"
"$REPO/deploy/gpu/build-agent.sh" > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
PYTHON=python3
"$PYTHON" -c 'import torch' 2>/dev/null || PYTHON=/opt/torch/.venv/bin/python
TORCH_LIB=$("$PYTHON" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:$TORCH_LIB
AGENT=$REPO/build-gpu/profiler/perfcast-agent
"$AGENT" fingerprint --device cuda --name "$NODE" > "$OUT/fingerprint-$NODE.json" 2>&1
for round in 1 2; do
  say "agent $round"
  "$AGENT" run --device cuda --name "$NODE" --plan-file "$REPO/data/plans/anatomy.yaml" \
    --out "$OUT/agent-$round.sqlite" --max-minutes 1.6 > "$OUT/run-agent-$round.log" 2>&1
  grep '^perfcast-agent' "$OUT/run-agent-$round.log" | tail -2
  say "plain loop $round"
  "$PYTHON" "$REPO/profiler/validation/plain_loop.py" "$OUT/agent-$round.sqlite" \
    --out "$OUT/plain-$round.csv" --count 40 > "$OUT/plain-$round.log" 2>&1
  tail -2 "$OUT/plain-$round.log"
done
say "anatomy"
mapfile -t KEYS < "$REPO/data/plans/anatomy-keys.txt"
"$PYTHON" "$REPO/profiler/validation/step_anatomy.py" "${KEYS[@]}" --out "$OUT/anatomy.json" \
  --deadline-s 200 2>&1 | grep -v -i warn
say "total"
