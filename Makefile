# Entry points: `make demo` and `make test` (README). Both install missing Debian
# packages first, then build with CMake into build/.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all deps build test demo bench clean format

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE bench

demo: build
	@bash scripts/demo.sh $(BUILD)/xpcsfit

bench: build
	@cd $(BUILD) && ctest --output-on-failure -L bench -V

clean:
	rm -rf $(BUILD)
