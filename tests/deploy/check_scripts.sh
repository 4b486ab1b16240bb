#!/usr/bin/env bash
# `bash -n` and shellcheck on every shell script under the given directories
# (*.sh and Slurm *.sbatch files).
#
#   check_scripts.sh DIR...
set -uo pipefail
command -v shellcheck >/dev/null || { echo "check_scripts: no shellcheck" >&2; exit 1; }
status=0
count=0
while IFS= read -r -d '' script; do
  count=$((count + 1))
  bash -n "$script" || { echo "check_scripts: $script: syntax error"; status=1; continue; }
  shellcheck --shell=bash --severity=style "$script" || { echo "check_scripts: $script: shellcheck findings"; status=1; }
done < <(find "$@" -type f \( -name '*.sh' -o -name '*.sbatch' \) -print0 | sort -z)
if [ "$count" -eq 0 ]; then echo "check_scripts: no scripts in $*"; exit 1; fi
echo "check_scripts: $count scripts, $([ $status -eq 0 ] && echo ok || echo FAILED)"
exit "$status"
