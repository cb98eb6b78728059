/*
 * cpu.c: what the CPU runs (asked of the compiler's runtime on x86-64, of the kernel on ARM64
 * Linux, of sysctl on macOS) and NMT_ISA's cap on it, each read once.
 */
#if defined(__APPLE__)
#define _DARWIN_C_SOURCE /* sysctlbyname, which _POSIX_C_SOURCE alone hides */
#endif

#include "base/cpu.h"
#include "base/utf8.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
/* The bits of AT_HWCAP and AT_HWCAP2 (Linux's arch/arm64 uapi hwcap.h), for older headers. */
#define HWCAP_ASIMD_BIT   (1UL << 1)
#define HWCAP_ASIMDDP_BIT (1UL << 20)
#define HWCAP2_I8MM_BIT   (1UL << 13)
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

static const char *const names[ISA_COUNT] = {
    [ISA_PORTABLE] = "portable", [ISA_AVX2] = "avx2",
    [ISA_AVX512] = "avx512",     [ISA_AVX512_VNNI] = "avx512vnni",
    [ISA_NEON] = "neon",         [ISA_DOTPROD] = "dotprod",
    [ISA_I8MM] = "i8mm"};

const char *isa_name(InstructionSet set) {
    return set >= 0 && set < ISA_COUNT ? names[set] : "unknown";
}

int isa_parse(const char *text, InstructionSet *cap) {
    if (!strcmp(text, "generic")) text = "portable";
    for (int set = 0; set < ISA_COUNT; set++)
        if (!strcmp(text, names[set])) {
            *cap = (InstructionSet)set;
            return 0;
        }
    return -1;
}

#if defined(__aarch64__) && defined(__APPLE__)
static int sysctl_says(const char *name) {
    int value = 0;
    size_t size = sizeof value;
    return sysctlbyname(name, &value, &size, NULL, 0) == 0 && value == 1;
}
#endif

int cpu_runs(InstructionSet set) {
    if (set == ISA_PORTABLE) return 1;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    switch (set) {
    case ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case ISA_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
    case ISA_AVX512_VNNI:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vnni");
    default:
        return 0;
    }
#elif defined(__aarch64__) && defined(__linux__)
    unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
    switch (set) {
    case ISA_NEON:
        return (hwcap & HWCAP_ASIMD_BIT) != 0;
    case ISA_DOTPROD:
        return (hwcap & HWCAP_ASIMD_BIT) && (hwcap & HWCAP_ASIMDDP_BIT);
    case ISA_I8MM:
        return (hwcap & HWCAP_ASIMD_BIT) && (hwcap & HWCAP_ASIMDDP_BIT) &&
               (hwcap2 & HWCAP2_I8MM_BIT);
    default:
        return 0;
    }
#elif defined(__aarch64__) && defined(__APPLE__)
    switch (set) {
    case ISA_NEON:
        return 1; /* every Apple CPU of this architecture */
    case ISA_DOTPROD:
        return sysctl_says("hw.optional.arm.FEAT_DotProd");
    case ISA_I8MM:
        return sysctl_says("hw.optional.arm.FEAT_DotProd") &&
               sysctl_says("hw.optional.arm.FEAT_I8MM");
    default:
        return 0;
    }
#elif defined(__aarch64__)
    return set == ISA_NEON; /* NEON is part of ARM64; the others are not asked for here */
#else
    return 0;
#endif
}

/* This build's architecture: whose sets NMT_ISA may name. */
static int names_this_architecture(InstructionSet set) {
#if defined(__aarch64__)
    return set == ISA_PORTABLE || set == ISA_NEON || set == ISA_DOTPROD || set == ISA_I8MM;
#else
    return set == ISA_PORTABLE || set == ISA_AVX2 || set == ISA_AVX512 || set == ISA_AVX512_VNNI;
#endif
}

/* NMT_ISA's cap, read on the first call (racing first calls read the same value); ISA_COUNT
 * when nothing is capped. */
static InstructionSet cap_from_environment(void) {
    static atomic_int cached = -1;
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    int cap = atomic_load_explicit(&cached, memory_order_acquire);
    if (cap >= 0) return (InstructionSet)cap;
    const char *text = getenv("NMT_ISA");
    InstructionSet parsed = ISA_COUNT;
    char quoted[96]; /* a value from the environment may hold line ends and escapes */
    if (text && *text) {
        if (isa_parse(text, &parsed) != 0) {
            if (!atomic_flag_test_and_set(&warned))
                fprintf(stderr,
                        "NMT_ISA='%s': not an instruction set (portable, avx2, avx512, avx512vnni, "
                        "neon, dotprod, i8mm); nothing is capped\n",
                        text_for_message(quoted, sizeof quoted, text, 60));
            parsed = ISA_COUNT;
        } else if (!names_this_architecture(parsed)) {
            if (!atomic_flag_test_and_set(&warned))
                fprintf(stderr,
                        "NMT_ISA='%s': names another architecture's set; nothing is capped\n",
                        text_for_message(quoted, sizeof quoted, text, 60));
            parsed = ISA_COUNT;
        }
    }
    atomic_store_explicit(&cached, (int)parsed, memory_order_release);
    return parsed;
}

int cpu_allows(InstructionSet set) {
    if (set == ISA_PORTABLE) return 1;
    if (set < 0 || set >= ISA_COUNT || !cpu_runs(set)) return 0;
    InstructionSet cap = cap_from_environment();
    return cap == ISA_COUNT || (cap != ISA_PORTABLE && set <= cap);
}

InstructionSet cpu_best(void) {
    InstructionSet best = ISA_PORTABLE;
    for (int set = 1; set < ISA_COUNT; set++)
        if (cpu_allows((InstructionSet)set)) best = (InstructionSet)set;
    return best;
}
