	.attribute	4, 16
	.attribute	5, "rv64i2p1_m2p0_a2p1_f2p2_d2p2_c2p0_zicsr2p0_zifencei2p0_zmmul1p0_zaamo1p0_zalrsc1p0_zca1p0_zcd1p0"
	.file	"frag.5115bfaff5bfe725-cgu.0"
	.section	.text._ZN4frag4slow17h0ec57a9854f873b0E,"ax",@progbits
	.p2align	1
	.type	_ZN4frag4slow17h0ec57a9854f873b0E,@function
_ZN4frag4slow17h0ec57a9854f873b0E:
	.cfi_startproc
	addi	sp, sp, -16
	.cfi_def_cfa_offset 16
	sd	a0, 8(sp)
	addi	a0, sp, 8
	#APP
	#NO_APP
	ld	a0, 8(sp)
	slli	a1, a0, 1
	add	a0, a0, a1
	addi	sp, sp, 16
	.cfi_def_cfa_offset 0
	ret
.Lfunc_end0:
	.size	_ZN4frag4slow17h0ec57a9854f873b0E, .Lfunc_end0-_ZN4frag4slow17h0ec57a9854f873b0E
	.cfi_endproc

	.section	.text.probe_call,"ax",@progbits
	.globl	probe_call
	.p2align	1
	.type	probe_call,@function
probe_call:
	.cfi_startproc
	addi	sp, sp, -32
	.cfi_def_cfa_offset 32
	sd	ra, 24(sp)
	sd	s0, 16(sp)
	sd	s1, 8(sp)
	.cfi_offset ra, -8
	.cfi_offset s0, -16
	.cfi_offset s1, -24
	mv	s0, a0
	call	_ZN4frag4slow17h0ec57a9854f873b0E
	mv	s1, a0
	addi	a0, s0, 1
	call	_ZN4frag4slow17h0ec57a9854f873b0E
	add	a0, a0, s1
	addi	a0, a0, 1
	ld	ra, 24(sp)
	ld	s0, 16(sp)
	ld	s1, 8(sp)
	.cfi_restore ra
	.cfi_restore s0
	.cfi_restore s1
	addi	sp, sp, 32
	.cfi_def_cfa_offset 0
	ret
.Lfunc_end1:
	.size	probe_call, .Lfunc_end1-probe_call
	.cfi_endproc

	.section	.text.probe_clz,"ax",@progbits
	.globl	probe_clz
	.p2align	1
	.type	probe_clz,@function
probe_clz:
	.cfi_startproc
	li	a1, 16
	bgeu	a0, a1, .LBB2_2
	li	a0, 0
	ret
.LBB2_2:
	srli	a5, a0, 1
	lui	a2, 349525
	lui	a3, 209715
	lui	a4, 61681
	lui	a1, 4112
	or	a5, a5, a0
	addi	a2, a2, 1365
	addi	a3, a3, 819
	addi	a4, a4, -241
	addi	a6, a1, 257
	srli	a1, a5, 2
	or	a7, a5, a1
	slli	a5, a2, 32
	add	a2, a2, a5
	slli	a5, a3, 32
	add	a3, a3, a5
	slli	a5, a4, 32
	add	t0, a4, a5
	slli	a5, a6, 32
	add	a5, a5, a6
	srli	a1, a7, 4
	or	a4, a7, a1
	srli	a1, a4, 8
	or	a1, a1, a4
	srli	a4, a1, 16
	or	a1, a1, a4
	srli	a4, a1, 32
	or	a1, a1, a4
	not	a1, a1
	srli	a4, a1, 1
	and	a2, a2, a4
	sub	a1, a1, a2
	and	a2, a1, a3
	srli	a1, a1, 2
	and	a1, a1, a3
	add	a1, a1, a2
	srli	a2, a1, 4
	add	a1, a1, a2
	li	a2, 61
	and	a1, a1, t0
	mul	a1, a1, a5
	srli	a1, a1, 56
	slli	a3, a1, 2
	sub	a2, a2, a1
	srl	a0, a0, a2
	andi	a0, a0, 3
	or	a0, a0, a3
	xori	a0, a0, 252
	ret
.Lfunc_end2:
	.size	probe_clz, .Lfunc_end2-probe_clz
	.cfi_endproc

	.section	.text.probe_dup,"ax",@progbits
	.globl	probe_dup
	.p2align	1
	.type	probe_dup,@function
probe_dup:
	.cfi_startproc
	amoadd.d.aqrl	a0, a1, (a0)
	ret
.Lfunc_end3:
	.size	probe_dup, .Lfunc_end3-probe_dup
	.cfi_endproc

	.section	.text.probe_loop,"ax",@progbits
	.globl	probe_loop
	.p2align	1
	.type	probe_loop,@function
probe_loop:
	.cfi_startproc
	li	a2, 0
	beqz	a0, .LBB4_3
.LBB4_1:
	ld	a3, 0(a0)
	bgeu	a3, a1, .LBB4_3
	ld	a0, 8(a0)
	addi	a2, a2, 1
	bnez	a0, .LBB4_1
.LBB4_3:
	mv	a0, a2
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
	.p2align	1
	.type	probe_match,@function
probe_match:
	.cfi_startproc
	li	a1, 4
	bltu	a1, a0, .LBB5_2
	slli	a0, a0, 3
.Lpcrel_hi1:
	auipc	a1, %pcrel_hi(.Lswitch.table.probe_match)
	addi	a1, a1, %pcrel_lo(.Lpcrel_hi1)
	add	a0, a0, a1
	fld	fa0, 0(a0)
	ret
.LBB5_2:
.Lpcrel_hi0:
	auipc	a0, %pcrel_hi(.LCPI5_0)
	fld	fa0, %pcrel_lo(.Lpcrel_hi0)(a0)
	ret
.Lfunc_end5:
	.size	probe_match, .Lfunc_end5-probe_match
	.cfi_endproc

	.section	.text.probe_packed,"ax",@progbits
	.globl	probe_packed
	.p2align	1
	.type	probe_packed,@function
probe_packed:
	.cfi_startproc
	amoadd.d	a2, a1, (a0)
	ld	a3, 16(a0)
	slli	a4, a2, 7
	srli	a4, a4, 62
	sll	a4, a1, a4
	slli	a1, a2, 9
	srli	a1, a1, 9
	add	a4, a4, a1
	bgeu	a3, a4, .LBB6_2
	li	a0, 0
	ret
.LBB6_2:
	ld	a0, 8(a0)
	add	a0, a0, a1
	ret
.Lfunc_end6:
	.size	probe_packed, .Lfunc_end6-probe_packed
	.cfi_endproc

	.section	.text.probe_rel,"ax",@progbits
	.globl	probe_rel
	.p2align	1
	.type	probe_rel,@function
probe_rel:
	.cfi_startproc
	neg	a1, a1
	amoadd.d.rl	a0, a1, (a0)
	ret
.Lfunc_end7:
	.size	probe_rel, .Lfunc_end7-probe_rel
	.cfi_endproc

	.section	.text.probe_tls,"ax",@progbits
	.globl	probe_tls
	.p2align	1
	.type	probe_tls,@function
probe_tls:
	.cfi_startproc
	addi	sp, sp, -16
	.cfi_def_cfa_offset 16
	sd	ra, 8(sp)
	sd	s0, 0(sp)
	.cfi_offset ra, -8
	.cfi_offset s0, -16
	mv	s0, a0
.Lpcrel_hi2:
	auipc	a0, %tls_gd_pcrel_hi(_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h6e9b1c9fde5c0a96E)
	addi	a0, a0, %pcrel_lo(.Lpcrel_hi2)
	call	__tls_get_addr
	ld	a1, 0(a0)
	add	s0, s0, a1
	sd	s0, 0(a0)
	mv	a0, a1
	ld	ra, 8(sp)
	ld	s0, 0(sp)
	.cfi_restore ra
	.cfi_restore s0
	addi	sp, sp, 16
	.cfi_def_cfa_offset 0
	ret
.Lfunc_end8:
	.size	probe_tls, .Lfunc_end8-probe_tls
	.cfi_endproc

	.type	_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h6e9b1c9fde5c0a96E,@object
	.section	".tbss._ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h6e9b1c9fde5c0a96E","awT",@nobits
	.p2align	3, 0x0
_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h6e9b1c9fde5c0a96E:
	.zero	8
	.size	_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h6e9b1c9fde5c0a96E, 8

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
	.ident	"rustc version 1.95.0 (59807616e 2026-04-14)"
	.section	".note.GNU-stack","",@progbits
