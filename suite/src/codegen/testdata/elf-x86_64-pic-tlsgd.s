# Excerpt of this crate's x86_64-unknown-linux-gnu assembly built as PIC (profile
# x86_64-linux-dylib, rustc 1.95.0, Intel syntax): probe_thread_cursor_alloc with the
# general-dynamic TLS sequence, whose data16/rex64 padding LLVM writes on lines of their own.
	.section	.text.probe_thread_cursor_alloc,"ax",@progbits
	.globl	probe_thread_cursor_alloc
	.p2align	4
	.type	probe_thread_cursor_alloc,@function
probe_thread_cursor_alloc:
.Lfunc_begin33:
	.cfi_startproc
	.cfi_personality 155, DW.ref.rust_eh_personality
	.cfi_lsda 27, .Lexception33
	push	r15
	.cfi_def_cfa_offset 16
	push	r14
	.cfi_def_cfa_offset 24
	push	r12
	.cfi_def_cfa_offset 32
	push	rbx
	.cfi_def_cfa_offset 40
	sub	rsp, 24
	.cfi_def_cfa_offset 64
	.cfi_offset rbx, -40
	.cfi_offset r12, -32
	.cfi_offset r14, -24
	.cfi_offset r15, -16
	mov	rbx, rsi
	mov	r14, rdi
	mov	r15, qword ptr [rdi + 392]
	mov	r12, qword ptr [rdi + 400]
	and	r12d, 7
	data16
	lea	rdi, [rip + _ZN8allocasm13thread_cursor7CURSORS29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h64b3d835ac102663E@TLSGD]
	data16
	data16
	rex64
	call	__tls_get_addr@PLT
	mov	rdx, rax
	lea	rax, [r12 + 2*r12]
	cmp	qword ptr [rdx + 8*rax], r15
	jne	.LBB175_3
	lea	rcx, [rdx + 8*rax]
	mov	rax, qword ptr [rdx + 8*rax + 8]
	lea	rsi, [rbx - 1]
	mov	rdi, qword ptr [rcx + 16]
	sub	rdi, rax
	cmp	rsi, rdi
	jae	.LBB175_3
	add	rbx, 15
	and	rbx, -16
	add	rbx, rax
	mov	qword ptr [rcx + 8], rbx
.LBB175_9:
	add	rsp, 24
	.cfi_def_cfa_offset 40
	pop	rbx
	.cfi_def_cfa_offset 32
	pop	r12
	.cfi_def_cfa_offset 24
	pop	r14
	.cfi_def_cfa_offset 16
	pop	r15
	.cfi_def_cfa_offset 8
	ret
.LBB175_3:
	.cfi_def_cfa_offset 64
.Ltmp292:
	mov	rdi, rsp
	mov	rsi, r14
	mov	rcx, rbx
	call	qword ptr [rip + _ZN8allocasm13thread_cursor17ThreadCursorArena6refill17h1d510a03ee0e1423E@GOTPCREL]
.Ltmp293:
	mov	ecx, dword ptr [rsp]
	cmp	ecx, 9
	jne	.LBB175_8
.Ltmp294:
	lea	rdi, [rip + .Lanon.736bdf6b09e34a796ff7143dd79cc366.4]
	call	qword ptr [rip + _RNvNtNtCsjrHSEGnQ3l9_3std6thread5local18panic_access_error@GOTPCREL]
.Ltmp295:
	ud2
.LBB175_8:
	xor	eax, eax
	cmp	ecx, 8
	cmove	rax, qword ptr [rsp + 8]
	jmp	.LBB175_9
.LBB175_7:
.Ltmp296:
	call	qword ptr [rip + _RNvNtCsgEmfK2I1SDS_4core9panicking19panic_cannot_unwind@GOTPCREL]
.Lfunc_end175:
	.size	probe_thread_cursor_alloc, .Lfunc_end175-probe_thread_cursor_alloc
