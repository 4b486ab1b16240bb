#!/usr/bin/env bash
# deploy/agent-loop.sh with the real perfcast-agent (CPU, a two-operation
# plan), perfcast and perfcastd: a pass while perfcastd is down keeps its run
# file and fails; the next pass, with perfcastd up, pushes that file and its
# own, so the server holds both runs and nothing is left pending.
#
#   agent_loop_e2e_test.sh REPO_ROOT PERFCASTD PERFCAST PERFCAST_AGENT
set -uo pipefail
repo=$1 perfcastd=$2
export PERFCAST_CLI=$3 PERFCAST_AGENT=$4
work=$(mktemp -d)
server_pid=""
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"' EXIT
failures=0
check() {
  if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

echo '{"grids": [{"family": "gemm", "params": {"m": [64, 128], "n": [64], "k": [64], "batch": [1]}}]}' >"$work/plan.json"
export PERFCAST_PLAN_FILE=$work/plan.json PERFCAST_DEVICE=cpu PERFCAST_NODE_NAME=e2e-node
export PERFCAST_OUT_DIR=$work/agent PERFCAST_INTERVAL_SECONDS=0
pending() { find "$work/agent/pending" -name '*.sqlite' | wc -l; }

# Pass 1: nothing listens on the port perfcastd will take below.
export PERFCAST_SERVER=127.0.0.1:1
bash "$repo/deploy/agent-loop.sh" 2>"$work/pass1.log"
rc=$?
check "a pass with perfcastd down fails" test "$rc" -eq 1
check "and keeps its run file" test "$(pending)" -eq 1

"$perfcastd" --listen=127.0.0.1:0 --db="sqlite://$work/perfcast.db" --port_file="$work/port" --log_level=warning &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "FAIL: perfcastd did not start"; exit 1; }
PERFCAST_SERVER=127.0.0.1:$(cat "$work/port")

bash "$repo/deploy/agent-loop.sh" 2>"$work/pass2.log"
rc=$?
check "the next pass succeeds" test "$rc" -eq 0 || cat "$work/pass1.log" "$work/pass2.log"
check "nothing is left pending" test "$(find "$work/agent/pending" -type f | wc -l)" -eq 0
check "the node is registered" "$PERFCAST_CLI" nodes get e2e-node
rows=$("$PERFCAST_CLI" export --format csv --node e2e-node | tail -n +2 | wc -l)
check "both runs' profiles are stored (2 x 2, got $rows)" test "$rows" -eq 4

echo "agent_loop_e2e_test: $failures failures"
[ "$failures" -eq 0 ]
