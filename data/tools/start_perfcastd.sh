# Sourced by the protocol scripts: starts BUILD's perfcastd on a fresh SQLite
# file in WORK (removed, with the server stopped, when the script exits) and
# exports PERFCAST_SERVER; sets PERFCASTD and PERFCAST to BUILD's binaries.
#   start_perfcastd NAME BUILD WORK
start_perfcastd() {
  local name=$1 build=$2
  PERFCASTD_WORK=$3
  PERFCASTD=$build/server/perfcastd
  PERFCAST=$build/client/perfcast
  for binary in "$PERFCASTD" "$PERFCAST"; do
    [ -x "$binary" ] || { echo "$name: no $binary (build first)" >&2; exit 1; }
  done
  "$PERFCASTD" --listen=127.0.0.1:0 --db="sqlite://$PERFCASTD_WORK/perfcast.db" \
    --port-file="$PERFCASTD_WORK/port" --log-level=warning &
  PERFCASTD_PID=$!
  trap 'kill $PERFCASTD_PID 2>/dev/null; wait $PERFCASTD_PID 2>/dev/null || true; rm -rf "$PERFCASTD_WORK"' EXIT
  for _ in $(seq 100); do [ -s "$PERFCASTD_WORK/port" ] && break; sleep 0.1; done
  [ -s "$PERFCASTD_WORK/port" ] || { echo "$name: perfcastd did not start" >&2; exit 1; }
  export PERFCAST_SERVER=127.0.0.1:$(cat "$PERFCASTD_WORK/port")
}
