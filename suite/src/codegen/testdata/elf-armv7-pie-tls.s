@ Excerpt of this crate's armv7-unknown-linux-gnueabihf assembly (profile armv7-linux,
@ rustc 1.95.0): the cold refill's section header and label, then probe_thread_cursor_alloc
@ with its literal pool (.LCPI: GOTTPOFF and anon-constant offsets).
	.section	.text.unlikely._ZN8allocasm13thread_cursor17ThreadCursorArena6refill17h02e3ad723ec9c9c8E,"ax",%progbits
	.globl	_ZN8allocasm13thread_cursor17ThreadCursorArena6refill17h02e3ad723ec9c9c8E
	.p2align	2
	.type	_ZN8allocasm13thread_cursor17ThreadCursorArena6refill17h02e3ad723ec9c9c8E,%function
	.code	32
_ZN8allocasm13thread_cursor17ThreadCursorArena6refill17h02e3ad723ec9c9c8E:
.Lfunc_begin11:
	.fnstart
	.save	{r4, r5, r6, r7, r8, r9, r10, r11, lr}
	push	{r4, r5, r6, r7, r8, r9, r10, r11, lr}
	@ (body elided)
	bx	lr
.Lfunc_end106:
	.size	_ZN8allocasm13thread_cursor17ThreadCursorArena6refill17h02e3ad723ec9c9c8E, .Lfunc_end106-_ZN8allocasm13thread_cursor17ThreadCursorArena6refill17h02e3ad723ec9c9c8E
	.fnend

	.section	.text.probe_thread_cursor_alloc,"ax",%progbits
	.globl	probe_thread_cursor_alloc
	.p2align	2
	.type	probe_thread_cursor_alloc,%function
	.code	32
probe_thread_cursor_alloc:
.Lfunc_begin32:
	.fnstart
	.save	{r4, r5, r6, r7, r11, lr}
	push	{r4, r5, r6, r7, r11, lr}
	.pad	#16
	sub	sp, sp, #16
	mov	r5, r1
	mov	r1, r0
	ldr	r0, .LCPI177_0
	ldrd	r6, r7, [r1, #192]
	ldr	r3, [r1, #204]
.LPC177_0:
	ldr	r2, [pc, r0]
	bl	__aeabi_read_tp
	add	r2, r0, r2
	and	r0, r3, #7
	mov	r3, r2
	ldr	r0, [r3, r0, lsl #4]!
	ldr	r4, [r3, #4]
	eor	r0, r0, r6
	eor	r7, r4, r7
	orrs	r0, r0, r7
	bne	.LBB177_2
	ldr	r0, [r3, #8]
	sub	r6, r5, #1
	ldr	r7, [r3, #12]
	sub	r7, r7, r0
	cmp	r6, r7
	addlo	r1, r5, #15
	biclo	r1, r1, #15
	addlo	r1, r0, r1
	strlo	r1, [r3, #8]
	addlo	sp, sp, #16
	poplo	{r4, r5, r6, r7, r11, pc}
.LBB177_2:
.Ltmp286:
	add	r0, sp, #4
	mov	r3, r5
	bl	_ZN8allocasm13thread_cursor17ThreadCursorArena6refill17h02e3ad723ec9c9c8E
.Ltmp287:
	ldr	r1, [sp, #4]
	cmp	r1, #9
	bne	.LBB177_6
	ldr	r0, .LCPI177_1
.LPC177_1:
	add	r0, pc, r0
.Ltmp288:
	bl	_RNvNtNtCsIg9x6UOzuN_3std6thread5local18panic_access_error
.Ltmp289:
	.inst	0xe7ffdefe
.LBB177_6:
	ldr	r0, [sp, #8]
	cmp	r1, #8
	movne	r0, #0
	add	sp, sp, #16
	pop	{r4, r5, r6, r7, r11, pc}
.LBB177_7:
.Ltmp290:
	bl	_RNvNtCs9iwrK4NvPC3_4core9panicking19panic_cannot_unwind
	.p2align	2
.LCPI177_0:
.Ltmp367:
	.long	_ZN8allocasm13thread_cursor7CURSORS29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17hded2e0fc51b0c14cE(GOTTPOFF)-(.LPC177_0+8-.Ltmp367)
.LCPI177_1:
	.long	.Lanon.97a6392520b9c277b27762913821b3bc.4-(.LPC177_1+8)
.Lfunc_end177:
	.size	probe_thread_cursor_alloc, .Lfunc_end177-probe_thread_cursor_alloc
	.personality rust_eh_personality
	.handlerdata
	.p2align	2
GCC_except_table177:
.Lexception32:
	.byte	255
	.byte	0
	.uleb128 .Lttbase22-.Lttbaseref22
.Lttbaseref22:
