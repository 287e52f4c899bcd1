	.def	@feat.00;
	.scl	3;
	.type	0;
	.endef
	.globl	@feat.00
@feat.00 = 0
	.intel_syntax noprefix
	.file	"frag.48958417f6fd0721-cgu.0"
	.def	_ZN4frag4slow17h2c2e3e2616f4872cE;
	.scl	3;
	.type	32;
	.endef
	.section	.text,"xr",one_only,_ZN4frag4slow17h2c2e3e2616f4872cE,unique,0
	.p2align	4
_ZN4frag4slow17h2c2e3e2616f4872cE:
.seh_proc _ZN4frag4slow17h2c2e3e2616f4872cE
	push	rax
	.seh_stackalloc 8
	.seh_endprologue
	mov	qword ptr [rsp], rcx
	mov	rax, rsp
	#APP
	#NO_APP
	mov	rax, qword ptr [rsp]
	lea	rax, [rax + 2*rax]
	.seh_startepilogue
	pop	rcx
	.seh_endepilogue
	ret
	.seh_endproc

	.def	probe_call;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_call,unique,1
	.globl	probe_call
	.p2align	4
probe_call:
.seh_proc probe_call
	push	rsi
	.seh_pushreg rsi
	push	rdi
	.seh_pushreg rdi
	sub	rsp, 40
	.seh_stackalloc 40
	.seh_endprologue
	mov	rsi, rcx
	call	_ZN4frag4slow17h2c2e3e2616f4872cE
	mov	rdi, rax
	inc	rsi
	mov	rcx, rsi
	call	_ZN4frag4slow17h2c2e3e2616f4872cE
	add	rax, rdi
	inc	rax
	.seh_startepilogue
	add	rsp, 40
	pop	rdi
	pop	rsi
	.seh_endepilogue
	ret
	.seh_endproc

	.def	probe_clz;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_clz,unique,2
	.globl	probe_clz
	.p2align	4
probe_clz:
	xor	eax, eax
	cmp	rcx, 16
	jb	.LBB2_2
	bsr	rdx, rcx
	xor	rdx, 63
	mov	al, 61
	sub	al, dl
	mov	r8, rcx
	mov	ecx, eax
	shr	r8, cl
	and	r8d, 3
	lea	eax, [r8 + 4*rdx]
	xor	eax, 252
.LBB2_2:
	ret

	.def	probe_dup;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_dup,unique,3
	.globl	probe_dup
	.p2align	4
probe_dup:
	mov	rax, rdx
	lock		xadd	qword ptr [rcx], rax
	ret

	.def	probe_loop;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_loop,unique,4
	.globl	probe_loop
	.p2align	4
probe_loop:
	xor	eax, eax
	test	rcx, rcx
	je	.LBB4_4
	.p2align	4
.LBB4_2:
	cmp	qword ptr [rcx], rdx
	jae	.LBB4_4
	inc	rax
	mov	rcx, qword ptr [rcx + 8]
	test	rcx, rcx
	jne	.LBB4_2
.LBB4_4:
	ret

	.def	probe_match;
	.scl	2;
	.type	32;
	.endef
	.globl	__real@3fb999999999999a
	.section	.rdata,"dr",discard,__real@3fb999999999999a
	.p2align	3, 0x0
__real@3fb999999999999a:
	.quad	0x3fb999999999999a
	.section	.text,"xr",one_only,probe_match,unique,5
	.globl	probe_match
	.p2align	4
probe_match:
	cmp	ecx, 4
	ja	.LBB5_1
	mov	eax, ecx
	lea	rcx, [rip + switch.table.probe_match]
	movsd	xmm0, qword ptr [rcx + 8*rax]
	ret
.LBB5_1:
	movsd	xmm0, qword ptr [rip + __real@3fb999999999999a]
	ret

	.def	probe_packed;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_packed,unique,6
	.globl	probe_packed
	.p2align	4
probe_packed:
	mov	r8, rcx
	mov	rcx, rdx
	lock		xadd	qword ptr [r8], rcx
	movabs	rax, 36028797018963967
	and	rax, rcx
	shr	rcx, 55
	and	cl, 3
	shl	rdx, cl
	add	rdx, rax
	cmp	rdx, qword ptr [r8 + 16]
	jbe	.LBB6_2
	xor	eax, eax
	ret
.LBB6_2:
	add	rax, qword ptr [r8 + 8]
	ret

	.def	probe_rel;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_rel,unique,7
	.globl	probe_rel
	.p2align	4
probe_rel:
	mov	rax, rdx
	neg	rax
	lock		xadd	qword ptr [rcx], rax
	ret

	.def	probe_tls;
	.scl	2;
	.type	32;
	.endef
	.section	.text,"xr",one_only,probe_tls,unique,8
	.globl	probe_tls
	.p2align	4
probe_tls:
	mov	eax, dword ptr [rip + _tls_index]
	mov	rdx, qword ptr gs:[88]
	mov	rdx, qword ptr [rdx + 8*rax]
	mov	rax, qword ptr [rdx + _ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h9411018116872792E@SECREL32]
	add	rcx, rax
	mov	qword ptr [rdx + _ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h9411018116872792E@SECREL32], rcx
	ret

	.section	.tls$,"dw",one_only,_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h9411018116872792E,unique,9
	.p2align	3, 0x0
_ZN4frag3CUR29_$u7b$$u7b$constant$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$23__RUST_STD_INTERNAL_VAL17h9411018116872792E:
	.zero	8

	.section	.rdata,"dr",one_only,switch.table.probe_match,unique,10
	.p2align	3, 0x0
switch.table.probe_match:
	.quad	0x3ff8000000000000
	.quad	0x4002000000000000
	.quad	0x401c800000000000
	.quad	0x4022200000000000
	.quad	0x4027000000000000

	.globl	probe_seq
	.def	probe_seq;
	.scl	2;
	.type	32;
	.endef
probe_seq = probe_dup
	.globl	_fltused
