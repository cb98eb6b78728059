/*
 * quantize.c: writes an int8 copy of a trained model: IN.ckpt -> OUT.ckpt, format 4
 * (nmt/formats/checkpoint.h), under a third of the float file's size. The weights that decoding
 * multiplies by and the embeddings become 8-bit rows with one scale each (model/quant.h);
 * biases stay float; a training state is dropped (an int8 model is for translation only).
 * Translating OUT.ckpt gives what `--compute int8` gives with IN.ckpt.
 *
 * --check reads a checkpoint whole, as every program that opens it does (size, checksum,
 * every tensor), and names its weights: `make live` (live/make-live.sh) runs it before it
 * puts a model into a page, where damage would show only in the browser.
 */
#include <stdio.h>
#include <string.h>

#include "base/usage.h"
#include "nmt/formats/checkpoint.h"
#include "tools/cli.h"

static void usage(FILE *out) {
    fprintf(out, "usage: quantize IN.ckpt OUT.ckpt\n"
                 "       quantize --check MODEL.ckpt\n"
                 "Writes OUT.ckpt, the model of IN.ckpt with 8-bit weights (one scale per row):\n"
                 "under a third of the size, translated with int8 products (see --compute of\n"
                 "bin/translate). OUT.ckpt is written whole, through a temporary file beside it.\n"
                 "  --check            write nothing: read MODEL.ckpt whole (size, checksum,\n"
                 "                     every tensor) and print its weights, float or int8\n"
                 "  -h, --help         this text\n");
}

int main(int argc, char **argv) {
    bool check = false;
    const CliOption options[] = {OPT_FLAG("check", 0, &check), OPT_END};
    int status = cli_parse("quantize", argc, argv, options, usage);
    if (status != CLI_GO_ON) return status;
    if (argc - optind != (check ? 1 : 2))
        return usage_error("quantize",
                           check ? "--check takes one MODEL.ckpt" : "expected IN.ckpt OUT.ckpt");
    const char *in = argv[optind], *out = check ? NULL : argv[optind + 1];
    if (out && same_file(in, out)) { /* the rename would replace the float model for good */
        fprintf(stderr, "quantize: %s and %s are the same file; write the int8 copy elsewhere\n",
                in, out);
        return 1;
    }
    Error err;
    NmtModel nm;
    if (checkpoint_load(in, &nm, NULL, NULL, &err)) {
        fprintf(stderr, "quantize: %s\n", err.msg);
        return 1;
    }
    int rc = 0;
    if (check)
        printf("%s\n", nm.model.quant ? "int8" : "float");
    else if (nm.model.quant)
        rc = error_set(&err, "%s is already an int8 checkpoint", in);
    else if (model_quantize(&nm.model, &err) == 0)
        rc = checkpoint_save(out, &nm, NULL, &err);
    else
        rc = -1;
    if (rc) fprintf(stderr, "quantize: %s\n", err.msg);
    nmt_model_free(&nm);
    if (check && flush_standard_output(&err)) {
        fprintf(stderr, "quantize: %s\n", err.msg);
        return 1;
    }
    return rc ? 1 : 0;
}
