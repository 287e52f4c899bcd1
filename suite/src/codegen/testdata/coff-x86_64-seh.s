	.def	probe_packed_alloc_relaxed;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_packed_alloc_relaxed,unique,121
	.globl	probe_packed_alloc_relaxed
	.p2align	4
probe_packed_alloc_relaxed:
.Lfunc_begin13:
.seh_proc probe_packed_alloc_relaxed
	.seh_handler __CxxFrameHandler3, @unwind, @except
	push	rbp
	.seh_pushreg rbp
	sub	rsp, 80
	.seh_stackalloc 80
	lea	rbp, [rsp + 80]
	.seh_setframe rbp, 80
	.seh_endprologue
	mov	qword ptr [rbp - 8], -2
	mov	r8, rdx
	mov	rdx, rcx
	lea	rax, [r8 - 1]
	cmp	rax, qword ptr [rcx + 168]
	jae	.LBB117_7
	add	r8, 15
	and	r8, -16
	mov	r9, r8
	lock		xadd	qword ptr [rdx], r9
	mov	rcx, r9
	shr	rcx, 55
	movabs	rax, 36028797018963967
	and	rax, r9
	lea	r10, [rax + r8]
	mov	r11, qword ptr [rdx + 160]
	and	cl, 3
	shl	r11, cl
	cmp	r10, r11
	ja	.LBB117_8
	shr	r9, 57
	movzx	ecx, byte ptr [rdx + 328]
	shl	r9, cl
	add	r9, qword ptr [rdx + 280]
	add	r9, rax
	mov	qword ptr [rbp - 24], r9
	mov	dword ptr [rbp - 32], 8
.LBB117_3:
	cmp	dword ptr [rbp - 32], 8
	jne	.LBB117_5
	mov	rax, qword ptr [rbp - 24]
	.seh_startepilogue
	add	rsp, 80
	pop	rbp
	.seh_endepilogue
	ret
.LBB117_5:
	xor	eax, eax
	.seh_startepilogue
	add	rsp, 80
	pop	rbp
	.seh_endepilogue
	ret
.LBB117_7:
	lea	rcx, [rbp - 32]
	call	_ZN8allocasm6packed11PackedArena11bad_request17h8a7f6c7ab9b3591eE
	jmp	.LBB117_3
.LBB117_8:
.Ltmp106:
	mov	byte ptr [rsp + 32], 0
	lea	rcx, [rbp - 32]
	call	_ZN8allocasm6packed11PackedArena10alloc_slow17hd48de6a92b66d124E
	nop
.Ltmp107:
	jmp	.LBB117_3
	.seh_handlerdata
	.long	$cppxdata$probe_packed_alloc_relaxed@IMGREL
	.section	.text,"xr",one_only,probe_packed_alloc_relaxed,unique,121
	.seh_endproc
	.def	"?catch$9@?0?probe_packed_alloc_relaxed@4HA";
	.scl	3;
	.type	32;
	.endef
	.p2align	4
"?catch$9@?0?probe_packed_alloc_relaxed@4HA":
.seh_proc "?catch$9@?0?probe_packed_alloc_relaxed@4HA"
	.seh_handler __CxxFrameHandler3, @unwind, @except
.LBB117_9:
	mov	qword ptr [rsp + 16], rdx
	push	rbp
	.seh_pushreg rbp
	sub	rsp, 48
	.seh_stackalloc 48
	lea	rbp, [rdx + 80]
	.seh_endprologue
	call	_RNvNtCs8icZUrvfcq9_4core9panicking19panic_cannot_unwind
	int3
.Lfunc_end13:
	.seh_handlerdata
	.long	$cppxdata$probe_packed_alloc_relaxed@IMGREL
	.section	.text,"xr",one_only,probe_packed_alloc_relaxed,unique,121
	.seh_endproc
	.section	.xdata,"dr",associative,probe_packed_alloc_relaxed,unique,13
	.p2align	2, 0x0
$cppxdata$probe_packed_alloc_relaxed:
	.long	429065506
	.long	2
	.long	$stateUnwindMap$probe_packed_alloc_relaxed@IMGREL
	.long	1
	.long	$tryMap$probe_packed_alloc_relaxed@IMGREL
	.long	4
	.long	$ip2state$probe_packed_alloc_relaxed@IMGREL
	.long	72
	.long	0
	.long	1
$stateUnwindMap$probe_packed_alloc_relaxed:
	.long	-1
	.long	0
	.long	-1
	.long	0
$tryMap$probe_packed_alloc_relaxed:
	.long	0
	.long	0
	.long	1
	.long	1
	.long	$handlerMap$0$probe_packed_alloc_relaxed@IMGREL
$handlerMap$0$probe_packed_alloc_relaxed:
	.long	64
	.long	0
	.long	0
	.long	"?catch$9@?0?probe_packed_alloc_relaxed@4HA"@IMGREL
	.long	72
$ip2state$probe_packed_alloc_relaxed:
	.long	.Lfunc_begin13@IMGREL
	.long	-1
	.long	.Ltmp106@IMGREL
	.long	0
	.long	.Ltmp107@IMGREL
	.long	-1
	.long	"?catch$9@?0?probe_packed_alloc_relaxed@4HA"@IMGREL
	.long	1
	.section	.text,"xr",one_only,probe_packed_alloc_relaxed,unique,121

	.def	probe_thread_cursor_alloc;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_thread_cursor_alloc,unique,128
	.globl	probe_thread_cursor_alloc
	.p2align	4
probe_thread_cursor_alloc:
.Lfunc_begin16:
.seh_proc probe_thread_cursor_alloc
	.seh_handler __CxxFrameHandler3, @unwind, @except
	push	rbp
	.seh_pushreg rbp
	sub	rsp, 64
	.seh_stackalloc 64
	lea	rbp, [rsp + 64]
	.seh_setframe rbp, 64
	.seh_endprologue
	mov	qword ptr [rbp - 8], -2
	mov	r9, rdx
	mov	rdx, rcx
	mov	r8, qword ptr [rcx + 392]
	mov	rax, qword ptr [rcx + 400]
	and	eax, 7
	mov	ecx, dword ptr [rip + _tls_index]
	mov	r10, qword ptr gs:[88]
	mov	rcx, qword ptr [r10 + 8*rcx]
	lea	rax, [rax + 2*rax]
	cmp	qword ptr [rcx + 8*rax + _ZN8allocasm13thread_cursor7CURSORS29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h79d91a5e81b80a16E@SECREL32], r8
	jne	.LBB124_3
	lea	r8, [rcx + 8*rax]
	add	r8, offset _ZN8allocasm13thread_cursor7CURSORS29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h79d91a5e81b80a16E@SECREL32
	mov	rax, qword ptr [rcx + 8*rax + _ZN8allocasm13thread_cursor7CURSORS29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h79d91a5e81b80a16E@SECREL32+8]
	lea	r10, [r9 - 1]
	mov	r11, qword ptr [r8 + 16]
	sub	r11, rax
	cmp	r10, r11
	jae	.LBB124_3
	add	r9, 15
	and	r9, -16
	add	r9, rax
	mov	qword ptr [r8 + 8], r9
	.seh_startepilogue
	add	rsp, 64
	pop	rbp
	.seh_endepilogue
	ret
.LBB124_3:
.Ltmp112:
	lea	r8, [rcx + _ZN8allocasm13thread_cursor7CURSORS29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h79d91a5e81b80a16E@SECREL32]
	lea	rcx, [rbp - 32]
	call	_ZN8allocasm13thread_cursor17ThreadCursorArena6refill17hc3580acbd6e94742E
	nop
.Ltmp113:
	mov	ecx, dword ptr [rbp - 32]
	cmp	ecx, 9
	jne	.LBB124_7
.Ltmp114:
	lea	rcx, [rip + anon.768d3240ab179f4873eb927c806fa805.4]
	call	_RNvNtNtCs1aoCESei0z2_3std6thread5local18panic_access_error
	nop
.Ltmp115:
	ud2
.LBB124_7:
	xor	eax, eax
	cmp	ecx, 8
	cmove	rax, qword ptr [rbp - 24]
	.seh_startepilogue
	add	rsp, 64
	pop	rbp
	.seh_endepilogue
	ret
	.seh_handlerdata
	.long	$cppxdata$probe_thread_cursor_alloc@IMGREL
	.section	.text,"xr",one_only,probe_thread_cursor_alloc,unique,128
	.seh_endproc
	.def	"?catch$9@?0?probe_thread_cursor_alloc@4HA";
	.scl	3;
	.type	32;
	.endef
	.p2align	4
"?catch$9@?0?probe_thread_cursor_alloc@4HA":
.seh_proc "?catch$9@?0?probe_thread_cursor_alloc@4HA"
	.seh_handler __CxxFrameHandler3, @unwind, @except
.LBB124_9:
	mov	qword ptr [rsp + 16], rdx
	push	rbp
	.seh_pushreg rbp
	sub	rsp, 32
	.seh_stackalloc 32
	lea	rbp, [rdx + 64]
	.seh_endprologue
	call	_RNvNtCs8icZUrvfcq9_4core9panicking19panic_cannot_unwind
	int3
.Lfunc_end16:
	.seh_handlerdata
	.long	$cppxdata$probe_thread_cursor_alloc@IMGREL
	.section	.text,"xr",one_only,probe_thread_cursor_alloc,unique,128
	.seh_endproc
	.section	.xdata,"dr",associative,probe_thread_cursor_alloc,unique,16
	.p2align	2, 0x0
$cppxdata$probe_thread_cursor_alloc:
	.long	429065506
	.long	2
	.long	$stateUnwindMap$probe_thread_cursor_alloc@IMGREL
	.long	1
	.long	$tryMap$probe_thread_cursor_alloc@IMGREL
	.long	4
	.long	$ip2state$probe_thread_cursor_alloc@IMGREL
	.long	56
	.long	0
	.long	1
$stateUnwindMap$probe_thread_cursor_alloc:
	.long	-1
	.long	0
	.long	-1
	.long	0
$tryMap$probe_thread_cursor_alloc:
	.long	0
	.long	0
	.long	1
	.long	1
	.long	$handlerMap$0$probe_thread_cursor_alloc@IMGREL
$handlerMap$0$probe_thread_cursor_alloc:
	.long	64
	.long	0
	.long	0
	.long	"?catch$9@?0?probe_thread_cursor_alloc@4HA"@IMGREL
	.long	56
$ip2state$probe_thread_cursor_alloc:
	.long	.Lfunc_begin16@IMGREL
	.long	-1
	.long	.Ltmp112@IMGREL
	.long	0
	.long	.Ltmp115@IMGREL
	.long	-1
	.long	"?catch$9@?0?probe_thread_cursor_alloc@4HA"@IMGREL
	.long	1
	.section	.text,"xr",one_only,probe_thread_cursor_alloc,unique,128

	.section	.rdata,"dr",one_only,anon.768d3240ab179f4873eb927c806fa805.0,unique,129
anon.768d3240ab179f4873eb927c806fa805.0:
	.asciz	"/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library\\alloc\\src\\collections\\btree\\navigate.rs"

	.section	.rdata,"dr",one_only,anon.768d3240ab179f4873eb927c806fa805.1,unique,130
	.p2align	3, 0x0
anon.768d3240ab179f4873eb927c806fa805.1:
	.quad	anon.768d3240ab179f4873eb927c806fa805.0
	.asciz	"_\000\000\000\000\000\000\000\241\000\000\000$\000\000"

	.section	.rdata,"dr",one_only,anon.768d3240ab179f4873eb927c806fa805.2,unique,131
anon.768d3240ab179f4873eb927c806fa805.2:
	.ascii	"internal error: entered unreachable code"

	.section	.rdata,"dr",one_only,anon.768d3240ab179f4873eb927c806fa805.3,unique,132
anon.768d3240ab179f4873eb927c806fa805.3:
	.asciz	"/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library\\std\\src\\thread\\local.rs"

	.section	.rdata,"dr",one_only,anon.768d3240ab179f4873eb927c806fa805.4,unique,133
	.p2align	3, 0x0
anon.768d3240ab179f4873eb927c806fa805.4:
	.quad	anon.768d3240ab179f4873eb927c806fa805.3
	.asciz	"O\000\000\000\000\000\000\000\337\001\000\000\031\000\000"
