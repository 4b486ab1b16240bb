# Sourced by the NeuSight protocol scripts, from the repository root: where
# the converted measurements are, NeuSight's own cross-GPU split, the
# evaluate flags PERFCAST_PROTOCOL_ARGS adds, and start_perfcastd.
# shellcheck shell=bash disable=SC2034  # the sourcing script reads these
DATA=data/external/neusight
# NeuSight's split: fit on these, predict those.
TRAIN=(P4-8GB P100-PCIE-16GB V100-PCIE-32GB T4-16GB A100-PCIE-40GB)
TEST=(H100-SXM5-80GB L4-24GB A100-PCIE-80GB)
# Default: forward selection with leave-one-GPU-out folds, --group-by gpu.
EXTRA=${PERFCAST_PROTOCOL_ARGS:---group-by gpu}
# join A B C -> A,B,C (a --test-gpu list).
join() { local IFS=,; echo "$*"; }

# shellcheck source=data/tools/start_perfcastd.sh
. data/tools/start_perfcastd.sh
