#!/usr/bin/env bash
# Perfcast against its own plain-PyTorch multi-GPU campaigns on 2 x H200
# (data/multi-gpu/h200x2-parallel.jsonl: single GPU, DDP, FSDP ZeRO-2/3,
# activation checkpointing, DTensor TP, pipelining 1F1B; h200x2-m19-sizes.jsonl:
# the same models at other sizes on another host; h200x2-m20-host.jsonl and
# h200x2-m20-sizes.jsonl: DDP where the host binds, and the sizes, on a third;
# h200x2-m21-spread.jsonl: TP across sizes and DDP on more CNNs, on a fourth),
# through the CLI.
#
#   data/tools/h200x2_parallel_protocol.sh [BUILD_DIR] [fit|holdout]
#
# perfcastd on a fresh embedded SQLite file; `perfcast import` of perfcast's
# own H100/H200 single-GPU profiles (none of the campaigns' steps); `perfcast
# fit --newest-per-gpu`; then per campaign `perfcast nodes register` of its
# host (2 x the catalog's H200-SXM-141GB) with the Python host cost per
# operation its dispatch probe measured (parallel_campaign.py probe: what the
# agent stores for a node it ran on), and one `perfcast predict --batch-file`
# with every measured configuration, its layout in the file's columns, on that
# node. data/tools/parallel_campaign.py prints step and
# memory errors per strategy and whether every measured out-of-memory was
# refused. With `fit`, data/tools/fit_parallel_terms.py then learns the
# implementation terms from every campaign's answers and writes
# predictor/parallel_terms.json (rebuild and run again to see them priced);
# with `holdout`, it prints the terms' leave-one-model-out errors and their
# leave-one-campaign-out errors (each host and its sizes priced with terms
# learned on the other's).
# PARALLEL_ROWS names the campaigns (space-separated rows files; one host's
# several files joined by "+" are one campaign, priced on one node);
# PARALLEL_POINTS=F.csv writes each campaign's rows' predictions to F-NAME.csv.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
MODE=${2:-}
# The campaigns: the h200x2 plan's first host, the held-out sizes on m19,
# m20's host and sizes plans (one host), and m21's spread plan.
M20=data/multi-gpu/h200x2-m20-host.jsonl+data/multi-gpu/h200x2-m20-sizes.jsonl
read -r -a CAMPAIGNS <<< "${PARALLEL_ROWS:-data/multi-gpu/h200x2-parallel.jsonl data/multi-gpu/h200x2-m19-sizes.jsonl $M20 data/multi-gpu/h200x2-m21-spread.jsonl}"
OWN=(data/h200-m10-default.sqlite data/h200-m12-architectures.sqlite
     data/h200-m7-sizes.sqlite data/h200-m7-decoder-batches.sqlite
     data/h100-m10-default.sqlite data/h100-m10-architectures.sqlite)
WORK=$(mktemp -d /tmp/h200x2-parallel.XXXXXX)

# shellcheck source=data/tools/start_perfcastd.sh
. data/tools/start_perfcastd.sh
start_perfcastd h200x2_parallel_protocol "$BUILD" "$WORK"

echo "== perfcastd on $PERFCAST_SERVER: import perfcast's H100/H200 profiles"
"$PERFCAST" import "${OWN[@]}" | tail -n 1
echo
echo "== perfcast fit --newest-per-gpu"
"$PERFCAST" fit --newest-per-gpu | tail -n 2 | cut -c1-160
echo
PAIRS=()
for CAMPAIGN in "${CAMPAIGNS[@]}"; do
  ROWS=${CAMPAIGN%%+*}
  NAME=$(basename "$ROWS" .jsonl)
  if [ "$ROWS" != "$CAMPAIGN" ]; then
    IFS=+ read -r -a PARTS <<< "$CAMPAIGN"
    ROWS=$WORK/$(for PART in "${PARTS[@]}"; do basename "$PART" .jsonl; done | paste -sd+).jsonl
    cat "${PARTS[@]}" > "$ROWS"
  fi
  echo "== $CAMPAIGN: perfcast predict --batch-file (one row per measured configuration)"
  PROBE=$(python3 data/tools/parallel_campaign.py probe "$ROWS")
  echo "host: $PROBE us per Python operation (its rows' dispatch probe, median)"
  "$PERFCAST" nodes register --name "$NAME" --gpu H200-SXM-141GB --count 2 \
    --python-op-us "$PROBE" > /dev/null
  python3 data/tools/parallel_campaign.py batch "$ROWS" "$WORK/$NAME.csv" "$NAME"
  # Refused rows (the measured out-of-memory ones) make it exit 3 (partial).
  "$PERFCAST" -o json predict --batch-file "$WORK/$NAME.csv" > "$WORK/$NAME.json" || [ $? -eq 3 ]
  python3 data/tools/parallel_campaign.py summary "$ROWS" "$WORK/$NAME.json" \
    ${PARALLEL_POINTS:+--points "${PARALLEL_POINTS%.csv}-$NAME.csv"}
  echo
  PAIRS+=("$ROWS" "$WORK/$NAME.json")
done
case "$MODE" in
  fit)
    echo "== data/tools/fit_parallel_terms.py -> predictor/parallel_terms.json"
    python3 data/tools/fit_parallel_terms.py "${PAIRS[@]}" predictor/parallel_terms.json
    ;;
  holdout)
    echo "== the terms held out: each model's rows priced with terms fitted on the others"
    python3 data/tools/fit_parallel_terms.py "${PAIRS[@]}" - --holdout
    echo
    echo "== each campaign (host and sizes) priced with terms fitted on the others"
    python3 data/tools/fit_parallel_terms.py "${PAIRS[@]}" - --cross
    ;;
esac
