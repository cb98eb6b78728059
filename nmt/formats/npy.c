/*
 * npy.c: .npy writer and reader (see npy.h). The header is the Python dict literal NumPy
 * writes, padded with spaces so the data starts on a 64-byte boundary.
 */
#include "nmt/formats/npy.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"

static const char MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static const struct {
    const char *descr;
    size_t size;
} TYPES[] = {[NPY_F4] = {"<f4", 4}, [NPY_F8] = {"<f8", 8}, [NPY_I4] = {"<i4", 4}};

NpyType npy_real_type(void) {
    return sizeof(real) == 8 ? NPY_F8 : NPY_F4;
}

int npy_write(const char *path, NpyType type, int ndim, const size_t *shape, const void *data,
              Error *err) {
    char header[512], dims[256] = "";
    size_t count = 1, used = 0;
    for (int i = 0; i < ndim; i++) {
        /* a 1-element tuple needs its trailing comma: (3,) */
        used += (size_t)snprintf(dims + used, sizeof dims - used, "%zu%s", shape[i],
                                 ndim == 1      ? ","
                                 : i + 1 < ndim ? ", "
                                                : "");
        if (used >= sizeof dims) return error_set(err, "%s: too many dimensions", path);
        count *= shape[i];
    }
    int len =
        snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                 TYPES[type].descr, dims);
    /* pad so that magic(6) + version(2) + length(2) + header ends on a 64-byte boundary */
    size_t total = ((size_t)len + 10 + 1 + 63) / 64 * 64;
    size_t hlen = total - 10;
    memset(header + len, ' ', hlen - (size_t)len - 1);
    header[hlen - 1] = '\n';

    OutputFile out;
    if (output_file_open(&out, path, false, err)) return -1;
    FILE *f = out.file;
    unsigned char prefix[10];
    memcpy(prefix, MAGIC, 6);
    prefix[6] = 1, prefix[7] = 0;
    prefix[8] = (unsigned char)(hlen & 0xff), prefix[9] = (unsigned char)(hlen >> 8);
    int ok = fwrite(prefix, 1, 10, f) == 10 && fwrite(header, 1, hlen, f) == hlen &&
             fwrite(data, TYPES[type].size, count, f) == count;
    if (!ok) {
        int e = errno;
        output_file_abort(&out);
        return error_set(err, "cannot write %s: %s", path, strerror(e ? e : EIO));
    }
    return output_file_commit(&out, err);
}

int npy_write_real(const char *path, int ndim, const size_t *shape, const real *data, Error *err) {
    return npy_write(path, npy_real_type(), ndim, shape, data, err);
}

/* Parses "'shape': (2, 3)" out of the header dict. */
static int parse_shape(const char *header, NpyArray *a) {
    const char *p = strstr(header, "'shape':");
    if (!p || !(p = strchr(p, '('))) return -1;
    p++;
    a->ndim = 0;
    a->count = 1;
    while (*p && *p != ')') {
        if (*p == ' ' || *p == ',') {
            p++;
            continue;
        }
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno || a->ndim == 8 || (v && a->count > SIZE_MAX / v)) return -1;
        a->shape[a->ndim++] = (size_t)v;
        a->count *= (size_t)v;
        p = end;
    }
    return *p == ')' ? 0 : -1;
}

int npy_read(const char *path, NpyArray *a, Error *err) {
    memset(a, 0, sizeof *a);
    FILE *f = fopen(path, "rb");
    if (!f) return error_set(err, "cannot open %s: %s", path, strerror(errno));
    unsigned char prefix[10];
    char header[65536];
    int rc = -1;
    if (fread(prefix, 1, 10, f) != 10 || memcmp(prefix, MAGIC, 6) != 0 || prefix[6] != 1) {
        error_set(err, "%s: not a version 1 .npy file", path);
        goto done;
    }
    size_t hlen = prefix[8] | (size_t)prefix[9] << 8;
    if (fread(header, 1, hlen, f) != hlen) {
        error_set(err, "%s: truncated header", path);
        goto done;
    }
    header[hlen] = '\0';
    int found = 0;
    for (int t = 0; t < 3; t++)
        if (strstr(header, TYPES[t].descr)) a->type = (NpyType)t, found = 1;
    if (!found || strstr(header, "'fortran_order': True") || parse_shape(header, a)) {
        error_set(err, "%s: unsupported header %s", path, header);
        goto done;
    }
    a->data = checked_calloc(a->count, TYPES[a->type].size, path, err);
    if (!a->data) goto done;
    if (fread(a->data, TYPES[a->type].size, a->count, f) != a->count) {
        error_set(err, "%s: truncated data", path);
        goto done;
    }
    rc = 0;
done:
    fclose(f);
    if (rc) npy_free(a);
    return rc;
}

void npy_free(NpyArray *a) {
    free(a->data);
    memset(a, 0, sizeof *a);
}
