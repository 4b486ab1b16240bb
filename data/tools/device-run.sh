#!/usr/bin/env bash
# Runs on a fresh GPU machine (the device tool): build the agent, then measure.
#   data/tools/device-run.sh gpu NAME DEADLINE_S [run args...]   (one --device cuda run, then overhead)
#   data/tools/device-run.sh cpu DEADLINE_S PLANFILE             (cpu-1t, cpu-4t, cpu-16t)
# DEADLINE_S counts from the script's start; everything lands in $OUT.
set -uo pipefail
T0=$(date +%s); MODE=$1; shift
export REPO=$PWD
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
mins() { python3 -c "print(max(0.2, ($1)/60))"; }
compact() { python3 - "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)')
c.execute('PRAGMA journal_mode=DELETE'); c.execute('VACUUM')
print(sys.argv[1], 'profiles', c.execute('select count(*) from profiles').fetchone()[0])
PY
}
if [ "$MODE" = gpu ]; then NAME=$1; DEADLINE=$2; shift 2; else DEADLINE=$1; PLANFILE=$2; fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > $OUT/nvidia-smi.txt 2>&1
deploy/gpu/build-agent.sh > $OUT/build.log 2>&1 || { grep -n "error" $OUT/build.log | head -40; tail -30 $OUT/build.log; exit 1; }
echo "build done at $(( $(date +%s) - T0 )) s"
TL=$(python3 -c 'import os,torch;print(os.path.join(os.path.dirname(torch.__file__),"lib"))' 2>/dev/null || /opt/torch/.venv/bin/python -c 'import os,torch;print(os.path.join(os.path.dirname(torch.__file__),"lib"))')
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:$TL
A=build-gpu/profiler/perfcast-agent
if [ "$MODE" = gpu ]; then
  $A fingerprint --device cuda --name $NAME --no-measure > $OUT/fingerprint-$NAME.json 2>&1
  M=$(mins "$(left) - 45")
  echo "run: $A run --device cuda --name $NAME --out $OUT/$NAME.sqlite --max-minutes $M $*"
  $A run --device cuda --name $NAME --out $OUT/$NAME.sqlite --max-minutes $M "$@" > $OUT/run-$NAME.log 2>&1
  echo "rc=$? at $(( $(date +%s) - T0 )) s"; grep '^perfcast-agent' $OUT/run-$NAME.log | tail -3
  grep -c skipped $OUT/run-$NAME.log; grep skipped $OUT/run-$NAME.log | head -5
  timeout 25 $A overhead --device cuda > $OUT/overhead-$NAME.txt 2>&1; cat $OUT/overhead-$NAME.txt | tail -3
  compact $OUT/$NAME.sqlite
  gzip -9 $OUT/run-$NAME.log
else
  $A fingerprint --device cpu --name cpu --no-measure > $OUT/fingerprint-cpu.json 2>&1
  for T in 1 4 16; do
    case $T in 1) S=0.45;; 4) S=0.5;; 16) S=1;; esac
    M=$(mins "($(left) - 40) * $S")
    $A run --device cpu --threads $T --name cpu-${T}t --plan-file $PLANFILE --out $OUT/cpu-${T}t${SUF:-}.sqlite --max-minutes $M > $OUT/run-cpu-${T}t${SUF:-}.log 2>&1
    echo "T=$T M=$M rc=$?"; grep '^perfcast-agent' $OUT/run-cpu-${T}t${SUF:-}.log | tail -2
    compact $OUT/cpu-${T}t${SUF:-}.sqlite
  done
  timeout 20 $A overhead --device cpu > $OUT/overhead-cpu.txt 2>&1; tail -2 $OUT/overhead-cpu.txt
  tar czf $OUT/cpu-logs.tgz -C $OUT $(cd $OUT && ls run-cpu-*.log) && rm $OUT/run-cpu-*.log
fi
gzip -9 $OUT/build.log
echo "total $(( $(date +%s) - T0 )) s"
