# Makefile: builds every program into bin/ and the check-based test suite.
#
#   make                 single precision (float), all programs
#   make REAL=double     the same programs in double precision (objects rebuild automatically)
#   make MPI=1           the programs built with mpicc, bin/train data-parallel over MPI ranks
#                        (objects in build/mpi/); make test-mpi checks it against one process
#   make test            builds and runs the whole test suite (installs `check` when it can)
#   make test-browser    the attention pages tested in headless Chromium (tests/browser/run.sh)
#   make wasm            the translator as WebAssembly for the live page (emscripten; docs/live.md)
#   make live MODEL=M OUT=F  the live attention page for model M, one self-contained HTML file
#                        (COMPUTE=int8: the model with 8-bit weights, a third of the page)
#   make test-cpus       the numerical suites on emulated CPUs without AVX-512 / AVX2 (qemu-user)
#   make test-arm64      the numerical suites cross-compiled for ARM64, under qemu-aarch64
#   make OPENMP=0        one thread, without OpenMP (found, else this, by itself: the first line)
#   make DEBUG_INFO=-g1  debug information as line tables only (CI's builds); the default is -g
#   make bench           performance benchmark (not a test)
#   make SANITIZE=1 test the suite under AddressSanitizer and UndefinedBehaviorSanitizer
#   make fuzz            each libFuzzer target (clang) for FUZZ_SECONDS; docs/reliability.md
#   make install         programs, libnmt.a, nmt.h and nmt.pc under $(DESTDIR)$(PREFIX)
#   make uninstall       removes what make install put there
#
# Layers, each using only those below it: base/ (errors, allocation, files, UTF-8, batches);
# data/ and model/; nmt/ (the library that uses a trained model, public header nmt/nmt.h),
# with its rooms nmt/formats/ below it and nmt/metrics/, nmt/pictures/ above it; reference/
# (the plain reference of the spec and what checks the engine against it); train/; tools/
# (thin programs). Beside them, notes/ is the course-notes calculator and its program, and
# data/toy/gencorpus.c the program that writes the toy corpus. A program is one file with a
# main(); each folder is one archive, and each program links the archives it uses (ROOMS).

CC       ?= gcc
REAL     ?= float
SANITIZE ?= 0
OPT      ?= -O3
# -g1 (line tables only) is what a sanitizer's or debugger's backtrace needs, and builds
# faster; GCC generates the same code with either.
DEBUG_INFO ?= -g
MPI      ?= 0
MPICC    ?= mpicc

# -fno-math-errno lets sqrt vectorise; unlike -ffast-math it keeps IEEE semantics (NaN, inf).
CFLAGS   = -std=c17 $(OPT) $(DEBUG_INFO) -Wall -Wextra -fno-math-errno -D_POSIX_C_SOURCE=200809L -I.
# model/fastmath.c only: without AVX-512's masked instructions GCC vectorises the selects of
# its exp and tanh (the clamp, tanh's two branches) only when it may evaluate both sides, as
# -fno-trapping-math allows; it changes which exception flags can be raised, not a value.
FASTMATH_FLAGS = -fno-trapping-math
LDLIBS   = -lm
ifeq ($(REAL),double)
CFLAGS  += -DREAL_DOUBLE
else ifneq ($(REAL),float)
$(error REAL must be float or double, not '$(REAL)')
endif
ifeq ($(MPI),1)
CC       = $(MPICC)
CFLAGS  += -DNMT_MPI
else ifneq ($(MPI),0)
$(error MPI must be 0 or 1, not '$(MPI)')
endif
SYSTEM  := $(shell uname -s)
# macOS hides behind _POSIX_C_SOURCE what glibc shows under the _DEFAULT_SOURCE that some files
# define (madvise, sysconf's _SC_PHYS_PAGES); _DARWIN_C_SOURCE is its counterpart there.
ifeq ($(SYSTEM),Darwin)
CFLAGS  += -D_DARWIN_C_SOURCE
endif

# GCC 12 for ARM64 (Debian 12's, Raspberry Pi OS's) crashes vectorising a reduction by fmax, as
# the tests have (an internal compiler error in vect_transform_reduction); fmax and fmin are in
# no hot loop, so on ARM64 they are left to libm.
ifneq ($(filter aarch64%,$(shell $(CC) -dumpmachine 2>/dev/null)),)
CFLAGS  += -fno-builtin-fmax -fno-builtin-fmin
endif

# OpenMP: the compiler's own (-fopenmp), else Homebrew's libomp (Apple's clang has no runtime
# of its own), else none: one thread, base/serial/omp.h answering the runtime's calls,
# -fopenmp-simd (where the compiler has it) keeping `#pragma omp simd`, and the other pragmas
# ignored without a warning each (gcc names every barrier). OPENMP=0 forces the last. Each choice is a test compile and link of a program that calls the runtime.
OPENMP   ?= 1
OMP_TRY   = printf '\#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n' | \
            $(CC) -x c - -o /dev/null $(1) >/dev/null 2>&1 && echo yes
HOMEBREW_LIBOMP = $(firstword $(wildcard /opt/homebrew/opt/libomp /usr/local/opt/libomp))
ifeq ($(OPENMP),1)
ifeq ($(shell $(call OMP_TRY,-fopenmp)),yes)
OPENMP_KIND  := the compiler's (-fopenmp)
OPENMP_FLAGS := -fopenmp
OPENMP_LIBS  := -fopenmp
else ifneq ($(HOMEBREW_LIBOMP),)
ifeq ($(shell $(call OMP_TRY,-Xpreprocessor -fopenmp -I$(HOMEBREW_LIBOMP)/include -L$(HOMEBREW_LIBOMP)/lib -lomp)),yes)
OPENMP_KIND  := Homebrew's libomp ($(HOMEBREW_LIBOMP))
OPENMP_FLAGS := -Xpreprocessor -fopenmp -I$(HOMEBREW_LIBOMP)/include
OPENMP_LIBS  := -L$(HOMEBREW_LIBOMP)/lib -lomp
endif
endif
else ifneq ($(OPENMP),0)
$(error OPENMP must be 0 or 1, not '$(OPENMP)')
endif
ifndef OPENMP_FLAGS
OPENMP_KIND  := none, one thread ($(if $(filter 1,$(OPENMP)),$(CC) has no OpenMP runtime; on macOS: brew install libomp,OPENMP=0))
OPENMP_FLAGS := -Ibase/serial -Wno-unknown-pragmas $(if $(shell $(call OMP_TRY,-fopenmp-simd -Ibase/serial)),-fopenmp-simd)
OPENMP_LIBS  :=
endif
CFLAGS  += $(OPENMP_FLAGS)
LDLIBS  += $(OPENMP_LIBS)
# One line, from the make that was typed (not from the makes it starts).
ifeq ($(MAKELEVEL),0)
ifneq ($(filter-out clean format uninstall wasm live fuzz test-arm64,$(or $(MAKECMDGOALS),all)),)
$(info OpenMP: $(OPENMP_KIND))
endif
endif

ifeq ($(SANITIZE),1)
CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDLIBS  += -fsanitize=address,undefined
endif

# MPI objects live apart, so switching MPI=1 and back does not rebuild everything each time.
BUILD    = build$(if $(filter 1,$(MPI)),/mpi)
# A program is tools/NAME.c with a main(), but for two that live beside what they serve.
PROGRAMS = train translate evaluate align gradcheck gradref gencorpus attend plot reference-train \
           quantize
MAIN_SRC = notes/attend.c data/toy/gencorpus.c $(wildcard $(PROGRAMS:%=tools/%.c))
# The rooms, top down (the order a link line needs): each folder's *.c but the programs' main
# files, one archive each, build/lib<folder>.a ('/' as '-'). A new file joins its room's
# archive by being in the folder. nmt/ serves three rooms of its own: the file formats below
# it, the metrics and the pictures above it.
ROOMS    = notes tools train reference nmt/pictures nmt/metrics nmt nmt/formats data model base
room_src = $(filter-out $(MAIN_SRC),$(wildcard $(1)/*.c))
room_obj = $(patsubst %.c,$(BUILD)/%.o,$(call room_src,$(1)))
room_lib = $(foreach room,$(1),$(BUILD)/lib$(subst /,-,$(room)).a)
LIB_SRC  = $(foreach room,$(ROOMS),$(call room_src,$(room)))
# The attention page's style sheets and scripts (the heatmap both pages share, then its own),
# linked in as data (nmt/pictures/align_html.c):
# members of the pictures' archive, so only a program that writes the page carries them.
PAGE_SRC = nmt/heatmap.css nmt/heatmap.js nmt/attention-page.css nmt/attention-page.js
PAGE_OBJ = $(PAGE_SRC:%=$(BUILD)/%.o)
LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/%.o) $(PAGE_OBJ)
# What a program that embeds the translator links (make install): the rooms up to nmt/ and
# its own, not training.
NMT_ROOMS = nmt/pictures nmt/metrics nmt nmt/formats data model base
NMT_SRC  = $(foreach room,$(NMT_ROOMS),$(call room_src,$(room)))
TEST_SRC = $(wildcard tests/*.c)
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o)
BINS     = $(addprefix bin/,$(filter $(PROGRAMS),$(basename $(notdir $(wildcard $(MAIN_SRC))))))

# The compile command, recorded in a file that changes only when the command does (another
# REAL, SANITIZE or flag): every object depends on it, so none built with one setting is ever
# linked with another.
STAMP    = $(BUILD)/compile-command
# Likewise what the programs in bin/ were linked from: with MPI objects in their own folder,
# switching MPI leaves each folder's objects older than the programs, so the link needs a
# stamp of its own.
LINK_STAMP = bin/.link-command
# The objects first, then the archives in the order the rule lists them.
LINK     = $(CC) $(filter %.o,$^) $(filter %.a,$^) -o $@ $(LDLIBS)

.PHONY: all test tests test-browser test-cpus test-arm64 test-mpi check-lib bench bench-pytorch clean format install uninstall FORCE
# Keep every object (pattern-rule intermediates included): no rebuilds, no "rm" lines after tests.
.SECONDARY:
all: $(BINS)

$(STAMP): FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(CFLAGS) $(FASTMATH_FLAGS) $(TEST_DEFS)' | cmp -s - $@ || \
	    echo '$(CC) $(CFLAGS) $(FASTMATH_FLAGS) $(TEST_DEFS)' > $@
$(LINK_STAMP): FORCE
	@mkdir -p bin
	@echo '$(CC) $(BUILD) $(LDLIBS) $(TEST_WRAP)' | cmp -s - $@ || \
	    echo '$(CC) $(BUILD) $(LDLIBS) $(TEST_WRAP)' > $@
FORCE:

$(BUILD)/%.o: %.c $(STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(if $(filter model/fastmath,$*),$(FASTMATH_FLAGS)) -MMD -MP -c $< -o $@

# Each symbol is named after the path given: _binary_nmt_attention_page_js_start and _end
# (base/embed.S: the compiler's assembler, so any compiler and any target).
$(PAGE_OBJ): $(BUILD)/%.o: % base/embed.S $(STAMP)
	@mkdir -p $(dir $@)
	$(CC) -c -DNAME=_binary_$(subst -,_,$(subst .,_,$(subst /,_,$<))) -DPATH='"$<"' base/embed.S -o $@

# One archive per room. Secondary expansion turns libnmt-pictures.a back into nmt/pictures.
.SECONDEXPANSION:
$(BUILD)/lib%.a: $$(call room_obj,$$(subst -,/,$$*))
	rm -f $@
	ar rcs $@ $^
$(call room_lib,nmt/pictures): $(PAGE_OBJ)

# Each program's rooms, top down: the link lines are the architecture (tests/test_rooms.c
# checks with nm that no program holds a symbol of a room not listed here).
bin/train:           $(call room_lib,train nmt/pictures nmt/metrics nmt nmt/formats data model base)
bin/reference-train: $(call room_lib,train reference nmt/pictures nmt/metrics nmt nmt/formats data model base)
bin/translate:       $(call room_lib,tools nmt/pictures nmt nmt/formats data model base)
bin/align:           $(call room_lib,tools nmt/pictures nmt nmt/formats data model base)
bin/evaluate:        $(call room_lib,tools nmt/metrics nmt nmt/formats data model base)
bin/quantize:        $(call room_lib,tools nmt/formats data model base)
bin/gradref:         $(call room_lib,tools train reference nmt/metrics nmt nmt/formats data model base)
bin/gradcheck:       $(call room_lib,tools reference model base)
bin/plot:            $(call room_lib,tools train nmt/pictures base)
bin/attend:          $(call room_lib,notes tools base)
bin/gencorpus:       $(call room_lib,base)
$(BINS) bin/run_tests bin/bench bin/bench_gemm bin/ckpt_diff: $(LINK_STAMP)

bin/attend: $(BUILD)/notes/attend.o
	$(LINK)

bin/gencorpus: $(BUILD)/data/toy/gencorpus.o
	$(LINK)

bin/%: $(BUILD)/tools/%.o
	$(LINK)

# The test suite needs the `check` library; tests/need-check.sh installs it when it can.
CHECK_FLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS  = $(shell pkg-config --libs check 2>/dev/null)

check-lib:
	@sh tests/need-check.sh

# The tests count the tokenizer's calls (test_subwords.c, "tokenized once") through the linker:
# the library's objects, as the programs have them, call the test binary's counting wrappers.
# Apple's linker has no --wrap: there the wrappers and the tests that count compile out under
# NMT_NO_LINK_WRAP, and each of those tests reports itself skipped.
ifeq ($(SYSTEM),Darwin)
TEST_WRAP =
TEST_DEFS = -DNMT_NO_LINK_WRAP
else
TEST_WRAP = -Wl,--wrap=tokenize,--wrap=lossless_split
TEST_DEFS =
endif
# The two are recorded in the compile and link stamps: an object compiled without the wrappers
# is never linked with --wrap, nor one with them without it.
$(BUILD)/tests/%.o: tests/%.c $(STAMP) | check-lib
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TEST_DEFS) $(shell pkg-config --cflags check 2>/dev/null) -MMD -MP -c $< -o $@

bin/run_tests: $(TEST_OBJ) $(call room_lib,$(ROOMS)) | check-lib
	$(LINK) $(shell pkg-config --libs check 2>/dev/null) $(TEST_WRAP)

# The install test (tests/test_install.c) repeats `make install` with this build's settings and
# compiles the example with this build's compiler and extra flags.
test: check-lib $(BINS) bin/run_tests
	@cd tests && NMT_MAKE_FLAGS='REAL=$(REAL) SANITIZE=$(SANITIZE) OPT=$(OPT) DEBUG_INFO=$(DEBUG_INFO) CC=$(CC) OPENMP=$(OPENMP)' \
	    NMT_CC='$(CC)' NMT_EXAMPLE_FLAGS='$(filter -fsanitize%,$(LDLIBS))' ../bin/run_tests

# The attention page in headless Chromium (tests/browser/run.sh: installs it as root, else says
# SKIPPED), and the SVG files through xmllint.
test-browser: $(BINS)
	@bash tests/browser/run.sh

# `make tests` would otherwise find the folder tests/ up to date and do nothing, silently.
tests: test

# That every vector-loop clone is vectorised (objdump), then the numerical suites on emulated
# CPUs without AVX-512 and without AVX2 (qemu-user).
test-cpus: bin/run_tests
	@bash tests/cpus/run.sh

# The numerical suites cross-compiled for ARM64 and run under qemu-aarch64 with each kernel
# set (i8mm, dotprod, neon, portable); tests/arm64/run.sh installs what it needs as root, else
# says SKIPPED and the command. Builds in build/arm64/, leaving this build alone.
test-arm64:
	@bash tests/arm64/run.sh

# The benchmark (not a test): figures only. THREADS sets the OpenMP thread count.
THREADS ?= $(shell nproc 2>/dev/null || sysctl -n hw.ncpu 2>/dev/null || echo 2)
bin/bench: $(BUILD)/bench/bench.o $(BUILD)/bench/peak.o $(BUILD)/bench/lengths.o \
           $(call room_lib,train nmt nmt/formats data model base)
	$(LINK)

bin/bench_gemm: $(BUILD)/bench/bench_gemm.o $(BUILD)/bench/peak.o $(call room_lib,model base)
	$(LINK)

bench: bin/bench bin/bench_gemm bin/translate
	OMP_NUM_THREADS=$(THREADS) bin/bench
	@echo
	OMP_NUM_THREADS=$(THREADS) bin/bench_gemm -q

# bin/bench's toy and medium lines, each beside the same model run by PyTorch on this machine
# (bench/pytorch.sh): installs Debian's PyTorch as root when missing, else reports SKIPPED.
bench-pytorch: bin/bench
	@THREADS=$(THREADS) bash bench/pytorch.sh

# Data-parallel training checked against one process (tests/mpi/run.sh): float and double
# MPI builds, 2 ranks, interrupted and killed runs. Installs Open MPI as root when missing,
# else reports SKIPPED with the command to run. Leaves build/mpi and an MPI bin/ behind.
test-mpi:
	@bash tests/mpi/run.sh

# The checkpoint comparison the MPI test uses (not installed, not part of make test).
$(BUILD)/tests/mpi/%.o: tests/mpi/%.c $(STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

bin/ckpt_diff: $(BUILD)/tests/mpi/ckpt_diff.o $(call room_lib,nmt/formats data model base)
	$(LINK)

# The library for programs that embed the translator (docs/example.c, README "The C API"):
# the translator's rooms in one archive, apart from the nmt room's own build/libnmt.a.
$(BUILD)/install/libnmt.a: $(NMT_SRC:%.c=$(BUILD)/%.o) $(PAGE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

PREFIX ?= /usr/local
DESTDIR ?=
INSTALL_PROGRAMS = $(filter-out bin/run_tests bin/bench bin/bench_gemm,$(BINS))
NMT_VERSION := $(shell sed -n 's/^\#define NMT_VERSION "\(.*\)"/\1/p' nmt/nmt.h)

install: $(BINS) $(BUILD)/install/libnmt.a
	mkdir -p $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	for p in $(INSTALL_PROGRAMS); do cp $$p $(DESTDIR)$(PREFIX)/bin/nmt-$$(basename $$p) || exit 1; done
	cp $(BUILD)/install/libnmt.a $(DESTDIR)$(PREFIX)/lib/libnmt.a
	cp nmt/nmt.h $(DESTDIR)$(PREFIX)/include/nmt.h
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
	    'Name: nmt' 'Description: attention-based neural machine translation in plain C' \
	    'Version: $(NMT_VERSION)' 'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lnmt $(OPENMP_LIBS) -lm' \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/nmt.pc

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/nmt-,$(notdir $(INSTALL_PROGRAMS)))
	rm -f $(DESTDIR)$(PREFIX)/lib/libnmt.a $(DESTDIR)$(PREFIX)/include/nmt.h
	rm -f $(DESTDIR)$(PREFIX)/lib/pkgconfig/nmt.pc

clean:
	rm -rf $(BUILD) bin

format:
	clang-format -i $(wildcard */*.c */*.h nmt/*/*.c nmt/*/*.h)

# Every object's header dependencies, the programs' main() files included (without theirs, a
# program would keep an object built against an older header: another struct layout).
-include $(LIB_OBJ:.o=.d) $(MAIN_SRC:%.c=$(BUILD)/%.d) $(TEST_OBJ:.o=.d) $(BUILD)/bench/bench.d $(BUILD)/bench/peak.d $(BUILD)/bench/lengths.d $(BUILD)/bench/bench_gemm.d $(BUILD)/tests/mpi/ckpt_diff.d

# Fuzzing with clang's libFuzzer, AddressSanitizer and UBSan: one target per input format,
# tests/fuzz/fuzz_<target>.c over the same library code, seeded from tests/fuzz/corpus/<target>/
# (kept as committed). `make fuzz` runs each target for FUZZ_SECONDS in one process with one
# worker and one OpenMP thread; inputs it finds go to build/fuzz/corpus/<target>/, a crash
# to build/fuzz/crash-<target>-* and stops make with an error.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_TARGETS  = config corpus checkpoint quantized worked bpe pages
FUZZ_CFLAGS   = -std=c17 -O1 -g -Wall -Wextra -fopenmp -D_POSIX_C_SOURCE=200809L -I. \
                -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
                -Wno-pass-failed
FUZZ_LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/fuzz/%.o) $(PAGE_OBJ)

$(BUILD)/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

# The two checkpoint targets share their driver and their use of a model.
bin/fuzz_checkpoint bin/fuzz_quantized: tests/fuzz/checkpoint_bytes.c
bin/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJ)
	@mkdir -p bin
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $^ -o $@ -lm

.PHONY: fuzz
fuzz: $(FUZZ_TARGETS:%=bin/fuzz_%)
	@for target in $(FUZZ_TARGETS); do \
	    mkdir -p $(BUILD)/fuzz/corpus/$$target || exit 1; \
	    echo "== fuzz $$target for $(FUZZ_SECONDS) s"; \
	    OMP_NUM_THREADS=1 bin/fuzz_$$target -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/crash-$$target- \
	        $(BUILD)/fuzz/corpus/$$target tests/fuzz/corpus/$$target || exit 1; \
	done

-include $(FUZZ_LIB_OBJ:.o=.d)

# ---- the live attention page (live/, docs/live.md) ---------------------------------------
# make wasm: the translation library and live/live.c as one WebAssembly module inside one
# JavaScript file (build/wasm/nmt-live.js), inference only and one thread: emcc compiles
# without -fopenmp, so the `#pragma omp` lines compile away and base/serial/omp.h answers
# the runtime calls as a team of one; model/gemm.c compiles its portable kernel only (its
# x86 kernels need __x86_64__). Optional like MPI=1: live/need-emcc.sh installs Debian's
# emscripten as root, otherwise says what to install and the target reports SKIPPED.
# make live MODEL=... OUT=...: one self-contained HTML page with the module and the model,
# float by default, so that every worked step is the heatmap's own arithmetic; COMPUTE=int8
# quantizes it on the way (bin/quantize), for a page a third of the size (docs/live.md).
EMCC        ?= emcc
WASM_BUILD   = build/wasm
WASM_SRC     = $(filter-out nmt/pictures/align_html.c,$(NMT_SRC)) live/live.c
WASM_OBJ     = $(WASM_SRC:%.c=$(WASM_BUILD)/%.o)
WASM_CFLAGS  = -std=c17 -O3 -Wall -Wextra -fno-math-errno -D_POSIX_C_SOURCE=200809L -I. -Ibase/serial
WASM_EXPORTS = _live_open,_live_close,_live_info,_live_translate,_live_force,_malloc,_free
WASM_LDFLAGS = -O3 -s SINGLE_FILE=1 -s MODULARIZE=1 -s EXPORT_NAME=createLiveModule \
               -s WASM_ASYNC_COMPILATION=0 -s ALLOW_MEMORY_GROWTH=1 -s ENVIRONMENT=web,node \
               -s FILESYSTEM=0 \
               -s EXPORTED_FUNCTIONS=$(WASM_EXPORTS) -s EXPORTED_RUNTIME_METHODS=UTF8ToString
# Debian's emcc runs its JavaScript optimizer with Debian's acorn (node-acorn), which a
# Node.js that is not Debian's finds only through NODE_PATH.
export NODE_PATH := $(if $(NODE_PATH),$(NODE_PATH):)/usr/share/nodejs
MODEL       ?= runs/toy/best.ckpt
OUT         ?= live.html
COMPUTE     ?= float

.PHONY: wasm live
wasm:
	@sh live/need-emcc.sh; status=$$?; [ $$status = 2 ] && exit 0; [ $$status = 0 ] || exit 1; \
	    $(MAKE) --no-print-directory $(WASM_BUILD)/nmt-live.js

# As for $(STAMP): the commands recorded, so that changing a flag rebuilds what it made.
WASM_STAMP = $(WASM_BUILD)/commands
$(WASM_STAMP): FORCE
	@mkdir -p $(WASM_BUILD)
	@echo '$(EMCC) $(WASM_CFLAGS) $(WASM_LDFLAGS)' | cmp -s - $@ || \
	    echo '$(EMCC) $(WASM_CFLAGS) $(WASM_LDFLAGS)' > $@

$(WASM_BUILD)/%.o: %.c $(WASM_STAMP)
	@mkdir -p $(dir $@)
	$(EMCC) $(WASM_CFLAGS) -MMD -MP -c $< -o $@

$(WASM_BUILD)/nmt-live.js: $(WASM_OBJ) $(WASM_STAMP)
	$(EMCC) $(WASM_LDFLAGS) $(WASM_OBJ) -o $@

live: bin/quantize
	@sh live/make-live.sh '$(COMPUTE)' $(WASM_BUILD)/nmt-live.js '$(MODEL)' '$(OUT)' \
	    'sh live/need-emcc.sh && $(MAKE) --no-print-directory $(WASM_BUILD)/nmt-live.js'

-include $(WASM_OBJ:.o=.d)
