#!/usr/bin/env bash
# The README's main job: start perfcastd on an embedded SQLite file, register
# GPU nodes (two of them never profiled), import the measured profiles shipped
# in data/, fit the two-level model on the H200's newest-method profiles,
# check it on held-out larger sizes and on every measurement of a GPU it
# never saw (the H100), predict
# GPT-2 training from its config.json on a GPU nobody profiled, rank the
# GPUs for that job, answer one question again with no server (perfcast
# --local) and print a layout's memory per GPU (perfcast memory).
#
#   deploy/demo.sh [BUILD_DIR]     (make demo runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PERFCASTD=$BUILD/server/perfcastd
PERFCAST=$BUILD/client/perfcast
AGENT=$BUILD/profiler/perfcast-agent
DATA_DIR=${PERFCAST_DEMO_DIR:-$(mktemp -d /tmp/perfcast-demo.XXXXXX)}
SHIPPED=yes
TRAIN_GPU=${PERFCAST_DEMO_TRAIN_GPU:-H200-SXM-141GB}

step() { printf '\n== %s\n' "$*"; }

"$PERFCASTD" --listen=127.0.0.1:0 --db="sqlite://$DATA_DIR/perfcast.db" \
  --port_file="$DATA_DIR/port" --log_level=warning &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null; wait $SERVER_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$DATA_DIR/port" ] && break; sleep 0.1; done
[ -s "$DATA_DIR/port" ] || { echo "demo: perfcastd did not start" >&2; exit 1; }
PERFCAST_SERVER=127.0.0.1:$(cat "$DATA_DIR/port")
export PERFCAST_SERVER
echo "perfcastd on $PERFCAST_SERVER, database $DATA_DIR/perfcast.db"

step "Register GPU nodes known only from their spec sheets"
"$PERFCAST" nodes register --name l40s-1 --gpu L40S-48GB --count 4 --label pool=inference
"$PERFCAST" nodes register --name a100-1 --gpu A100-SXM4-80GB --count 8 --label pool=training

step "Import the measured profiles"
shopt -s nullglob
# The shipped agent files that data/shipped-profiles.txt lists (data/README.md),
# the same that `perfcast --local` fits on. Fits use the newest measurement
# method present (4): of the H200 the files whose every profile carries the
# host probe it ran under (h200-m10 default, h200-m12 architectures) and the
# intermediate sizes (h200-m7), cpu-v4, and the H100's h100-m10 files, which
# the held-out check below predicts. The method 1-3 files import beside them.
# The older method-1 files import as well (perfcast import data/h100.sqlite),
# but their nodes carry host figures taken another way (launch latency with a
# sync per launch: 5.2 us against 1.0 us in steady state), which would price
# those nodes' steps with the wrong host.
files=()
while read -r name; do
  case "$name" in ''|'#'*) continue ;; esac
  if [ -f "data/$name" ]; then files+=("data/$name"); fi
done < data/shipped-profiles.txt
if [ ${#files[@]} -eq 0 ]; then
  # No shipped measurements: measure this machine's CPU with the quick plan.
  [ -x "$AGENT" ] || { echo "demo: no data/*.sqlite and no perfcast-agent to measure with" >&2; exit 1; }
  "$AGENT" run --plan quick --device cpu --out "$DATA_DIR/local-cpu.sqlite" --quiet
  files=("$DATA_DIR/local-cpu.sqlite")
  SHIPPED=""
fi
"$PERFCAST" import "${files[@]}"

step "Stored nodes"
"$PERFCAST" nodes list

if ! "$PERFCAST" fit --help >/dev/null 2>&1; then
  exit 0
fi

if [ -n "$SHIPPED" ]; then
  # The H200 profiles of the newest measurement method (data/README.md: the
  # steady-state campaign); fits skip older methods by default.
  step "Fit the two-level model on the $TRAIN_GPU profiles (newest measurement method)"
  "$PERFCAST" fit --gpu "$TRAIN_GPU"
  step "Predict the largest size of each family from the smaller ones, against what it measured"
  "$PERFCAST" evaluate --split sizes --gpu "$TRAIN_GPU" --limit 15 --report "$DATA_DIR/report.html"
  if [ "$TRAIN_GPU" = H200-SXM-141GB ] && [ -f data/h100-m10-default.sqlite ]; then
    # Both GPUs' newest files are of method 4 (--newest-per-gpu keeps it so
    # if one GPU's newest is older).
    step "Predict every H100 measurement from a fit on the H200 alone (a GPU the fit never saw)"
    "$PERFCAST" evaluate --train-gpu H200-SXM-141GB --test-gpu H100-SXM5-80GB --limit 0 \
      --newest-per-gpu \
      --report "$DATA_DIR/heldout-h100.html" > "$DATA_DIR/heldout-h100.txt"
    # The headline: overall, per level and per GPU; the file has every group.
    sed -n '1,7p' "$DATA_DIR/heldout-h100.txt"
    echo "(every group: $DATA_DIR/heldout-h100.txt)"
  fi
else
  step "Fit the two-level model"
  "$PERFCAST" fit
fi

GPT2=tests/models/hf_configs/gpt2.json
step "Predict GPT-2 training (its Hugging Face config.json) on an A100 nobody here has profiled"
"$PERFCAST" predict --hf-config "$GPT2" --batch 8 --seq-len 1024 --precision bf16-amp \
  --phase train --node a100-1 --iterations 100000

if "$PERFCAST" --help 2>/dev/null | grep -q "^  recommend"; then
  step "Which GPU should run it: time, cost and energy with intervals, 48 h deadline"
  # The decoder family's defaults are GPT-2 small's architecture.
  "$PERFCAST" recommend --family decoder --batch 8 --precision bf16-amp --phase train \
    --iterations 100000 --deadline 48h --report "$DATA_DIR/recommend.html"
fi

step "Predict an LSTM job on a GPU nobody here has profiled (L40S, spec sheet only)"
"$PERFCAST" predict --family lstm --param layers=4 --param hidden=512 --batch 256 \
  --precision bf16-amp --phase train --node l40s-1 --samples 1000000 --epochs 30

if [ -n "$SHIPPED" ]; then
  step "The same question with no server: perfcast --local (fitted on first use, then cached)"
  "$PERFCAST" predict --family lstm --param layers=4 --param hidden=512 --batch 256 \
    --precision bf16-amp --phase train --gpu L40S-48GB --samples 1000000 --epochs 30 --local
fi

step "Memory per GPU of Llama-2-7B training, and the GPUs it fits (no server, no model)"
"$PERFCAST" memory --hf-config tests/models/hf_configs/llama-2-7b.json --seq-len 4096 --batch 8 \
  --precision bf16-amp --data-parallel 8 --zero 3 --activation-checkpointing \
  --gpu H100-SXM5-80GB --gpu L40S-48GB
