#!/usr/bin/env bash
# Builds perfcast-agent on the GPU machine: its own CUDA LibTorch (pip torch),
# no gRPC, and the Debian -dev packages carried in $REPO/.debs (see
# fetch-debs.sh) unpacked into $DEPS with dpkg -x -- never into /.
#
#   REPO=/path/to/perfcast deploy/gpu/build-agent.sh
#   $BUILD/profiler/perfcast-agent run --plan default --out h100.sqlite
#
# Environment: REPO (default: this checkout), DEPS (/tmp/deps), BUILD
# ($REPO/build-gpu), JOBS (16), PYTHON (a python3 with torch), CUDA_ARCH (90),
# CONFIGURE_ONLY (1: stop after cmake's configure step), PERFCAST_DISTRIBUTED (ON:
# build the multi-GPU subcommands with NCCL; OFF by default).
set -euo pipefail

REPO=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
DEPS=${DEPS:-/tmp/deps}
BUILD=${BUILD:-$REPO/build-gpu}
JOBS=${JOBS:-16}
CUDA_ARCH=${CUDA_ARCH:-90}
LIBDIR=$DEPS/usr/lib/x86_64-linux-gnu

die() { echo "build-agent: $*" >&2; exit 1; }

# --- 1. Unpack the carried packages (never into /) ---
shopt -s nullglob
debs=("$REPO"/.debs/*.deb)
[ ${#debs[@]} -gt 0 ] || die "no .deb files in $REPO/.debs (run deploy/gpu/fetch-debs.sh on a Debian machine)"
case "$DEPS" in /|/usr|/usr/*) die "refusing to unpack into $DEPS" ;; esac
mkdir -p "$DEPS"
for deb in "${debs[@]}"; do
  if command -v dpkg >/dev/null; then
    dpkg -x "$deb" "$DEPS"
  else
    # No dpkg: a .deb is an ar archive holding data.tar.{xz,zst,gz}.
    member=$(ar t "$deb" | grep '^data\.tar')
    case "$member" in
      *.xz) decompress=(xz -dc) ;;
      *.zst) decompress=(zstd -dc) ;;
      *.gz) decompress=(gzip -dc) ;;
      *) decompress=(cat) ;;
    esac
    ar p "$deb" "$member" | "${decompress[@]}" | tar -x -C "$DEPS" -f -
  fi
done
echo "build-agent: unpacked ${#debs[@]} packages into $DEPS"

# --- 2. Find LibTorch ---
PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
  for candidate in python3 /opt/torch/.venv/bin/python; do
    if "$candidate" -c 'import torch' 2>/dev/null; then PYTHON=$candidate; break; fi
  done
fi
[ -n "$PYTHON" ] || die "no python with torch found (set PYTHON=...)"
TORCH_CMAKE=$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)')
TORCH_LIB=$("$PYTHON" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
echo "build-agent: LibTorch $("$PYTHON" -c 'import torch; print(torch.__version__)') at $TORCH_CMAKE"
# The agent's Python probe tries this interpreter (with torch) before python3.
PROBE_PYTHON=$("$PYTHON" -c 'import sys; print(sys.executable)')

# --- 3. pkg-config for libxxhash: the carried .pc files say prefix=/usr, so
# a sysroot maps them into $DEPS. Use the carried pkgconf if there is none. ---
export PKG_CONFIG_PATH=$LIBDIR/pkgconfig:$DEPS/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$DEPS
export LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PKG_CONFIG_ARGS=()
if ! command -v pkg-config >/dev/null; then
  [ -x "$DEPS/usr/bin/pkgconf" ] || die "no pkg-config and no carried pkgconf"
  PKG_CONFIG_ARGS=(-DPKG_CONFIG_EXECUTABLE="$DEPS/usr/bin/pkgconf")
fi

CUDA_ARGS=()
for root in /usr/local/cuda /usr/local/cuda-13*; do
  if [ -x "$root/bin/nvcc" ]; then CUDA_ARGS=(-DCUDAToolkit_ROOT="$root" -DCMAKE_CUDA_COMPILER="$root/bin/nvcc"); break; fi
done

# Multi-GPU measurements (perfcast-agent collectives / ddp) compile LibTorch's
# c10d NCCL headers, which need NCCL's own (pip: nvidia-nccl); only on request.
DIST_ARGS=(-DPERFCAST_AGENT_DISTRIBUTED="${PERFCAST_DISTRIBUTED:-OFF}")
if [ "${PERFCAST_DISTRIBUTED:-OFF}" = ON ]; then
  NCCL_HINT=$("$PYTHON" -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
  DIST_ARGS+=(-DPERFCAST_NCCL_HINTS="$NCCL_HINT")
  echo "build-agent: distributed backends on, NCCL hint '$NCCL_HINT'"
fi

GENERATOR=("Unix Makefiles")
command -v ninja >/dev/null && GENERATOR=(Ninja)

# --- 4. Configure and build ---
# SQLite links statically (its .a is in the -dev package), so the agent does
# not need the carried libsqlite3.so at run time; Abseil and yaml-cpp are
# shared and found through the build RPATH ($LIBDIR).
cmake -S "$REPO" -B "$BUILD" -G "${GENERATOR[@]}" \
  -DCMAKE_BUILD_TYPE=Release \
  -DPERFCAST_WITH_GRPC=OFF -DPERFCAST_WITH_TORCH=ON \
  -DPERFCAST_BUILD_TESTS=OFF -DPERFCAST_BUILD_BENCHMARKS=OFF \
  -DPERFCAST_PROBE_PYTHON="$PROBE_PYTHON" \
  -DCMAKE_PREFIX_PATH="$TORCH_CMAKE;$DEPS/usr" \
  -DSQLite3_INCLUDE_DIR="$DEPS/usr/include" \
  -DSQLite3_LIBRARY="$LIBDIR/libsqlite3.a" \
  -DCMAKE_CXX_STANDARD_LIBRARIES="-ldl -lpthread -lm" \
  -DCMAKE_BUILD_RPATH="$LIBDIR;$TORCH_LIB" \
  -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" \
  -DTORCH_CUDA_ARCH_LIST="${CUDA_ARCH:0:1}.${CUDA_ARCH:1}" \
  "${PKG_CONFIG_ARGS[@]}" "${CUDA_ARGS[@]}" "${DIST_ARGS[@]}"
[ "${CONFIGURE_ONLY:-0}" = 1 ] && exit 0
cmake --build "$BUILD" -j"$JOBS" --target perfcast-agent

AGENT=$BUILD/profiler/perfcast-agent
"$AGENT" --help >/dev/null || die "the built agent does not start (missing shared libraries? try LD_LIBRARY_PATH=$LIBDIR)"
echo "build-agent: built $AGENT"
echo "build-agent: if it cannot find a library at run time: export LD_LIBRARY_PATH=$LIBDIR:$TORCH_LIB"
