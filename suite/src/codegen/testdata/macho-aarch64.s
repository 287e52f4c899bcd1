	.build_version macos, 11, 0
	.section	__TEXT,__text,regular,pure_instructions
	.p2align	2
__ZN4frag4slow17h520ef98c56c6fa09E:
	.cfi_startproc
	sub	sp, sp, #16
	.cfi_def_cfa_offset 16
	str	x0, [sp, #8]
	add	x8, sp, #8
	; InlineAsm Start
	; InlineAsm End
	ldr	x8, [sp, #8]
	add	x0, x8, x8, lsl #1
	add	sp, sp, #16
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc

	.globl	_probe_call
	.p2align	2
_probe_call:
	.cfi_startproc
	stp	x20, x19, [sp, #-32]!
	.cfi_def_cfa_offset 32
	stp	x29, x30, [sp, #16]
	add	x29, sp, #16
	.cfi_def_cfa w29, 16
	.cfi_offset w30, -8
	.cfi_offset w29, -16
	.cfi_offset w19, -24
	.cfi_offset w20, -32
	mov	x19, x0
	bl	__ZN4frag4slow17h520ef98c56c6fa09E
	mov	x20, x0
	add	x0, x19, #1
	bl	__ZN4frag4slow17h520ef98c56c6fa09E
	add	x8, x20, x0
	add	x0, x8, #1
	.cfi_def_cfa wsp, 32
	ldp	x29, x30, [sp, #16]
	ldp	x20, x19, [sp], #32
	.cfi_def_cfa_offset 0
	.cfi_restore w30
	.cfi_restore w29
	.cfi_restore w19
	.cfi_restore w20
	ret
	.cfi_endproc

	.globl	_probe_clz
	.p2align	2
_probe_clz:
	.cfi_startproc
	clz	x8, x0
	mov	w9, #61
	sub	x9, x9, x8
	lsr	x9, x0, x9
	and	w9, w9, #0x3
	orr	w8, w9, w8, lsl #2
	eor	w8, w8, #0xfc
	cmp	x0, #16
	csel	w0, wzr, w8, lo
	ret
	.cfi_endproc

	.globl	_probe_dup
	.p2align	2
_probe_dup:
	.cfi_startproc
	ldaddal	x1, x0, [x0]
	ret
	.cfi_endproc

	.globl	_probe_loop
	.p2align	2
_probe_loop:
	.cfi_startproc
	mov	x8, #0
	cbz	x0, LBB4_3
LBB4_1:
	ldr	x9, [x0]
	cmp	x9, x1
	b.hs	LBB4_3
	add	x8, x8, #1
	ldr	x0, [x0, #8]
	cbnz	x0, LBB4_1
LBB4_3:
	mov	x0, x8
	ret
	.cfi_endproc

	.globl	_probe_match
	.p2align	2
_probe_match:
	.cfi_startproc
	cmp	w0, #4
	b.hi	LBB5_2
Lloh0:
	adrp	x8, l_switch.table.probe_match@PAGE
Lloh1:
	add	x8, x8, l_switch.table.probe_match@PAGEOFF
	ldr	d0, [x8, w0, uxtw #3]
	ret
LBB5_2:
	mov	x8, #-7378697629483820647
	movk	x8, #39322
	movk	x8, #16313, lsl #48
	fmov	d0, x8
	ret
	.loh AdrpAdd	Lloh0, Lloh1
	.cfi_endproc

	.globl	_probe_packed
	.p2align	2
_probe_packed:
	.cfi_startproc
	ldadd	x1, x9, [x0]
	and	x8, x9, #0x7fffffffffffff
	ubfx	x9, x9, #55, #2
	lsl	x9, x1, x9
	ldr	x10, [x0, #16]
	add	x9, x9, x8
	cmp	x9, x10
	b.ls	LBB6_2
	mov	x0, #0
	ret
LBB6_2:
	ldr	x9, [x0, #8]
	add	x0, x9, x8
	ret
	.cfi_endproc

	.globl	_probe_rel
	.p2align	2
_probe_rel:
	.cfi_startproc
	neg	x8, x1
	ldaddl	x8, x0, [x0]
	ret
	.cfi_endproc

	.globl	_probe_tls
	.p2align	2
_probe_tls:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	mov	x29, sp
	.cfi_def_cfa w29, 16
	.cfi_offset w30, -8
	.cfi_offset w29, -16
	mov	x8, x0
Lloh2:
	adrp	x0, __ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17hc66557994da69a26E@TLVPPAGE
Lloh3:
	ldr	x0, [x0, __ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17hc66557994da69a26E@TLVPPAGEOFF]
	ldr	x9, [x0]
	blr	x9
	ldr	x9, [x0]
	add	x8, x9, x8
	str	x8, [x0]
	mov	x0, x9
	.cfi_def_cfa wsp, 16
	ldp	x29, x30, [sp], #16
	.cfi_def_cfa_offset 0
	.cfi_restore w30
	.cfi_restore w29
	ret
	.loh AdrpLdr	Lloh2, Lloh3
	.cfi_endproc

.tbss __ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17hc66557994da69a26E$tlv$init, 8, 3

	.section	__DATA,__thread_vars,thread_local_variables
__ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17hc66557994da69a26E:
	.quad	__tlv_bootstrap
	.quad	0
	.quad	__ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17hc66557994da69a26E$tlv$init

	.section	__TEXT,__const
	.p2align	3, 0x0
l_switch.table.probe_match:
	.quad	0x3ff8000000000000
	.quad	0x4002000000000000
	.quad	0x401c800000000000
	.quad	0x4022200000000000
	.quad	0x4027000000000000

	.globl	_probe_seq
_probe_seq = _probe_dup
.subsections_via_symbols
