#!/usr/bin/env bash
# Behaviour of deploy/agent-loop.sh (one pass, PERFCAST_INTERVAL_SECONDS=0)
# against stand-ins for perfcast-agent and perfcast that log their arguments
# and fail on request: registration (an existing node is fine), the run, the
# push, a failed push kept and retried on the next pass, rejected records set
# aside, the token kept off command lines.
#
#   agent_loop_test.sh REPO_ROOT
set -uo pipefail
loop=$1/deploy/agent-loop.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

mkdir -p "$work/bin"
cat >"$work/bin/perfcast-agent" <<'STUB'
#!/usr/bin/env bash
echo "agent $*" >>"$STUB_LOG"
case $1 in
  fingerprint) echo '{"name": "n1", "count": 1, "gpu": "H100-SXM5-80GB"}' ;;
  run)
    while [ $# -gt 0 ]; do [ "$1" = --out ] && echo profiles >"$2" && echo wal >"$2-wal"; shift; done
    exit "${STUB_RUN_RC:-0}" ;;
esac
STUB
cat >"$work/bin/perfcast" <<'STUB'
#!/usr/bin/env bash
echo "cli $*" >>"$STUB_LOG"
case " $* " in
  *" nodes register "*)
    case ${STUB_REGISTER:-ok} in
      exists) echo "perfcast: ALREADY_EXISTS: a node named 'n1' already exists" >&2; exit 1 ;;
      down) echo "perfcast: UNAVAILABLE: connection refused" >&2; exit 1 ;;
    esac ;;
  *" import "*) exit "${STUB_IMPORT_RC:-0}" ;;
esac
STUB
chmod +x "$work/bin/"*

export STUB_LOG=$work/log PERFCAST_AGENT=$work/bin/perfcast-agent PERFCAST_CLI=$work/bin/perfcast
export PERFCAST_SERVER=perfcastd.test:50051 PERFCAST_INTERVAL_SECONDS=0 PERFCAST_OUT_DIR=$work/out
export PERFCAST_NODE_NAME=n1 PERFCAST_NODE_LABELS=pool=train,rack=r1 PERFCAST_PLAN=quick PERFCAST_DEVICE=cpu
export PERFCAST_TOKEN=s3cret-token
pass() { : >"$STUB_LOG"; env "$@" bash "$loop" 2>"$work/stderr"; }
pending() { find "$work/out/pending" -name '*.sqlite' | wc -l; }

pass; rc=$?
check "a clean pass exits 0" test "$rc" -eq 0
check "registers from the fingerprint with the labels" \
  grep -q -- "cli --server perfcastd.test:50051 nodes register --spec $work/out/node.json --label pool=train --label rack=r1" "$STUB_LOG"
check "runs the plan on the device under the node name" grep -q -- "agent run --plan quick --device cpu --name n1 --out $work/out/pending/n1-" "$STUB_LOG"
check "pushes the run file" grep -q -- "cli --server perfcastd.test:50051 import --format sqlite $work/out/pending/n1-" "$STUB_LOG"
check "deletes the pushed file" test "$(find "$work/out/pending" -type f | wc -l)" -eq 0
check "keeps the token off command lines" bash -c "! grep -q s3cret '$STUB_LOG'"

pass STUB_REGISTER=exists; rc=$?
check "an already registered node is fine" test "$rc" -eq 0
check "says the node was registered before" grep -q "already registered" "$work/stderr"

pass STUB_REGISTER=down; rc=$?
check "a failed registration alone does not fail the pass (the push carries the node)" test "$rc" -eq 0
check "a failed registration is reported" grep -q "registration failed.*UNAVAILABLE" "$work/stderr"
check "the run and the push still happen" grep -q " import " "$STUB_LOG"

pass STUB_IMPORT_RC=1; rc=$?
check "a failed push fails the pass" test "$rc" -eq 1
check "a failed push keeps the file" test "$(pending)" -eq 1
pass; rc=$?
check "the next pass succeeds" test "$rc" -eq 0
check "the next pass pushes the kept file and its own" test "$(grep -c ' import ' "$STUB_LOG")" -eq 2
check "nothing is left pending" test "$(pending)" -eq 0

pass STUB_IMPORT_RC=3; rc=$?
check "rejected records fail the pass" test "$rc" -eq 1
check "a file with rejected records is set aside, not retried" \
  test "$(pending)" -eq 0 -a "$(find "$work/out/rejected" -name '*.sqlite' | wc -l)" -eq 1

pass STUB_RUN_RC=1; rc=$?
check "a failed run fails the pass" test "$rc" -eq 1
check "a failed run is not pushed now but kept" test "$(grep -c ' import ' "$STUB_LOG")" -eq 0 -a "$(pending)" -eq 1

pass -u PERFCAST_NODE_LABELS -u PERFCAST_NODE_NAME; rc=$?
check "runs without labels and node name" test "$rc" -eq 0
check "then registers without labels and runs under the agent's default name" \
  grep -q -- "nodes register --spec $work/out/node.json$" "$STUB_LOG"
check "and the run has no --name" bash -c "grep ' run ' '$STUB_LOG' | grep -qv -- --name"

pass PERFCAST_SERVER=; rc=$?
check "no server is a usage error" test "$rc" -eq 2
pass PERFCAST_INTERVAL_SECONDS=weekly; rc=$?
check "a bad interval is a usage error" test "$rc" -eq 2

echo "agent_loop_test: $failures failures"
[ "$failures" -eq 0 ]
