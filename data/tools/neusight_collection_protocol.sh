#!/usr/bin/env bash
# Issue 29 item 5: does the spec-sheet transfer lean on one collection? Runs
# NeuSight's cross-GPU protocol (fit on P4, P100, V100, T4 and A100-40GB,
# predict H100, L4 and A100-80GB) on subsets of the training kernels and
# prints one line per subset: the test GPUs' GEMM and end-to-end MAPE, median
# signed bias and 10-90% coverage, then each test GPU's GEMM / end-to-end MAPE.
#
#   data/tools/neusight_collection_protocol.sh [BUILD_DIR]
#
# Subsets: all rows; each training GPU's training collection (agent_version
# neusight-train-*: its linear / bmm collections and its share of the merged
# element-wise, norm and softmax files) left out in turn, its test collection
# kept; each training GPU left out whole; only the per-GPU test collections
# (every neusight-train-* row dropped). Every subset runs on its own
# perfcastd (fresh SQLite file) through `perfcast import` and `perfcast
# evaluate --train-gpu ... --test-gpu ... --output json`. The end-to-end rows
# (e2e.csv) are kept in every subset.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
ROOT=$(mktemp -d /tmp/neusight-collections.XXXXXX)
trap 'rm -rf "$ROOT"' EXIT
# shellcheck source=data/tools/neusight_common.sh
. data/tools/neusight_common.sh

# run LABEL KERNELS.csv TRAIN_GPU...: one protocol on its own server.
run() {
  local label=$1 kernels=$2
  shift 2
  (
    start_perfcastd neusight_collection_protocol "$BUILD" "$(mktemp -d "$ROOT/run.XXXXXX")"
    "$PERFCAST" import "$kernels" "$DATA/e2e.csv" > /dev/null
    local flags=()
    for gpu in "$@"; do flags+=(--train-gpu "$gpu"); done
    # shellcheck disable=SC2086  # EXTRA is a list of flags
    "$PERFCAST" evaluate "${flags[@]}" --test-gpu "$(join "${TEST[@]}")" $EXTRA --output json \
      > "$PERFCASTD_WORK/evaluation.json"
    python3 data/tools/neusight_compare.py --summary "$label" "$PERFCASTD_WORK/evaluation.json"
  )
}

# keep_rows OUT AWK_CONDITION: kernels.csv's header and the rows ($1 gpu,
# $NF agent_version) the condition keeps.
keep_rows() {
  awk -F, -v OFS=, "NR == 1 || ($2)" "$DATA/kernels.csv" > "$1"
}

echo "subset                         gemm  MAPE   bias   cover  e2e MAPE   bias   cover  | per test GPU gemm/e2e MAPE"
run "all rows" "$DATA/kernels.csv" "${TRAIN[@]}"
for gpu in "${TRAIN[@]}"; do
  keep_rows "$ROOT/no-train-$gpu.csv" "!(\$1 == \"$gpu\" && \$NF ~ /^neusight-train-/)"
  run "-$gpu training coll." "$ROOT/no-train-$gpu.csv" "${TRAIN[@]}"
done
for gpu in "${TRAIN[@]}"; do
  others=()
  for other in "${TRAIN[@]}"; do [ "$other" = "$gpu" ] || others+=("$other"); done
  run "-$gpu whole" "$DATA/kernels.csv" "${others[@]}"
done
keep_rows "$ROOT/test-only.csv" "\$NF !~ /^neusight-train-/"
run "test collections only" "$ROOT/test-only.csv" "${TRAIN[@]}"
