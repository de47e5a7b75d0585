# syntax=docker/dockerfile:1
# gpufair's container image: `make image` (or docker build -t gpufair .) on a host with a Docker
# engine. Two stages on Debian 12: the build stage installs the Makefile's Debian packages and
# builds a Release gpufair; the final stage holds only the shared libraries gpufair links, the
# exec-probe helper, and the binary, and runs as an unprivileged user.
# tests/deploy/test_image.py keeps RUNTIME_PACKAGES equal to what the built binary needs.
ARG DEBIAN_IMAGE=debian:12-slim

FROM ${DEBIAN_IMAGE} AS build
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The Makefile alone first: the package layer is rebuilt only when the package list changes.
COPY Makefile ./
# (Without the packages only the tests need: Helm's npm, prometheus, python3.)
RUN make deps TEST_TOOL_PACKAGES= && rm -rf /var/lib/apt/lists/*
COPY CMakeLists.txt ./
COPY include ./include
COPY src ./src
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DGPUFAIR_BUILD_TESTS=OFF -DGPUFAIR_BUILD_BENCH=OFF \
 && cmake --build /build --target gpufair -j "$(nproc)" \
 && strip --strip-unneeded /build/src/app/gpufair \
 && /build/src/app/gpufair version

FROM ${DEBIAN_IMAGE}
# The shared libraries the binary needs (objdump -p: NEEDED), by Debian package; what those
# need in turn comes with them as apt dependencies. openssl is for gpufair-probe's https
# probes (openssl s_client), bash and coreutils (timeout, head, cut) are already in the base.
ARG RUNTIME_PACKAGES="libc6 libgcc-s1 libstdc++6 libssl3 libfmt9 \
  libspdlog1.10 libyaml-cpp0.7 libsimdjson14 \
  libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 openssl"
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ${RUNTIME_PACKAGES} \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
COPY --from=build /build/src/app/gpufair /usr/local/bin/gpufair
COPY --chmod=0755 deploy/image/gpufair-probe /usr/local/bin/gpufair-probe
# 65532: the conventional "nonroot" uid/gid of distroless images; no home, no shell login.
USER 65532:65532
EXPOSE 8888 9090
ENTRYPOINT ["/usr/local/bin/gpufair"]
CMD ["serve"]
