# syntax=docker/dockerfile:1
# perfcast-agent for CUDA nodes, with the perfcast CLI and the loop that
# registers the node, runs the plan and pushes the profiles
# (deploy/agent-loop.sh, the entrypoint).
#
#   docker build -f deploy/docker/agent.Dockerfile -t perfcast-agent .
#   docker run --gpus 1 -e PERFCAST_SERVER=perfcastd.example:50051 perfcast-agent
#
# LibTorch is PyTorch's own CUDA build (the cxx11-ABI zip, which carries its
# CUDA libraries), on NVIDIA's CUDA image of Ubuntu 24.04 (gRPC 1.51, Abseil
# 20220623 and protobuf 3.21, the generation of Debian 12's packages).
# Build arguments:
#   LIBTORCH_URL        another LibTorch zip (match CUDA_VERSION's major version)
#   CUDA_ARCH           compute capability to build for, e.g. 80 (A100), 90 (H100/H200)
#   PERFCAST_WITH_GRPC  OFF builds the agent alone (preset gpu-agent): the image
#                       then cannot push, and a sidecar of the perfcastd image runs
#                       `perfcast import` on the files in PERFCAST_OUT_DIR.

ARG CUDA_VERSION=12.6.3
FROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu24.04 AS builder
ARG LIBTORCH_URL=https://download.pytorch.org/libtorch/cu126/libtorch-cxx11-abi-shared-with-deps-2.6.0%2Bcu126.zip
ARG CUDA_ARCH=90
ARG PERFCAST_WITH_GRPC=ON
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates curl unzip \
      libabsl-dev libeigen3-dev libsqlite3-dev \
      libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libxxhash-dev libfast-float-dev \
 && if [ "$PERFCAST_WITH_GRPC" = ON ]; then \
      apt-get install -y --no-install-recommends \
        libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
        libpqxx-dev prometheus-cpp-dev; \
    fi \
 && rm -rf /var/lib/apt/lists/*
RUN curl -fsSL -o /tmp/libtorch.zip "$LIBTORCH_URL" \
 && unzip -q /tmp/libtorch.zip -d /opt \
 && rm /tmp/libtorch.zip \
 && test -f /opt/libtorch/share/cmake/Torch/TorchConfig.cmake
WORKDIR /src
COPY . .
# The gpu-agent preset's settings, plus gRPC for the CLI and the agent's push.
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPERFCAST_WITH_GRPC="$PERFCAST_WITH_GRPC" -DPERFCAST_WITH_TORCH=ON \
      -DPERFCAST_BUILD_TESTS=OFF -DPERFCAST_BUILD_BENCHMARKS=OFF \
      -DCMAKE_PREFIX_PATH=/opt/libtorch \
      -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" \
      -DTORCH_CUDA_ARCH_LIST="$(echo "$CUDA_ARCH" | sed 's/\(.\)$/.\1/')" \
 && targets="perfcast-agent" \
 && if [ "$PERFCAST_WITH_GRPC" = ON ]; then targets="$targets perfcast"; fi \
 && cmake --build /build --target $targets \
 && install -D -s -m 0755 /build/profiler/perfcast-agent /out/usr/local/bin/perfcast-agent \
 && if [ "$PERFCAST_WITH_GRPC" = ON ]; then \
      install -D -s -m 0755 /build/client/perfcast /out/usr/local/bin/perfcast; \
    fi \
 && install -D -m 0755 deploy/agent-loop.sh /out/usr/local/bin/perfcast-agent-loop \
 && ldd /out/usr/local/bin/* 2>/dev/null | awk '$3 ~ /^\// {print $3}' | sort -u \
      | xargs -r readlink -f | xargs -r dpkg -S 2>/dev/null | cut -d: -f1 | sort -u >/out/runtime-packages

FROM nvidia/cuda:${CUDA_VERSION}-cudnn-runtime-ubuntu24.04
ARG DEBIAN_FRONTEND=noninteractive
# The Ubuntu packages whose shared libraries the binaries load, as the
# builder's dpkg found them (LibTorch's own libraries come from /opt/libtorch).
COPY --from=builder /out/runtime-packages /tmp/runtime-packages
RUN apt-get update \
 && xargs -a /tmp/runtime-packages apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages \
 && groupadd --system --gid 10001 perfcast \
 && useradd --system --uid 10001 --gid perfcast --home-dir /var/lib/perfcast-agent \
      --shell /usr/sbin/nologin perfcast \
 && install -d -o perfcast -g perfcast -m 0750 /var/lib/perfcast-agent
COPY --from=builder /opt/libtorch/lib /opt/libtorch/lib
COPY --from=builder /out/usr/ /usr/
# Every shared library is found (LibTorch through the build RPATH).
RUN ! ldd /usr/local/bin/perfcast* | grep 'not found'
USER 10001:10001
ENV PERFCAST_OUT_DIR=/var/lib/perfcast-agent \
    PERFCAST_DEVICE=cuda \
    CUDA_CACHE_PATH=/var/lib/perfcast-agent/.nv \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
VOLUME ["/var/lib/perfcast-agent"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/perfcast-agent-loop"]
