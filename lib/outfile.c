/* Temporary-file-and-rename output (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

int tg_outfile_open(tg_outfile *o, const char *path, bool binary)
{
    memset(o, 0, sizeof *o);
    if (!path || !strcmp(path, "-")) {
        if (binary && isatty(STDOUT_FILENO))
            return tg_err("refusing to write binary data to a terminal "
                          "(redirect stdout or use -o FILE)");
        o->f = stdout;
        return 0;
    }
    /* A device or pipe (-o /dev/null, a FIFO) is written in place: renaming a
     * temporary file over it would replace it by a regular file. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (!(o->f = fopen(path, "wb")))
            return tg_err("%s", strerror(errno));
        return 0;
    }
    size_t n = strlen(path);
    o->path = strdup(path);
    o->tmp = malloc(n + 16);
    if (!o->path || !o->tmp) {
        tg_outfile_close(o, false);
        return tg_err("out of memory");
    }
    memcpy(o->tmp, path, n);
    memcpy(o->tmp + n, ".tmp.XXXXXX", 12);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        tg_outfile_close(o, false);
        return tg_err("%s", strerror(e));
    }
    /* mkstemp makes the file 0600; give it the mode a plain fopen would. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int e = errno;
        close(fd);
        tg_outfile_close(o, false);
        return tg_err("%s", strerror(e));
    }
    return 0;
}

int tg_outfile_close(tg_outfile *o, bool ok)
{
    int rc = 0;
    if (o->f == stdout) {
        if (ok && (fflush(stdout) != 0 || ferror(stdout)))
            rc = tg_err("write error: %s", strerror(errno));
    } else if (o->f || o->tmp) {
        int e = 0;
        if (o->f) {
            if (ferror(o->f) || fflush(o->f) != 0)
                e = errno ? errno : EIO;
            if (fclose(o->f) != 0 && !e)
                e = errno;
        }
        if (ok && !e && o->tmp && rename(o->tmp, o->path) != 0)
            e = errno;
        if (ok && e)
            rc = tg_err("%s", strerror(e));
        if ((!ok || e) && o->tmp)
            unlink(o->tmp);
    }
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    return rc;
}
