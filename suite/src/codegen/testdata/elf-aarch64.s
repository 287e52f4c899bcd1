	.file	"frag.79196ebbebd9fc28-cgu.0"
	.section	.text._ZN4frag4slow17ha9da93e4eeed0b4bE,"ax",@progbits
	.p2align	2
	.type	_ZN4frag4slow17ha9da93e4eeed0b4bE,@function
_ZN4frag4slow17ha9da93e4eeed0b4bE:
	.cfi_startproc
	sub	sp, sp, #16
	.cfi_def_cfa_offset 16
	str	x0, [sp, #8]
	add	x8, sp, #8
	//APP
	//NO_APP
	ldr	x8, [sp, #8]
	add	x0, x8, x8, lsl #1
	add	sp, sp, #16
	.cfi_def_cfa_offset 0
	ret
.Lfunc_end0:
	.size	_ZN4frag4slow17ha9da93e4eeed0b4bE, .Lfunc_end0-_ZN4frag4slow17ha9da93e4eeed0b4bE
	.cfi_endproc

	.section	.text.probe_call,"ax",@progbits
	.globl	probe_call
	.p2align	2
	.type	probe_call,@function
probe_call:
	.cfi_startproc
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	stp	x20, x19, [sp, #16]
	mov	x29, sp
	.cfi_def_cfa w29, 32
	.cfi_offset w19, -8
	.cfi_offset w20, -16
	.cfi_offset w30, -24
	.cfi_offset w29, -32
	mov	x19, x0
	bl	_ZN4frag4slow17ha9da93e4eeed0b4bE
	mov	x20, x0
	add	x0, x19, #1
	bl	_ZN4frag4slow17ha9da93e4eeed0b4bE
	add	x8, x20, x0
	add	x0, x8, #1
	.cfi_def_cfa wsp, 32
	ldp	x20, x19, [sp, #16]
	ldp	x29, x30, [sp], #32
	.cfi_def_cfa_offset 0
	.cfi_restore w19
	.cfi_restore w20
	.cfi_restore w30
	.cfi_restore w29
	ret
.Lfunc_end1:
	.size	probe_call, .Lfunc_end1-probe_call
	.cfi_endproc

	.section	.text.probe_clz,"ax",@progbits
	.globl	probe_clz
	.p2align	2
	.type	probe_clz,@function
probe_clz:
	.cfi_startproc
	cmp	x0, #16
	b.hs	.LBB2_2
	mov	w0, wzr
	ret
.LBB2_2:
	clz	x8, x0
	mov	w9, #61
	sub	x9, x9, x8
	lsr	x9, x0, x9
	and	w9, w9, #0x3
	orr	w8, w9, w8, lsl #2
	eor	w0, w8, #0xfc
	ret
.Lfunc_end2:
	.size	probe_clz, .Lfunc_end2-probe_clz
	.cfi_endproc

	.section	.text.probe_dup,"ax",@progbits
	.globl	probe_dup
	.p2align	2
	.type	probe_dup,@function
probe_dup:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	mov	x29, sp
	.cfi_def_cfa w29, 16
	.cfi_offset w30, -8
	.cfi_offset w29, -16
	mov	x8, x0
	mov	x0, x1
	mov	x1, x8
	bl	__aarch64_ldadd8_acq_rel
	.cfi_def_cfa wsp, 16
	ldp	x29, x30, [sp], #16
	.cfi_def_cfa_offset 0
	.cfi_restore w30
	.cfi_restore w29
	ret
.Lfunc_end3:
	.size	probe_dup, .Lfunc_end3-probe_dup
	.cfi_endproc

	.section	.text.probe_loop,"ax",@progbits
	.globl	probe_loop
	.p2align	2
	.type	probe_loop,@function
probe_loop:
	.cfi_startproc
	mov	x8, xzr
	cbz	x0, .LBB4_3
.LBB4_1:
	ldr	x9, [x0]
	cmp	x9, x1
	b.hs	.LBB4_3
	ldr	x0, [x0, #8]
	add	x8, x8, #1
	cbnz	x0, .LBB4_1
.LBB4_3:
	mov	x0, x8
	ret
.Lfunc_end4:
	.size	probe_loop, .Lfunc_end4-probe_loop
	.cfi_endproc

	.section	.rodata.cst8,"aM",@progbits,8
	.p2align	3, 0x0
.LCPI5_0:
	.xword	0x3fb999999999999a
	.section	.text.probe_match,"ax",@progbits
	.globl	probe_match
	.p2align	2
	.type	probe_match,@function
probe_match:
	.cfi_startproc
	cmp	w0, #4
	b.hi	.LBB5_2
	adrp	x8, .Lswitch.table.probe_match
	add	x8, x8, :lo12:.Lswitch.table.probe_match
	ldr	d0, [x8, w0, uxtw #3]
	ret
.LBB5_2:
	adrp	x8, .LCPI5_0
	ldr	d0, [x8, :lo12:.LCPI5_0]
	ret
.Lfunc_end5:
	.size	probe_match, .Lfunc_end5-probe_match
	.cfi_endproc

	.section	.text.probe_packed,"ax",@progbits
	.globl	probe_packed
	.p2align	2
	.type	probe_packed,@function
probe_packed:
	.cfi_startproc
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	stp	x20, x19, [sp, #16]
	mov	x29, sp
	.cfi_def_cfa w29, 32
	.cfi_offset w19, -8
	.cfi_offset w20, -16
	.cfi_offset w30, -24
	.cfi_offset w29, -32
	.cfi_remember_state
	mov	x19, x0
	mov	x20, x1
	mov	x0, x1
	mov	x1, x19
	bl	__aarch64_ldadd8_relax
	ubfx	x8, x0, #55, #2
	ldr	x9, [x19, #16]
	lsl	x10, x20, x8
	and	x8, x0, #0x7fffffffffffff
	add	x10, x10, x8
	cmp	x10, x9
	b.ls	.LBB6_2
	mov	x0, xzr
	.cfi_def_cfa wsp, 32
	ldp	x20, x19, [sp, #16]
	ldp	x29, x30, [sp], #32
	.cfi_def_cfa_offset 0
	.cfi_restore w19
	.cfi_restore w20
	.cfi_restore w30
	.cfi_restore w29
	ret
.LBB6_2:
	.cfi_restore_state
	ldr	x9, [x19, #8]
	add	x0, x9, x8
	.cfi_def_cfa wsp, 32
	ldp	x20, x19, [sp, #16]
	ldp	x29, x30, [sp], #32
	.cfi_def_cfa_offset 0
	.cfi_restore w19
	.cfi_restore w20
	.cfi_restore w30
	.cfi_restore w29
	ret
.Lfunc_end6:
	.size	probe_packed, .Lfunc_end6-probe_packed
	.cfi_endproc

	.section	.text.probe_rel,"ax",@progbits
	.globl	probe_rel
	.p2align	2
	.type	probe_rel,@function
probe_rel:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	mov	x29, sp
	.cfi_def_cfa w29, 16
	.cfi_offset w30, -8
	.cfi_offset w29, -16
	mov	x8, x0
	neg	x0, x1
	mov	x1, x8
	bl	__aarch64_ldadd8_rel
	.cfi_def_cfa wsp, 16
	ldp	x29, x30, [sp], #16
	.cfi_def_cfa_offset 0
	.cfi_restore w30
	.cfi_restore w29
	ret
.Lfunc_end7:
	.size	probe_rel, .Lfunc_end7-probe_rel
	.cfi_endproc

	.section	.text.probe_tls,"ax",@progbits
	.globl	probe_tls
	.p2align	2
	.type	probe_tls,@function
probe_tls:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	mov	x29, sp
	.cfi_def_cfa w29, 16
	.cfi_offset w30, -8
	.cfi_offset w29, -16
	mov	x8, x0
	adrp	x0, :tlsdesc:_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h069270f9990d1085E
	ldr	x1, [x0, :tlsdesc_lo12:_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h069270f9990d1085E]
	add	x0, x0, :tlsdesc_lo12:_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h069270f9990d1085E
	.tlsdesccall _ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h069270f9990d1085E
	blr	x1
	mrs	x10, TPIDR_EL0
	mov	x9, x0
	ldr	x0, [x10, x0]
	add	x8, x0, x8
	str	x8, [x10, x9]
	.cfi_def_cfa wsp, 16
	ldp	x29, x30, [sp], #16
	.cfi_def_cfa_offset 0
	.cfi_restore w30
	.cfi_restore w29
	ret
.Lfunc_end8:
	.size	probe_tls, .Lfunc_end8-probe_tls
	.cfi_endproc

	.type	_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h069270f9990d1085E,@object
	.section	".tbss._ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h069270f9990d1085E","awT",@nobits
	.p2align	3, 0x0
_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h069270f9990d1085E:
	.zero	8
	.size	_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h069270f9990d1085E, 8

	.type	.Lswitch.table.probe_match,@object
	.section	.rodata..Lswitch.table.probe_match,"a",@progbits
	.p2align	3, 0x0
.Lswitch.table.probe_match:
	.xword	0x3ff8000000000000
	.xword	0x4002000000000000
	.xword	0x401c800000000000
	.xword	0x4022200000000000
	.xword	0x4027000000000000
	.size	.Lswitch.table.probe_match, 40

	.globl	probe_seq
	.type	probe_seq,@function
probe_seq = probe_dup
	.ident	"rustc version 1.95.0 (59807616e 2026-04-14)"
	.section	".note.GNU-stack","",@progbits
