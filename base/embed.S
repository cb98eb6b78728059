/*
 * embed.S: a file's bytes as two read-only symbols, NAME_start and NAME_end (the attention
 * page's style sheets and scripts: nmt/pictures/align_html.c). The Makefile assembles it with the C
 * compiler once per file: -DNAME=<symbol> -DPATH="<file>". The same on every assembler the
 * project meets (GNU as, clang's on Linux and macOS), unlike `ld -b binary`, which only GNU
 * ld has and which writes objects for the machine ld runs on, not the one compiled for.
 */
#define JOIN2(a, b) a##b
#define JOIN(a, b)  JOIN2(a, b)
#if defined(__APPLE__)
/* Mach-O: C names carry a leading underscore */
#define SYMBOL(suffix) JOIN(JOIN(_, NAME), suffix)
    .const
#else
#define SYMBOL(suffix) JOIN(NAME, suffix)
    .section .rodata
#endif
    .globl SYMBOL(_start)
    .globl SYMBOL(_end)
    .balign 16
SYMBOL(_start):
    .incbin PATH
SYMBOL(_end):
    .byte 0
#if defined(__ELF__)
/* no executable stack for the objects linked with this one */
    .section .note.GNU-stack, "", %progbits
#endif
