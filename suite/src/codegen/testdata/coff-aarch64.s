	.def	"@feat.00";
	.scl	3;
	.type	0;
	.endef
	.globl	"@feat.00"
"@feat.00" = 0
	.file	"frag.2aa71c6096f0c19c-cgu.0"
	.def	_ZN4frag4slow17h6732e0dc7d79fc02E;
	.scl	3;
	.type	32;
	.endef
	.section	.text,"xr",one_only,_ZN4frag4slow17h6732e0dc7d79fc02E,unique,0
	.p2align	2
_ZN4frag4slow17h6732e0dc7d79fc02E:
.seh_proc _ZN4frag4slow17h6732e0dc7d79fc02E
	sub	sp, sp, #16
	.seh_stackalloc	16
	.seh_endprologue
	str	x0, [sp, #8]
	add	x8, sp, #8
	//APP
	//NO_APP
	ldr	x8, [sp, #8]
	add	x0, x8, x8, lsl #1
	.seh_startepilogue
	add	sp, sp, #16
	.seh_stackalloc	16
	.seh_endepilogue
	ret
	.seh_endfunclet
	.seh_endproc

	.def	probe_call;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_call,unique,1
	.globl	probe_call
	.p2align	2
probe_call:
.seh_proc probe_call
	stp	x19, x20, [sp, #-32]!
	.seh_save_regp_x	x19, 32
	stp	x29, x30, [sp, #16]
	.seh_save_fplr	16
	add	x29, sp, #16
	.seh_add_fp	16
	.seh_endprologue
	mov	x19, x0
	bl	_ZN4frag4slow17h6732e0dc7d79fc02E
	mov	x20, x0
	add	x0, x19, #1
	bl	_ZN4frag4slow17h6732e0dc7d79fc02E
	add	x8, x20, x0
	add	x0, x8, #1
	.seh_startepilogue
	ldp	x29, x30, [sp, #16]
	.seh_save_fplr	16
	ldp	x19, x20, [sp], #32
	.seh_save_regp_x	x19, 32
	.seh_endepilogue
	ret
	.seh_endfunclet
	.seh_endproc

	.def	probe_clz;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_clz,unique,2
	.globl	probe_clz
	.p2align	2
probe_clz:
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

	.def	probe_dup;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_dup,unique,3
	.globl	probe_dup
	.p2align	2
probe_dup:
	mov	x8, x0
.LBB3_1:
	ldaxr	x0, [x8]
	add	x9, x0, x1
	stlxr	w10, x9, [x8]
	cbnz	w10, .LBB3_1
	dmb	ish
	ret

	.def	probe_loop;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_loop,unique,4
	.globl	probe_loop
	.p2align	2
probe_loop:
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

	.def	probe_match;
	.scl	2;
	.type	32;
	.endef
	.globl	"__real@3fb999999999999a"
	.section	.rdata,"dr",discard,"__real@3fb999999999999a"
	.p2align	3, 0x0
"__real@3fb999999999999a":
	.xword	0x3fb999999999999a
	.section	.text,"xr",one_only,probe_match,unique,5
	.globl	probe_match
	.p2align	2
probe_match:
	cmp	w0, #4
	b.hi	.LBB5_2
	adrp	x8, switch.table.probe_match
	add	x8, x8, :lo12:switch.table.probe_match
	ldr	d0, [x8, w0, uxtw #3]
	ret
.LBB5_2:
	adrp	x8, "__real@3fb999999999999a"
	ldr	d0, [x8, :lo12:"__real@3fb999999999999a"]
	ret

	.def	probe_packed;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_packed,unique,6
	.globl	probe_packed
	.p2align	2
probe_packed:
.LBB6_1:
	ldxr	x8, [x0]
	add	x9, x8, x1
	stxr	w10, x9, [x0]
	cbnz	w10, .LBB6_1
	ubfx	x9, x8, #55, #2
	and	x8, x8, #0x7fffffffffffff
	ldr	x10, [x0, #16]
	lsl	x9, x1, x9
	add	x9, x9, x8
	cmp	x9, x10
	b.ls	.LBB6_4
	mov	x0, xzr
	ret
.LBB6_4:
	ldr	x9, [x0, #8]
	add	x0, x9, x8
	ret

	.def	probe_rel;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_rel,unique,7
	.globl	probe_rel
	.p2align	2
probe_rel:
	mov	x8, x0
.LBB7_1:
	ldxr	x0, [x8]
	sub	x9, x0, x1
	stlxr	w10, x9, [x8]
	cbnz	w10, .LBB7_1
	ret

	.def	probe_tls;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_tls,unique,8
	.globl	probe_tls
	.p2align	2
probe_tls:
	adrp	x8, _tls_index
	ldr	x9, [x18, #88]
	ldr	w8, [x8, :lo12:_tls_index]
	ldr	x8, [x9, x8, lsl #3]
	add	x9, x8, :secrel_hi12:_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h162e2f1cff32aed2E
	ldr	x8, [x9, :secrel_lo12:_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h162e2f1cff32aed2E]
	add	x10, x8, x0
	mov	x0, x8
	str	x10, [x9, :secrel_lo12:_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h162e2f1cff32aed2E]
	ret

	.section	.tls$,"dw",one_only,_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h162e2f1cff32aed2E,unique,9
	.p2align	3, 0x0
_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h162e2f1cff32aed2E:
	.zero	8

	.section	.rdata,"dr",one_only,switch.table.probe_match,unique,10
	.p2align	3, 0x0
switch.table.probe_match:
	.xword	0x3ff8000000000000
	.xword	0x4002000000000000
	.xword	0x401c800000000000
	.xword	0x4022200000000000
	.xword	0x4027000000000000

	.globl	probe_seq
	.def	probe_seq;
	.scl	2;
	.type	32;
	.endef
probe_seq = probe_dup
