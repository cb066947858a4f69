// dlsym, interposed (docs/hook.md, "Entry points by name"). For a library handle the lookup does
// not depend on who calls, so it goes through xtimer_dlsym_on_handle (dlsym_hook.cc), which may
// hand out one of our shims. RTLD_DEFAULT and RTLD_NEXT are resolved relative to the calling
// object: those jump straight to the real dlsym, so that it sees the application's return
// address, and the result is exactly what it would have been without us.
#if defined(__x86_64__)
  .text
  .globl dlsym
  .type dlsym, @function
dlsym:
  .cfi_startproc
  testq %rdi, %rdi                 // RTLD_DEFAULT
  je 1f
  cmpq $-1, %rdi                   // RTLD_NEXT
  je 1f
  jmp xtimer_dlsym_on_handle
1:
  movq xtimer_real_dlsym(%rip), %rax
  testq %rax, %rax
  je 2f
  jmp *%rax
2:
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp                    // 16-byte alignment at the call
  .cfi_adjust_cfa_offset 8
  call xtimer_resolve_real_dlsym
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  jmp *%rax
  .cfi_endproc
  .size dlsym, .-dlsym
#elif defined(__aarch64__)
  .text
  .globl dlsym
  .type dlsym, %function
dlsym:
  .cfi_startproc
  cbz x0, 1f                       // RTLD_DEFAULT
  cmn x0, #1                       // RTLD_NEXT
  b.eq 1f
  b xtimer_dlsym_on_handle
1:
  adrp x16, xtimer_real_dlsym
  ldr x16, [x16, :lo12:xtimer_real_dlsym]
  cbz x16, 2f
  br x16
2:
  stp x29, x30, [sp, #-32]!
  .cfi_def_cfa_offset 32
  .cfi_offset 29, -32
  .cfi_offset 30, -24
  mov x29, sp
  stp x0, x1, [sp, #16]
  bl xtimer_resolve_real_dlsym
  mov x16, x0
  ldp x0, x1, [sp, #16]
  ldp x29, x30, [sp], #32
  .cfi_def_cfa_offset 0
  .cfi_restore 29
  .cfi_restore 30
  br x16
  .cfi_endproc
  .size dlsym, .-dlsym
#else
#error "dlsym_trampoline.S: no trampoline for this architecture"
#endif
  .section .note.GNU-stack,"",%progbits
