	.syntax	unified
	.eabi_attribute	67, "2.09"
	.eabi_attribute	6, 10
	.eabi_attribute	7, 65
	.eabi_attribute	8, 1
	.eabi_attribute	9, 2
	.fpu	vfpv3
	.eabi_attribute	34, 1
	.eabi_attribute	15, 1
	.eabi_attribute	16, 1
	.eabi_attribute	17, 2
	.eabi_attribute	20, 1
	.eabi_attribute	21, 1
	.eabi_attribute	23, 3
	.eabi_attribute	24, 1
	.eabi_attribute	25, 1
	.eabi_attribute	28, 1
	.eabi_attribute	38, 1
	.eabi_attribute	14, 0
	.file	"frag.5032e544884eb1e1-cgu.0"
	.section	.text._ZN4frag4slow17h61e6955b61c33ff1E,"ax",%progbits
	.p2align	2
	.type	_ZN4frag4slow17h61e6955b61c33ff1E,%function
	.code	32
_ZN4frag4slow17h61e6955b61c33ff1E:
	.fnstart
	.pad	#8
	sub	sp, sp, #8
	stm	sp, {r0, r1}
	mov	r0, sp
	@APP
	@NO_APP
	mov	r2, #3
	ldm	sp, {r0, r1}
	add	r1, r1, r1, lsl #1
	umull	r0, r2, r0, r2
	add	r1, r2, r1
	add	sp, sp, #8
	bx	lr
.Lfunc_end0:
	.size	_ZN4frag4slow17h61e6955b61c33ff1E, .Lfunc_end0-_ZN4frag4slow17h61e6955b61c33ff1E
	.fnend

	.section	.text.probe_call,"ax",%progbits
	.globl	probe_call
	.p2align	2
	.type	probe_call,%function
	.code	32
probe_call:
	.fnstart
	.save	{r4, r5, r6, r7, r11, lr}
	push	{r4, r5, r6, r7, r11, lr}
	mov	r4, r1
	mov	r5, r0
	bl	_ZN4frag4slow17h61e6955b61c33ff1E
	mov	r6, r0
	adds	r0, r5, #1
	mov	r7, r1
	adc	r1, r4, #0
	bl	_ZN4frag4slow17h61e6955b61c33ff1E
	adds	r0, r6, r0
	adc	r1, r7, r1
	adds	r0, r0, #1
	adc	r1, r1, #0
	pop	{r4, r5, r6, r7, r11, pc}
.Lfunc_end1:
	.size	probe_call, .Lfunc_end1-probe_call
	.fnend

	.section	.text.probe_clz,"ax",%progbits
	.globl	probe_clz
	.p2align	2
	.type	probe_clz,%function
	.code	32
probe_clz:
	.fnstart
	subs	r3, r0, #16
	mov	r2, #0
	sbcs	r3, r1, #0
	blo	.LBB2_2
	clz	r2, r0
	cmp	r1, #0
	add	r2, r2, #32
	clzne	r2, r1
	rsb	r3, r2, #61
	lsr	r0, r0, r3
	rsb	r3, r3, #32
	orr	r0, r0, r1, lsl r3
	rsbs	r3, r2, #29
	lsrpl	r0, r1, r3
	and	r0, r0, #3
	orr	r0, r0, r2, lsl #2
	eor	r2, r0, #252
.LBB2_2:
	mov	r0, r2
	bx	lr
.Lfunc_end2:
	.size	probe_clz, .Lfunc_end2-probe_clz
	.fnend

	.section	.text.probe_dup,"ax",%progbits
	.globl	probe_dup
	.p2align	2
	.type	probe_dup,%function
	.code	32
probe_dup:
	.fnstart
	.save	{r4, r5, r11, lr}
	push	{r4, r5, r11, lr}
	mov	r12, r0
	dmb	ish
.LBB3_1:
	ldrexd	r0, r1, [r12]
	adds	r4, r0, r2
	adc	r5, r1, r3
	strexd	lr, r4, r5, [r12]
	cmp	lr, #0
	bne	.LBB3_1
	dmb	ish
	pop	{r4, r5, r11, pc}
.Lfunc_end3:
	.size	probe_dup, .Lfunc_end3-probe_dup
	.fnend

	.section	.text.probe_loop,"ax",%progbits
	.globl	probe_loop
	.p2align	2
	.type	probe_loop,%function
	.code	32
probe_loop:
	.fnstart
	cmp	r0, #0
	beq	.LBB4_4
	mov	r2, r0
	mov	r0, #0
.LBB4_2:
	ldr	r3, [r2]
	cmp	r3, r1
	bhs	.LBB4_5
	ldr	r2, [r2, #4]
	add	r0, r0, #1
	cmp	r2, #0
	bxeq	lr
	b	.LBB4_2
.LBB4_4:
	mov	r0, #0
.LBB4_5:
	bx	lr
.Lfunc_end4:
	.size	probe_loop, .Lfunc_end4-probe_loop
	.fnend

	.section	.text.probe_match,"ax",%progbits
	.globl	probe_match
	.p2align	3
	.type	probe_match,%function
	.code	32
probe_match:
	.fnstart
	cmp	r0, #4
	vldrhi	d0, .LCPI5_0
	bxhi	lr
.LBB5_1:
	ldr	r1, .LCPI5_1
.LPC5_0:
	add	r1, pc, r1
	add	r0, r1, r0, lsl #3
	vldr	d0, [r0]
	bx	lr
	.p2align	3
.LCPI5_0:
	.long	2576980378
	.long	1069128089
.LCPI5_1:
	.long	.Lswitch.table.probe_match-(.LPC5_0+8)
.Lfunc_end5:
	.size	probe_match, .Lfunc_end5-probe_match
	.fnend

	.section	.text.probe_packed,"ax",%progbits
	.globl	probe_packed
	.p2align	2
	.type	probe_packed,%function
	.code	32
probe_packed:
	.fnstart
	.save	{r4, r5, r6, r7, r9, lr}
	push	{r4, r5, r6, r7, r9, lr}
.LBB6_1:
	ldrexd	r4, r5, [r0]
	adds	r6, r4, r2
	adc	r7, r5, r3
	strexd	r1, r6, r7, [r0]
	cmp	r1, #0
	bne	.LBB6_1
	ldr	r6, [r0, #8]
	lsr	r7, r2, #1
	ldr	r9, [r0, #12]
	ubfx	r1, r5, #23, #2
	eor	r12, r1, #31
	lsl	r3, r3, r1
	adds	r2, r4, r2, lsl r1
	orr	r3, r3, r7, lsr r12
	mov	r7, r5
	bfc	r7, #23, #9
	mov	r1, #0
	adc	r3, r3, r7
	subs	r2, r6, r2
	sbcs	r2, r9, r3
	ldrhs	r0, [r0, #16]
	addhs	r1, r0, r4
	mov	r0, r1
	pop	{r4, r5, r6, r7, r9, pc}
.Lfunc_end6:
	.size	probe_packed, .Lfunc_end6-probe_packed
	.fnend

	.section	.text.probe_rel,"ax",%progbits
	.globl	probe_rel
	.p2align	2
	.type	probe_rel,%function
	.code	32
probe_rel:
	.fnstart
	.save	{r4, r5, r6, r7, r11, lr}
	push	{r4, r5, r6, r7, r11, lr}
	dmb	ish
.LBB7_1:
	ldrexd	r4, r5, [r0]
	subs	r6, r4, r2
	sbc	r7, r5, r3
	strexd	r1, r6, r7, [r0]
	cmp	r1, #0
	bne	.LBB7_1
	mov	r0, r4
	mov	r1, r5
	pop	{r4, r5, r6, r7, r11, pc}
.Lfunc_end7:
	.size	probe_rel, .Lfunc_end7-probe_rel
	.fnend

	.section	.text.probe_tls,"ax",%progbits
	.globl	probe_tls
	.p2align	2
	.type	probe_tls,%function
	.code	32
probe_tls:
	.fnstart
	.save	{r4, lr}
	push	{r4, lr}
	mov	r4, r0
	ldr	r0, .LCPI8_0
.LPC8_0:
	add	r0, pc, r0
	bl	__tls_get_addr
	ldr	r1, [r0]
	add	r2, r1, r4
	str	r2, [r0]
	mov	r0, r1
	pop	{r4, pc}
	.p2align	2
.LCPI8_0:
.Ltmp0:
	.long	_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h06d6b352f50d6e8cE(TLSGD)-(.LPC8_0+8-.Ltmp0)
.Lfunc_end8:
	.size	probe_tls, .Lfunc_end8-probe_tls
	.fnend

	.type	_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h06d6b352f50d6e8cE,%object
	.section	".tbss._ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h06d6b352f50d6e8cE","awT",%nobits
	.p2align	2, 0x0
_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h06d6b352f50d6e8cE:
	.zero	4
	.size	_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h06d6b352f50d6e8cE, 4

	.type	.Lswitch.table.probe_match,%object
	.section	.rodata..Lswitch.table.probe_match,"a",%progbits
	.p2align	3, 0x0
.Lswitch.table.probe_match:
	.long	0
	.long	1073217536
	.long	0
	.long	1073872896
	.long	0
	.long	1075609600
	.long	0
	.long	1075978240
	.long	0
	.long	1076297728
	.size	.Lswitch.table.probe_match, 40

	.globl	probe_seq
	.type	probe_seq,%function
probe_seq = probe_dup
	.ident	"rustc version 1.95.0 (59807616e 2026-04-14)"
	.section	".note.GNU-stack","",%progbits
	.eabi_attribute	30, 2
