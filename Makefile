# mallard: the two commands are `make test` and `make bench`.
JOBS ?= $(shell nproc)
BUILD ?= build

.PHONY: all deps build test bench sanitize clean install

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DMALLARD_ASSERTIONS=ON -DMALLARD_WERROR=ON

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --no-tests=error --output-on-failure -j 1 $(CTEST_ARGS)

bench: build
	scripts/bench.sh $(BUILD) $(BENCH_ARGS)

# The core's API tests under ThreadSanitizer and UBSan; the STL tests under
# AddressSanitizer and UBSan.
sanitize: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMALLARD_SANITIZE=thread -DMALLARD_BUILD_TESTS=ON -DMALLARD_BUILD_BENCH=OFF -DMALLARD_BUILD_TOOLS=OFF
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && ctest --no-tests=error --output-on-failure -L sanitize-core
	cmake -S . -B build-ubsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMALLARD_SANITIZE=undefined -DMALLARD_BUILD_TESTS=ON -DMALLARD_BUILD_BENCH=OFF -DMALLARD_BUILD_TOOLS=OFF
	cmake --build build-ubsan -j $(JOBS)
	cd build-ubsan && ctest --no-tests=error --output-on-failure -L 'sanitize-core|sanitize-stl'
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMALLARD_SANITIZE=address -DMALLARD_BUILD_TESTS=ON -DMALLARD_BUILD_BENCH=OFF -DMALLARD_BUILD_TOOLS=OFF
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --no-tests=error --output-on-failure -L sanitize-stl

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) build-tsan build-ubsan build-asan
