# The two commands of the README's quick start, and their parts.
#   make demo   install dependencies, build, start perfcastd on an embedded
#               SQLite file, import the measured profiles, fit and predict
#   make test   install dependencies, build, run every test
# Both are safe to repeat: installs and builds are incremental.
PRESET ?= $(if $(CI),ci,dev)
BUILD_DIR := $(if $(filter ci,$(PRESET)),build-ci,build)
JOBS ?= $(shell nproc)

.PHONY: deps configure build demo test bench clean

deps:
	deploy/install-deps.sh

configure: deps
	cmake --preset $(PRESET)

build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

demo: build
	deploy/demo.sh $(BUILD_DIR)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j$(JOBS) --timeout 600

bench: build
	$(BUILD_DIR)/tests/bench/import_bench
	$(BUILD_DIR)/tests/bench/sfs_bench
	$(BUILD_DIR)/tests/bench/memory_bench data/h200-m2-default.sqlite \
	  data/h200-m2-architectures.sqlite data/h200-m1-architectures.sqlite \
	  data/h100-m2-architectures.sqlite data/h100-m2-default.sqlite data/h200-m2-sizes.sqlite \
	  data/h200-m4-architectures.sqlite data/h200-m4-sizes.sqlite \
	  data/h200-m5-architectures.sqlite data/h200-m6-architectures.sqlite data/h200-m5-default.sqlite \
	  data/h200-m6-default.sqlite data/h200-m7-sizes.sqlite data/h200-m7-decoder-batches.sqlite

clean:
	rm -rf build build-ci
