# syntax=docker/dockerfile:1
# perfcastd and the perfcast CLI on Debian 12, without LibTorch.
#
#   docker build -f deploy/docker/perfcastd.Dockerfile -t perfcastd .
#   docker run -p 50051:50051 -p 9464:9464 -v perfcast:/var/lib/perfcast perfcastd
#
# The builder installs the Debian -dev packages of the server and the CLI (not
# deploy/install-deps.sh: that one also brings LibTorch, test and benchmark
# packages); the runtime stage carries only their shared libraries
# (tests/deploy/check_dockerfiles.py checks both lists against the build).

FROM debian:bookworm AS builder
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config ca-certificates \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libabsl-dev libeigen3-dev libsqlite3-dev \
      libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libxxhash-dev libfast-float-dev \
      libpqxx-dev prometheus-cpp-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The whole tree minus what .dockerignore leaves out (build trees, git, data
# but the shipped profiles, which `perfcast --local` fits on: they go where
# the CLI looks for them without its checkout): new library directories need
# no change here.
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPERFCAST_WITH_GRPC=ON -DPERFCAST_WITH_TORCH=OFF \
      -DPERFCAST_BUILD_TESTS=OFF -DPERFCAST_BUILD_BENCHMARKS=OFF \
 && cmake --build /build --target perfcastd perfcast \
 && install -D -s -m 0755 /build/server/perfcastd /out/usr/local/bin/perfcastd \
 && install -D -s -m 0755 /build/client/perfcast /out/usr/local/bin/perfcast \
 && for f in shipped-profiles.txt $(grep -v '^#' data/shipped-profiles.txt); do \
      install -D -m 0644 "data/$f" "/out/usr/local/share/perfcast/data/$f"; done

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates \
      libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 \
      libsqlite3-0 libxxhash0 libpqxx-6.4 \
      libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 perfcast \
 && useradd --system --uid 10001 --gid perfcast --home-dir /var/lib/perfcast \
      --shell /usr/sbin/nologin perfcast \
 && install -d -o perfcast -g perfcast -m 0750 /var/lib/perfcast
COPY --from=builder /out/ /
# Every shared library the binaries need is present (fails the build otherwise).
RUN ! ldd /usr/local/bin/perfcastd /usr/local/bin/perfcast | grep 'not found'
USER 10001:10001
WORKDIR /var/lib/perfcast
ENV PERFCAST_DATA_DIR=/var/lib/perfcast
VOLUME ["/var/lib/perfcast"]
# 50051: gRPC (perfcast.v1, grpc.health.v1); 9464: Prometheus metrics.
EXPOSE 50051 9464
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/perfcastd"]
CMD ["--listen=0.0.0.0:50051", "--db=sqlite:///var/lib/perfcast/perfcast.db", \
     "--metrics_listen=0.0.0.0:9464", "--shutdown_grace=20s"]
