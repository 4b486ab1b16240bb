#!/usr/bin/env bash
# Runs on a multi-GPU machine (the device tool's nvidia-h200-x2/-x4/-x8 kinds):
# builds the agent with its c10d NCCL backend, then measures what the parallel
# predictor needs and what validates it. Everything lands in $OUT.
#   data/tools/multi-gpu-run.sh NAME DEADLINE_S
#     1. nvidia-smi topology;
#     2. all-reduce bus bandwidth, 4 KiB .. 1 GiB, over 2 and 4 GPUs (and 8
#        where the machine has them): $OUT/NAME-collectives.sqlite, profiles of
#        the allreduce family that `perfcast import` takes and Predict turns
#        into the node's measured link;
#     3. data-parallel proxies (DDP buckets overlapping backward), each model
#        alone on one GPU and over 2 and 4 GPUs: $OUT/ddp.jsonl, compared with
#        `perfcast predict --data-parallel N` by data/tools/validate_ddp.py.
# NVLink SHARP (multicast) stays off: NCCL_NVLS_ENABLE=0 here and in every
# worker the agent starts.
set -uo pipefail
T0=$(date +%s)
NAME=${1:?usage: multi-gpu-run.sh NAME DEADLINE_S}
DEADLINE=${2:?usage: multi-gpu-run.sh NAME DEADLINE_S}
export NCCL_NVLS_ENABLE=0
export REPO=$PWD
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }

nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > "$OUT/nvidia-smi.txt" 2>&1
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
GPUS=$(grep -c . "$OUT/nvidia-smi.txt")
echo "$GPUS GPUs"

PERFCAST_DISTRIBUTED=ON deploy/gpu/build-agent.sh > "$OUT/build.log" 2>&1 \
  || { grep -n "error" "$OUT/build.log" | head -40; tail -30 "$OUT/build.log"; exit 1; }
grep "perfcast-agent: c10d" "$OUT/build.log"
echo "build done at $(( $(date +%s) - T0 )) s"
TL=$(python3 -c 'import os,torch;print(os.path.join(os.path.dirname(torch.__file__),"lib"))' 2>/dev/null \
     || /opt/torch/.venv/bin/python -c 'import os,torch;print(os.path.join(os.path.dirname(torch.__file__),"lib"))')
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:$TL
A=build-gpu/profiler/perfcast-agent

for N in 2 4 8; do
  [ "$N" -le "$GPUS" ] || continue
  [ "$(left)" -gt 120 ] || { echo "out of time before collectives over $N"; break; }
  timeout $(( $(left) - 60 )) $A collectives --device cuda --gpus "$N" --node-gpus "$GPUS" \
    --name "$NAME" --sizes 4K:1G --out "$OUT/$NAME-collectives.sqlite" \
    > "$OUT/collectives-$N.log" 2>&1
  echo "collectives over $N: rc=$? at $(( $(date +%s) - T0 )) s"; tail -2 "$OUT/collectives-$N.log"
done

# Global batches divide by 4; each GPU's share stays GPU-bound.
WORKLOADS=(
  "model/transformer{ffn=4096,heads=16,hidden=1024,layers=12,seq_len=512}/b64/bf16-amp/train/adam"
  "model/transformer{ffn=4096,heads=16,hidden=1024,layers=24,seq_len=512}/b32/fp32/train/adam"
  "model/resnet{blocks=2,width=64}/b256/bf16-amp/train/sgd"
)
for W in "${WORKLOADS[@]}"; do
  for N in 2 4; do
    [ "$N" -le "$GPUS" ] || continue
    [ "$(left)" -gt 90 ] || { echo "out of time before ddp $W over $N"; break 2; }
    timeout $(( $(left) - 30 )) $A ddp --device cuda --gpus "$N" --workload "$W" \
      --steps 20 --warmup 5 --out "$OUT/ddp.jsonl" > "$OUT/ddp-$N.log" 2>&1
    echo "ddp over $N: rc=$? $W"; tail -1 "$OUT/ddp-$N.log"
  done
done
gzip -9 "$OUT/build.log"
echo "total $(( $(date +%s) - T0 )) s"
