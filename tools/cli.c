/*
 * cli.c: shared command-line helpers (see cli.h).
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/utf8.h"

void default_model_path(char *buf, size_t size) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        snprintf(buf, size, "runs/toy/best.ckpt");
        return;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(buf, size, "%s/../runs/toy/best.ckpt", exe);
}

int load_model(const char *path, NmtModel *nm, Error *err) {
    char fallback[PATH_MAX + 32];
    if (!path) {
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
