#!/usr/bin/env bash
# A GPU the fit never saw: fits on the newest-method files of the other GPUs
# (and, with --with-neusight, NeuSight's public kernels of seven more GPUs),
# predicts every row of the held-out GPU and prints MAPE, signed bias and
# 10-90% interval coverage per level, family, phase and precision.
#
#   data/tools/heldout_gpu.sh [--with-neusight] [--method 2|4] [BUILD_DIR]
#
# Held out: H100-SXM5-80GB (data/h100-m10-*.sqlite, method 4, a host probe per
# configuration), fit on the H200's method-4 files that carry one too
# (h200-m10 default, h200-m12 architectures) and its intermediate sizes
# (h200-m7). --method 2 uses the method-2 pair instead (h*-m2/m3 files).
# Needs transfer_bench
# (a build with -DPERFCAST_BUILD_BENCHMARKS=ON, as the ci preset has).
set -euo pipefail
cd "$(dirname "$0")/../.."
WITH_NEUSIGHT=0
METHOD=4
while [ $# -gt 0 ]; do
  case "$1" in
    --with-neusight) WITH_NEUSIGHT=1; shift ;;
    --method) METHOD=${2:?--method 2 or 4}; shift 2 ;;
    *) break ;;
  esac
done
BUILD=${1:-build-ci}
BENCH="$BUILD/tests/bench/transfer_bench"
if [ ! -x "$BENCH" ]; then
  echo "heldout_gpu: no $BENCH (configure with -DPERFCAST_BUILD_BENCHMARKS=ON)" >&2
  exit 1
fi
TEST=H100-SXM5-80GB
TRAIN=H200-SXM-141GB
case "$METHOD" in
  4) FILES=(data/h200-m10-default.sqlite data/h200-m12-architectures.sqlite
            data/h200-m7-sizes.sqlite data/h200-m7-decoder-batches.sqlite
            data/h100-m10-default.sqlite data/h100-m10-architectures.sqlite) ;;
  2) FILES=(data/h200-m2-default.sqlite data/h200-m2-architectures.sqlite
            data/h100-m2-default.sqlite data/h100-m2-architectures.sqlite
            data/h100-m3-decoder-batches.sqlite) ;;
  *) echo "heldout_gpu: --method 2 or 4" >&2; exit 2 ;;
esac
if [ "$WITH_NEUSIGHT" = 1 ]; then
  # NeuSight's own H100 rows stay out: only the other GPUs train.
  TRAIN="$TRAIN,P4-8GB,P100-PCIE-16GB,V100-PCIE-32GB,T4-16GB,A100-PCIE-40GB,A100-PCIE-80GB,L4-24GB"
  FILES+=(data/external/neusight/kernels.csv)
fi
exec "$BENCH" --train "$TRAIN" --test "$TEST" "${FILES[@]}"
