# gpufair: two commands for a fresh Debian 12 machine (as root, or with sudo available).
#   make run   installs what it needs, builds, and serves the webhooks on the example cluster
#   make test  installs what it needs, builds, and runs the whole test suite
# Other targets: deps, build, bench, format, tidy, clean.

BUILD   ?= build
TYPE    ?= RelWithDebInfo
LISTEN  ?= 127.0.0.1:8888
CLUSTER ?= examples/cluster-4x10.yaml
JOBS    ?= $(shell nproc)
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

DEB_PACKAGES := build-essential cmake ninja-build pkg-config git curl \
  libboost-dev nlohmann-json3-dev libyaml-cpp-dev libsimdjson-dev libspdlog-dev libfmt-dev \
  libgtest-dev libgmock-dev libbenchmark-dev libcpprest-dev libssl-dev prometheus-cpp-dev

.PHONY: all deps build run test bench format tidy clean

all: build

# Installs only what is missing, so repeated runs are quick and need no network.
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(TYPE)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/src/app/gpufair serve --cluster $(CLUSTER) --listen $(LISTEN)

test: build
	# One retry per test: a few socket tests (tests/api server*) have hung once under heavy load;
	# a retry keeps CI honest about real failures without failing on that timing (see the note).
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --repeat until-pass:2

bench: deps
	cmake -S . -B $(BUILD)-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUFAIR_BUILD_BENCH=ON -DGPUFAIR_BUILD_TESTS=OFF
	cmake --build $(BUILD)-bench -j $(JOBS)
	$(BUILD)-bench/bench/engine_bench

format:
	clang-format -i $$(git ls-files '*.h' '*.cc')

tidy: $(BUILD)/build.ninja
	clang-tidy -p $(BUILD) $$(git ls-files 'src/*.cc')

clean:
	rm -rf $(BUILD) $(BUILD)-bench

# The deployment checks (tests/deploy: YAML, JSON Schema, the probe's TLS path) need these too.
DEB_PACKAGES += python3 python3-yaml python3-jsonschema openssl

# The container image (Dockerfile), on a host with a Docker engine: make image IMAGE=repo/name:tag
IMAGE ?= ghcr.io/gpufair/gpufair:$(shell sed -n 's/^project.gpufair VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
.PHONY: image
image:
	docker build -t $(IMAGE) .
