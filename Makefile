# xlatrain — build, test, install.
#
#   make            release build (portable -O3; NATIVE=1 tunes for this CPU)
#   make test       install missing Debian packages, build, run the test suite
#   make asan       ASan+UBSan build of the same test suite
#   make fuzz       libFuzzer harnesses (clang), FUZZ_SECONDS=N each (default 60),
#                   after replaying their corpora and regressions (make fuzz-regress)
#   make bench      release build + benchmarks side by side with PyTorch
#   make MPI=1      the same targets with multi-host support: mpicc, Open MPI,
#                   objects in build/mpi (build/asan-mpi); ./xlatrain is then the MPI build
#   make test-mpi   MPI=1 build + the tests that run it under mpirun (tests/test_mpi.c)
#   make test-isa   the kernel and engine tests under XLATRAIN_ISA=avx2, then generic
#   make check-circles  no two .c files of src/ depend on each other (tests/check_circles.sh)
#   make demo       a short training run on the built-in synthetic dataset
#   make data       download MNIST (DATASET=fashion_mnist for FashionMNIST)
#   make install    PREFIX=/usr/local DESTDIR=: binary, man page, models, configs, bash completion
#   make uninstall  the same PREFIX/DESTDIR: removes them
#   make deps       install the Debian packages when a pkg-config check fails
#
# The pkg-config flags are only read by the inner targets (_build, _test, ...)
# that the public ones call through $(MAKE) after `deps`, so that a fresh
# machine without the -dev packages can still run `make test`.

PKGS      := yaml-0.1 libpng libjpeg zlib openblas jansson libarchive
DEB_PKGS  := build-essential pkg-config libyaml-dev libpng-dev zlib1g-dev libopenblas-dev libjansson-dev libarchive-dev libjpeg62-turbo-dev libdnnl-dev groff-base man-db
# oneDNN ships no pkg-config file on Debian: its header says it is installed
DNNL_HEADER := /usr/include/oneapi/dnnl/dnnl.h
PREFIX    ?= /usr/local
CC        ?= cc
DATASET   ?= mnist

ifeq ($(NATIVE),1)
ARCH_FLAGS := -march=native
else
# x86-64-v2 runs on every x86-64 of the last 15 years; SIMD kernels that need
# AVX2/AVX-512 are compiled per function and picked at run time.
ARCH_FLAGS := $(if $(filter x86_64,$(shell uname -m)),-march=x86-64-v2 -mtune=generic,)
endif

WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wpointer-arith -Wno-unused-parameter
BASE_CFLAGS = -std=c11 -D_GNU_SOURCE $(WARN) -Isrc $(shell pkg-config --cflags $(PKGS))
LIBS        = $(shell pkg-config --libs $(PKGS)) -ldnnl -lpthread -lm -lrt

# One transport between hosts (src/distributed/cluster.h): Open MPI with
# MPI=1, else the one-host stub. Everything else is the same source.
SRC_ALL   := $(shell find src -name '*.c' ! -path src/main.c | sort)
ifeq ($(MPI),1)
CC        := mpicc
SRC       := $(filter-out src/distributed/cluster_none.c,$(SRC_ALL))
else
SRC       := $(filter-out src/distributed/cluster_mpi.c,$(SRC_ALL))
endif
MPI_DEB_PKGS := openmpi-bin libopenmpi-dev
TEST_SRC  := $(shell find tests -name '*.c' ! -path 'tests/bench/*' ! -path 'tests/fuzz/*' | sort)
BENCH_SRC := $(wildcard tests/bench/*.c)

ifeq ($(MPI),1)
REL_DIR   := build/mpi
ASAN_DIR  := build/asan-mpi
else
REL_DIR   := build/release
ASAN_DIR  := build/asan
endif
REL_FLAGS  = -O3 -g $(ARCH_FLAGS) -DNDEBUG -fno-math-errno
# Each object also writes NAME.d, the headers it really includes (-MMD), with
# an empty rule per header (-MP) so a deleted header does not break the build.
DEPFLAGS   = -MMD -MP
ASAN_FLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

.PHONY: xlatrain all test test-isa _test_isa test-mpi check-circles asan bench demo data install uninstall deps clean _build _test _asan _bench_bins
.PHONY: fuzz fuzz-regress fuzz-build _fuzz _fuzz_regress _fuzz_build
all: deps
	@$(MAKE) --no-print-directory _build

# ---- dependencies -----------------------------------------------------------
deps:
	@if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists $(PKGS) && [ -f $(DNNL_HEADER) ] && command -v cc >/dev/null 2>&1; then :; else \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  echo "xlatrain: missing build dependencies; will run: $$SUDO apt-get update && $$SUDO apt-get install -y $(DEB_PKGS)"; \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y $(DEB_PKGS) || \
	  { echo "xlatrain: could not install $(DEB_PKGS); install them by hand and re-run make" >&2; exit 1; }; \
	fi
ifeq ($(MPI),1)
	@if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then :; else \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  echo "xlatrain: MPI=1 needs Open MPI; will run: $$SUDO apt-get install -y $(MPI_DEB_PKGS)"; \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y $(MPI_DEB_PKGS) || \
	  { echo "xlatrain: could not install $(MPI_DEB_PKGS); install them by hand and re-run make MPI=1" >&2; exit 1; }; \
	fi
endif

# ---- release build ----------------------------------------------------------
_build: xlatrain

# always compared: ./xlatrain is the build last asked for, MPI=1 or not
xlatrain: $(REL_DIR)/xlatrain
	@cmp -s $< $@ || cp $< $@

$(REL_DIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(REL_FLAGS) $(DEPFLAGS) -c $< -o $@

$(REL_DIR)/xlatrain: $(SRC:%.c=$(REL_DIR)/%.o) $(REL_DIR)/src/main.o
	$(CC) $(REL_FLAGS) $^ -o $@ $(LIBS)

# The test binary counts our code's heap allocations (tests/alloc_count.c).
TEST_LDFLAGS := $(foreach f,malloc calloc realloc aligned_alloc posix_memalign strdup,-Wl,--wrap=$(f))

$(REL_DIR)/run_tests: $(SRC:%.c=$(REL_DIR)/%.o) $(TEST_SRC:%.c=$(REL_DIR)/%.o)
	$(CC) $(REL_FLAGS) $^ -o $@ $(TEST_LDFLAGS) $(LIBS)

# standalone benchmark programs: tests/bench/NAME.c -> build/release/bench/NAME
$(REL_DIR)/bench/%: tests/bench/%.c $(SRC:%.c=$(REL_DIR)/%.o)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(REL_FLAGS) $(DEPFLAGS) -DXT_ALLREDUCE_BENCH_MAIN -DXT_KERNEL_BENCH -DXT_LOADER_BENCH -Itests $< $(SRC:%.c=$(REL_DIR)/%.o) -o $@ $(LIBS)

_bench_bins: $(BENCH_SRC:tests/bench/%.c=$(REL_DIR)/bench/%)

# ---- sanitizer build --------------------------------------------------------
$(ASAN_DIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) $(ASAN_FLAGS) $(DEPFLAGS) -c $< -o $@

$(ASAN_DIR)/xlatrain: $(SRC:%.c=$(ASAN_DIR)/%.o) $(ASAN_DIR)/src/main.o
	$(CC) $(ASAN_FLAGS) $^ -o $@ $(LIBS)

$(ASAN_DIR)/run_tests: $(SRC:%.c=$(ASAN_DIR)/%.o) $(TEST_SRC:%.c=$(ASAN_DIR)/%.o)
	$(CC) $(ASAN_FLAGS) $^ -o $@ $(TEST_LDFLAGS) $(LIBS)

# ---- tests ------------------------------------------------------------------
# The runner needs the binary too: CLI tests run it as a user would.
test: deps
	@$(MAKE) --no-print-directory _test
_test: xlatrain $(REL_DIR)/run_tests
	XLATRAIN_BIN=./xlatrain OPENBLAS_NUM_THREADS=1 $(REL_DIR)/run_tests $(T)

# The kernel and engine tests again under each ISA cap below the CPU's
# (issue #59): the variants an AVX2-only or older CPU runs, and the kernels
# the engine picks there, on this machine. A cap above the CPU runs its best
# level again, which only costs time.
ISA_CAPS  := avx2 generic
test-isa: deps
	@$(MAKE) --no-print-directory _test_isa
_test_isa: xlatrain $(REL_DIR)/run_tests
	@for isa in $(ISA_CAPS); do \
	  XLATRAIN_ISA=$$isa XLATRAIN_BIN=./xlatrain OPENBLAS_NUM_THREADS=1 $(REL_DIR)/run_tests test_kernels_ test_engine || exit 1; \
	done

# The MPI build and its mpirun tests (CI runs this as well as make test).
test-mpi:
	@$(MAKE) --no-print-directory MPI=1 deps
	@$(MAKE) --no-print-directory MPI=1 _test T=test_mpi

# No .c files of src/ that depend on each other in a circle, over the
# release objects (make test runs the same check: tests/test_layering.c).
check-circles: all
	@sh tests/check_circles.sh $(REL_DIR) src

asan: deps
	@$(MAKE) --no-print-directory _asan
_asan: $(ASAN_DIR)/xlatrain $(ASAN_DIR)/run_tests
	XLATRAIN_BIN=$(ASAN_DIR)/xlatrain XLATRAIN_SANITIZED=1 OPENBLAS_NUM_THREADS=1 \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	$(ASAN_DIR)/run_tests $(T)

# ---- fuzzing (tests/fuzz/) ------------------------------------------------------
# clang + libFuzzer: the src/ objects in their own directory, instrumented for
# coverage (fuzzer-no-link) under ASan+UBSan; each harness linked with
# -fsanitize=fuzzer. tests/fuzz/run.sh runs them (see tests/README.md, Fuzzing).
FUZZ_CC      ?= clang
FUZZ_DIR     := build/fuzz
FUZZ_TARGETS := config spec idx idx_gz safetensors ckpt_meta cifar image
FUZZ_SECONDS ?= 60
FUZZ_FLAGS    = -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZ_BINS    := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)
# The sparse convolutions' width templates (conv_sparse*_simd.h, 14-28 accumulators
# unrolled per width) take clang over 200 s per file under UBSan against 4 s without it,
# which would push CI past its limit. No harness reaches them (they fuzz the parsers),
# and make asan builds them with UBSan under gcc, so here they keep ASan only.
FUZZ_NO_UBSAN := src/kernels/conv_sparse.c src/kernels/conv_sparse_data.c
$(FUZZ_NO_UBSAN:%.c=$(FUZZ_DIR)/%.o): FUZZ_FLAGS = -O1 -g -fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer
# objects reached only through the pattern rule below: keep them between builds
.SECONDARY: $(SRC:%.c=$(FUZZ_DIR)/%.o) $(FUZZ_TARGETS:%=$(FUZZ_DIR)/tests/fuzz/fuzz_%.o)

$(FUZZ_DIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(BASE_CFLAGS) $(FUZZ_FLAGS) $(DEPFLAGS) -Itests/fuzz -c $< -o $@

$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/tests/fuzz/fuzz_%.o $(SRC:%.c=$(FUZZ_DIR)/%.o)
	$(FUZZ_CC) -g -fsanitize=fuzzer,address,undefined $^ -o $@ $(LIBS)

fuzz-build: deps
	@command -v $(FUZZ_CC) >/dev/null 2>&1 || { echo "xlatrain: make fuzz needs $(FUZZ_CC) (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
	@$(MAKE) --no-print-directory _fuzz_build
_fuzz_build: $(FUZZ_BINS)

fuzz-regress: fuzz-build
	@$(MAKE) --no-print-directory _fuzz_regress
_fuzz_regress:
	@sh tests/fuzz/run.sh regress $(FUZZ_DIR) $(FUZZ_TARGETS)

fuzz: fuzz-build
	@$(MAKE) --no-print-directory _fuzz
_fuzz: _fuzz_regress
	@FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/run.sh fuzz $(FUZZ_DIR) $(FUZZ_TARGETS)

# ---- benchmarks, demo, data -------------------------------------------------
bench: deps
	@$(MAKE) --no-print-directory _build _bench_bins
	@BENCH_DIR=$(REL_DIR)/bench sh tests/bench/run.sh

demo: deps
	@$(MAKE) --no-print-directory _build
	./xlatrain --config configs/smoke.yaml

data:
	@sh data/fetch.sh $(DATASET) data/$(DATASET)

-include $(shell find build -name '*.d' 2>/dev/null)

# ---- man pages --------------------------------------------------------------
# xlatrain.1 (the command) and xlatrain.yaml.5 (config keys, layer spec,
# models). Parts of xlatrain.yaml.5 are printed from the code's tables
# (xlatrain --man-block NAME): `make man` writes them into the page after a
# key or a model changes; tests/test_docs.c fails until it has been run.
MAN_PAGES := man/xlatrain.1 man/xlatrain.yaml.5
.PHONY: man
man: all
	@sh man/regen.sh ./xlatrain $(MAN_PAGES)

# ---- install / clean --------------------------------------------------------
# Everything under $(DESTDIR)$(PREFIX): the binary finds share/xlatrain from
# its own path (src/config/model_find.h), so any PREFIX or DESTDIR works.
SHARE_DIR := $(PREFIX)/share/xlatrain
COMPLETION_DIR := $(PREFIX)/share/bash-completion/completions
MAN_DIR := $(PREFIX)/share/man
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MAN_DIR)/man1 $(DESTDIR)$(MAN_DIR)/man5 $(DESTDIR)$(SHARE_DIR)/models \
	  $(DESTDIR)$(SHARE_DIR)/configs $(DESTDIR)$(COMPLETION_DIR)
	install -m 755 xlatrain $(DESTDIR)$(PREFIX)/bin/xlatrain
	install -m 644 man/xlatrain.1 $(DESTDIR)$(MAN_DIR)/man1/xlatrain.1
	install -m 644 man/xlatrain.yaml.5 $(DESTDIR)$(MAN_DIR)/man5/xlatrain.yaml.5
	install -m 644 models/*.yaml $(DESTDIR)$(SHARE_DIR)/models/
	install -m 644 configs/*.yaml $(DESTDIR)$(SHARE_DIR)/configs/
	./xlatrain --bash-completion > $(DESTDIR)$(COMPLETION_DIR)/xlatrain
	@echo "installed under $(DESTDIR)$(PREFIX): bin/xlatrain, share/xlatrain/{models,configs}, the man pages xlatrain(1) and xlatrain.yaml(5), bash completion"

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/xlatrain $(DESTDIR)$(MAN_DIR)/man1/xlatrain.1 $(DESTDIR)$(MAN_DIR)/man5/xlatrain.yaml.5 \
	  $(DESTDIR)$(COMPLETION_DIR)/xlatrain
	rm -rf $(DESTDIR)$(SHARE_DIR)

clean:
	rm -rf build xlatrain
