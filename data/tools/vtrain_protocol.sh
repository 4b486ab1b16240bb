#!/usr/bin/env bash
# vTrain's public multi-GPU measurements (1,440 Megatron-DeepSpeed training
# iterations of GPT-style models on one node of 2, 4 and 8 A100 SXM GPUs,
# data/external/vtrain/steps.csv) predicted through the product from what
# perfcast knows of the A100 without having run on those GPUs: its spec
# sheet (the catalog), NeuSight's public A100 kernels and end-to-end rows
# (PCIe boards, FP32), and perfcast's own H100/H200 profiles.
#
#   data/tools/vtrain_protocol.sh [BUILD_DIR]
#
# perfcastd on a fresh embedded SQLite file; `perfcast import` of those
# profiles; `perfcast fit`; then `perfcast predict --batch-file` once per
# layout with its --data-parallel --tensor-parallel --pipeline-parallel
# --micro-batches flags (and --framework megatron and
# --activation-checkpointing when this build's CLI has them); the figures
# come from data/tools/parallel_summary.py. Environment: VTRAIN_GPU prices
# another catalog GPU (default: the file's, A100-SXM4-40GB); VTRAIN_LINK=measured
# registers node vtrain-a100 (8 such GPUs) after the fit, imports vTrain's
# all-reduce tables of that node (allreduce.csv) and prices the node, so that
# the collectives run on the measured link instead of the catalog's;
# VTRAIN_POINTS writes each row's prediction, parts and compute per operation
# class, and of it the work outside the layers, to that CSV (what
# data/tools/vtrain_terms.py learns Megatron's terms from).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
STEPS=data/external/vtrain/steps.csv
NEUSIGHT=data/external/neusight
OWN=(data/h200-m10-default.sqlite data/h200-m12-architectures.sqlite
     data/h200-m7-sizes.sqlite data/h200-m7-decoder-batches.sqlite
     data/h100-m10-default.sqlite data/h100-m10-architectures.sqlite)
WORK=$(mktemp -d /tmp/vtrain-protocol.XXXXXX)

# shellcheck source=data/tools/start_perfcastd.sh
. data/tools/start_perfcastd.sh
start_perfcastd vtrain_protocol "$BUILD" "$WORK"

# NeuSight's A100 rows only (header kept): the boards nearest to vTrain's.
for file in kernels e2e; do
  awk -F, 'NR == 1 || $1 ~ /^A100-/' "$NEUSIGHT/$file.csv" > "$WORK/neusight-a100-$file.csv"
done
echo "== perfcastd on $PERFCAST_SERVER: import NeuSight's A100 rows and perfcast's H100/H200 files"
"$PERFCAST" import "$WORK/neusight-a100-kernels.csv" "$WORK/neusight-a100-e2e.csv" "${OWN[@]}" \
  | tail -n 3
echo
echo "== perfcast fit --newest-per-gpu --group-by gpu"
"$PERFCAST" fit --newest-per-gpu --group-by gpu | tail -n 5

target=(--gpu "${VTRAIN_GPU:-}")
if [ "${VTRAIN_LINK:-catalog}" = measured ]; then
  echo
  echo "== the measured link: node vtrain-a100 and vTrain's all-reduce tables"
  "$PERFCAST" nodes register --name vtrain-a100 --gpu "${VTRAIN_GPU:-A100-SXM4-40GB}" --count 8
  "$PERFCAST" import data/external/vtrain/allreduce.csv | tail -n 1
  target=(--node vtrain-a100)
fi

flags=()
help=$("$PERFCAST" predict --help)
if grep -q -- '--framework' <<<"$help"; then
  flags+=(--framework megatron)
fi
if grep -q -- '--activation-checkpointing' <<<"$help" &&
   awk -F, 'NR > 1 && $16 != 1 { exit 1 }' "$STEPS"; then
  flags+=(--activation-checkpointing)
fi
echo
echo "== perfcast predict --batch-file per layout ${flags[*]:-(no --framework, no --activation-checkpointing: this CLI lacks them)}"
python3 data/tools/parallel_summary.py batches "$STEPS" "$WORK/batches" "${target[@]}" \
  > "$WORK/layouts.txt"
while read -r file dp tp pp m; do
  # A batch with failed rows exits 3 (partial); their errors are in the JSON.
  "$PERFCAST" -o json predict --batch-file "$file" --data-parallel "$dp" --tensor-parallel "$tp" \
    --pipeline-parallel "$pp" --micro-batches "$m" --iterations 1 "${flags[@]}" > "$file.json" || [ $? -eq 3 ]
done < "$WORK/layouts.txt"
echo "$(wc -l < "$WORK/layouts.txt") layouts priced"
echo
python3 data/tools/parallel_summary.py summary "$STEPS" "$WORK/batches" \
  ${VTRAIN_POINTS:+--points "$VTRAIN_POINTS"}
