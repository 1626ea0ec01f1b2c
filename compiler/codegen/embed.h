/*
 * embed — text files carried inside bertc (tools/embed_text writes the
 * tables at build time): the kernel templates of kernels_templates/ and the
 * emulated device's prelude (runtime/emu/core's cuda_prelude.h and the
 * headers it includes, with runtime/common/half.h).  An installed bertc
 * therefore needs no side files: codegen reads templates from here, and the
 * emulator-image build writes the prelude out of here into its private
 * build directory.
 */
#ifndef BERTC_EMBED_H
#define BERTC_EMBED_H

#include <stddef.h>

typedef struct embed_file {
    const char *name;              /* "gemm.cuh"; a relative path for the prelude ("include/cuda_fp16.h") */
    const unsigned char *text;     /* NUL-terminated */
    size_t len;                    /* bytes before the NUL */
} embed_file;

extern const embed_file kernel_template_files[];
extern const int kernel_template_count;

extern const embed_file emu_prelude_files[];
extern const int emu_prelude_count;

#endif
