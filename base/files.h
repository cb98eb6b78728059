/*
 * files.h: files written whole or not at all, folders, and reading lines.
 *
 * Every file a program produces (checkpoints, logs, dumps, alignments, corpora) goes through
 * OutputFile: it is written as a temporary file beside PATH and renamed over PATH only once
 * every byte is out, so a crash, a full disk or a failed write never leaves a half-written
 * file in place of a good one. The temporary name is the writer's own (PATH.tmp.PID.N, created
 * exclusively): two writers of one PATH never write into each other's file, and the last
 * rename wins with a whole file. A SIGINT, SIGTERM or SIGHUP that would end the program while
 * a temporary file is open removes the file first (when the program has not set its own
 * handler for that signal; SIGPIPE too), so an interrupted writer leaves nothing behind
 * either; a file-size limit (SIGXFSZ, ignored once a file is opened) fails the write like a
 * full disk. A PATH that is not a regular file (/dev/null, /dev/stdout, a pipe) is written in
 * place, a symbolic link's file is replaced and the link kept, a folder or an empty name is
 * refused when the file is opened.
 */
#ifndef NMT_BASE_FILES_H
#define NMT_BASE_FILES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"

typedef struct {
    FILE *file;
    bool durable;  /* fsync the data before the rename and the folder after it */
    bool in_place; /* PATH is not a regular file (a device, a pipe): written directly */
    int tracked;   /* 1 + its slot in the table of temporaries a signal removes; 0: none */
    char path[4096], tmp[4096 + 48];
} OutputFile;

/* Creates the temporary file (PATH.tmp.PID.N, a name no other file has) for writing. durable: the
 * commit also syncs to disk (checkpoints), so the renamed file survives a power cut, at the cost of
 * waiting for the disk. */
int output_file_open(OutputFile *o, const char *path, bool durable, Error *err);

/* Flushes, (syncs,) closes and renames the temporary file to PATH; on failure removes it,
 * leaves PATH as it was and says why. */
int output_file_commit(OutputFile *o, Error *err);

/* Closes and removes the temporary file (after a failure); harmless on a committed or
 * unopened file. */
void output_file_abort(OutputFile *o);

/* Flushes stdout; -1 with "cannot write to standard output: REASON" when that, or an earlier
 * write to it, failed (a full disk, a closed stdout): what a program printed is checked as
 * what it writes to a file is. */
int flush_standard_output(Error *err);

/* Whether a and b name one existing file (the same device and inode, whatever the spelling,
 * symbolic links followed, hard links included), as cp checks before copying a file onto
 * itself. */
bool same_file(const char *a, const char *b);

/* Writes into out[size] the path of `name` in the folder of `path` ("dir/run.ckpt" and
 * "best.ckpt" give "dir/best.ckpt"; a path without a folder gives name alone); -1 when it does
 * not fit. */
int path_beside(char *out, size_t size, const char *path, const char *name);

/* Rewrites path in place without "." components, repeated slashes, a trailing slash and
 * "folder/.." pairs ("configs/../runs/toy/" becomes "runs/toy"), as a shell's cd does; leading
 * ".." of a relative path stay, "" becomes ".". Paths are shown and stored this way. */
void path_normalise(char *path);

/* Creates dir and its missing parents, like mkdir -p; an existing non-folder is an error. */
int make_dirs(const char *dir, Error *err);

/* The most bytes a line may have. A file without line ends (a binary file, /dev/zero, old Mac
 * text ending its lines in \r alone) would otherwise be read into memory whole, until the
 * system stops the program; no sentence, log row or alignment comes near it. */
#define LINE_MOST_BYTES ((size_t)16 << 20)
/* What a reader says of such a line, after "FILE:LINE: ". */
#define LINE_TOO_LONG "longer than 16 MiB, the most a line may have (a file without line ends?)"

/* Reads one line of at most LINE_MOST_BYTES bytes, its \n kept; returns its length, -1 at end
 * of input, -2 when reading fails (a read error, or no memory for the line; errno says which),
 * so a failure is never mistaken for the end, or -3 when the line is longer (the rest of it
 * unread: skip_line). *line is reused and grown (free it when done); it is NUL-terminated, and
 * may hold NUL bytes of its own. */
long read_line_with_end(FILE *in, char **line, size_t *cap);

/* read_line_with_end without the line end (\n or \r\n). */
long read_line(FILE *in, char **line, size_t *cap);

/* Reads past the next \n (the rest of a line read_line refused); -2 when reading fails. */
int skip_line(FILE *in);

/* A little-endian unsigned 32-bit integer, the unit of the serialised vocabularies and BPE
 * tables; 0, or -1 when the stream fails or ends. */
int file_write_u32(FILE *out, uint32_t value);
int file_read_u32(FILE *in, uint32_t *value);

#endif
