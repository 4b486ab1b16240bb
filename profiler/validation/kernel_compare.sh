#!/usr/bin/env bash
# The GPU kernels of one step, agent vs plain PyTorch loop, for the keys given:
# the plain loop under torch.profiler (kernel_mix.py) and the agent under
# Nsight Systems (one `perfcast-agent run` of a one-configuration plan per
# key), both as CSV tables of kernel name, launches and time. Needs a built
# agent (deploy/gpu/build-agent.sh) and nsys for the agent side.
#
#   profiler/validation/kernel_compare.sh OUTDIR KEY [KEY ...]
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUTDIR=${1:?usage: kernel_compare.sh OUTDIR KEY...}
shift
mkdir -p "$OUTDIR"
AGENT=${AGENT:-$REPO/build-gpu/profiler/perfcast-agent}
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys \
  /usr/local/cuda/nsight-systems*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}"
python3 "$REPO/profiler/validation/kernel_mix.py" "$@" --out "$OUTDIR/plain_kernels.csv"
[ -n "$NSYS" ] || { echo "no nsys: agent side skipped"; exit 0; }
i=0
for key in "$@"; do
  i=$((i + 1))
  plan="$OUTDIR/plan$i.yaml"
  python3 - "$key" > "$plan" <<'PY'
import sys
sys.path.insert(0, "profiler/validation")
import plain_loop
k = plain_loop.parse_key(sys.argv[1])
params = ", ".join("%s: %d" % kv for kv in sorted(k["params"].items()))
line = "  - {family: %s, params: {%s}, batch: [%d], precision: %s, phase: %s" % (
    k["family"], params, k["batch"], k["precision"], k["phase"])
if k["optimizer"] != "-":
    line += ", optimizer: %s" % k["optimizer"]
print("name: kernel-compare-%s\ngrids:\n%s}" % (k["family"], line))
PY
  rm -f "/tmp/kc$i.sqlite"
  "$NSYS" profile -t cuda -o "$OUTDIR/agent$i" --force-overwrite true \
    "$AGENT" run --plan-file "$plan" --out "/tmp/kc$i.sqlite" --name kc --max-minutes 1 \
    > "$OUTDIR/agent$i.log" 2>&1 || { echo "agent $i failed"; tail -5 "$OUTDIR/agent$i.log"; }
  "$NSYS" stats -q -r cuda_gpu_kern_sum -f csv -o "$OUTDIR/agent$i" "$OUTDIR/agent$i.nsys-rep" \
    > /dev/null 2>&1
  sqlite3 "/tmp/kc$i.sqlite" "select count(*), avg(median_ms) from profiles" 2>/dev/null ||
    python3 -c "import sqlite3;print(sqlite3.connect('/tmp/kc$i.sqlite').execute('select count(*), avg(median_ms) from profiles').fetchone())"
  rm -f "$OUTDIR/agent$i.nsys-rep" "$OUTDIR/agent$i.sqlite"
  echo "$i $key -> $(ls "$OUTDIR"/agent$i*)"
done
