#!/usr/bin/env bash
# NeuSight's cross-GPU protocol on its public measurements: fit on P4, P100,
# V100, T4 and A100-40GB, predict H100, L4 and A100-80GB, and print per test
# GPU and class MAPE, signed bias and 10-90% interval coverage beside
# NeuSight's own end-to-end error on the same rows.
#
#   data/tools/neusight_protocol.sh [BUILD_DIR]
#
# Runs the protocol through transfer_bench (predictor::EvaluateDescribed with
# the train/test split on the profile files, no server), which a build with
# -DPERFCAST_BUILD_BENCHMARKS=ON has.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
DATA=data/external/neusight
TRAIN=(P4-8GB P100-PCIE-16GB V100-PCIE-32GB T4-16GB A100-PCIE-40GB)
TEST=(H100-SXM5-80GB L4-24GB A100-PCIE-80GB)
WORK=$(mktemp -d /tmp/neusight-protocol.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
join() { local IFS=,; echo "$*"; }

if [ ! -x "$BUILD/tests/bench/transfer_bench" ]; then
  echo "neusight_protocol: no $BUILD/tests/bench/transfer_bench (configure with -DPERFCAST_BUILD_BENCHMARKS=ON)" >&2
  exit 1
fi
"$BUILD/tests/bench/transfer_bench" --group-by gpu --train "$(join "${TRAIN[@]}")" \
  --test "$(join "${TEST[@]}")" --points "$WORK/points.csv" "$DATA/kernels.csv" "$DATA/e2e.csv"
python3 data/tools/neusight_compare.py "$WORK/points.csv" "$DATA/neusight_e2e.csv"
