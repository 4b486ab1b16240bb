#!/usr/bin/env bash
# Behaviour of deploy/slurm/profile-campaign.sbatch outside Slurm: stand-ins
# for scontrol and srun run the per-node task once for each of three nodes
# (as srun would, with SLURMD_NODENAME set), and for perfcast-agent and
# perfcast. Checks one file per node, one import of all of them, and that a
# failing node fails the job by name while the others are still imported.
#
#   campaign_test.sh REPO_ROOT
set -uo pipefail
script=$1/deploy/slurm/profile-campaign.sbatch
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {
  if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

mkdir -p "$work/bin"
cat >"$work/bin/scontrol" <<'STUB'
#!/usr/bin/env bash
[ "$1 $2" = "show hostnames" ] && printf 'gpu01\ngpu02\ngpu03\n'
STUB
cat >"$work/bin/srun" <<'STUB'
#!/usr/bin/env bash
# Drops srun's options, then runs the command once per node.
echo "srun $*" >>"$STUB_LOG"
while [ $# -gt 0 ] && [ "${1#--}" != "$1" ]; do shift; done
status=0
for node in gpu01 gpu02 gpu03; do SLURMD_NODENAME=$node "$@" || status=1; done
exit $status
STUB
cat >"$work/bin/perfcast-agent" <<'STUB'
#!/usr/bin/env bash
echo "agent $SLURMD_NODENAME $*" >>"$STUB_LOG"
[ "$SLURMD_NODENAME" = "${STUB_FAIL_NODE:-}" ] && exit 1
while [ $# -gt 0 ]; do [ "$1" = --out ] && echo profiles >"$2"; shift; done
exit 0
STUB
cat >"$work/bin/perfcast" <<'STUB'
#!/usr/bin/env bash
echo "cli $*" >>"$STUB_LOG"
exit "${STUB_IMPORT_RC:-0}"
STUB
chmod +x "$work/bin/"*

export PATH=$work/bin:$PATH STUB_LOG=$work/log SLURM_JOB_NODELIST='gpu[01-03]' SLURM_JOB_ID=42
export PERFCAST_SERVER=perfcastd.test:50051 PERFCAST_PLAN=quick
job() { rm -rf "$work/results" "$STUB_LOG"; env PERFCAST_RESULTS_DIR="$work/results" "$@" bash "$script" >"$work/out" 2>&1; }

job; rc=$?
check "a campaign on three nodes succeeds" test "$rc" -eq 0
check "one task per node with one GPU each" grep -q -- "srun --nodes=3 --ntasks-per-node=1 --gpus-per-node=1" "$STUB_LOG"
check "each node runs the plan into its own file" \
  grep -q -- "agent gpu02 run --device cuda --quiet --plan quick --out $work/results/gpu02.sqlite" "$STUB_LOG"
check "all three files are imported in one call" \
  grep -qx -- "cli --server perfcastd.test:50051 import --format sqlite $work/results/gpu01.sqlite $work/results/gpu02.sqlite $work/results/gpu03.sqlite" "$STUB_LOG"

job STUB_FAIL_NODE=gpu02; rc=$?
check "a failing node fails the job" test "$rc" -eq 1
check "the failing node is named" grep -q "FAILED on gpu02" "$work/out"
check "the other nodes are still imported" \
  grep -qx -- "cli --server perfcastd.test:50051 import --format sqlite $work/results/gpu01.sqlite $work/results/gpu03.sqlite" "$STUB_LOG"

job STUB_IMPORT_RC=1; rc=$?
check "a failed import fails the job" test "$rc" -eq 1
check "and keeps the files" test -s "$work/results/gpu03.sqlite"

job PERFCAST_SERVER=; rc=$?
check "without a server the files are kept, not imported" test "$rc" -eq 0 -a -s "$work/results/gpu01.sqlite"
check "no import is attempted without a server" bash -c "! grep -q '^cli' '$STUB_LOG'"

job SLURM_JOB_NODELIST=; rc=$?
check "outside an allocation it refuses" test "$rc" -eq 1

echo "campaign_test: $failures failures"
[ "$failures" -eq 0 ]
