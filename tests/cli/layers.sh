#!/bin/sh
# The architecture's rules on this build (docs/architecture.md): what each
# part may include, what libbertc.so exports and references, no circles
# between a library's files, no function over 100 lines outside tests/.
# tools/check_layers.py checks them from the build's dependency files and
# symbol tables, independently of the include paths the Makefile sets.
. tests/cli/lib/common.sh

if python3 tools/check_layers.py "$BUILD" >"$T/out" 2>&1; then
    pass layers
else
    fail layers "$(head -c 1500 "$T/out" | tr '\n' ';')"
fi
# The checker itself must catch what it is for: a runtime file that
# includes a compiler header, and a long function.
mkdir -p "$T/b/runtime" "$T/b/compiler/ir"
cp "$BUILD"/*.a "$BUILD"/libbertc.so "$T/b/" 2>/dev/null
printf 'runtime/rt_plan.o: runtime/rt_plan.c compiler/ir/ir.h\n' >"$T/b/runtime/rt_plan.d"
if python3 tools/check_layers.py "$T/b" >"$T/out" 2>&1; then
    fail layers-catches-include "a runtime file including compiler/ir/ir.h passed"
else
    contains layers-catches-include "$T/out" "runtime/rt_plan (runtime) includes compiler/ir/ir.h"
fi
# ... and the Triton backend reaching past the runtime's public header.
rm -f "$T/b/runtime/rt_plan.d"
mkdir -p "$T/b/runtime/triton"
printf 'runtime/triton/tb_model.o: runtime/triton/tb_model.c runtime/bertc.h runtime/rt.h\n' >"$T/b/runtime/triton/tb_model.d"
if python3 tools/check_layers.py "$T/b" >"$T/out" 2>&1; then
    fail layers-catches-backend-include "the Triton backend including runtime/rt.h passed"
else
    contains layers-catches-backend-include "$T/out" "runtime/triton/tb_model (runtime/triton) includes runtime/rt.h"
fi
