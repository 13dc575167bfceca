/* cuda_emu_switch(void** save_sp, void* new_sp): save the callee-saved registers,
   MXCSR and the x87 control word on the current stack, store its stack pointer in
   *save_sp, then restore the same from new_sp. Used between fibers (x86-64 SysV).
   .hidden: a -fPIC shared object cannot call a preemptible symbol from assembly,
   and several kernel libraries in one process must not share this symbol. */
#if defined(__x86_64__) && defined(__linux__)
    .text
    .globl cuda_emu_switch
    .hidden cuda_emu_switch
    .type cuda_emu_switch, @function
cuda_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $16, %rsp
    stmxcsr 8(%rsp)
    fnstcw (%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    fldcw (%rsp)
    ldmxcsr 8(%rsp)
    addq $16, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size cuda_emu_switch, .-cuda_emu_switch
#endif
    .section .note.GNU-stack,"",@progbits
