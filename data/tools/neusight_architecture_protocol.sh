#!/usr/bin/env bash
# Issue 29 item 6: how honest are the intervals for a GPU unlike the ones the
# fit learned from? Leave-one-architecture-out on NeuSight's public
# measurements: for each architecture, fit on every GPU of the others and
# predict its GPUs from their spec sheets; one line per architecture with the
# held-out GPUs' GEMM and end-to-end MAPE, median signed bias and 10-90%
# interval coverage (80% is honest), then each held-out GPU's GEMM /
# end-to-end MAPE; last, the same over every held-out row.
#
#   data/tools/neusight_architecture_protocol.sh [BUILD_DIR]
#
# NVIDIA: pascal (P4, P100), volta (V100), turing (T4), ampere (A100-40GB,
# A100-80GB), hopper (H100), ada (L4); AMD (amd_kernels.csv, amd_e2e.csv):
# cdna (MI100), cdna2 (MI210, MI250 GCD). One perfcastd on a fresh SQLite
# file, one `perfcast import`, one `perfcast evaluate --train-gpu ...
# --test-gpu ... --output json` per architecture.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
# shellcheck source=data/tools/neusight_common.sh
. data/tools/neusight_common.sh
ARCHS=(
  "pascal P4-8GB P100-PCIE-16GB"
  "volta V100-PCIE-32GB"
  "turing T4-16GB"
  "ampere A100-PCIE-40GB A100-PCIE-80GB"
  "hopper H100-SXM5-80GB"
  "ada L4-24GB"
  "cdna MI100-32GB"
  "cdna2 MI210-64GB MI250-GCD-64GB"
)
WORK=$(mktemp -d /tmp/neusight-architectures.XXXXXX)

start_perfcastd neusight_architecture_protocol "$BUILD" "$WORK"
"$PERFCAST" import "$DATA/kernels.csv" "$DATA/e2e.csv" "$DATA/amd_kernels.csv" \
  "$DATA/amd_e2e.csv" > /dev/null

all=()
for arch in "${ARCHS[@]}"; do
  read -r -a words <<< "$arch"
  all+=("${words[@]:1}")
done
echo "held out                       gemm  MAPE   bias   cover  e2e MAPE   bias   cover  | per held-out GPU gemm/e2e MAPE"
for arch in "${ARCHS[@]}"; do
  read -r -a words <<< "$arch"
  held=("${words[@]:1}")
  flags=()
  for gpu in "${all[@]}"; do
    [[ " ${held[*]} " == *" $gpu "* ]] || flags+=(--train-gpu "$gpu")
  done
  # shellcheck disable=SC2086  # EXTRA is a list of flags
  "$PERFCAST" evaluate "${flags[@]}" --test-gpu "$(join "${held[@]}")" $EXTRA --output json \
    > "$WORK/${words[0]}.json"
  python3 data/tools/neusight_compare.py --summary "${words[0]}" "$WORK/${words[0]}.json"
done
python3 data/tools/neusight_compare.py --summary "all, pooled" "$WORK"/*.json
