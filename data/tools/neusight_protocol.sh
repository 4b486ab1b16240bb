#!/usr/bin/env bash
# NeuSight's cross-GPU protocol on its public measurements: fit on P4, P100,
# V100, T4 and A100-40GB, predict H100, L4 and A100-80GB, and print per test
# GPU and class MAPE, signed bias and 10-90% interval coverage beside
# NeuSight's own end-to-end error on the same rows.
#
#   data/tools/neusight_protocol.sh [BUILD_DIR]
#
# Runs the protocol through the product: perfcastd on a fresh embedded SQLite
# file, `perfcast import` of the NeuSight files, `perfcast evaluate
# --train-gpu ... --test-gpu ...` (its own text first, then its JSON report
# summarised by data/tools/neusight_compare.py). With a build configured with
# -DPERFCAST_BUILD_BENCHMARKS=ON it then runs the same protocol through
# transfer_bench (predictor::EvaluateDescribed on the files, no server) as a
# cross-check. PERFCAST_PROTOCOL_ARGS adds evaluate flags (default: forward
# selection with leave-one-GPU-out folds, --group-by gpu).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
WORK=$(mktemp -d /tmp/neusight-protocol.XXXXXX)
# shellcheck source=data/tools/neusight_common.sh
. data/tools/neusight_common.sh
start_perfcastd neusight_protocol "$BUILD" "$WORK"

echo "== perfcastd on $PERFCAST_SERVER: import the NeuSight profiles"
"$PERFCAST" import "$DATA/kernels.csv" "$DATA/e2e.csv"
train_flags=()
for gpu in "${TRAIN[@]}"; do train_flags+=(--train-gpu "$gpu"); done
# shellcheck disable=SC2206  # EXTRA is a list of flags
protocol=(evaluate "${train_flags[@]}" --test-gpu "$(join "${TEST[@]}")" $EXTRA)

echo
echo "== perfcast ${protocol[*]}"
"$PERFCAST" "${protocol[@]}" --limit 0
"$PERFCAST" "${protocol[@]}" --output json > "$WORK/evaluation.json"
echo
echo "== the same figures per test GPU and class, beside NeuSight's (from the JSON report)"
python3 data/tools/neusight_compare.py "$WORK/evaluation.json" "$DATA/neusight_e2e.csv"

if [ -x "$BUILD/tests/bench/transfer_bench" ]; then
  echo
  echo "== cross-check without the server: transfer_bench on the files"
  "$BUILD/tests/bench/transfer_bench" --group-by gpu --train "$(join "${TRAIN[@]}")" \
    --test "$(join "${TEST[@]}")" --points "$WORK/points.csv" "$DATA/kernels.csv" "$DATA/e2e.csv" \
    > "$WORK/bench.txt"
  python3 data/tools/neusight_compare.py "$WORK/points.csv" "$DATA/neusight_e2e.csv"
fi
