# Two commands do all the set-up on a fresh Debian 12 machine:
#   make demo    install what is missing, build, install into $(PREFIX), run the demo
#   make check   install what is missing, build, run the whole test suite
# Plus: make check-sanitize (ASan+UBSan build; unit and multi-process tests),
# make check-tsan (ThreadSanitizer build, the whole suite: 8 min from scratch on
# this 2-core machine under a load average of 17-26, 5 min of it the tests), make bench.
PREFIX   ?= $(CURDIR)/_install
BUILD    ?= $(CURDIR)/build
JOBS     ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps configure build install demo check check-sanitize check-tsan bench clean

all: build

deps:
	@scripts/deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

install: build
	cmake --install $(BUILD) >/dev/null

demo: install
	$(PREFIX)/bin/xpinfo
	$(PREFIX)/bin/xprun -n 4 --tag-output $(PREFIX)/libexec/xportals/hello
	@if [ -x $(PREFIX)/libexec/xportals/ptl_pingpong ]; then \
	  echo "== Portals put ping-pong, 2 processes =="; \
	  $(PREFIX)/bin/xprun -n 2 $(PREFIX)/libexec/xportals/ptl_pingpong --max-size 65536; \
	fi

check: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS) --timeout 120

check-sanitize: deps
	cmake -S . -B $(BUILD)-asan -DXP_SANITIZE=address,undefined -DXP_ENABLE_CUDA=OFF -DXP_BUILD_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD)-asan -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/tools/lsan.supp \
	  ctest --test-dir $(BUILD)-asan --output-on-failure -j$(JOBS) -L "unit|mp" --timeout 300

check-tsan: deps
	cmake -S . -B $(BUILD)-tsan -DXP_SANITIZE=thread -DXP_ENABLE_CUDA=OFF -DXP_BUILD_BENCH=OFF $(CMAKE_ARGS)
	cmake --build $(BUILD)-tsan -j$(JOBS)
	ctest --test-dir $(BUILD)-tsan --output-on-failure -j$(JOBS) --timeout 300

bench: install
	@for b in $(PREFIX)/libexec/xportals/ptl_*; do [ -x "$$b" ] && $(PREFIX)/bin/xprun -n 2 "$$b"; done

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(PREFIX)
