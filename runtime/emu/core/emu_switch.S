/*
 * emu_switch — the x86-64 fiber context switch of the emulated device.
 *
 * A switch happens at every __syncthreads and warp operation of every
 * emulated CUDA thread, so it must be cheap: swapcontext() makes a
 * sigprocmask system call each time and is an order of magnitude slower.
 * The switch is a plain function call, so the System V ABI already lets us
 * clobber every caller-saved register; we keep only what the ABI says a
 * callee must preserve: rbx, rbp, r12-r15, the stack pointer, the MXCSR
 * control bits and the x87 control word.
 *
 *   void emu_ctx_swap(void **save_sp, void *load_sp);
 *
 * pushes the preserved state on the current stack, stores the stack pointer
 * in *save_sp, loads load_sp and pops the state saved there.
 *
 * A fresh fiber's stack is prepared by emu_ctx_init (emu_sched.c) to look
 * as if it had been switched away from: the saved "return address" is
 * emu_ctx_start, r12 holds the argument and r13 the function.  The
 * trampoline aligns the stack so that the function is entered with
 * rsp = 8 (mod 16), as after a normal call, and marks the frame as the
 * outermost one (rbp = 0, undefined return address) so unwinders and
 * sanitizer stack traces stop there.  The function must never return.
 */
    .text
    .globl  emu_ctx_swap
    .hidden emu_ctx_swap
    .type   emu_ctx_swap, @function
    .p2align 4
emu_ctx_swap:
    .cfi_startproc
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    subq    $8, %rsp
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
    movq    %rsp, (%rdi)
    movq    %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw   4(%rsp)
    addq    $8, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    ret
    .cfi_endproc
    .size   emu_ctx_swap, .-emu_ctx_swap

    .globl  emu_ctx_start
    .hidden emu_ctx_start
    .type   emu_ctx_start, @function
    .p2align 4
emu_ctx_start:
    .cfi_startproc
    .cfi_undefined rip
    xorl    %ebp, %ebp
    movq    %r12, %rdi
    andq    $-16, %rsp
    call    *%r13
    ud2
    .cfi_endproc
    .size   emu_ctx_start, .-emu_ctx_start

    .section .note.GNU-stack, "", @progbits
