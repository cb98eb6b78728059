/*
 * files.c: files written whole or not at all, folders, lines (see files.h).
 */
#define _DEFAULT_SOURCE /* realpath (XSI); the rest of this file is POSIX */
#include "base/files.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* The temporary files open for writing, for the signal handler below, which can reach
 * nothing but file-scope state: the module's one mutable table. A slot is free (0), being
 * filled (1) or names a temporary file (2). */
enum { TRACKED = 16, SLOT_FREE = 0, SLOT_FILLING = 1, SLOT_LIVE = 2 };
static char tracked_name[TRACKED][sizeof((OutputFile *)0)->tmp];
static atomic_int tracked_state[TRACKED];
static atomic_flag handlers_installed = ATOMIC_FLAG_INIT;

/* Removes every temporary file, then lets the signal do what it would have done. */
static void remove_temporaries_and_die(int sig) {
    for (int k = 0; k < TRACKED; k++)
        if (atomic_load(&tracked_state[k]) == SLOT_LIVE) unlink(tracked_name[k]);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Installs the handler for the signals that end a program, unless the program handles them
 * itself (bin/train saves its checkpoint on SIGINT) or ignores them (nohup). A file-size limit
 * (ulimit -f) would end the program by SIGXFSZ in the middle of a write, the temporary file
 * left behind and no word said: ignored, the write fails (EFBIG) and is reported, and the
 * file removed, as on a full disk. */
static void install_handlers(void) {
    if (atomic_flag_test_and_set(&handlers_installed)) return;
    struct sigaction size_limit;
    if (sigaction(SIGXFSZ, NULL, &size_limit) == 0 && size_limit.sa_handler == SIG_DFL) {
        struct sigaction ignore = {.sa_handler = SIG_IGN};
        sigemptyset(&ignore.sa_mask);
        sigaction(SIGXFSZ, &ignore, NULL);
    }
    static const int ending[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (size_t k = 0; k < sizeof ending / sizeof ending[0]; k++) {
        struct sigaction now;
        if (sigaction(ending[k], NULL, &now) != 0 || now.sa_handler != SIG_DFL) continue;
        struct sigaction mine = {.sa_handler = remove_temporaries_and_die};
        sigemptyset(&mine.sa_mask);
        sigaction(ending[k], &mine, NULL);
    }
}

static void track(OutputFile *o) {
    install_handlers();
    for (int k = 0; k < TRACKED; k++) {
        int expected = SLOT_FREE;
        if (!atomic_compare_exchange_strong(&tracked_state[k], &expected, SLOT_FILLING)) continue;
        memcpy(tracked_name[k], o->tmp, sizeof o->tmp);
        atomic_store(&tracked_state[k], SLOT_LIVE);
        o->tracked = k + 1;
        return;
    } /* more than TRACKED files open at once: the rest are not removed on a signal */
}

static void untrack(OutputFile *o) {
    if (o->tracked) atomic_store(&tracked_state[o->tracked - 1], SLOT_FREE);
    o->tracked = 0;
}

/* The descriptors of standard input, output and error are the lowest: a program started
 * with one of them closed would get it back for its file, and whatever it then prints to
 * stdout or stderr would land inside the file. Moved above them, the print fails instead. */
static int above_standard_streams(int fd) {
    if (fd < 0 || fd > STDERR_FILENO) return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    int saved = errno;
    close(fd);
    errno = saved;
    return moved;
}

/* A path that is not a regular file (a terminal, /dev/null, a pipe such as /dev/stdout or a
 * shell's >(...)) is written in place: a rename would put a regular file where the device or
 * pipe was, for good. */
static int open_in_place(OutputFile *o, const char *path, Error *err) {
    int fd = above_standard_streams(open(path, O_WRONLY | O_CLOEXEC));
    if (fd < 0) return error_set(err, "cannot write %s: %s", path, strerror(errno));
    o->file = fdopen(fd, "wb");
    if (!o->file) {
        int saved = errno;
        close(fd);
        return error_set(err, "cannot write %s: %s", path, strerror(saved));
    }
    o->in_place = true;
    return 0;
}

int output_file_open(OutputFile *o, const char *path, bool durable, Error *err) {
    memset(o, 0, sizeof *o);
    o->durable = durable;
    if (!path[0]) return error_set(err, "an empty file name");
    if (snprintf(o->path, sizeof o->path, "%s", path) >= (int)sizeof o->path)
        return error_set(err, "%s: path too long", path);
    struct stat target, link;
    if (stat(path, &target) == 0) {
        if (S_ISDIR(target.st_mode)) return error_set(err, "%s: is a folder, not a file", path);
        if (!S_ISREG(target.st_mode)) return open_in_place(o, path, err);
        /* a symbolic link keeps pointing at the file, which the rename replaces */
        char *resolved;
        if (lstat(path, &link) == 0 && S_ISLNK(link.st_mode) &&
            (resolved = realpath(path, NULL)) != NULL) {
            int fits = snprintf(o->path, sizeof o->path, "%s", resolved) < (int)sizeof o->path;
            free(resolved);
            if (!fits) return error_set(err, "%s: path too long", path);
        }
    }
    /* O_EXCL: a name another writer (another process, or this one) holds is never reused, so
     * no writer truncates a file another is writing */
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
        snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld.%d", o->path, (long)getpid(), attempt);
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) return error_set(err, "cannot create %s: %s", o->tmp, strerror(errno));
    fd = above_standard_streams(fd);
    if (fd < 0) {
        int saved = errno;
        remove(o->tmp);
        return error_set(err, "cannot create %s: %s", o->tmp, strerror(saved));
    }
    o->file = fdopen(fd, "wb");
    if (!o->file) {
        int saved = errno;
        close(fd);
        remove(o->tmp);
        return error_set(err, "cannot create %s: %s", o->tmp, strerror(saved));
    }
    track(o);
    return 0;
}

/* Makes a rename durable: the folder's entry is on disk too. */
static void sync_folder_of(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    int fd = open(slash ? (slash == dir ? "/" : dir) : ".", O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int output_file_commit(OutputFile *o, Error *err) {
    if (!o->file) return error_set(err, "%s: not open", o->path);
    errno = 0;
    int ok = fflush(o->file) == 0 && !ferror(o->file);
    if (o->in_place) {
        int saved = errno;
        if (fclose(o->file) != 0 && ok) ok = 0, saved = errno;
        o->file = NULL;
        return ok ? 0
                  : error_set(err, "cannot write %s: %s", o->path, strerror(saved ? saved : EIO));
    }
    /* the data must be on disk before the rename makes it the file */
    if (ok && o->durable) ok = fsync(fileno(o->file)) == 0;
    int saved = errno;
    if (fclose(o->file) != 0 && ok) ok = 0, saved = errno;
    o->file = NULL;
    if (!ok) {
        remove(o->tmp);
        untrack(o);
        return error_set(err, "cannot write %s: %s", o->path, strerror(saved ? saved : EIO));
    }
    if (rename(o->tmp, o->path) != 0) {
        saved = errno;
        remove(o->tmp);
        untrack(o);
        return error_set(err, "cannot rename %s to %s: %s", o->tmp, o->path, strerror(saved));
    }
    untrack(o);
    if (o->durable) sync_folder_of(o->path);
    return 0;
}

void output_file_abort(OutputFile *o) {
    if (!o->file) return;
    fclose(o->file);
    o->file = NULL;
    if (o->in_place) return;
    remove(o->tmp);
    untrack(o);
}

int flush_standard_output(Error *err) {
    /* a write that failed earlier left its reason in errno, and stdio keeps only the flag */
    int earlier = errno;
    if (fflush(stdout) == 0) {
        if (!ferror(stdout)) return 0;
        errno = earlier;
    }
    return error_set(err, "cannot write to standard output: %s", strerror(errno ? errno : EIO));
}

bool same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int path_beside(char *out, size_t size, const char *path, const char *name) {
    const char *slash = strrchr(path, '/');
    int folder = slash ? (int)(slash - path) + 1 : 0;
    int n = snprintf(out, size, "%.*s%s", folder, path, name);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

void path_normalise(char *path) {
    bool absolute = path[0] == '/';
    char *out = path; /* the normalised path is never longer, so it is written over the input */
    size_t kept = 0;  /* components written that a ".." may take back */
    if (absolute) *out++ = '/';
    char *start = out;
    for (const char *p = path + absolute; *p;) {
        while (*p == '/') p++;
        size_t len = strcspn(p, "/");
        if (len == 0) break;
        if (len == 1 && p[0] == '.') {
            p += len;
            continue;
        }
        if (len == 2 && p[0] == '.' && p[1] == '.' && (kept > 0 || absolute)) {
            if (kept > 0) { /* drop the last component and its slash */
                while (out > start && out[-1] != '/') out--;
                if (out > start) out--;
                kept--;
            }
            p += len;
            continue;
        }
        if (out > start) *out++ = '/';
        memmove(out, p, len);
        out += len;
        p += len;
        if (!(len == 2 && out[-1] == '.' && out[-2] == '.')) kept++;
    }
    if (out == path) *out++ = '.';
    *out = '\0';
}

int make_dirs(const char *dir, Error *err) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return error_set(err, "%s: path too long", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p) continue;
        char saved = *p;
        *p = '\0';
        struct stat st;
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return error_set(err, "cannot create folder %s: %s", path, strerror(errno));
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            return error_set(err, "%s exists and is not a folder", path);
        *p = saved;
        if (!saved) return 0;
    }
}

long read_line_with_end(FILE *in, char **line, size_t *cap) {
    size_t n = 0;
    int c = EOF;
    long result = 0;
    flockfile(in);
    while ((c = getc_unlocked(in)) != EOF) {
        if (n + 2 > *cap) { /* room for c and the NUL */
            size_t grown = *cap < 128 ? 128 : 2 * *cap;
            if (n >= LINE_MOST_BYTES) {
                ungetc(c, in);
                result = -3;
                break;
            }
            if (grown > LINE_MOST_BYTES + 2) grown = LINE_MOST_BYTES + 2;
            char *bigger = realloc(*line, grown);
            if (!bigger) {
                errno = ENOMEM;
                result = -2;
                break;
            }
            *line = bigger, *cap = grown;
        }
        (*line)[n++] = (char)c;
        if (c == '\n') break;
    }
    funlockfile(in);
    if (result) return result;
    if (ferror(in)) return -2;
    if (n == 0) return -1;
    (*line)[n] = '\0';
    return (long)n;
}

int skip_line(FILE *in) {
    int c;
    while ((c = getc(in)) != EOF && c != '\n') continue;
    return ferror(in) ? -2 : 0;
}

long read_line(FILE *in, char **line, size_t *cap) {
    long n = read_line_with_end(in, line, cap);
    if (n < 0) return n;
    if (n > 0 && (*line)[n - 1] == '\n') (*line)[--n] = '\0';
    if (n > 0 && (*line)[n - 1] == '\r') (*line)[--n] = '\0';
    return (long)n;
}

int file_write_u32(FILE *out, uint32_t value) {
    unsigned char bytes[4] = {(unsigned char)value, (unsigned char)(value >> 8),
                              (unsigned char)(value >> 16), (unsigned char)(value >> 24)};
    return fwrite(bytes, 1, 4, out) == 4 ? 0 : -1;
}

int file_read_u32(FILE *in, uint32_t *value) {
    unsigned char bytes[4];
    if (fread(bytes, 1, 4, in) != 4) return -1;
    *value = (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
             (uint32_t)bytes[3] << 24;
    return 0;
}
