#!/usr/bin/env bash
# Runs the plain-PyTorch campaigns on a device machine (the device tool's
# nvidia-h200-x2 kind serves both): everything lands in $OUT.
#   data/tools/pytorch-campaign.sh MODE DEADLINE_S
#     smoke   tiny configurations of every strategy at 1 and 2 GPUs, a short
#             collectives sweep and the plain-loop campaign on tiny models;
#     multi   profiler/validation/parallel_loop.py --plan ${PLAN:-h200x2} (issue 33):
#             collectives 4 KiB .. 1 GiB, then the layouts in priority order;
#     single  profiler/validation/plain_loop_campaign.py (issue 30), one GPU.
# SRC names the folder holding the scripts (default profiler/validation).
# NVLink multicast stays off in every process.
set -uo pipefail
MODE=${1:?usage: pytorch-campaign.sh smoke|multi|single DEADLINE_S}
DEADLINE=${2:?usage: pytorch-campaign.sh MODE DEADLINE_S}
SRC=${SRC:-profiler/validation}
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export PYTHONWARNINGS=ignore
T0=$(date +%s)
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "mode: $MODE deadline: $DEADLINE"
  grep -m1 "model name" /proc/cpuinfo; echo "cores: $(nproc)"; uname -r
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit,clocks.max.sm \
    --format=csv,noheader
  nvidia-smi topo -m
  python3 -c 'import torch, torchvision, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count(), "torchvision", torchvision.__version__, "transformers", transformers.__version__)'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
case "$MODE" in
  smoke)
    python3 "$SRC/parallel_loop.py" --plan smoke --out "$OUT/parallel.jsonl" \
      --collectives-out "$OUT/collectives.jsonl" --collective-sizes 4K:64M \
      --deadline-s $(( $(left) * 2 / 3 )) --config-budget-s 4 --block-ms 30 2>&1 \
      | tee "$OUT/parallel.log"
    python3 "$SRC/plain_loop_campaign.py" --plan smoke --out "$OUT/plain.jsonl" \
      --deadline-s $(( $(left) - 25 )) 2>&1 | tee "$OUT/plain.log"
    ;;
  multi)
    python3 "$SRC/parallel_loop.py" --plan "${PLAN:-h200x2}" --out "$OUT/parallel.jsonl" \
      --collectives-out "$OUT/collectives.jsonl" --deadline-s $(( $(left) - 15 )) 2>&1 \
      | tee "$OUT/parallel.log"
    ;;
  single)
    python3 "$SRC/plain_loop_campaign.py" --out "$OUT/plain.jsonl" \
      --deadline-s $(( $(left) - 40 )) 2>&1 | tee "$OUT/plain.log"
    ;;
  *) echo "unknown mode $MODE"; exit 2 ;;
esac
gzip -9 -f "$OUT"/*.log 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"
