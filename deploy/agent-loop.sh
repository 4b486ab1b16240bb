#!/usr/bin/env bash
# Keeps one GPU node's profiles in perfcastd up to date: registers the node
# (a node that is already registered is fine), runs the profiling plan into a
# fresh SQLite file, pushes it with `perfcast import`, and repeats after an
# interval. Used by the agent DaemonSet (deploy/k8s), the agent image
# (deploy/docker/agent.Dockerfile) and perfcast-agent.service (one pass).
#
# A file whose push failed stays in $PERFCAST_OUT_DIR/pending and is pushed
# again before the next run, so a server outage loses no measurements; a file
# the server accepted is deleted (the server has it). Re-pushing is idempotent
# (profiles carry a content hash).
#
# Environment:
#   PERFCAST_SERVER            perfcastd host:port (required)
#   PERFCAST_PLAN              built-in plan (default: default); or
#   PERFCAST_PLAN_FILE         a plan file instead
#   PERFCAST_NODE_NAME         node name (default: the agent's <hostname>-<gpu model>)
#   PERFCAST_NODE_LABELS       labels for registration, "k=v k=v" (commas also separate)
#   PERFCAST_DEVICE            auto, cuda or cpu (default: auto)
#   PERFCAST_MAX_MINUTES       wall-clock budget of one run (default: the plan's)
#   PERFCAST_OUT_DIR           where run files are kept (default: /var/lib/perfcast-agent)
#   PERFCAST_INTERVAL_SECONDS  pause between runs; 0 = one pass, then exit with
#                              its status (default: 604800, a week)
#   PERFCAST_TLS_CA, PERFCAST_TLS_CERT, PERFCAST_TLS_KEY  TLS files (optional)
#   PERFCAST_TOKEN or PERFCAST_TOKEN_FILE                 bearer token (optional)
#   PERFCAST_AGENT, PERFCAST_CLI  the binaries (default: from PATH)
set -uo pipefail

log() { printf '%s perfcast-agent-loop: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >&2; }
die() { log "$*"; exit 2; }

AGENT=${PERFCAST_AGENT:-perfcast-agent}
CLI=${PERFCAST_CLI:-perfcast}
SERVER=${PERFCAST_SERVER:-}
PLAN=${PERFCAST_PLAN:-default}
PLAN_FILE=${PERFCAST_PLAN_FILE:-}
NODE_NAME=${PERFCAST_NODE_NAME:-}
DEVICE=${PERFCAST_DEVICE:-auto}
MAX_MINUTES=${PERFCAST_MAX_MINUTES:-}
OUT_DIR=${PERFCAST_OUT_DIR:-/var/lib/perfcast-agent}
INTERVAL=${PERFCAST_INTERVAL_SECONDS:-604800}

[ -n "$SERVER" ] || die "PERFCAST_SERVER is not set (host:port of perfcastd)"
[[ "$INTERVAL" =~ ^[0-9]+$ ]] || die "PERFCAST_INTERVAL_SECONDS must be a whole number of seconds, not '$INTERVAL'"
command -v "$AGENT" >/dev/null || die "no perfcast-agent ($AGENT)"
command -v "$CLI" >/dev/null || die "no perfcast CLI ($CLI)"
mkdir -p "$OUT_DIR/pending" "$OUT_DIR/rejected" || die "cannot create $OUT_DIR"

# Connection flags shared by the CLI calls. The token itself stays in the
# environment (PERFCAST_TOKEN), never on a command line.
client_flags=(--server "$SERVER")
[ -n "${PERFCAST_TLS_CA:-}" ] && client_flags+=(--tls-ca "$PERFCAST_TLS_CA")
[ -n "${PERFCAST_TLS_CERT:-}" ] && client_flags+=(--tls-cert "$PERFCAST_TLS_CERT")
[ -n "${PERFCAST_TLS_KEY:-}" ] && client_flags+=(--tls-key "$PERFCAST_TLS_KEY")
[ -n "${PERFCAST_TOKEN_FILE:-}" ] && client_flags+=(--token-file "$PERFCAST_TOKEN_FILE")

name_flags=()
[ -n "$NODE_NAME" ] && name_flags=(--name "$NODE_NAME")

# Registers this node from its fingerprint (spec-sheet rates; the run's
# measured rates arrive with the push). An existing registration is kept. A
# failure is only reported: the push carries the node too, and decides.
register_node() {
  local spec=$OUT_DIR/node.json output
  if ! "$AGENT" fingerprint --no-measure --device "$DEVICE" "${name_flags[@]}" >"$spec"; then
    log "fingerprint failed"
    return
  fi
  local labels=()
  local node_labels=${PERFCAST_NODE_LABELS:-}
  for kv in ${node_labels//,/ }; do labels+=(--label "$kv"); done
  if output=$("$CLI" "${client_flags[@]}" nodes register --spec "$spec" "${labels[@]}" 2>&1); then
    log "registered node"
  elif grep -q ALREADY_EXISTS <<<"$output"; then
    log "node already registered"
  else
    log "registration failed (the push registers the node instead): $output"
  fi
}

# Pushes one run file. 0: stored (file deleted); 1: not reached (file kept
# for the next pass); 3: stored but some records rejected (file moved aside:
# a retry would be rejected again).
push() {
  local file=$1 rc=0
  "$CLI" "${client_flags[@]}" import --format sqlite "$file" || rc=$?
  case $rc in
    0) rm -f -- "$file" "$file-wal" "$file-shm"; log "pushed $(basename "$file")" ;;
    3) mv -- "$file" "$OUT_DIR/rejected/"; rm -f -- "$file-wal" "$file-shm"; log "pushed $(basename "$file"), some records rejected; kept in $OUT_DIR/rejected" ;;
    *) log "push of $(basename "$file") failed (exit $rc); kept for the next pass"; rc=1 ;;
  esac
  return "$rc"
}

one_pass() {
  local status=0 file
  register_node
  shopt -s nullglob
  for file in "$OUT_DIR"/pending/*.sqlite; do
    push "$file" || status=1
  done
  shopt -u nullglob

  local out run_flags
  out=$OUT_DIR/pending/${NODE_NAME:-$(hostname)}-$(date -u +%Y%m%dT%H%M%SZ).sqlite
  if [ -n "$PLAN_FILE" ]; then run_flags=(--plan-file "$PLAN_FILE"); else run_flags=(--plan "$PLAN"); fi
  [ -n "$MAX_MINUTES" ] && run_flags+=(--max-minutes "$MAX_MINUTES")
  log "running plan ${PLAN_FILE:-$PLAN} into $out"
  if "$AGENT" run "${run_flags[@]}" --device "$DEVICE" "${name_flags[@]}" --out "$out" --quiet; then
    push "$out" || status=1
  else
    log "run failed; its finished configurations stay in $out and are pushed next pass"
    status=1
  fi
  return "$status"
}

sleeper=""
trap 'log "stopping"; [ -n "$sleeper" ] && kill "$sleeper" 2>/dev/null; exit 0' TERM INT

while true; do
  status=0
  one_pass || status=$?
  if [ "$INTERVAL" -eq 0 ]; then exit "$status"; fi
  log "pass finished (status $status); next in $INTERVAL s"
  # Sleep in the background so that SIGTERM (pod deletion) ends it at once.
  sleep "$INTERVAL" &
  sleeper=$!
  wait "$sleeper"
  sleeper=""
done
