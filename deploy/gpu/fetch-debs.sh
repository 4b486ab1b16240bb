#!/usr/bin/env bash
# Downloads (never installs) the Debian -dev packages that perfcast-agent needs
# and the GPU machine lacks, into $REPO/.debs (git-ignored). Run it here, on a
# Debian 12 machine; deploy/gpu/build-agent.sh unpacks them on the GPU machine.
set -euo pipefail

REPO=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
OUT=${OUT:-$REPO/.debs}

# Headers and CMake packages, plus the shared libraries they point at.
# pkgconf: pkg_check_modules(libxxhash) needs a pkg-config on the GPU machine.
PACKAGES=(
  libabsl-dev libabsl20220623
  libsqlite3-dev libsqlite3-0
  nlohmann-json3-dev
  libcli11-dev
  libxxhash-dev libxxhash0
  libyaml-cpp-dev libyaml-cpp0.7
  libeigen3-dev
  pkgconf pkgconf-bin libpkgconf3
)

mkdir -p "$OUT"
cd "$OUT"
if ! apt-get download "${PACKAGES[@]}"; then
  echo "fetch-debs: apt-get download failed; run 'apt-get update' first" >&2
  exit 1
fi
ls -1 "$OUT"/*.deb
