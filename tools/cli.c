/*
 * cli.c: shared command-line helpers (see cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/usage.h"
#include "base/utf8.h"

#if defined(__APPLE__)
#include <mach-o/dyld.h> /* _NSGetExecutablePath: macOS has no /proc */
#endif

/* The folder above the program's own (the checkout for bin/translate), in root[size]; -1 when
 * the program cannot tell where it is. */
static int program_root(char *root, size_t size) {
    char exe[PATH_MAX];
#if defined(__APPLE__)
    char link[PATH_MAX];
    uint32_t link_size = sizeof link;
    if (_NSGetExecutablePath(link, &link_size) != 0 || !realpath(link, exe)) return -1;
#else
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = '\0';
#endif
    char *slash = strrchr(exe, '/');
    if (!slash) return -1;
    *slash = '\0';
    slash = strrchr(exe, '/');
    if (slash) *slash = '\0'; /* PREFIX/bin/nmt-translate and CHECKOUT/bin/translate alike */
    return snprintf(root, size, "%s", slash == exe ? "/" : exe) < (int)size ? 0 : -1;
}

void default_model_path(char *buf, size_t size) {
    char root[PATH_MAX];
    if (program_root(root, sizeof root))
        snprintf(buf, size, "runs/toy/best.ckpt");
    else
        snprintf(buf, size, "%s%sruns/toy/best.ckpt", root, strcmp(root, "/") ? "/" : "");
}

/* Whether the program runs from a source checkout (bin/ beside configs/toy.ini), where
 * bin/train can make the default model; an installed copy (PREFIX/bin) has no such folder. */
static bool in_checkout(void) {
    char root[PATH_MAX], config[PATH_MAX + 32];
    if (program_root(root, sizeof root)) return false;
    snprintf(config, sizeof config, "%s/configs/toy.ini", root);
    return access(config, F_OK) == 0;
}

int load_model(const char *path, NmtModel *nm, Error *err) {
    char fallback[PATH_MAX + 32];
    if (!path) {
        if (!in_checkout())
            return error_set(err, "no model given: pass -m MODEL, a checkpoint bin/train wrote "
                                  "(OUT_DIR/best.ckpt)");
        default_model_path(fallback, sizeof fallback);
        if (access(fallback, F_OK) != 0)
            return error_set(err,
                             "no trained model at %s; make it with: bin/train "
                             "configs/toy.ini (or pass -m MODEL)",
                             fallback);
        path = fallback;
    }
    return checkpoint_load(path, nm, NULL, NULL, err);
}

int load_model_compute(const char *path, const char *compute, NmtModel *nm, Error *err) {
    ComputeType type;
    if (compute_type_parse(compute, &type, err)) return error_prefix(err, "--compute: ");
    if (load_model(path, nm, err)) return -1;
    if (nmt_model_set_compute(nm, type, err)) {
        nmt_model_free(nm);
        return -1;
    }
    return 0;
}

int parse_int_option(const char *option, const char *text, long lo, long hi, long *out,
                     Error *err) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    char quoted[96];
    if (errno || end == text || *end || v < lo || v > hi)
        return error_set(err, "invalid %s '%s' (expected a whole number from %ld to %ld)", option,
                         text_for_message(quoted, sizeof quoted, text, 60), lo, hi);
    *out = v;
    return 0;
}

int parse_double_option(const char *option, const char *text, double lo, double hi, double *out,
                        Error *err) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    char quoted[96];
    if (errno || end == text || *end || !(v >= lo && v <= hi))
        return error_set(err, "invalid %s '%s' (expected a number from %g to %g)", option,
                         text_for_message(quoted, sizeof quoted, text, 60), lo, hi);
    *out = v;
    return 0;
}

/* The option's argument into its value; an error names the option. */
static int take_value(const CliOption *o, const char *arg, Error *err) {
    char option[64];
    snprintf(option, sizeof option, "--%s", o->name);
    switch (o->kind) {
    case CLI_FLAG:
        *(bool *)o->value = true;
        return 0;
    case CLI_TEXT:
        *(const char **)o->value = arg;
        return 0;
    case CLI_INT:
        return parse_int_option(option, arg, (long)o->lo, (long)o->hi, (long *)o->value, err);
    case CLI_REAL:
        return parse_double_option(option, arg, o->lo, o->hi, (double *)o->value, err);
    }
    return error_set(err, "%s: unknown option kind", option);
}

int cli_parse(const char *program, int argc, char **argv, const CliOption *table,
              void (*usage)(FILE *)) {
    enum { MAX_OPTIONS = 32, HELP = 256 };
    struct option longs[MAX_OPTIONS + 2] = {{0}};
    /* the leading ':' makes getopt report a missing value as ':' and print nothing itself */
    char shorts[3 * MAX_OPTIONS + 3] = ":h";
    size_t n = 0, used = 2;
    for (; table[n].name && n < MAX_OPTIONS; n++) {
        bool arg = table[n].kind != CLI_FLAG;
        longs[n] = (struct option){table[n].name, arg ? required_argument : no_argument, 0,
                                   table[n].short_name ? table[n].short_name : 512 + (int)n};
        if (table[n].short_name) {
            shorts[used++] = table[n].short_name;
            if (arg) shorts[used++] = ':';
        }
    }
    longs[n] = (struct option){"help", no_argument, 0, HELP};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        if (c == 'h' || c == HELP) {
            usage(stdout);
            return 0;
        }
        if (c == '?' || c == ':') return usage_getopt_error(program, argv, c);
        size_t k = 0;
        while (k < n && longs[k].val != c) k++;
        Error err;
        if (k == n) return usage_error(program, "unexpected option '%c'", c);
        if (take_value(&table[k], optarg, &err)) return usage_error(program, "%s", err.msg);
    }
    return CLI_GO_ON;
}
