#!/usr/bin/env bash
# NeuSight's cross-GPU protocol on its public measurements: fit on P4, P100,
# V100, T4 and A100-40GB, predict H100, L4 and A100-80GB, and print per test
# GPU and class MAPE, signed bias and 10-90% interval coverage beside
# NeuSight's own end-to-end error on the same rows.
#
#   data/tools/neusight_protocol.sh [BUILD_DIR]
#
# Runs the protocol through the product (perfcastd + `perfcast evaluate
# --train-gpu ... --test-gpu ...`) when BUILD_DIR has them, and through
# transfer_bench (the same library call, no server) when that was built
# (-DPERFCAST_BUILD_BENCHMARKS=ON).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
DATA=data/external/neusight
TRAIN=(P4-8GB P100-PCIE-16GB V100-PCIE-32GB T4-16GB A100-PCIE-40GB)
TEST=(H100-SXM5-80GB L4-24GB A100-PCIE-80GB)
WORK=$(mktemp -d /tmp/neusight-protocol.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
join() { local IFS=,; echo "$*"; }

if [ -x "$BUILD/server/perfcastd" ] && [ -x "$BUILD/client/perfcast" ]; then
  echo "== through perfcastd and perfcast evaluate"
  "$BUILD/server/perfcastd" --listen=127.0.0.1:0 --db="sqlite://$WORK/perfcast.db" \
    --port_file="$WORK/port" --log_level=warning &
  SERVER_PID=$!
  trap 'kill $SERVER_PID 2>/dev/null; wait $SERVER_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
  for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
  PERFCAST_SERVER=127.0.0.1:$(cat "$WORK/port")
  export PERFCAST_SERVER
  "$BUILD/client/perfcast" import "$DATA/kernels.csv" "$DATA/e2e.csv" >/dev/null
  args=()
  for gpu in "${TRAIN[@]}"; do args+=(--train-gpu "$gpu"); done
  for gpu in "${TEST[@]}"; do args+=(--test-gpu "$gpu"); done
  "$BUILD/client/perfcast" evaluate "${args[@]}" --group-by gpu --report "$WORK/report.html"
  "$BUILD/client/perfcast" --output json evaluate "${args[@]}" --group-by gpu > "$WORK/points.json"
  python3 data/tools/neusight_compare.py "$WORK/points.json" "$DATA/neusight_e2e.csv"
fi

if [ -x "$BUILD/tests/bench/transfer_bench" ]; then
  echo "== through transfer_bench (no server)"
  "$BUILD/tests/bench/transfer_bench" --group-by gpu --train "$(join "${TRAIN[@]}")" \
    --test "$(join "${TEST[@]}")" --points "$WORK/points.csv" "$DATA/kernels.csv" "$DATA/e2e.csv"
  python3 data/tools/neusight_compare.py "$WORK/points.csv" "$DATA/neusight_e2e.csv"
fi
