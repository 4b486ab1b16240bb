#!/usr/bin/env bash
# Verifies perfcast's systemd units with `systemd-analyze verify` against a
# scratch root that holds what `cmake --install` puts into /usr/local (so
# every ExecStart= must name an installed program) and the host's own
# system units (for the targets they order against). Any message fails:
# systemd-analyze exits 0 on unknown keys and bad values, it only warns.
#
#   check_systemd.sh BUILD_DIR UNIT_FILE...
# With PERFCAST_INSTALLED_PREFIX set to a finished `cmake --install --prefix`
# tree, that tree is linked in instead (the self-test runs the check often).
set -euo pipefail
build=$1
shift
command -v systemd-analyze >/dev/null || { echo "check_systemd: no systemd-analyze (package systemd)" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr"
if [ -n "${PERFCAST_INSTALLED_PREFIX:-}" ]; then
  cp -al "$PERFCAST_INSTALLED_PREFIX" "$root/usr/local" 2>/dev/null || cp -a "$PERFCAST_INSTALLED_PREFIX" "$root/usr/local"
else
  cmake --install "$build" --prefix "$root/usr/local" >/dev/null
fi
for units in /usr/lib/systemd/system /lib/systemd/system; do
  if [ -d "$units" ]; then
    mkdir -p "$root/usr/lib/systemd"
    cp -r "$units" "$root/usr/lib/systemd/system"
    break
  fi
done
mkdir -p "$root/etc/systemd/system"
names=()
for unit in "$@"; do
  cp "$unit" "$root/etc/systemd/system/"
  names+=("$(basename "$unit")")
done

status=0
output=$(systemd-analyze verify --man=no --root="$root" "${names[@]}" 2>&1) || status=$?
if [ "$status" -ne 0 ] || [ -n "$output" ]; then
  printf '%s\n' "$output" | sed "s|$root||g"
  echo "check_systemd: ${names[*]}: FAILED (exit $status)"
  exit 1
fi
echo "check_systemd: ${names[*]}: ok"
