#!/usr/bin/env bash
# Installs every Debian package perfcast needs to build, test and run its demo.
# Idempotent: packages already present are left alone, and apt is not touched
# at all when nothing is missing. Run as root (or through sudo) on Debian 12.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  # RPC and protocol buffers.
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # perfcastd's Prometheus metrics endpoint.
  prometheus-cpp-dev
  # Foundations: status, flags, logging, strings; linear algebra; storage.
  libabsl-dev libeigen3-dev libsqlite3-dev sqlite3
  # The PostgreSQL store backend; the server binaries run its tests.
  libpqxx-dev postgresql
  # Parsing and hashing of outside input.
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libxxhash-dev libfast-float-dev
  # The proxy model zoo on CPU machines (the GPU machine brings CUDA LibTorch).
  libtorch-dev
  # Headers of Gloo, LibTorch's CPU collectives (the agent's multi-GPU code,
  # tested on CPUs over loopback).
  libgloo-dev
  # Tests and benchmarks; scikit-learn is the peer the SFS benchmark runs against.
  libgtest-dev libgmock-dev libbenchmark-dev python3 python3-sklearn python3-numpy
  # Checks of the deployment artefacts (tests/deploy): systemd-analyze, linters.
  systemd shellcheck yamllint python3-yaml
  # The TLS tests make a throwaway CA and certificates when they run.
  openssl
  # The HTML report test renders each report in a real headless browser.
  chromium
)

missing=()
for p in "${packages[@]}"; do
  [[ "$p" == \#* ]] && continue
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
