# Entry points: `make demo` and `make test` (README). Both install missing Debian
# packages first, then build with CMake into build/.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# `make install PREFIX=/opt/xpcsfit`: bin/, share/doc/xpcsfit/, bash completion (docs/cli.md)
PREFIX ?= /usr/local

.PHONY: all deps build build-quiet test test-slow demo bench clean sanitize format format-check config-keys \
	fuzz-build install

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE 'bench|slow'

# The slow statistical tests (label slow: full CMC calibration, ~tens of minutes).
test-slow: build
	@cd $(BUILD) && ctest --output-on-failure -L slow -V

# The demo's build says a start line, its progress every 10 % and an end line; on failure
# the tail of its log (BUILD/build.log). scripts/build-quiet.sh.
build-quiet: deps
	@bash scripts/build-quiet.sh $(BUILD) $(JOBS)

demo: build-quiet
	@bash scripts/demo.sh $(BUILD)/xpcsfit

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

bench: build
	@cd $(BUILD) && ctest --output-on-failure -L bench -V

# docs/config-keys.md from the config reader's key table (test_config checks it is current)
config-keys: build
	@$(BUILD)/xpcsfit config --keys > docs/config-keys.md.tmp && mv docs/config-keys.md.tmp docs/config-keys.md

clean:
	rm -rf $(BUILD)

# ASan + UBSan build of the whole suite (not part of `make test`: slower).
sanitize: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DXPCSFIT_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		ctest --output-on-failure -j $(JOBS) -LE 'bench|slow'

# libFuzzer targets (clang; docs/fuzzing.md says how to run them). Not part of `make test`,
# which replays the kept corpora with the normal build.
fuzz-build:
	@bash scripts/install-deps.sh --fuzz
	@cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
		-DXPCSFIT_FUZZ=ON >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz_config fuzz_h5

# Layout is enforced: .clang-format (Linux-kernel style); CI runs format-check.
format:
	@git ls-files '*.c' '*.h' '*.cu' '*.cuh' | xargs clang-format -i

format-check: deps
	@git ls-files '*.c' '*.h' '*.cu' '*.cuh' | xargs clang-format --dry-run -Werror
