#!/usr/bin/env bash
# A GPU the fit never saw: fits on the method-2 files of the other GPUs
# (and, with --with-neusight, NeuSight's public kernels of seven more GPUs),
# predicts every row of the held-out GPU and prints MAPE, signed bias and
# 10-90% interval coverage per level, family, phase and precision.
#
#   data/tools/heldout_gpu.sh [--with-neusight] [BUILD_DIR]
#
# Held out: H100-SXM5-80GB (data/h100-m2-*.sqlite). Needs transfer_bench
# (a build with -DPERFCAST_BUILD_BENCHMARKS=ON, as the ci preset has).
set -euo pipefail
cd "$(dirname "$0")/../.."
WITH_NEUSIGHT=0
if [ "${1:-}" = --with-neusight ]; then WITH_NEUSIGHT=1; shift; fi
BUILD=${1:-build-ci}
BENCH="$BUILD/tests/bench/transfer_bench"
if [ ! -x "$BENCH" ]; then
  echo "heldout_gpu: no $BENCH (configure with -DPERFCAST_BUILD_BENCHMARKS=ON)" >&2
  exit 1
fi
TEST=H100-SXM5-80GB
TRAIN=H200-SXM-141GB
FILES=(data/h200-m2-default.sqlite data/h200-m2-architectures.sqlite
       data/h100-m2-default.sqlite data/h100-m2-architectures.sqlite
       data/h100-m3-decoder-batches.sqlite)
if [ "$WITH_NEUSIGHT" = 1 ]; then
  # NeuSight's own H100 rows stay out: only the other GPUs train.
  TRAIN="$TRAIN,P4-8GB,P100-PCIE-16GB,V100-PCIE-32GB,T4-16GB,A100-PCIE-40GB,A100-PCIE-80GB,L4-24GB"
  FILES+=(data/external/neusight/kernels.csv)
fi
exec "$BENCH" --train "$TRAIN" --test "$TEST" "${FILES[@]}"
