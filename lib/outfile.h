/* Output files that never exist half-written: data goes to a temporary file
 * beside the target, renamed over it only once everything was written. "-" is
 * stdout, which is refused for binary data when it is a terminal. Shared by
 * every writer (TG, .npy, tool -o options). Errors do not name the file: the
 * caller (a tool) does. */
#ifndef TG_OUTFILE_H
#define TG_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

typedef struct {
    FILE *f;                /* write here */
    char *path;             /* the target, NULL for stdout */
    char *tmp;              /* the temporary file; NULL for stdout and for a target
                               that is no regular file (a device, a FIFO), written in place */
} tg_outfile;

/* Open path for writing ("-" or NULL: stdout). binary: refuse a terminal.
 * 0, or -1 (tg_err naming the file). */
int tg_outfile_open(tg_outfile *o, const char *path, bool binary);
/* ok: flush, check for write errors and rename into place (stdout is flushed,
 * not closed). !ok: remove the temporary file. Returns 0, or -1 (tg_err) when
 * ok was true but the data could not be written. */
int tg_outfile_close(tg_outfile *o, bool ok);

#endif
