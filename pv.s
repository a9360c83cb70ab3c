	.file	"<string>"
	.section	.rodata.cst4,"aM",@progbits,4
	.p2align	2, 0x0
.LCPI0_0:
	.long	0x3e3504f3
.LCPI0_3:
	.long	0xff800000
	.section	.rodata,"a",@progbits
	.p2align	6, 0x0
.LCPI0_1:
	.long	0x00000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.section	.rodata.cst16,"aM",@progbits,16
	.p2align	4, 0x0
.LCPI0_2:
	.zero	4
	.long	0x80000000
	.long	0x80000000
	.long	0x80000000
	.section	.ltext,"axl",@progbits
	.globl	_ZN13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx
	.p2align	4
	.type	_ZN13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx,@function
_ZN13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	pushq	%r15
	.cfi_def_cfa_offset 24
	pushq	%r14
	.cfi_def_cfa_offset 32
	pushq	%r13
	.cfi_def_cfa_offset 40
	pushq	%r12
	.cfi_def_cfa_offset 48
	pushq	%rbx
	.cfi_def_cfa_offset 56
	subq	$280, %rsp
	.cfi_def_cfa_offset 336
	.cfi_offset %rbx, -56
	.cfi_offset %r12, -48
	.cfi_offset %r13, -40
	.cfi_offset %r14, -32
	.cfi_offset %r15, -24
	.cfi_offset %rbp, -16
	movq	472(%rsp), %r15
	movq	416(%rsp), %rbp
	movq	360(%rsp), %r13
	movabsq	$NRT_incref, %r14
	movq	%rdi, %r12
	movq	%rdx, %rdi
	movq	%rsi, %rbx
	movq	%rdx, 96(%rsp)
	callq	*%r14
	movq	%r13, %rdi
	callq	*%r14
	movq	%rbp, %rdi
	callq	*%r14
	testq	%r15, %r15
	js	.LBB0_82
	movq	%r15, %rax
	shrq	$61, %rax
	jne	.LBB0_83
	shlq	$2, %r15
	movabsq	$NRT_MemInfo_alloc_aligned, %r14
	movl	$32, %esi
	movq	%r15, %rdi
	callq	*%r14
	testq	%rax, %rax
	je	.LBB0_88
	movq	480(%rsp), %rdi
	testq	%rdi, %rdi
	js	.LBB0_82
	movabsq	$2305843009213693951, %r15
	cmpq	%r15, %rdi
	ja	.LBB0_83
	movq	%rax, 88(%rsp)
	movq	24(%rax), %rax
	shlq	$2, %rdi
	movl	$32, %esi
	movq	%rax, 24(%rsp)
	callq	*%r14
	testq	%rax, %rax
	je	.LBB0_88
	movq	488(%rsp), %rdi
	testq	%rdi, %rdi
	js	.LBB0_82
	cmpq	%r15, %rdi
	ja	.LBB0_83
	movq	%r12, 80(%rsp)
	movq	24(%rax), %r12
	shlq	$2, %rdi
	movl	$32, %esi
	movq	%rax, 72(%rsp)
	callq	*%r14
	testq	%rax, %rax
	je	.LBB0_88
	movabsq	$.LCPI0_3, %rcx
	movq	24(%rsp), %rdi
	movq	584(%rsp), %rdx
	movq	576(%rsp), %r14
	movq	536(%rsp), %r8
	movq	496(%rsp), %rsi
	movq	344(%rsp), %r9
	movq	336(%rsp), %r15
	movq	24(%rax), %rbx
	movq	%rax, 64(%rsp)
	vmovss	(%rcx), %xmm0
	leaq	7936(%rdi), %rax
	movq	%rax, 176(%rsp)
	leaq	192(%rdi), %rax
	movq	%rax, 168(%rsp)
	xorl	%eax, %eax
	vmovss	%xmm0, 36(%rsp)
	jmp	.LBB0_11
	.p2align	4
.LBB0_10:
	movq	104(%rsp), %rax
	movq	112(%rsp), %rsi
	movq	120(%rsp), %rdx
	incq	%rax
	addq	$24576, %rsi
	addq	$24576, %rdx
	cmpq	$12, %rax
	je	.LBB0_80
.LBB0_11:
	movq	%rax, %rcx
	movq	%rax, 104(%rsp)
	shlq	$10, %rax
	addq	448(%rsp), %rax
	shlq	$13, %rcx
	movq	%rdx, 120(%rsp)
	movq	%rdx, 40(%rsp)
	movq	%rsi, 112(%rsp)
	xorl	%r10d, %r10d
	movq	%rcx, 144(%rsp)
	leaq	(%rcx,%rcx,2), %rcx
	movq	%rcx, 136(%rsp)
	movq	%rax, 128(%rsp)
	movq	%rsi, %rax
	jmp	.LBB0_13
	.p2align	4
.LBB0_12:
	movq	152(%rsp), %r10
	movq	160(%rsp), %rax
	addq	$32, 40(%rsp)
	movq	24(%rsp), %rdi
	incq	%r10
	addq	$32, %rax
	cmpq	$4, %r10
	je	.LBB0_10
.LBB0_13:
	movq	%r10, %rcx
	shlq	$5, %rcx
	addq	136(%rsp), %rcx
	movq	%rax, 160(%rsp)
	movq	%rcx, 200(%rsp)
	xorl	%ecx, %ecx
	.p2align	4
.LBB0_14:
	movq	%rax, %rsi
	sarq	$63, %rsi
	andq	%r9, %rsi
	addq	%rax, %rsi
	movq	%rsi, %rdx
	js	.LBB0_17
	cmpq	%r9, %rsi
	jge	.LBB0_18
.LBB0_16:
	vmovss	(%r15,%rdx,4), %xmm0
	addq	$384, %rax
	vmovss	%xmm0, (%rdi,%rcx,4)
	vmovss	4(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 256(%rdi,%rcx,4)
	vmovss	8(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 512(%rdi,%rcx,4)
	vmovss	12(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 768(%rdi,%rcx,4)
	vmovss	16(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 1024(%rdi,%rcx,4)
	vmovss	20(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 1280(%rdi,%rcx,4)
	vmovss	24(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 1536(%rdi,%rcx,4)
	vmovss	28(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 1792(%rdi,%rcx,4)
	vmovss	32(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 2048(%rdi,%rcx,4)
	vmovss	36(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 2304(%rdi,%rcx,4)
	vmovss	40(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 2560(%rdi,%rcx,4)
	vmovss	44(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 2816(%rdi,%rcx,4)
	vmovss	48(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 3072(%rdi,%rcx,4)
	vmovss	52(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 3328(%rdi,%rcx,4)
	vmovss	56(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 3584(%rdi,%rcx,4)
	vmovss	60(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 3840(%rdi,%rcx,4)
	vmovss	64(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 4096(%rdi,%rcx,4)
	vmovss	68(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 4352(%rdi,%rcx,4)
	vmovss	72(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 4608(%rdi,%rcx,4)
	vmovss	76(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 4864(%rdi,%rcx,4)
	vmovss	80(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 5120(%rdi,%rcx,4)
	vmovss	84(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 5376(%rdi,%rcx,4)
	vmovss	88(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 5632(%rdi,%rcx,4)
	vmovss	92(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 5888(%rdi,%rcx,4)
	vmovss	96(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 6144(%rdi,%rcx,4)
	vmovss	100(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 6400(%rdi,%rcx,4)
	vmovss	104(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 6656(%rdi,%rcx,4)
	vmovss	108(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 6912(%rdi,%rcx,4)
	vmovss	112(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 7168(%rdi,%rcx,4)
	vmovss	116(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 7424(%rdi,%rcx,4)
	vmovss	120(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 7680(%rdi,%rcx,4)
	vmovss	124(%r15,%rdx,4), %xmm0
	vmovss	%xmm0, 7936(%rdi,%rcx,4)
	incq	%rcx
	cmpq	$64, %rcx
	jne	.LBB0_14
	jmp	.LBB0_19
.LBB0_17:
	xorl	%edx, %edx
	cmpq	%r9, %rsi
	jl	.LBB0_16
.LBB0_18:
	movq	%r9, %rdx
	jmp	.LBB0_16
	.p2align	4
.LBB0_19:
	movq	%r10, %rax
	shlq	$11, %rax
	addq	144(%rsp), %rax
	movq	%r10, 152(%rsp)
	shlq	$8, %r10
	addq	128(%rsp), %r10
	movq	544(%rsp), %rbp
	movl	$1, %edx
	xorl	%edi, %edi
	movq	%rax, 192(%rsp)
	movq	%r10, 184(%rsp)
	.p2align	4
.LBB0_20:
	cmpq	%rdx, %r14
	movq	%rdx, %rax
	movq	560(%rsp), %r10
	movq	%rdx, %rcx
	movq	%rdx, 272(%rsp)
	movq	544(%rsp), %rsi
	movq	%rbp, 264(%rsp)
	movq	%rdi, 256(%rsp)
	cmovlq	%r14, %rax
	movq	%rax, 240(%rsp)
	movq	568(%rsp), %rax
	leaq	(%rsi,%rdi), %r14
	cmpq	%rdx, %rax
	cmovlq	%rax, %rcx
	cmpq	%rdx, %r10
	cmovlq	%r10, %rdx
	andq	$-16, %rbp
	movq	%rcx, 232(%rsp)
	movq	%rdx, 216(%rsp)
	movq	552(%rsp), %rdx
	cmpq	%rbp, %rdx
	cmovlq	%rdx, %rbp
	andq	$-16, %r14
	cmpq	%r14, %rdx
	movq	%r14, %r13
	cmovlq	%rdx, %r13
	leaq	1(%rdi), %rdx
	cmpq	%rdx, %r10
	movq	%rdx, %rsi
	movq	%rdx, 248(%rsp)
	cmovlq	%r10, %rsi
	cmpq	%rdx, %rax
	leaq	(%rdi,%rdi,2), %r10
	cmovlq	%rax, %rdx
	movq	528(%rsp), %rax
	movq	%rsi, 208(%rsp)
	movq	%rdx, 224(%rsp)
	addq	%rdi, %rax
	andq	$-16, %rax
	cmpq	%rax, %r8
	movq	%rax, %rdx
	cmovlq	%r8, %rdx
	shlq	$7, %r10
	addq	200(%rsp), %r10
	cmpq	%r9, %r10
	jge	.LBB0_78
	cmpq	%rax, %r8
	cmovlq	%r8, %rax
	testq	%rax, %rax
	jle	.LBB0_23
.LBB0_22:
	shlq	$2, %rdx
	movabsq	$memset, %rax
	movq	%r12, %rdi
	xorl	%esi, %esi
	movq	%r10, 8(%rsp)
	callq	*%rax
	movq	8(%rsp), %r10
.LBB0_23:
	movq	552(%rsp), %rax
	cmpq	%r14, %rax
	cmovlq	%rax, %r14
	testq	%r14, %r14
	jle	.LBB0_42
	movq	176(%rsp), %rsi
	movl	%ebp, %eax
	andl	$7, %eax
	movq	168(%rsp), %r11
	movq	%rbp, %rcx
	movq	%rbp, %rdx
	andq	$-8, %rcx
	andq	$-64, %rdx
	negq	%rax
	movq	%rax, 8(%rsp)
	leaq	(%r12,%r13,4), %rax
	leaq	(%rsi,%r13,4), %rdi
	leaq	(%r15,%r10,4), %rsi
	movq	24(%rsp), %r10
	cmpq	%rdi, %r12
	setb	%r8b
	cmpq	%rax, %r10
	movq	%r13, %rax
	setb	%dil
	andq	$-64, %rax
	xorl	%r14d, %r14d
	andb	%r8b, %dil
	movq	%r13, %r8
	andq	$-8, %r8
	movq	%rax, 16(%rsp)
	movq	%r8, 48(%rsp)
	jmp	.LBB0_26
	.p2align	4
.LBB0_25:
	incq	%r14
	addq	$256, %r11
	addq	$256, %r10
	cmpq	$32, %r14
	je	.LBB0_42
.LBB0_26:
	vmovss	(%rsi,%r14,4), %xmm0
	cmpq	$8, %r13
	setb	%al
	orb	%dil, %al
	testb	$1, %al
	je	.LBB0_28
	xorl	%r9d, %r9d
	jmp	.LBB0_37
	.p2align	4
.LBB0_28:
	cmpq	$64, %r13
	jae	.LBB0_30
	xorl	%eax, %eax
	jmp	.LBB0_34
	.p2align	4
.LBB0_30:
	vbroadcastss	%xmm0, %zmm1
	xorl	%eax, %eax
	.p2align	4
.LBB0_31:
	vmovups	-192(%r11,%rax,4), %zmm2
	vmovups	-128(%r11,%rax,4), %zmm3
	vmovups	-64(%r11,%rax,4), %zmm4
	vmovups	(%r11,%rax,4), %zmm5
	vfmadd213ps	(%r12,%rax,4), %zmm1, %zmm2
	vfmadd213ps	64(%r12,%rax,4), %zmm1, %zmm3
	vfmadd213ps	128(%r12,%rax,4), %zmm1, %zmm4
	vfmadd213ps	192(%r12,%rax,4), %zmm1, %zmm5
	vmovups	%zmm2, (%r12,%rax,4)
	vmovups	%zmm3, 64(%r12,%rax,4)
	vmovups	%zmm4, 128(%r12,%rax,4)
	vmovups	%zmm5, 192(%r12,%rax,4)
	addq	$64, %rax
	cmpq	%rax, %rdx
	jne	.LBB0_31
	cmpq	16(%rsp), %r13
	je	.LBB0_25
	movq	16(%rsp), %r9
	movq	%r9, %rax
	testb	$56, %r13b
	je	.LBB0_37
.LBB0_34:
	vbroadcastss	%xmm0, %ymm1
	.p2align	4
.LBB0_35:
	vmovups	(%r10,%rax,4), %ymm2
	vfmadd213ps	(%r12,%rax,4), %ymm1, %ymm2
	vmovups	%ymm2, (%r12,%rax,4)
	addq	$8, %rax
	cmpq	%rax, %rcx
	jne	.LBB0_35
	movq	48(%rsp), %rax
	movq	%rax, %r9
	cmpq	%rax, %r13
	je	.LBB0_25
.LBB0_37:
	movq	%r9, %rax
	testb	$7, %r13b
	je	.LBB0_40
	movq	8(%rsp), %r8
	movq	%r9, %rax
	.p2align	4
.LBB0_39:
	vmovss	(%r10,%rax,4), %xmm1
	incq	%r8
	vfmadd213ss	(%r12,%rax,4), %xmm0, %xmm1
	vmovss	%xmm1, (%r12,%rax,4)
	leaq	1(%rax), %rax
	jne	.LBB0_39
.LBB0_40:
	subq	%r13, %r9
	cmpq	$-8, %r9
	ja	.LBB0_25
	.p2align	4
.LBB0_41:
	vmovss	(%r10,%rax,4), %xmm1
	vfmadd213ss	(%r12,%rax,4), %xmm0, %xmm1
	vmovss	%xmm1, (%r12,%rax,4)
	vmovss	4(%r10,%rax,4), %xmm1
	vfmadd213ss	4(%r12,%rax,4), %xmm0, %xmm1
	vmovss	%xmm1, 4(%r12,%rax,4)
	vmovss	8(%r10,%rax,4), %xmm1
	vfmadd213ss	8(%r12,%rax,4), %xmm0, %xmm1
	vmovss	%xmm1, 8(%r12,%rax,4)
	vmovss	12(%r10,%rax,4), %xmm1
	vfmadd213ss	12(%r12,%rax,4), %xmm0, %xmm1
	vmovss	%xmm1, 12(%r12,%rax,4)
	vmovss	16(%r10,%rax,4), %xmm1
	vfmadd213ss	16(%r12,%rax,4), %xmm0, %xmm1
	vmovss	%xmm1, 16(%r12,%rax,4)
	vmovss	20(%r10,%rax,4), %xmm1
	vfmadd213ss	20(%r12,%rax,4), %xmm0, %xmm1
	vmovss	%xmm1, 20(%r12,%rax,4)
	vmovss	24(%r10,%rax,4), %xmm1
	vfmadd213ss	24(%r12,%rax,4), %xmm0, %xmm1
	vmovss	%xmm1, 24(%r12,%rax,4)
	vmovss	28(%r10,%rax,4), %xmm1
	vfmadd213ss	28(%r12,%rax,4), %xmm0, %xmm1
	vmovss	%xmm1, 28(%r12,%rax,4)
	addq	$8, %rax
	cmpq	%rax, %rbp
	jne	.LBB0_41
	jmp	.LBB0_25
	.p2align	4
.LBB0_42:
	cmpq	$0, 560(%rsp)
	movq	576(%rsp), %r14
	movq	264(%rsp), %rbp
	movq	256(%rsp), %r13
	movq	240(%rsp), %r8
	movq	232(%rsp), %r9
	movq	224(%rsp), %r10
	movq	216(%rsp), %rdi
	movq	208(%rsp), %r11
	movabsq	$.LCPI0_0, %rsi
	jle	.LBB0_55
	cmpq	$4, %r11
	jae	.LBB0_45
	xorl	%eax, %eax
	jmp	.LBB0_54
	.p2align	4
.LBB0_45:
	cmpq	$32, %r11
	jae	.LBB0_47
	xorl	%eax, %eax
	jmp	.LBB0_51
.LBB0_47:
	vbroadcastss	(%rsi), %zmm0
	movq	%r11, %rax
	andq	$-32, %rax
	vmulps	(%r12), %zmm0, %zmm1
	vmulps	64(%r12), %zmm0, %zmm2
	vmovups	%zmm1, (%r12)
	vmovups	%zmm2, 64(%r12)
	cmpq	$32, %rax
	je	.LBB0_49
	vmulps	128(%r12), %zmm0, %zmm1
	vmulps	192(%r12), %zmm0, %zmm0
	vmovups	%zmm1, 128(%r12)
	vmovups	%zmm0, 192(%r12)
.LBB0_49:
	cmpq	%rax, %r11
	je	.LBB0_55
	testb	$28, %r11b
	je	.LBB0_54
.LBB0_51:
	movq	%rdi, %rdx
	movq	%rax, %rcx
	movq	%r11, %rax
	andq	$-4, %rdx
	andq	$-4, %rax
	.p2align	4
.LBB0_52:
	vmovups	(%r12,%rcx,4), %xmm0
	vmulps	(%rsi){1to4}, %xmm0, %xmm0
	vmovups	%xmm0, (%r12,%rcx,4)
	addq	$4, %rcx
	cmpq	%rcx, %rdx
	jne	.LBB0_52
	cmpq	%rax, %r11
	je	.LBB0_55
	.p2align	4
.LBB0_54:
	vmovss	(%r12,%rax,4), %xmm0
	vmulss	(%rsi), %xmm0, %xmm0
	vmovss	%xmm0, (%r12,%rax,4)
	incq	%rax
	cmpq	%rax, %rdi
	jne	.LBB0_54
.LBB0_55:
	cmpq	$0, 568(%rsp)
	movq	344(%rsp), %rdi
	jle	.LBB0_58
	cmpq	$4, %r10
	jae	.LBB0_59
	vxorps	%xmm0, %xmm0, %xmm0
	xorl	%eax, %eax
	jmp	.LBB0_68
	.p2align	4
.LBB0_58:
	vxorps	%xmm0, %xmm0, %xmm0
	jmp	.LBB0_69
	.p2align	4
.LBB0_59:
	cmpq	$32, %r10
	jae	.LBB0_61
	vxorps	%xmm0, %xmm0, %xmm0
	xorl	%eax, %eax
	jmp	.LBB0_65
.LBB0_61:
	vmovups	(%r12), %zmm1
	movabsq	$.LCPI0_1, %rcx
	vmovups	64(%r12), %zmm0
	movq	%r10, %rax
	andq	$-32, %rax
	vaddps	(%rcx), %zmm1, %zmm1
	cmpq	$32, %rax
	je	.LBB0_63
	vaddps	128(%r12), %zmm1, %zmm1
	vaddps	192(%r12), %zmm0, %zmm0
.LBB0_63:
	vaddps	%zmm1, %zmm0, %zmm0
	vextractf64x4	$1, %zmm0, %ymm1
	vaddps	%zmm1, %zmm0, %zmm0
	vextractf128	$1, %ymm0, %xmm1
	vaddps	%xmm1, %xmm0, %xmm0
	vshufpd	$1, %xmm0, %xmm0, %xmm1
	vaddps	%xmm1, %xmm0, %xmm0
	vmovshdup	%xmm0, %xmm1
	vaddss	%xmm1, %xmm0, %xmm0
	cmpq	%rax, %r10
	je	.LBB0_69
	testb	$28, %r10b
	je	.LBB0_68
.LBB0_65:
	movabsq	$.LCPI0_2, %rsi
	movq	%r9, %rdx
	movq	%rax, %rcx
	movq	%r10, %rax
	andq	$-4, %rdx
	andq	$-4, %rax
	vblendps	$14, (%rsi), %xmm0, %xmm0
	.p2align	4
.LBB0_66:
	vaddps	(%r12,%rcx,4), %xmm0, %xmm0
	addq	$4, %rcx
	cmpq	%rcx, %rdx
	jne	.LBB0_66
	vshufpd	$1, %xmm0, %xmm0, %xmm1
	vaddps	%xmm1, %xmm0, %xmm0
	vmovshdup	%xmm0, %xmm1
	vaddss	%xmm1, %xmm0, %xmm0
	cmpq	%rax, %r10
	je	.LBB0_69
	.p2align	4
.LBB0_68:
	vaddss	(%r12,%rax,4), %xmm0, %xmm0
	incq	%rax
	cmpq	%rax, %r9
	jne	.LBB0_68
.LBB0_69:
	vmovaps	%xmm0, 48(%rsp)
	vxorps	%xmm0, %xmm0, %xmm0
	vmovups	%zmm0, 64(%rbx)
	vmovups	%zmm0, (%rbx)
	testq	%r14, %r14
	jle	.LBB0_76
	movq	40(%rsp), %rax
	vxorps	%xmm0, %xmm0, %xmm0
	vxorps	%xmm2, %xmm2, %xmm2
	vxorps	%xmm4, %xmm4, %xmm4
	vxorps	%xmm5, %xmm5, %xmm5
	vxorps	%xmm6, %xmm6, %xmm6
	vxorps	%xmm7, %xmm7, %xmm7
	vxorps	%xmm8, %xmm8, %xmm8
	vxorps	%xmm9, %xmm9, %xmm9
	vxorps	%xmm10, %xmm10, %xmm10
	vxorps	%xmm11, %xmm11, %xmm11
	vxorps	%xmm12, %xmm12, %xmm12
	vxorps	%xmm13, %xmm13, %xmm13
	vxorps	%xmm14, %xmm14, %xmm14
	vxorps	%xmm15, %xmm15, %xmm15
	vxorps	%xmm16, %xmm16, %xmm16
	vxorps	%xmm17, %xmm17, %xmm17
	vxorps	%xmm18, %xmm18, %xmm18
	vxorps	%xmm19, %xmm19, %xmm19
	vxorps	%xmm20, %xmm20, %xmm20
	vxorps	%xmm21, %xmm21, %xmm21
	vxorps	%xmm22, %xmm22, %xmm22
	vxorps	%xmm23, %xmm23, %xmm23
	vxorps	%xmm24, %xmm24, %xmm24
	vxorps	%xmm25, %xmm25, %xmm25
	vxorps	%xmm26, %xmm26, %xmm26
	vxorps	%xmm27, %xmm27, %xmm27
	vxorps	%xmm28, %xmm28, %xmm28
	vxorps	%xmm29, %xmm29, %xmm29
	vxorps	%xmm30, %xmm30, %xmm30
	vxorps	%xmm31, %xmm31, %xmm31
	vxorps	%xmm1, %xmm1, %xmm1
	vxorps	%xmm3, %xmm3, %xmm3
	xorl	%ecx, %ecx
	.p2align	4
.LBB0_71:
	movq	%rax, %rsi
	sarq	$63, %rsi
	vmovss	%xmm3, 8(%rsp)
	vmovaps	%xmm2, %xmm3
	andq	%rdi, %rsi
	addq	%rax, %rsi
	movq	%rsi, %rdx
	js	.LBB0_74
.LBB0_72:
	vmovaps	%xmm3, %xmm2
	vmovss	8(%rsp), %xmm3
	vmovss	%xmm0, 16(%rsp)
	cmpq	%rdi, %rsi
	jge	.LBB0_75
.LBB0_73:
	vmovss	(%r12,%rcx,4), %xmm0
	incq	%rcx
	addq	$384, %rax
	vfmadd231ss	(%r15,%rdx,4), %xmm0, %xmm3
	vmovss	%xmm3, (%rbx)
	vfmadd231ss	4(%r15,%rdx,4), %xmm0, %xmm1
	vmovss	%xmm1, 4(%rbx)
	vfmadd231ss	8(%r15,%rdx,4), %xmm0, %xmm31
	vmovss	%xmm31, 8(%rbx)
	vfmadd231ss	12(%r15,%rdx,4), %xmm0, %xmm30
	vmovss	%xmm30, 12(%rbx)
	vfmadd231ss	16(%r15,%rdx,4), %xmm0, %xmm29
	vmovss	%xmm29, 16(%rbx)
	vfmadd231ss	20(%r15,%rdx,4), %xmm0, %xmm28
	vmovss	%xmm28, 20(%rbx)
	vfmadd231ss	24(%r15,%rdx,4), %xmm0, %xmm27
	vmovss	%xmm27, 24(%rbx)
	vfmadd231ss	28(%r15,%rdx,4), %xmm0, %xmm26
	vmovss	%xmm26, 28(%rbx)
	vfmadd231ss	32(%r15,%rdx,4), %xmm0, %xmm25
	vmovss	%xmm25, 32(%rbx)
	vfmadd231ss	36(%r15,%rdx,4), %xmm0, %xmm24
	vmovss	%xmm24, 36(%rbx)
	vfmadd231ss	40(%r15,%rdx,4), %xmm0, %xmm23
	vmovss	%xmm23, 40(%rbx)
	vfmadd231ss	44(%r15,%rdx,4), %xmm0, %xmm22
	vmovss	%xmm22, 44(%rbx)
	vfmadd231ss	48(%r15,%rdx,4), %xmm0, %xmm21
	vmovss	%xmm21, 48(%rbx)
	vfmadd231ss	52(%r15,%rdx,4), %xmm0, %xmm20
	vmovss	%xmm20, 52(%rbx)
	vfmadd231ss	56(%r15,%rdx,4), %xmm0, %xmm19
	vmovss	%xmm19, 56(%rbx)
	vfmadd231ss	60(%r15,%rdx,4), %xmm0, %xmm18
	vmovss	%xmm18, 60(%rbx)
	vfmadd231ss	64(%r15,%rdx,4), %xmm0, %xmm17
	vmovss	%xmm17, 64(%rbx)
	vfmadd231ss	68(%r15,%rdx,4), %xmm0, %xmm16
	vmovss	%xmm16, 68(%rbx)
	vfmadd231ss	72(%r15,%rdx,4), %xmm0, %xmm15
	vmovss	%xmm15, 72(%rbx)
	vfmadd231ss	76(%r15,%rdx,4), %xmm0, %xmm14
	vmovss	%xmm14, 76(%rbx)
	vfmadd231ss	80(%r15,%rdx,4), %xmm0, %xmm13
	vmovss	%xmm13, 80(%rbx)
	vfmadd231ss	84(%r15,%rdx,4), %xmm0, %xmm12
	vmovss	%xmm12, 84(%rbx)
	vfmadd231ss	88(%r15,%rdx,4), %xmm0, %xmm11
	vmovss	%xmm11, 88(%rbx)
	vfmadd231ss	92(%r15,%rdx,4), %xmm0, %xmm10
	vmovss	%xmm10, 92(%rbx)
	vfmadd231ss	96(%r15,%rdx,4), %xmm0, %xmm9
	vmovss	%xmm9, 96(%rbx)
	vfmadd231ss	100(%r15,%rdx,4), %xmm0, %xmm8
	vmovss	%xmm8, 100(%rbx)
	vfmadd231ss	104(%r15,%rdx,4), %xmm0, %xmm7
	vmovss	%xmm7, 104(%rbx)
	vfmadd231ss	108(%r15,%rdx,4), %xmm0, %xmm6
	vmovss	%xmm6, 108(%rbx)
	vfmadd231ss	112(%r15,%rdx,4), %xmm0, %xmm5
	vmovss	%xmm5, 112(%rbx)
	vfmadd231ss	116(%r15,%rdx,4), %xmm0, %xmm4
	vmovss	%xmm4, 116(%rbx)
	vfmadd231ss	120(%r15,%rdx,4), %xmm0, %xmm2
	vmovss	%xmm2, 8(%rsp)
	vmovss	%xmm2, 120(%rbx)
	vmovss	16(%rsp), %xmm2
	vfmadd231ss	124(%r15,%rdx,4), %xmm0, %xmm2
	vmovss	%xmm2, 124(%rbx)
	vmovaps	%xmm2, %xmm0
	vmovss	8(%rsp), %xmm2
	cmpq	%rcx, %r8
	jne	.LBB0_71
	jmp	.LBB0_76
.LBB0_74:
	xorl	%edx, %edx
	jmp	.LBB0_72
.LBB0_75:
	movq	%rdi, %rdx
	jmp	.LBB0_73
	.p2align	4
.LBB0_76:
	movq	%r13, %rax
	shlq	$5, %rax
	addq	192(%rsp), %rax
	cmpq	400(%rsp), %rax
	jge	.LBB0_79
.LBB0_77:
	vmovss	(%rbx), %xmm0
	vmovaps	48(%rsp), %xmm1
	movq	392(%rsp), %rcx
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, (%rcx,%rax,4)
	vmovss	4(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 4(%rcx,%rax,4)
	vmovss	8(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 8(%rcx,%rax,4)
	vmovss	12(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 12(%rcx,%rax,4)
	vmovss	16(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 16(%rcx,%rax,4)
	vmovss	20(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 20(%rcx,%rax,4)
	vmovss	24(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 24(%rcx,%rax,4)
	vmovss	28(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 28(%rcx,%rax,4)
	vmovss	32(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 32(%rcx,%rax,4)
	vmovss	36(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 36(%rcx,%rax,4)
	vmovss	40(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 40(%rcx,%rax,4)
	vmovss	44(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 44(%rcx,%rax,4)
	vmovss	48(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 48(%rcx,%rax,4)
	vmovss	52(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 52(%rcx,%rax,4)
	vmovss	56(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 56(%rcx,%rax,4)
	vmovss	60(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 60(%rcx,%rax,4)
	vmovss	64(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 64(%rcx,%rax,4)
	vmovss	68(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 68(%rcx,%rax,4)
	vmovss	72(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 72(%rcx,%rax,4)
	vmovss	76(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 76(%rcx,%rax,4)
	vmovss	80(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 80(%rcx,%rax,4)
	vmovss	84(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 84(%rcx,%rax,4)
	vmovss	88(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 88(%rcx,%rax,4)
	vmovss	92(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 92(%rcx,%rax,4)
	vmovss	96(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 96(%rcx,%rax,4)
	vmovss	100(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 100(%rcx,%rax,4)
	vmovss	104(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 104(%rcx,%rax,4)
	vmovss	108(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 108(%rcx,%rax,4)
	vmovss	112(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 112(%rcx,%rax,4)
	vmovss	116(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 116(%rcx,%rax,4)
	vmovss	120(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 120(%rcx,%rax,4)
	vmovss	124(%rbx), %xmm0
	vdivss	%xmm1, %xmm0, %xmm0
	vmovss	%xmm0, 124(%rcx,%rax,4)
	movabsq	$logf, %rax
	vmovaps	%xmm1, %xmm0
	vzeroupper
	callq	*%rax
	vaddss	36(%rsp), %xmm0, %xmm0
	movq	272(%rsp), %rdx
	movq	184(%rsp), %rax
	movq	248(%rsp), %rcx
	movq	536(%rsp), %r8
	movq	344(%rsp), %r9
	incq	%rbp
	incq	%rdx
	movq	%rcx, %rdi
	vmovss	%xmm0, (%rax,%r13,4)
	cmpq	$64, %rcx
	jne	.LBB0_20
	jmp	.LBB0_12
.LBB0_78:
	movq	%r9, %r10
	cmpq	%rax, %r8
	cmovlq	%r8, %rax
	testq	%rax, %rax
	jg	.LBB0_22
	jmp	.LBB0_23
.LBB0_79:
	movq	400(%rsp), %rax
	jmp	.LBB0_77
.LBB0_80:
	movq	72(%rsp), %rdi
	movabsq	$NRT_decref, %rbx
	callq	*%rbx
	movq	416(%rsp), %rdi
	callq	*%rbx
	movq	360(%rsp), %rdi
	callq	*%rbx
	movq	96(%rsp), %rdi
	callq	*%rbx
	movq	88(%rsp), %rdi
	callq	*%rbx
	movq	64(%rsp), %rdi
	callq	*%rbx
	movq	80(%rsp), %rax
	movq	$0, (%rax)
	xorl	%eax, %eax
.LBB0_81:
	addq	$280, %rsp
	.cfi_def_cfa_offset 56
	popq	%rbx
	.cfi_def_cfa_offset 48
	popq	%r12
	.cfi_def_cfa_offset 40
	popq	%r13
	.cfi_def_cfa_offset 32
	popq	%r14
	.cfi_def_cfa_offset 24
	popq	%r15
	.cfi_def_cfa_offset 16
	popq	%rbp
	.cfi_def_cfa_offset 8
	retq
.LBB0_82:
	.cfi_def_cfa_offset 336
	movabsq	$.const.picklebuf.331b8563bdb9dac81b38422273052c486fc1706b, %rax
	jmp	.LBB0_89
.LBB0_83:
	movabsq	$.const.picklebuf.58e14eccb507b1e0206981740223e685cb8c3c57, %rax
	jmp	.LBB0_89
.LBB0_88:
	movabsq	$.const.picklebuf.ba289d81f05c7020f3477c15734804df65abe209, %rax
.LBB0_89:
	movq	%rax, (%rbx)
	movl	$1, %eax
	jmp	.LBB0_81
.Lfunc_end0:
	.size	_ZN13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx, .Lfunc_end0-_ZN13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx
	.cfi_endproc

	.globl	_ZN7cpython13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx
	.p2align	4
	.type	_ZN7cpython13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx,@function
_ZN7cpython13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	pushq	%r15
	.cfi_def_cfa_offset 24
	pushq	%r14
	.cfi_def_cfa_offset 32
	pushq	%r13
	.cfi_def_cfa_offset 40
	pushq	%r12
	.cfi_def_cfa_offset 48
	pushq	%rbx
	.cfi_def_cfa_offset 56
	subq	$504, %rsp
	.cfi_def_cfa_offset 560
	.cfi_offset %rbx, -56
	.cfi_offset %r12, -48
	.cfi_offset %r13, -40
	.cfi_offset %r14, -32
	.cfi_offset %r15, -24
	.cfi_offset %rbp, -16
	movq	%rsi, %rdi
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	leaq	160(%rsp), %rbp
	xorl	%ebx, %ebx
	movl	$21, %edx
	movl	$21, %ecx
	leaq	256(%rsp), %r13
	leaq	264(%rsp), %r12
	leaq	272(%rsp), %r15
	leaq	280(%rsp), %r14
	leaq	288(%rsp), %r11
	leaq	296(%rsp), %r10
	movabsq	$.const.kernel, %rsi
	leaq	320(%rsp), %r8
	leaq	312(%rsp), %r9
	xorl	%eax, %eax
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	leaq	176(%rsp), %rbp
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	leaq	192(%rsp), %rbp
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	leaq	208(%rsp), %rbp
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	leaq	224(%rsp), %rbp
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	leaq	240(%rsp), %rbp
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	leaq	256(%rsp), %rbp
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	leaq	272(%rsp), %rbp
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	leaq	288(%rsp), %rbp
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	leaq	304(%rsp), %rbp
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	leaq	320(%rsp), %rbp
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	leaq	336(%rsp), %rbp
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	pushq	%r11
	.cfi_adjust_cfa_offset 8
	pushq	%r10
	.cfi_adjust_cfa_offset 8
	leaq	448(%rsp), %r10
	pushq	%r10
	.cfi_adjust_cfa_offset 8
	movabsq	$PyArg_UnpackTuple, %r10
	callq	*%r10
	addq	$160, %rsp
	.cfi_adjust_cfa_offset -160
	movq	$0, 144(%rsp)
	movq	$0, 96(%rsp)
	testl	%eax, %eax
	je	.LBB1_85
	movabsq	$_ZN08NumbaEnv13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx, %rax
	cmpq	$0, (%rax)
	je	.LBB1_2
	movq	312(%rsp), %rdi
	movabsq	$NRT_adapt_ndarray_from_python, %rbx
	leaq	384(%rsp), %rsi
	vxorps	%xmm0, %xmm0, %xmm0
	vmovups	%ymm0, 384(%rsp)
	vmovups	%ymm0, 408(%rsp)
	vzeroupper
	callq	*%rbx
	testl	%eax, %eax
	jne	.LBB1_6
	cmpq	$4, 408(%rsp)
	jne	.LBB1_6
	movq	304(%rsp), %rdi
	movq	384(%rsp), %r12
	movq	416(%rsp), %r14
	movq	424(%rsp), %r13
	leaq	320(%rsp), %rsi
	vxorps	%xmm0, %xmm0, %xmm0
	vmovups	%ymm0, 320(%rsp)
	vmovups	%ymm0, 344(%rsp)
	vzeroupper
	callq	*%rbx
	testl	%eax, %eax
	jne	.LBB1_9
	cmpq	$4, 344(%rsp)
	jne	.LBB1_9
	movq	360(%rsp), %rax
	movq	296(%rsp), %rdi
	movq	320(%rsp), %r15
	movq	352(%rsp), %rbp
	leaq	448(%rsp), %rsi
	vxorps	%xmm0, %xmm0, %xmm0
	vmovups	%ymm0, 448(%rsp)
	vmovups	%ymm0, 472(%rsp)
	movq	%rax, 136(%rsp)
	vzeroupper
	callq	*%rbx
	testl	%eax, %eax
	jne	.LBB1_14
	cmpq	$4, 472(%rsp)
	jne	.LBB1_14
	movq	448(%rsp), %rax
	movq	480(%rsp), %rcx
	movq	288(%rsp), %rdi
	movq	%rax, 72(%rsp)
	movabsq	$PyNumber_Long, %rax
	movq	%rcx, 104(%rsp)
	callq	*%rax
	movq	%rax, %rbx
	movabsq	$PyLong_AsLongLong, %rax
	movabsq	$Py_DecRef, %rcx
	movq	%r12, 88(%rsp)
	movq	%r15, 80(%rsp)
	movq	%r14, 128(%rsp)
	movq	%r13, 120(%rsp)
	movq	%rbp, 112(%rsp)
	testq	%rbx, %rbx
	je	.LBB1_16
	movq	%rbx, %rdi
	movq	%rcx, %r12
	callq	*%rax
	movq	%rbx, %rdi
	movq	%rax, 64(%rsp)
	callq	*%r12
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
.LBB1_21:
	movq	280(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_22
	movabsq	$PyLong_AsLongLong, %r14
	movq	%rax, %rdi
	movq	%rax, %rbx
	callq	*%r14
	movq	%rbx, %rdi
	movq	%rax, 56(%rsp)
	callq	*%r12
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
.LBB1_25:
	movq	272(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_26
	movabsq	$PyLong_AsLongLong, %r14
	movq	%rax, %rdi
	movq	%rax, %rbx
	callq	*%r14
	movq	%rbx, %rdi
	movq	%rax, 48(%rsp)
	callq	*%r12
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
.LBB1_29:
	movq	264(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_30
	movabsq	$PyLong_AsLongLong, %r14
	movq	%rax, %rdi
	movq	%rax, %rbx
	callq	*%r14
	movq	%rbx, %rdi
	movq	%rax, 40(%rsp)
	callq	*%r12
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
.LBB1_33:
	movq	256(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_35
	movabsq	$PyLong_AsLongLong, %r14
	movq	%rax, %rdi
	movq	%rax, %rbx
	callq	*%r14
	movq	%rbx, %rdi
	callq	*%r12
.LBB1_35:
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
	movq	248(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_38
	movabsq	$PyLong_AsLongLong, %r14
	movq	%rax, %rdi
	movq	%rax, %rbx
	callq	*%r14
	movq	%rbx, %rdi
	callq	*%r12
.LBB1_38:
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
	movq	240(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_41
	movabsq	$PyLong_AsLongLong, %r14
	movq	%rax, %rdi
	movq	%rax, %rbx
	callq	*%r14
	movq	%rbx, %rdi
	callq	*%r12
.LBB1_41:
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
	movq	232(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_43
	movabsq	$PyLong_AsLongLong, %r14
	movq	%rax, %rdi
	movq	%rax, %rbx
	callq	*%r14
	movq	%rbx, %rdi
	movq	%rax, 32(%rsp)
	callq	*%r12
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
.LBB1_46:
	movq	224(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_47
	movabsq	$PyLong_AsLongLong, %r14
	movq	%rax, %rdi
	movq	%rax, %rbx
	callq	*%r14
	movq	%rbx, %rdi
	movq	%rax, 24(%rsp)
	callq	*%r12
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
.LBB1_50:
	movq	216(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_51
	movabsq	$PyLong_AsLongLong, %r14
	movq	%rax, %rdi
	movq	%rax, %rbx
	callq	*%r14
	movq	%rbx, %rdi
	movq	%rax, 16(%rsp)
	callq	*%r12
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
.LBB1_54:
	movq	208(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_55
	movabsq	$PyLong_AsLongLong, %rbx
	movq	%rax, %rdi
	movq	%rax, %r14
	callq	*%rbx
	movq	%r14, %rdi
	movq	%rax, 8(%rsp)
	callq	*%r12
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
.LBB1_58:
	movq	200(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_59
	movabsq	$PyLong_AsLongLong, %rbx
	movq	%rax, %rdi
	movq	%rax, %r15
	callq	*%rbx
	movq	%r15, %rdi
	movq	%rax, %r14
	callq	*%r12
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
.LBB1_62:
	movq	192(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_63
	movabsq	$PyLong_AsLongLong, %rbx
	movq	%rax, %rdi
	movq	%rax, %r13
	callq	*%rbx
	movq	%r13, %rdi
	movq	%rax, %r15
	callq	*%r12
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
.LBB1_66:
	movq	184(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_67
	movabsq	$PyLong_AsLongLong, %rbx
	movq	%rax, %rdi
	movq	%rax, %rbp
	callq	*%rbx
	movq	%rbp, %rdi
	movq	%rax, %r13
	callq	*%r12
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
.LBB1_70:
	movq	176(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	movq	%r12, %rbx
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_71
	movq	%rax, %r12
	movq	%rax, %rdi
	movabsq	$PyLong_AsLongLong, %rax
	callq	*%rax
	movq	%r12, %rdi
	movq	%rax, %rbp
	callq	*%rbx
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
.LBB1_74:
	movq	168(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_76
	movq	%rax, %r12
	movq	%rax, %rdi
	movabsq	$PyLong_AsLongLong, %rax
	callq	*%rax
	movq	%r12, %rdi
	callq	*%rbx
.LBB1_76:
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
	movq	160(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_79
	movq	%rax, %r12
	movq	%rax, %rdi
	movabsq	$PyLong_AsLongLong, %rax
	callq	*%rax
	movq	%r12, %rdi
	callq	*%rbx
.LBB1_79:
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
	movq	152(%rsp), %rdi
	movabsq	$PyNumber_Long, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_82
	movq	%rax, %r12
	movq	%rax, %rdi
	movabsq	$PyLong_AsLongLong, %rax
	callq	*%rax
	movq	%r12, %rdi
	callq	*%rbx
.LBB1_82:
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	jne	.LBB1_17
	subq	$288, %rsp
	.cfi_adjust_cfa_offset 288
	movq	304(%rsp), %rsi
	movq	312(%rsp), %rdx
	movq	296(%rsp), %rax
	movq	%r13, 240(%rsp)
	movq	%r15, 232(%rsp)
	movq	360(%rsp), %r13
	movq	368(%rsp), %r12
	movq	376(%rsp), %r15
	leaq	432(%rsp), %rdi
	movq	%rbp, 248(%rsp)
	movq	%r14, 224(%rsp)
	movq	%rsi, 208(%rsp)
	movq	320(%rsp), %rsi
	movq	%rdx, 200(%rsp)
	movq	328(%rsp), %rdx
	movq	%rax, 216(%rsp)
	movabsq	$_ZN13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx, %rax
	movq	%r13, 80(%rsp)
	movq	%r12, 24(%rsp)
	movq	%rsi, 192(%rsp)
	movq	336(%rsp), %rsi
	movq	%rdx, 160(%rsp)
	movq	344(%rsp), %rdx
	movq	%rsi, 152(%rsp)
	movq	352(%rsp), %rsi
	movq	%rdx, 144(%rsp)
	movq	392(%rsp), %rdx
	movq	%rsi, 136(%rsp)
	movq	424(%rsp), %rsi
	movq	%rdx, 112(%rsp)
	movq	400(%rsp), %rdx
	movq	%rsi, 64(%rsp)
	movq	408(%rsp), %rsi
	movq	%rdx, 56(%rsp)
	movq	416(%rsp), %rdx
	movq	%rsi, 8(%rsp)
	leaq	384(%rsp), %rsi
	movq	%rdx, (%rsp)
	movq	%r15, %rdx
	callq	*%rax
	addq	$288, %rsp
	.cfi_adjust_cfa_offset -288
	movq	96(%rsp), %rbx
	movabsq	$NRT_decref, %r14
	movq	%r15, %rdi
	movl	%eax, %ebp
	callq	*%r14
	movq	%r12, %rdi
	callq	*%r14
	movq	%r13, %rdi
	callq	*%r14
	testl	%ebp, %ebp
	jne	.LBB1_86
	movabsq	$_Py_NoneStruct, %rbx
	movabsq	$Py_IncRef, %rax
	movq	%rbx, %rdi
	callq	*%rax
.LBB1_85:
	movq	%rbx, %rax
	addq	$504, %rsp
	.cfi_def_cfa_offset 56
	popq	%rbx
	.cfi_def_cfa_offset 48
	popq	%r12
	.cfi_def_cfa_offset 40
	popq	%r13
	.cfi_def_cfa_offset 32
	popq	%r14
	.cfi_def_cfa_offset 24
	popq	%r15
	.cfi_def_cfa_offset 16
	popq	%rbp
	.cfi_def_cfa_offset 8
	retq
.LBB1_86:
	.cfi_def_cfa_offset 560
	movabsq	$PyErr_Clear, %rax
	callq	*%rax
	movl	8(%rbx), %esi
	movq	(%rbx), %rdi
	cmpl	$0, 32(%rbx)
	jle	.LBB1_89
	movslq	%esi, %rsi
	movabsq	$PyBytes_FromStringAndSize, %rax
	callq	*%rax
	movq	16(%rbx), %rdi
	movq	%rax, %r14
	callq	*24(%rbx)
	testq	%rax, %rax
	je	.LBB1_88
	movabsq	$numba_runtime_build_excinfo_struct, %rcx
	movq	%r14, %rdi
	movq	%rax, %rsi
	callq	*%rcx
	movabsq	$NRT_Free, %r15
	movq	%rbx, %rdi
	movq	%rax, %r14
	callq	*%r15
	jmp	.LBB1_90
.LBB1_2:
	movabsq	$PyExc_RuntimeError, %rdi
	movabsq	$".const.missing Environment: _ZN08NumbaEnv13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx", %rsi
	jmp	.LBB1_3
.LBB1_6:
	movabsq	$PyExc_TypeError, %rdi
	movabsq	$".const.can't unbox array from PyObject into native value.  The object maybe of a different type", %rsi
.LBB1_3:
	movabsq	$PyErr_SetString, %rax
	callq	*%rax
	xorl	%ebx, %ebx
	jmp	.LBB1_85
.LBB1_9:
	movabsq	$PyExc_TypeError, %rdi
	movabsq	$".const.can't unbox array from PyObject into native value.  The object maybe of a different type", %rsi
	movabsq	$PyErr_SetString, %rax
	callq	*%rax
	jmp	.LBB1_10
.LBB1_14:
	movabsq	$PyExc_TypeError, %rdi
	movabsq	$".const.can't unbox array from PyObject into native value.  The object maybe of a different type", %rsi
	movabsq	$PyErr_SetString, %rax
	callq	*%rax
	jmp	.LBB1_18
.LBB1_16:
	movq	$0, 64(%rsp)
	movq	%rcx, %r12
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_21
	jmp	.LBB1_17
.LBB1_22:
	movq	$0, 56(%rsp)
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_25
	jmp	.LBB1_17
.LBB1_26:
	movq	$0, 48(%rsp)
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_29
	jmp	.LBB1_17
.LBB1_30:
	movq	$0, 40(%rsp)
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_33
	jmp	.LBB1_17
.LBB1_43:
	movq	$0, 32(%rsp)
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_46
	jmp	.LBB1_17
.LBB1_47:
	movq	$0, 24(%rsp)
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_50
	jmp	.LBB1_17
.LBB1_51:
	movq	$0, 16(%rsp)
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_54
	jmp	.LBB1_17
.LBB1_55:
	movq	$0, 8(%rsp)
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_58
	jmp	.LBB1_17
.LBB1_59:
	xorl	%r14d, %r14d
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_62
	jmp	.LBB1_17
.LBB1_63:
	xorl	%r15d, %r15d
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_66
	jmp	.LBB1_17
.LBB1_67:
	xorl	%r13d, %r13d
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_70
	jmp	.LBB1_17
.LBB1_71:
	xorl	%ebp, %ebp
	movabsq	$PyErr_Occurred, %rax
	callq	*%rax
	testq	%rax, %rax
	je	.LBB1_74
.LBB1_17:
	movq	72(%rsp), %rdi
	movabsq	$NRT_decref, %rax
	callq	*%rax
	movq	88(%rsp), %r12
	movq	80(%rsp), %r15
.LBB1_18:
	movabsq	$NRT_decref, %rax
	movq	%r15, %rdi
	callq	*%rax
.LBB1_10:
	movabsq	$NRT_decref, %rax
	movq	%r12, %rdi
.LBB1_11:
	callq	*%rax
	xorl	%ebx, %ebx
	jmp	.LBB1_85
.LBB1_89:
	movq	16(%rbx), %rdx
	movabsq	$numba_unpickle, %rax
	callq	*%rax
	movq	%rax, %r14
.LBB1_90:
	testq	%r14, %r14
	je	.LBB1_91
	movabsq	$numba_do_raise, %rax
	movq	%r14, %rdi
	jmp	.LBB1_11
.LBB1_91:
	xorl	%ebx, %ebx
	jmp	.LBB1_85
.LBB1_88:
	movabsq	$PyExc_RuntimeError, %rdi
	movabsq	$".const.Error creating Python tuple from runtime exception arguments", %rsi
	jmp	.LBB1_3
.Lfunc_end1:
	.size	_ZN7cpython13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx, .Lfunc_end1-_ZN7cpython13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx
	.cfi_endproc

	.globl	cfunc._ZN13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx
	.p2align	4
	.type	cfunc._ZN13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx,@function
cfunc._ZN13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx:
	.cfi_startproc
	pushq	%r15
	.cfi_def_cfa_offset 16
	pushq	%r14
	.cfi_def_cfa_offset 24
	pushq	%rbx
	.cfi_def_cfa_offset 32
	subq	$304, %rsp
	.cfi_def_cfa_offset 336
	.cfi_offset %rbx, -32
	.cfi_offset %r14, -24
	.cfi_offset %r15, -16
	vmovups	376(%rsp), %xmm0
	vmovups	456(%rsp), %ymm1
	vmovups	512(%rsp), %zmm2
	movq	344(%rsp), %rax
	movq	400(%rsp), %rcx
	movq	432(%rsp), %rsi
	movq	%rdi, %rdx
	movq	$0, 296(%rsp)
	movq	$0, 288(%rsp)
	leaq	296(%rsp), %rdi
	vmovups	%zmm2, 192(%rsp)
	vmovups	%ymm1, 136(%rsp)
	movq	%rsi, 112(%rsp)
	movq	%rcx, 80(%rsp)
	vmovups	%xmm0, 56(%rsp)
	movq	%rax, 24(%rsp)
	movabsq	$_ZN13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx, %rax
	leaq	288(%rsp), %rsi
	movq	%r9, 8(%rsp)
	movq	%r8, (%rsp)
	vzeroupper
	callq	*%rax
	movl	%eax, %ecx
	movq	288(%rsp), %rbx
	movq	296(%rsp), %rax
	movl	$0, 284(%rsp)
	testl	%ecx, %ecx
	jne	.LBB2_1
.LBB2_7:
	addq	$304, %rsp
	.cfi_def_cfa_offset 32
	popq	%rbx
	.cfi_def_cfa_offset 24
	popq	%r14
	.cfi_def_cfa_offset 16
	popq	%r15
	.cfi_def_cfa_offset 8
	retq
.LBB2_1:
	.cfi_def_cfa_offset 336
	movabsq	$numba_gil_ensure, %r14
	leaq	284(%rsp), %rdi
	movq	%rax, %r15
	callq	*%r14
	movabsq	$PyErr_Clear, %rax
	callq	*%rax
	movl	8(%rbx), %esi
	movq	(%rbx), %rdi
	cmpl	$0, 32(%rbx)
	jle	.LBB2_4
	movslq	%esi, %rsi
	movabsq	$PyBytes_FromStringAndSize, %rax
	callq	*%rax
	movq	16(%rbx), %rdi
	movq	%rax, %r14
	callq	*24(%rbx)
	testq	%rax, %rax
	je	.LBB2_3
	movabsq	$numba_runtime_build_excinfo_struct, %rcx
	movq	%r14, %rdi
	movq	%rax, %rsi
	callq	*%rcx
	movq	%rax, %r14
	movabsq	$NRT_Free, %rax
	movq	%rbx, %rdi
	callq	*%rax
	jmp	.LBB2_5
.LBB2_4:
	movq	16(%rbx), %rdx
	movabsq	$numba_unpickle, %rax
	callq	*%rax
	movq	%rax, %r14
.LBB2_5:
	testq	%r14, %r14
	je	.LBB2_6
	movabsq	$numba_do_raise, %rax
	movq	%r14, %rdi
	callq	*%rax
.LBB2_6:
	movabsq	$".const.<numba.core.cpu.CPUContext>", %rdi
	movabsq	$PyUnicode_FromString, %rax
	callq	*%rax
	movabsq	$PyErr_WriteUnraisable, %r14
	movq	%rax, %rbx
	movq	%rbx, %rdi
	callq	*%r14
	movabsq	$Py_DecRef, %rax
	movq	%rbx, %rdi
	callq	*%rax
	movabsq	$numba_gil_release, %rax
	leaq	284(%rsp), %rdi
	callq	*%rax
	movq	%r15, %rax
	jmp	.LBB2_7
.LBB2_3:
	movabsq	$PyExc_RuntimeError, %rdi
	movabsq	$".const.Error creating Python tuple from runtime exception arguments.1", %rsi
	movabsq	$PyErr_SetString, %rax
	callq	*%rax
	xorl	%eax, %eax
	jmp	.LBB2_7
.Lfunc_end2:
	.size	cfunc._ZN13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx, .Lfunc_end2-cfunc._ZN13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx
	.cfi_endproc

	.weak	NRT_incref
	.p2align	4
	.type	NRT_incref,@function
NRT_incref:
	testq	%rdi, %rdi
	je	.LBB3_2
	lock		incq	(%rdi)
.LBB3_2:
	retq
.Lfunc_end3:
	.size	NRT_incref, .Lfunc_end3-NRT_incref

	.weak	NRT_decref
	.p2align	4
	.type	NRT_decref,@function
NRT_decref:
	.cfi_startproc
	testq	%rdi, %rdi
	je	.LBB4_2
	#MEMBARRIER
	lock		decq	(%rdi)
	je	.LBB4_3
.LBB4_2:
	retq
.LBB4_3:
	movabsq	$NRT_MemInfo_call_dtor, %rax
	#MEMBARRIER
	jmpq	*%rax
.Lfunc_end4:
	.size	NRT_decref, .Lfunc_end4-NRT_decref
	.cfi_endproc

	.type	.const.kernel,@object
	.section	.lrodata,"al",@progbits
.const.kernel:
	.asciz	"kernel"
	.size	.const.kernel, 7

	.type	_ZN08NumbaEnv13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx,@object
	.comm	_ZN08NumbaEnv13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx,8,8
	.type	".const.missing Environment: _ZN08NumbaEnv13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx",@object
	.p2align	4, 0x0
".const.missing Environment: _ZN08NumbaEnv13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx":
	.asciz	"missing Environment: _ZN08NumbaEnv13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx"
	.size	".const.missing Environment: _ZN08NumbaEnv13_3cdynamic_3e6kernelB2v1B96c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDOciiHmaAA_3d_3dE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedE5ArrayIfLi1E1C7mutable7alignedExxxxxxxxxxxxxxxxxx", 272

	.type	".const.can't unbox array from PyObject into native value.  The object maybe of a different type",@object
	.p2align	4, 0x0
".const.can't unbox array from PyObject into native value.  The object maybe of a different type":
	.asciz	"can't unbox array from PyObject into native value.  The object maybe of a different type"
	.size	".const.can't unbox array from PyObject into native value.  The object maybe of a different type", 89

	.type	".const.Error creating Python tuple from runtime exception arguments",@object
	.p2align	4, 0x0
".const.Error creating Python tuple from runtime exception arguments":
	.asciz	"Error creating Python tuple from runtime exception arguments"
	.size	".const.Error creating Python tuple from runtime exception arguments", 61

	.type	".const.Error creating Python tuple from runtime exception arguments.1",@object
	.p2align	4, 0x0
".const.Error creating Python tuple from runtime exception arguments.1":
	.asciz	"Error creating Python tuple from runtime exception arguments"
	.size	".const.Error creating Python tuple from runtime exception arguments.1", 61

	.type	".const.<numba.core.cpu.CPUContext>",@object
	.p2align	4, 0x0
".const.<numba.core.cpu.CPUContext>":
	.asciz	"<numba.core.cpu.CPUContext>"
	.size	".const.<numba.core.cpu.CPUContext>", 28

	.type	_ZN08NumbaEnv5numba2np8arrayobj11ol_np_empty12_3clocals_3e4implB2v2B104c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDGeMlAA1HhiSYJYmAA_3d_3dEx18class_28float32_29,@object
	.comm	_ZN08NumbaEnv5numba2np8arrayobj11ol_np_empty12_3clocals_3e4implB2v2B104c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDGeMlAA1HhiSYJYmAA_3d_3dEx18class_28float32_29,8,8
	.type	.const.pickledata.331b8563bdb9dac81b38422273052c486fc1706b,@object
	.p2align	4, 0x0
.const.pickledata.331b8563bdb9dac81b38422273052c486fc1706b:
	.ascii	"\200\004\225B\000\000\000\000\000\000\000\214\bbuiltins\224\214\nValueError\224\223\224\214\037negative dimensions not allowed\224\205\224N\207\224."
	.size	.const.pickledata.331b8563bdb9dac81b38422273052c486fc1706b, 77

	.type	.const.pickledata.331b8563bdb9dac81b38422273052c486fc1706b.sha1,@object
	.p2align	4, 0x0
.const.pickledata.331b8563bdb9dac81b38422273052c486fc1706b.sha1:
	.ascii	"3\033\205c\275\271\332\310\0338B\"s\005,Ho\301pk"
	.size	.const.pickledata.331b8563bdb9dac81b38422273052c486fc1706b.sha1, 20

	.type	.const.picklebuf.331b8563bdb9dac81b38422273052c486fc1706b,@object
	.p2align	4, 0x0
.const.picklebuf.331b8563bdb9dac81b38422273052c486fc1706b:
	.quad	.const.pickledata.331b8563bdb9dac81b38422273052c486fc1706b
	.long	77
	.zero	4
	.quad	.const.pickledata.331b8563bdb9dac81b38422273052c486fc1706b.sha1
	.quad	0
	.long	0
	.zero	4
	.size	.const.picklebuf.331b8563bdb9dac81b38422273052c486fc1706b, 40

	.type	.const.pickledata.58e14eccb507b1e0206981740223e685cb8c3c57,@object
	.p2align	4, 0x0
.const.pickledata.58e14eccb507b1e0206981740223e685cb8c3c57:
	.ascii	"\200\004\225~\000\000\000\000\000\000\000\214\bbuiltins\224\214\nValueError\224\223\224\214[array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size.\224\205\224N\207\224."
	.size	.const.pickledata.58e14eccb507b1e0206981740223e685cb8c3c57, 137

	.type	.const.pickledata.58e14eccb507b1e0206981740223e685cb8c3c57.sha1,@object
	.p2align	4, 0x0
.const.pickledata.58e14eccb507b1e0206981740223e685cb8c3c57.sha1:
	.ascii	"X\341N\314\265\007\261\340 i\201t\002#\346\205\313\214<W"
	.size	.const.pickledata.58e14eccb507b1e0206981740223e685cb8c3c57.sha1, 20

	.type	.const.picklebuf.58e14eccb507b1e0206981740223e685cb8c3c57,@object
	.p2align	4, 0x0
.const.picklebuf.58e14eccb507b1e0206981740223e685cb8c3c57:
	.quad	.const.pickledata.58e14eccb507b1e0206981740223e685cb8c3c57
	.long	137
	.zero	4
	.quad	.const.pickledata.58e14eccb507b1e0206981740223e685cb8c3c57.sha1
	.quad	0
	.long	0
	.zero	4
	.size	.const.picklebuf.58e14eccb507b1e0206981740223e685cb8c3c57, 40

	.type	_ZN08NumbaEnv5numba2np8arrayobj15_call_allocatorB2v3B42c8tJTC_2fWQA93W1AaAIYBPIqRBFCjDSZRVAJmaQIAEN29typeref_5b_3cclass_20_27numba4core5types8npytypes14Array_27_3e_5dExj,@object
	.comm	_ZN08NumbaEnv5numba2np8arrayobj15_call_allocatorB2v3B42c8tJTC_2fWQA93W1AaAIYBPIqRBFCjDSZRVAJmaQIAEN29typeref_5b_3cclass_20_27numba4core5types8npytypes14Array_27_3e_5dExj,8,8
	.type	_ZN08NumbaEnv5numba2np8arrayobj18_ol_array_allocate12_3clocals_3e4implB2v4B42c8tJTIeFIjxB2IKSgI4CrvQClcaMQ5hEEUSJJgA_3dEN29typeref_5b_3cclass_20_27numba4core5types8npytypes14Array_27_3e_5dExj,@object
	.comm	_ZN08NumbaEnv5numba2np8arrayobj18_ol_array_allocate12_3clocals_3e4implB2v4B42c8tJTIeFIjxB2IKSgI4CrvQClcaMQ5hEEUSJJgA_3dEN29typeref_5b_3cclass_20_27numba4core5types8npytypes14Array_27_3e_5dExj,8,8
	.type	.const.pickledata.ba289d81f05c7020f3477c15734804df65abe209,@object
	.p2align	4, 0x0
.const.pickledata.ba289d81f05c7020f3477c15734804df65abe209:
	.ascii	"\200\004\225K\000\000\000\000\000\000\000\214\bbuiltins\224\214\013MemoryError\224\223\224\214'Allocation failed (probably too large).\224\205\224N\207\224."
	.size	.const.pickledata.ba289d81f05c7020f3477c15734804df65abe209, 86

	.type	.const.pickledata.ba289d81f05c7020f3477c15734804df65abe209.sha1,@object
	.p2align	4, 0x0
.const.pickledata.ba289d81f05c7020f3477c15734804df65abe209.sha1:
	.ascii	"\272(\235\201\360\\p \363G|\025sH\004\337e\253\342\t"
	.size	.const.pickledata.ba289d81f05c7020f3477c15734804df65abe209.sha1, 20

	.type	.const.picklebuf.ba289d81f05c7020f3477c15734804df65abe209,@object
	.p2align	4, 0x0
.const.picklebuf.ba289d81f05c7020f3477c15734804df65abe209:
	.quad	.const.pickledata.ba289d81f05c7020f3477c15734804df65abe209
	.long	86
	.zero	4
	.quad	.const.pickledata.ba289d81f05c7020f3477c15734804df65abe209.sha1
	.quad	0
	.long	0
	.zero	4
	.size	.const.picklebuf.ba289d81f05c7020f3477c15734804df65abe209, 40

	.type	_ZN08NumbaEnv5numba7cpython8builtins6ol_min12_3clocals_3e4implB2v5B104c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDGeMlAA1HhiSYJYmAA_3d_3dE15StarArgUniTupleIxLi2EE,@object
	.comm	_ZN08NumbaEnv5numba7cpython8builtins6ol_min12_3clocals_3e4implB2v5B104c8tJTIeFIjxB2IKSgI4CrvQCk0Z4yRYcWsCAgXrKFt1X1erJ_2bXklRYnJJeo6CupFwIRUnJ_2bsXqsJDGeMlAA1HhiSYJYmAA_3d_3dE15StarArgUniTupleIxLi2EE,8,8
	.section	".note.GNU-stack","",@progbits
