/*
 * cpu.h: which instruction sets this CPU runs, and the cap the environment puts on them.
 *
 * Every kernel choice in the program (the float and 8-bit products, the vector math, Adam,
 * the norm) asks cpu_allows() and nothing else, so one setting reaches them all:
 *
 *   NMT_ISA=portable | avx2 | avx512 | avx512vnni | neon | dotprod | i8mm
 *
 * caps the choice at that set and the ones below it on the same architecture (x86-64:
 * portable < avx2 < avx512 < avx512vnni; ARM64: portable < neon < dotprod < i8mm), so that an
 * AVX-512 machine can run, test and measure exactly what an AVX2 laptop runs. Unset, or empty,
 * it caps nothing. A value that is not one of these names, or that names the other
 * architecture's sets, is reported once on stderr and caps nothing.
 */
#ifndef NMT_CPU_H
#define NMT_CPU_H

typedef enum {
    ISA_PORTABLE,    /* C only, on every CPU */
    ISA_AVX2,        /* x86-64: AVX2 with FMA */
    ISA_AVX512,      /* x86-64: AVX-512 F and BW */
    ISA_AVX512_VNNI, /* x86-64: AVX-512 F, BW and VNNI (8-bit dot products) */
    ISA_NEON,        /* ARM64: Advanced SIMD, which every ARM64 CPU has */
    ISA_DOTPROD,     /* ARM64: NEON with the 8-bit dot product (sdot) */
    ISA_I8MM,        /* ARM64: NEON with the 8-bit matrix multiply (smmla) */
    ISA_COUNT
} InstructionSet;

/* 1 when this CPU runs `set` and NMT_ISA allows it; ISA_PORTABLE is always allowed. */
int cpu_allows(InstructionSet set);

/* 1 when this CPU runs `set`, whatever NMT_ISA says. */
int cpu_runs(InstructionSet set);

/* The highest set NMT_ISA allows on this CPU's architecture and this CPU runs. */
InstructionSet cpu_best(void);

/* The name NMT_ISA spells `set` with ("avx2"). */
const char *isa_name(InstructionSet set);

/* The cap `text` (NMT_ISA's value) sets: 0 and *cap on success, -1 when `text` names no set
 * ("generic" is read as "portable", the name of earlier releases). */
int isa_parse(const char *text, InstructionSet *cap);

#endif
