/*
 * fuzz_config.c: libFuzzer target for the training configuration: the INI reader
 * (train/ini.c) and the schema that checks every key (train/config.c), through config_load,
 * the function bin/train calls.
 *
 * The input is a config file, optionally followed by a NUL byte and NUL-separated
 * "section.key=value" overrides, the way argv holds --set arguments. The file part is written
 * to a fresh temporary file, because config_load reads a path (its folder resolves relative
 * paths). Besides crashes, it checks what a successful load promises: every printed setting
 * reloads without error. Build and run with `make fuzz` (see docs/reliability.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/config.h"

enum { MAX_OVERRIDES = 16 };

/* Writes bytes[0..len) to a new temporary file, whose path goes into path. */
static int write_temp(char *path, const uint8_t *bytes, size_t len) {
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, bytes + done, len - done);
        if (n <= 0) break;
        done += (size_t)n;
    }
    close(fd);
    return done == len ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, '\0', size);
    size_t file_len = nul ? (size_t)(nul - data) : size;
    /* the overrides: NUL-terminated strings copied out of the tail */
    char *tail = NULL;
    const char *overrides[MAX_OVERRIDES];
    int n_overrides = 0;
    if (nul) {
        size_t tail_len = size - file_len - 1;
        tail = malloc(tail_len + 1);
        if (!tail) return 0;
        memcpy(tail, nul + 1, tail_len);
        tail[tail_len] = '\0';
        for (char *p = tail; p <= tail + tail_len && n_overrides < MAX_OVERRIDES;
             p += strlen(p) + 1)
            overrides[n_overrides++] = p;
    }
    char path[] = "/tmp/fuzz-config-XXXXXX";
    if (write_temp(path, data, file_len) == 0) {
        Config cfg;
        Error err;
        if (config_load(&cfg, path, overrides, n_overrides, &err) == 0) {
            /* what was loaded prints, and the printed settings load again */
            char printed[] = "/tmp/fuzz-config-printed-XXXXXX";
            int fd = mkstemp(printed);
            FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
            if (out) {
                config_print(&cfg, out);
                fclose(out);
                Config again;
                /* relative paths are resolved again against the printed file's folder, so a
                 * path near CONFIG_PATH_MAX may rightly grow too long; nothing else may fail */
                if (config_load(&again, printed, NULL, 0, &err) != 0 &&
                    strstr(err.msg, "': too long (") == NULL) {
                    fprintf(stderr, "printed settings do not reload: %s\n", err.msg);
                    abort();
                }
            } else if (fd >= 0) {
                close(fd);
            }
            if (fd >= 0) unlink(printed);
        } else if (memchr(err.msg, '\n', strnlen(err.msg, sizeof err.msg))) {
            fprintf(stderr, "error is not one line: %s\n", err.msg);
            abort();
        }
    }
    unlink(path);
    free(tail);
    return 0;
}
