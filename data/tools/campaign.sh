#!/usr/bin/env bash
# The GPU measurement campaign: one mode per device command. Runs in a copy of
# the repository on a fresh GPU machine (CUDA LibTorch in a python with torch,
# the Debian -dev packages carried in .debs), writes everything into $OUT as
# one .tgz per mode (at most two files), prints progress, and starts nothing
# new after DEADLINE seconds from its own start.
#
#   data/tools/campaign.sh build    DEADLINE
#   data/tools/campaign.sh smoke    DEADLINE              (quick plan on cuda, tiny checks of everything)
#   data/tools/campaign.sh gpu      NAME DEADLINE [run args, e.g. --plan default]
#                                   (the run, then validate + overhead on what time is left)
#   data/tools/campaign.sh validate DEADLINE STORE [plain_loop.py args]
#   data/tools/campaign.sh overhead DEADLINE
#   data/tools/campaign.sh cpu      DEADLINE [PLAN]       (PLAN: a built-in name or a plan file; quick)
#
# Every mode builds first (deploy/gpu/build-agent.sh; a no-op on a warm
# machine that built already). Environment: OUT (default ./out), SKIP_VALIDATE=1
# (VALIDATE_S: seconds kept for it)
# and SKIP_OVERHEAD=1 for gpu, VALIDATE_ROUNDS (plain_loop.py --rounds: 2 times
# every configuration twice and reports the plain loop's own repeatability), NODE (the node name, default NAME: the file
# names stay NAME); SKIP_BUILD=1 with AGENT=path for a rehearsal
# on a machine without a GPU (e.g. the cpu mode with the ci build's agent).
set -uo pipefail

T0=$(date +%s)
MODE=${1:?usage: campaign.sh MODE ...}
shift
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export REPO
OUT=${OUT:-$REPO/out}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/campaign.XXXXXX)
AGENT=${AGENT:-$REPO/build-gpu/profiler/perfcast-agent}

say() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
# Seconds for `timeout`: what is left minus $1, at least 1 (timeout 0 means none).
tl() { local l=$(( $(left) - ${1:-0} )); [ "$l" -lt 1 ] && l=1; echo "$l"; }
# Minutes for the agent's --max-minutes: what is left minus a reserve (s).
minutes_left() { python3 -c "print('%.2f' % max(0.2, ($(left) - $1) / 60))"; }
compact() {
  python3 - "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute('PRAGMA wal_checkpoint(TRUNCATE)')
c.execute('PRAGMA journal_mode=DELETE')
c.execute('VACUUM')
print(sys.argv[1].rsplit('/', 1)[-1], 'profiles', c.execute('select count(*) from profiles').fetchone()[0],
      'skipped', c.execute('select count(*) from skipped_runs').fetchone()[0])
PY
}
pack() {  # pack NAME: everything in $WORK into $OUT/NAME.tgz
  tar czf "$OUT/$1.tgz" -C "$WORK" . && say "packed $OUT/$1.tgz ($(du -k "$OUT/$1.tgz" | cut -f1) KiB)"
}
find_python() {
  for candidate in python3 /opt/torch/.venv/bin/python; do
    if "$candidate" -c 'import torch' 2>/dev/null; then echo "$candidate"; return; fi
  done
}

build() {
  if [ "${SKIP_BUILD:-0}" = 1 ]; then  # a rehearsal with an agent built elsewhere (AGENT=...)
    PYTHON=$(find_python)
    say "build skipped: $AGENT"
    return
  fi
  say "build: deploy/gpu/build-agent.sh"
  if ! timeout "$(tl 0)" "$REPO/deploy/gpu/build-agent.sh" > "$WORK/build.log" 2>&1; then
    grep -n "error" "$WORK/build.log" | head -40
    tail -30 "$WORK/build.log"
    say "build FAILED"
    pack "build-failed"
    exit 1
  fi
  PYTHON=$(find_python)
  TORCH_LIB=$("$PYTHON" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:$TORCH_LIB
  say "build done: $("$AGENT" --help >/dev/null && echo ok)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit \
    --format=csv,noheader > "$WORK/nvidia-smi.txt" 2>&1
  cat "$WORK/nvidia-smi.txt"
}

# validate STORE CSV COUNT: the plain PyTorch loop against the store's profiles.
validate() {
  local store=$1 csv=$2 count=$3
  local budget=$(( $(left) - 15 ))
  if [ "$budget" -lt 20 ]; then say "validate: no time left"; return; fi
  say "validate: $count configurations of $store, deadline ${budget}s"
  timeout "$(tl 0)" "$PYTHON" "$REPO/profiler/validation/plain_loop.py" "$store" \
    --out "$csv" --count "$count" --deadline-s "$budget" --rounds "${VALIDATE_ROUNDS:-1}" \
    "${VALIDATE_ARGS[@]}" \
    > "$WORK/validate.log" 2>&1
  tail -1 "$WORK/validate.log"
}

overhead() {
  local pairs=$1 block_ms=$2
  if [ "$(left)" -lt 30 ]; then say "overhead: no time left"; return; fi
  say "overhead: $pairs pairs"
  timeout "$(tl 5)" "$AGENT" overhead --device cuda --pairs "$pairs" --block-ms "$block_ms" \
    --families lstm,cnn,transformer,resnet,dlrm,stgcn > "$WORK/overhead.txt" 2>&1
  tail -1 "$WORK/overhead.txt"
}

VALIDATE_ARGS=()
case "$MODE" in
  build)
    DEADLINE=${1:?build DEADLINE}
    build
    pack build
    ;;
  smoke)
    DEADLINE=${1:?smoke DEADLINE}
    build
    say "smoke: quick plan on cuda"
    timeout "$(tl 60)" "$AGENT" run --device cuda --plan quick --name smoke \
      --out "$WORK/smoke.sqlite" --max-minutes 1 > "$WORK/run-smoke.log" 2>&1
    say "rc=$?"; grep '^perfcast-agent' "$WORK/run-smoke.log" | tail -6
    grep -c skipped "$WORK/run-smoke.log"; grep skipped "$WORK/run-smoke.log" | head -5
    if "$AGENT" plan --show architectures > /dev/null 2>&1; then
      say "smoke: architectures plan, 0.5 min"
      timeout "$(tl 40)" "$AGENT" run --device cuda --plan architectures --name smoke-arch \
        --out "$WORK/smoke-arch.sqlite" --max-minutes 0.5 > "$WORK/run-smoke-arch.log" 2>&1
      say "rc=$?"; grep '^perfcast-agent' "$WORK/run-smoke-arch.log" | tail -4
      grep skipped "$WORK/run-smoke-arch.log" | head -5
    fi
    compact "$WORK/smoke.sqlite"
    VALIDATE_ARGS=(--families "lstm,cnn,transformer,resnet,dlrm,stgcn")
    validate "$WORK/smoke.sqlite" "$WORK/validate-smoke.csv" 6
    overhead 4 30
    pack smoke
    ;;
  gpu)
    NAME=${1:?gpu NAME DEADLINE [run args]}
    DEADLINE=${2:?gpu NAME DEADLINE [run args]}
    shift 2
    NODE=${NODE:-$NAME}
    build
    "$AGENT" fingerprint --device cuda --name "$NODE" --no-measure > "$WORK/fingerprint-$NAME.json" 2>&1
    # Keep time for the validation (VALIDATE_S, default 75 s; 40 real
    # architectures take ~170 s) and the overhead pairs (~25 s).
    RESERVE=20
    [ "${SKIP_VALIDATE:-0}" = 1 ] || RESERVE=$(( RESERVE + ${VALIDATE_S:-75} ))
    [ "${SKIP_OVERHEAD:-0}" = 1 ] || RESERVE=$(( RESERVE + 25 ))
    M=$(minutes_left $RESERVE)
    say "run: perfcast-agent run --device cuda --name $NODE --out $NAME.sqlite --max-minutes $M $*"
    timeout "$(tl 10)" "$AGENT" run --device cuda --name "$NODE" --out "$WORK/$NAME.sqlite" \
      --max-minutes "$M" "$@" > "$WORK/run-$NAME.log" 2>&1
    say "rc=$?"; grep '^perfcast-agent' "$WORK/run-$NAME.log" | tail -8
    echo "skipped: $(grep -c 'skipped:' "$WORK/run-$NAME.log")"; grep 'skipped:' "$WORK/run-$NAME.log" | head -5
    compact "$WORK/$NAME.sqlite"
    [ "${SKIP_VALIDATE:-0}" = 1 ] || validate "$WORK/$NAME.sqlite" "$WORK/validate-$NAME.csv" 40
    [ "${SKIP_OVERHEAD:-0}" = 1 ] || overhead 24 100
    pack "$NAME"
    ;;
  validate)
    DEADLINE=${1:?validate DEADLINE STORE}
    STORE=${2:?validate DEADLINE STORE}
    shift 2
    VALIDATE_ARGS=("$@")
    build
    validate "$STORE" "$WORK/validate.csv" 40
    pack validate
    ;;
  overhead)
    DEADLINE=${1:?overhead DEADLINE}
    build
    overhead 24 100
    pack overhead
    ;;
  cpu)
    DEADLINE=${1:?cpu DEADLINE [PLAN]}
    PLAN=${2:-quick}
    PLAN_ARGS=(--plan "$PLAN")
    [ -f "$PLAN" ] && PLAN_ARGS=(--plan-file "$PLAN")
    build
    for T in 1 4 16; do
      case $T in 1) S=0.4;; 4) S=0.5;; 16) S=1;; esac
      M=$(python3 -c "print('%.2f' % max(0.2, ($(left) - 30) * $S / 60))")
      say "cpu: $T threads, --max-minutes $M"
      timeout "$(tl 5)" "$AGENT" run --device cpu --threads $T --name "cpu-${T}t" \
        "${PLAN_ARGS[@]}" --out "$WORK/cpu-${T}t.sqlite" --max-minutes "$M" \
        > "$WORK/run-cpu-${T}t.log" 2>&1
      say "rc=$?"; grep '^perfcast-agent' "$WORK/run-cpu-${T}t.log" | tail -4
      compact "$WORK/cpu-${T}t.sqlite"
    done
    pack cpu
    ;;
  *)
    echo "campaign.sh: unknown mode '$MODE' (build, smoke, gpu, validate, overhead, cpu)" >&2
    exit 2
    ;;
esac
say "total $(( $(date +%s) - T0 )) s"
