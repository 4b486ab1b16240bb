#!/usr/bin/env bash
# Perfcast against its own plain-PyTorch multi-GPU campaign on 2 x H200
# (data/multi-gpu/h200x2-parallel.jsonl: single GPU, DDP, FSDP ZeRO-2/3,
# activation checkpointing, DTensor TP, pipelining 1F1B), through the CLI.
#
#   data/tools/h200x2_parallel_protocol.sh [BUILD_DIR] [fit|holdout]
#
# perfcastd on a fresh embedded SQLite file; `perfcast import` of perfcast's
# own H100/H200 single-GPU profiles (none of the campaign's steps); `perfcast
# fit --newest-per-gpu`; then one `perfcast predict --batch-file` with every
# measured configuration, its layout in the file's columns, on the catalog's
# H200-SXM-141GB. data/tools/parallel_campaign.py prints step and memory
# errors per strategy and whether every measured out-of-memory was refused.
# With `fit`, data/tools/fit_parallel_terms.py then learns the implementation
# terms from the answers and writes predictor/parallel_terms.json (rebuild
# and run again to see them priced); with `holdout`, it prints the terms'
# leave-one-model-out errors (fit on the other models' rows).
# PARALLEL_ROWS names another campaign's rows (e.g. the held-out sizes of
# data/multi-gpu/h200x2-m19-sizes.jsonl). PARALLEL_POINTS writes each row's prediction to that CSV.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
MODE=${2:-}
ROWS=${PARALLEL_ROWS:-data/multi-gpu/h200x2-parallel.jsonl}
OWN=(data/h200-m10-default.sqlite data/h200-m12-architectures.sqlite
     data/h200-m7-sizes.sqlite data/h200-m7-decoder-batches.sqlite
     data/h100-m10-default.sqlite data/h100-m10-architectures.sqlite)
WORK=$(mktemp -d /tmp/h200x2-parallel.XXXXXX)

# shellcheck source=data/tools/start_perfcastd.sh
. data/tools/start_perfcastd.sh
start_perfcastd h200x2_parallel_protocol "$BUILD" "$WORK"

echo "== perfcastd on $PERFCAST_SERVER: import perfcast's H100/H200 profiles"
"$PERFCAST" import "${OWN[@]}" | tail -n 1
echo
echo "== perfcast fit --newest-per-gpu"
"$PERFCAST" fit --newest-per-gpu | tail -n 2 | cut -c1-160
echo
echo "== perfcast predict --batch-file (one row per measured configuration)"
python3 data/tools/parallel_campaign.py batch "$ROWS" "$WORK/rows.csv" H200-SXM-141GB
# Refused rows (the measured out-of-memory ones) make it exit 3 (partial).
"$PERFCAST" -o json predict --batch-file "$WORK/rows.csv" > "$WORK/answers.json" || [ $? -eq 3 ]
python3 data/tools/parallel_campaign.py summary "$ROWS" "$WORK/answers.json" \
  ${PARALLEL_POINTS:+--points "$PARALLEL_POINTS"}
case "$MODE" in
  fit)
    echo
    echo "== data/tools/fit_parallel_terms.py -> predictor/parallel_terms.json"
    python3 data/tools/fit_parallel_terms.py "$ROWS" "$WORK/answers.json" \
      predictor/parallel_terms.json
    ;;
  holdout)
    echo
    echo "== the terms held out: each model's rows priced with terms fitted on the others"
    python3 data/tools/fit_parallel_terms.py "$ROWS" "$WORK/answers.json" - --holdout
    ;;
esac
