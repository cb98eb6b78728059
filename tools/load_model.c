/*
 * load_model.c: finding and loading the model a tool works on (see load_model.h).
 */
#include "tools/load_model.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/files.h"
#include "nmt/translator.h"

#if defined(__APPLE__)
#include <mach-o/dyld.h> /* _NSGetExecutablePath: macOS has no /proc */
#include <stdint.h>
#include <stdlib.h>
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
    if (path && !path[0]) return error_set(err, "-m: an empty file name");
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
    char fallback[PATH_MAX + 32];
    if (!path) default_model_path(fallback, sizeof fallback);
    if (nmt_model_set_compute(nm, type, err) || translator_probe(nm, path ? path : fallback, err)) {
        nmt_model_free(nm);
        return -1;
    }
    return 0;
}

int check_output_is_no_input(const char *output, const char *model_path, Error *err) {
    char fallback[PATH_MAX + 32];
    if (!model_path) default_model_path(fallback, sizeof fallback);
    const char *model = model_path ? model_path : fallback;
    if (same_file(output, model))
        return error_set(err, "%s and the model %s are the same file; write it elsewhere", output,
                         model);
    struct stat out, in;
    if (stat(output, &out) == 0 && S_ISREG(out.st_mode) && fstat(STDIN_FILENO, &in) == 0 &&
        out.st_dev == in.st_dev && out.st_ino == in.st_ino)
        return error_set(err, "%s is the file standard input reads; write it elsewhere", output);
    return 0;
}
