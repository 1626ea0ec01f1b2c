/*
 * emu_build — the emulated device's kernel image: a plan's kernel texts
 * compiled by the host C++ compiler into one x86-64 shared object.
 *
 * This is the emulator's counterpart of kbuild (NVRTC): the same generated
 * text, compiled behind the emulator's prelude (cuda_prelude.h, which maps
 * CUDA's built-ins onto the fiber core of runtime/emu/core) instead of the
 * toolkit's headers.  It runs at compile time only: a plan carries the
 * finished image, and the emulated device loads it without a compiler.
 *
 * The prelude is embedded in bertc (embed.h) and written out into the
 * build's private directory, so an installed bertc builds images without
 * the source tree.  Builds are deterministic: the host compiler runs inside
 * that directory on relative file names, so no temporary path reaches the
 * object, and equal texts give equal bytes.
 *
 * Environment: BERTC_EMU_CXX names the compiler (default g++);
 * BERTC_EMU_SANITIZE=0 builds images without AddressSanitizer even when
 * bertc itself has it (otherwise a sanitized bertc builds sanitized images,
 * with __shared__ as plain statics so an overflow is reported with the
 * kernel's line); BERTC_EMU_KEEP=1 keeps the directory of a failed build
 * (the message names it).
 *
 * Kernel text must end each kernel with BERTC_KERNEL_EXPORT(entry), use
 * BERTC_DYNAMIC_SMEM(type, name) for dynamic shared memory, include nothing
 * but cuda_fp16.h / cuda_bf16.h (as NVRTC text), and keep inline assembly
 * out of kernel bodies.  Each unit is wrapped in its own inline namespace,
 * so units may define same-named helpers with different bodies; `extern
 * "C"` entry names must be unique per image.
 *
 * Errors fill the diag with DIAG_CODE_INTERNAL (a failed kernel build is a
 * bertc bug) and carry the compiler's own messages.
 */
#ifndef BERTC_EMU_BUILD_H
#define BERTC_EMU_BUILD_H

#include <stddef.h>

#include "diag.h"

/* Compiles `count` units (in parallel, one compiler per core) and links them;
 * *bytes (malloc'd) and *size receive the shared object. */
int emu_build_image(const char *const *texts, int count, unsigned char **bytes, size_t *size, diag *d);

/* The same, written to so_path (through a temporary name and a rename, so a
 * failed build leaves nothing there). */
int emu_build_image_file(const char *const *texts, int count, const char *so_path, diag *d);

#endif
