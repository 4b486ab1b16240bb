#!/usr/bin/env bash
# Issue 29 item 4: AMD Instinct GPUs predicted from their spec sheets and
# checked on NeuSight's public AMD measurements. Fits on NeuSight's eight
# NVIDIA GPUs and the AMD GPUs not held out, and predicts the held-out one:
# the MI250 (one GCD; no kernels of it were published, 16 end-to-end rows),
# then the MI210 and the MI100 in turn. Prints per held-out GPU and class
# MAPE, signed bias and 10-90% coverage, end to end beside NeuSight's own
# error on the same rows (11.2% on all 43: train 15.7%, inference 8.8%).
#
#   data/tools/neusight_amd_protocol.sh [BUILD_DIR]
#
# One perfcastd on a fresh SQLite file, one `perfcast import` of
# data/external/neusight's NVIDIA and AMD files, one `perfcast evaluate
# --train-gpu ... --test-gpu ... --output json` per held-out GPU, summarised
# by data/tools/neusight_compare.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
# shellcheck source=data/tools/neusight_common.sh
. data/tools/neusight_common.sh
NVIDIA=(P4-8GB P100-PCIE-16GB V100-PCIE-32GB T4-16GB A100-PCIE-40GB A100-PCIE-80GB
        H100-SXM5-80GB L4-24GB)
AMD=(MI250-GCD-64GB MI210-64GB MI100-32GB)
WORK=$(mktemp -d /tmp/neusight-amd.XXXXXX)

start_perfcastd neusight_amd_protocol "$BUILD" "$WORK"
"$PERFCAST" import "$DATA/kernels.csv" "$DATA/e2e.csv" "$DATA/amd_kernels.csv" \
  "$DATA/amd_e2e.csv" > /dev/null

for held in "${AMD[@]}"; do
  flags=()
  for gpu in "${NVIDIA[@]}" "${AMD[@]}"; do
    [ "$gpu" = "$held" ] || flags+=(--train-gpu "$gpu")
  done
  echo
  echo "== $held held out: perfcast evaluate ${flags[*]} --test-gpu $held $EXTRA"
  # shellcheck disable=SC2086  # EXTRA is a list of flags
  "$PERFCAST" evaluate "${flags[@]}" --test-gpu "$held" $EXTRA --output json > "$WORK/$held.json"
  python3 data/tools/neusight_compare.py "$WORK/$held.json" "$DATA/amd_neusight_e2e.csv"
done
