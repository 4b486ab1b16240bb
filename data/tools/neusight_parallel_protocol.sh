#!/usr/bin/env bash
# NeuSight's 4-GPU training labels (dp4, tp4 and pp4 of GPT-2 large and
# GPT-3 XL on A100 SXM4 40GB and H100 SXM servers,
# data/external/neusight/parallel_e2e.csv) predicted end to end through the
# product, from the unseen-GPU protocol's training GPUs only: nothing measured
# on an A100 SXM or an H100 (and no A100 80GB PCIe or L4 row) reaches the fit.
#
#   data/tools/neusight_parallel_protocol.sh [BUILD_DIR]
#
# perfcastd on a fresh embedded SQLite file; `perfcast import` of NeuSight's
# kernels and end-to-end rows of P4, P100, V100, T4 and A100 PCIe 40GB (the
# training GPUs of data/tools/neusight_protocol.sh); `perfcast fit
# --group-by gpu`; then `perfcast predict --batch-file` per layout (fp32,
# forward + backward: --optimizer none, as NeuSight times it) with the layout
# flags, and the figures of data/tools/parallel_summary.py. The test GPUs are
# priced from their catalog spec sheets. tests/bench/parallel_validation is the
# other view of the same rows: it anchors each GPU's compute on NeuSight's
# single-GPU label of the same model on the same GPU and checks the
# composition alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
DATA=data/external/neusight
TRAIN='^(P4-8GB|P100-PCIE-16GB|V100-PCIE-32GB|T4-16GB|A100-PCIE-40GB),'
WORK=$(mktemp -d /tmp/neusight-parallel.XXXXXX)

# shellcheck source=data/tools/start_perfcastd.sh
. data/tools/start_perfcastd.sh
start_perfcastd neusight_parallel_protocol "$BUILD" "$WORK"

for file in kernels e2e; do
  { head -n 1 "$DATA/$file.csv"; grep -E "$TRAIN" "$DATA/$file.csv"; } > "$WORK/train-$file.csv"
done
echo "== perfcastd on $PERFCAST_SERVER: import the training GPUs' NeuSight rows"
"$PERFCAST" import "$WORK/train-kernels.csv" "$WORK/train-e2e.csv" | tail -n 3
echo
echo "== perfcast fit --group-by gpu"
"$PERFCAST" fit --group-by gpu | tail -n 5

python3 data/tools/parallel_summary.py neusight-steps "$DATA/parallel_e2e.csv" "$WORK/steps.csv"
python3 data/tools/parallel_summary.py batches "$WORK/steps.csv" "$WORK/batches" > "$WORK/layouts.txt"
echo
# NeuSight's labels are Megatron's layouts; its pp4 rows run one micro-batch
# through four stages, which only Megatron's 1F1B schedule does.
echo "== perfcast predict --batch-file per layout --framework megatron"
while read -r file dp tp pp m; do
  "$PERFCAST" -o json predict --batch-file "$file" --data-parallel "$dp" --tensor-parallel "$tp" \
    --pipeline-parallel "$pp" --micro-batches "$m" --framework megatron --iterations 1 \
    > "$file.json" || [ $? -eq 3 ]
done < "$WORK/layouts.txt"
python3 data/tools/parallel_summary.py summary "$WORK/steps.csv" "$WORK/batches" \
  ${NEUSIGHT_POINTS:+--points "$NEUSIGHT_POINTS"}
