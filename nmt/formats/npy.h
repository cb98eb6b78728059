/*
 * npy.h: NumPy .npy files (format version 1.0, little-endian, C order), written so that
 * numpy.load reads them as they are, and read back for tests and comparisons.
 *
 * Writes go to a temporary file beside PATH (files.h) and are renamed into place only when
 * complete.
 */
#ifndef NMT_NPY_H
#define NMT_NPY_H

#include <stddef.h>

#include "base/base.h"

typedef enum { NPY_F4, NPY_F8, NPY_I4 } NpyType;

/* The element type that matches `real` in this build. */
NpyType npy_real_type(void);

/* Writes `data` (ndim dims in shape; ndim 0 is a scalar) of the given type to path. */
int npy_write(const char *path, NpyType type, int ndim, const size_t *shape, const void *data,
              Error *err);
/* Writes an array of reals, converting nothing: <f4 in a float build, <f8 in a double one. */
int npy_write_real(const char *path, int ndim, const size_t *shape, const real *data, Error *err);

typedef struct {
    NpyType type;
    int ndim;
    size_t shape[8];
    size_t count; /* elements */
    void *data;   /* count elements of `type` */
} NpyArray;

/* Reads a .npy file written by npy_write (or numpy.save of the same types). */
int npy_read(const char *path, NpyArray *out, Error *err);
void npy_free(NpyArray *a);

#endif
