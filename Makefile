# Thin wrapper over CMake: the two commands in README.md and the CI entry point.
#   make demo   install dependencies, build, run the main job
#   make test   install dependencies, build, run every test (plain and ASan+UBSan builds,
#               then the libFuzzer harnesses briefly in a clang build)
#   make deb    a Debian package of a CPU-only Release build (docs/cluster.md)

BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
DEB_BUILD  ?= build-deb
FUZZ_SECONDS ?= 30
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
# The project's own builds (dev, CI) treat warnings as errors; a plain `cmake` build, with
# another compiler's warnings, does not (GSCHED_WERROR defaults to OFF).
CMAKE_ARGS ?= -DGSCHED_WERROR=ON
SANITIZE   ?= address,undefined

.PHONY: all deps configure build test test-unit test-asan test-fuzz demo install deb format format-check clean

all: build

deps:
	./deploy/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# ctest shows only failing tests' output; the conformance runner's own summary is worth
# seeing on success too.
test-unit: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)
	@grep -hE '^[0-9]+ passed, [0-9]+ failed' $(BUILD)/Testing/Temporary/LastTest.log \
	  | sed -E 's/^([0-9]+) passed, ([0-9]+) failed.*/toml-test conformance: \1 cases passed, \2 failed/' || true
	@./tests/count-skips.sh $(BUILD)/Testing/Temporary/LastTest.log

# Sanitizer build in its own directory; CUDA off there (nvcc takes no -fsanitize, and the CPU
# path is what the sanitizers check). run-checked.sh fails any test whose output holds a report.
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGSCHED_SANITIZE=$(SANITIZE) \
	      -DGSCHED_CUDA=OFF $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j$(JOBS)
	@grep -hE '^[0-9]+ passed, [0-9]+ failed' $(ASAN_BUILD)/Testing/Temporary/LastTest.log \
	  | sed -E 's/^([0-9]+) passed, ([0-9]+) failed.*/toml-test conformance (asan): \1 cases passed, \2 failed/' || true
	@./tests/count-skips.sh $(ASAN_BUILD)/Testing/Temporary/LastTest.log

# libFuzzer harnesses (tests/fuzz/) in a clang build of their own: each runs a fixed number
# of inputs from its seed corpus (-seed=1: the same ones every time), a few seconds, at most
# FUZZ_SECONDS. The rest of the tree is built there too, after the fuzzers have run: clang
# warns where gcc does not (GNU extensions, format strings), and -Werror keeps both clean.
test-fuzz: deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DGSCHED_FUZZ=ON \
	      -DGSCHED_FUZZ_SECONDS=$(FUZZ_SECONDS) -DGSCHED_CUDA=OFF -DGSCHED_MPI=OFF $(CMAKE_ARGS)
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzzers
	ctest --test-dir $(FUZZ_BUILD) --output-on-failure -j$(JOBS) -L fuzz
	cmake --build $(FUZZ_BUILD) -j$(JOBS)

test: test-unit test-asan test-fuzz

demo: build
	./examples/demo.sh $(BUILD)

install: build
	cmake --install $(BUILD)

# CUDA off: the package's Depends name Debian packages, and CUDA's libraries are NVIDIA's.
deb: deps
	cmake -S . -B $(DEB_BUILD) -DCMAKE_BUILD_TYPE=Release -DGSCHED_CUDA=OFF $(CMAKE_ARGS)
	cmake --build $(DEB_BUILD) -j$(JOBS)
	cd $(DEB_BUILD) && cpack -G DEB

format:
	git ls-files '*.c' '*.h' '*.cu' '*.cuh' | xargs clang-format -i

format-check:
	git ls-files '*.c' '*.h' '*.cu' '*.cuh' | xargs clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(DEB_BUILD)
