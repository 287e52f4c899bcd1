	.intel_syntax noprefix
	.file	"frag.684f7fe3b7cbebef-cgu.0"
	.section	.text._RNvCs8Xf2uEwxQ2F_4frag4slow,"ax",@progbits
	.p2align	4
	.type	_RNvCs8Xf2uEwxQ2F_4frag4slow,@function
_RNvCs8Xf2uEwxQ2F_4frag4slow:
	.cfi_startproc
	mov	qword ptr [rsp - 8], rdi
	lea	rax, [rsp - 8]
	#APP
	#NO_APP
	mov	rax, qword ptr [rsp - 8]
	lea	rax, [rax + 2*rax]
	ret
.Lfunc_end0:
	.size	_RNvCs8Xf2uEwxQ2F_4frag4slow, .Lfunc_end0-_RNvCs8Xf2uEwxQ2F_4frag4slow
	.cfi_endproc

	.section	.text.probe_call,"ax",@progbits
	.globl	probe_call
	.p2align	4
	.type	probe_call,@function
probe_call:
	.cfi_startproc
	push	r14
	.cfi_def_cfa_offset 16
	push	rbx
	.cfi_def_cfa_offset 24
	push	rax
	.cfi_def_cfa_offset 32
	.cfi_offset rbx, -24
	.cfi_offset r14, -16
	mov	rbx, rdi
	call	_RNvCs8Xf2uEwxQ2F_4frag4slow
	mov	r14, rax
	inc	rbx
	mov	rdi, rbx
	call	_RNvCs8Xf2uEwxQ2F_4frag4slow
	add	rax, r14
	inc	rax
	add	rsp, 8
	.cfi_def_cfa_offset 24
	pop	rbx
	.cfi_def_cfa_offset 16
	pop	r14
	.cfi_def_cfa_offset 8
	ret
.Lfunc_end1:
	.size	probe_call, .Lfunc_end1-probe_call
	.cfi_endproc

	.section	.text.probe_clz,"ax",@progbits
	.globl	probe_clz
	.p2align	4
	.type	probe_clz,@function
probe_clz:
	.cfi_startproc
	xor	eax, eax
	cmp	rdi, 16
	jb	.LBB2_2
	bsr	rax, rdi
	xor	rax, 63
	mov	cl, 61
	sub	cl, al
	shr	rdi, cl
	and	edi, 3
	lea	eax, [rdi + 4*rax]
	xor	eax, 252
.LBB2_2:
	ret
.Lfunc_end2:
	.size	probe_clz, .Lfunc_end2-probe_clz
	.cfi_endproc

	.section	.text.probe_dup,"ax",@progbits
	.globl	probe_dup
	.p2align	4
	.type	probe_dup,@function
probe_dup:
	.cfi_startproc
	mov	rax, rsi
	lock		xadd	qword ptr [rdi], rax
	ret
.Lfunc_end3:
	.size	probe_dup, .Lfunc_end3-probe_dup
	.cfi_endproc

	.section	.text.probe_loop,"ax",@progbits
	.globl	probe_loop
	.p2align	4
	.type	probe_loop,@function
probe_loop:
	.cfi_startproc
	xor	eax, eax
	test	rdi, rdi
	je	.LBB4_4
	.p2align	4
.LBB4_2:
	cmp	qword ptr [rdi], rsi
	jae	.LBB4_4
	inc	rax
	mov	rdi, qword ptr [rdi + 8]
	test	rdi, rdi
	jne	.LBB4_2
.LBB4_4:
	ret
.Lfunc_end4:
	.size	probe_loop, .Lfunc_end4-probe_loop
	.cfi_endproc

	.section	.rodata.cst8,"aM",@progbits,8
	.p2align	3, 0x0
.LCPI5_0:
	.quad	0x3fb999999999999a
	.section	.text.probe_match,"ax",@progbits
	.globl	probe_match
	.p2align	4
	.type	probe_match,@function
probe_match:
	.cfi_startproc
	cmp	edi, 4
	ja	.LBB5_1
	mov	eax, edi
	lea	rcx, [rip + .Lswitch.table.probe_match]
	movsd	xmm0, qword ptr [rcx + 8*rax]
	ret
.LBB5_1:
	movsd	xmm0, qword ptr [rip + .LCPI5_0]
	ret
.Lfunc_end5:
	.size	probe_match, .Lfunc_end5-probe_match
	.cfi_endproc

	.section	.text.probe_packed,"ax",@progbits
	.globl	probe_packed
	.p2align	4
	.type	probe_packed,@function
probe_packed:
	.cfi_startproc
	mov	rcx, rsi
	lock		xadd	qword ptr [rdi], rcx
	movabs	rax, 36028797018963967
	and	rax, rcx
	shr	rcx, 55
	and	cl, 3
	shl	rsi, cl
	add	rsi, rax
	cmp	rsi, qword ptr [rdi + 16]
	jbe	.LBB6_2
	xor	eax, eax
	ret
.LBB6_2:
	add	rax, qword ptr [rdi + 8]
	ret
.Lfunc_end6:
	.size	probe_packed, .Lfunc_end6-probe_packed
	.cfi_endproc

	.section	.text.probe_rel,"ax",@progbits
	.globl	probe_rel
	.p2align	4
	.type	probe_rel,@function
probe_rel:
	.cfi_startproc
	mov	rax, rsi
	neg	rax
	lock		xadd	qword ptr [rdi], rax
	ret
.Lfunc_end7:
	.size	probe_rel, .Lfunc_end7-probe_rel
	.cfi_endproc

	.section	.text.probe_tls,"ax",@progbits
	.globl	probe_tls
	.p2align	4
	.type	probe_tls,@function
probe_tls:
	.cfi_startproc
	push	rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	mov	rbx, rdi
	lea	rdi, [rip + _RNvNCNKNvCs8Xf2uEwxQ2F_4frag3CUR0s_023___RUST_STD_INTERNAL_VAL@TLSLD]
	call	__tls_get_addr@PLT
	mov	rcx, qword ptr [rax + _RNvNCNKNvCs8Xf2uEwxQ2F_4frag3CUR0s_023___RUST_STD_INTERNAL_VAL@DTPOFF]
	add	rbx, rcx
	mov	qword ptr [rax + _RNvNCNKNvCs8Xf2uEwxQ2F_4frag3CUR0s_023___RUST_STD_INTERNAL_VAL@DTPOFF], rbx
	mov	rax, rcx
	pop	rbx
	.cfi_def_cfa_offset 8
	ret
.Lfunc_end8:
	.size	probe_tls, .Lfunc_end8-probe_tls
	.cfi_endproc

	.type	_RNvNCNKNvCs8Xf2uEwxQ2F_4frag3CUR0s_023___RUST_STD_INTERNAL_VAL,@object
	.section	.tbss._RNvNCNKNvCs8Xf2uEwxQ2F_4frag3CUR0s_023___RUST_STD_INTERNAL_VAL,"awT",@nobits
	.p2align	3, 0x0
_RNvNCNKNvCs8Xf2uEwxQ2F_4frag3CUR0s_023___RUST_STD_INTERNAL_VAL:
	.zero	8
	.size	_RNvNCNKNvCs8Xf2uEwxQ2F_4frag3CUR0s_023___RUST_STD_INTERNAL_VAL, 8

	.type	.Lswitch.table.probe_match,@object
	.section	.rodata..Lswitch.table.probe_match,"a",@progbits
	.p2align	3, 0x0
.Lswitch.table.probe_match:
	.quad	0x3ff8000000000000
	.quad	0x4002000000000000
	.quad	0x401c800000000000
	.quad	0x4022200000000000
	.quad	0x4027000000000000
	.size	.Lswitch.table.probe_match, 40

	.globl	probe_seq
	.type	probe_seq,@function
probe_seq = probe_dup
	.ident	"rustc version 1.97.0-nightly (e50aa6fba 2026-05-19)"
	.section	".note.GNU-stack","",@progbits
