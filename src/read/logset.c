/*
 * logset: which files are pyprof logs and in what order.  See logset.h.
 */
#include "logset.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <pyprof/reader.h>

#include "common/growarray.h"

static int add_file(logset *s, const char *path, int dir, struct timespec mtime)
{
    if (GROW_ARRAY(s->files, s->cap, s->n + 1)) {
        errno = ENOMEM;
        return -1;
    }
    char *copy = strdup(path);
    if (!copy) {
        errno = ENOMEM;
        return -1;
    }
    logset_file *f = &s->files[s->n++];
    memset(f, 0, sizeof *f);
    f->path = copy;
    f->dir = dir;
    f->mtime = mtime;
    f->err = PYPROF_R_IO; /* not read yet */
    return 0;
}

int logset_add(logset *s, const char *path, int dir)
{
    return add_file(s, path, dir, (struct timespec){0, 0});
}

int logset_scan_dir(logset *s, const char *path, int index)
{
    struct dirent **names = NULL;
    int count = scandir(path, &names, NULL, alphasort);
    if (count < 0)
        return -1;
    int ret = 0;
    size_t plen = strlen(path);
    const char *sep = plen && path[plen - 1] == '/' ? "" : "/";
    for (int i = 0; i < count; i++) {
        const char *base = names[i]->d_name;
        if (ret == 0 && strcmp(base, ".") && strcmp(base, "..")) {
            char full[4096];
            struct stat st;
            int len = snprintf(full, sizeof full, "%s%s%s", path, sep, base);
            /* Only regular files with data can be logs; an empty file is a log not yet
             * written, or not a log, and says nothing either way. */
            if (len > 0 && (size_t)len < sizeof full && stat(full, &st) == 0 &&
                S_ISREG(st.st_mode) && st.st_size > 0)
                ret = add_file(s, full, index, st.st_mtim);
        }
        free(names[i]);
    }
    free(names);
    if (ret < 0)
        errno = ENOMEM;
    return ret;
}

int logset_read_header(logset_file *f)
{
    free(f->host);
    free(f->run_id);
    f->host = f->run_id = NULL;
    f->use = 0;
    f->sys_errno = 0;
    int err = PYPROF_R_OK;
    pyprof_reader *r = pyprof_reader_open(f->path, &err);
    if (!r) {
        f->sys_errno = errno;
        f->err = err;
        return 0;
    }
    const pyprof_header *h = pyprof_reader_header(r);
    f->pid = h->pid;
    f->window = h->window;
    f->series_start_unix_ns = h->series_start_unix_ns;
    f->seq = h->seq;
    f->host = pyprof_str_dup(h->host);
    f->run_id = pyprof_str_dup(h->run_id);
    pyprof_reader_close(r);
    if (!f->host || !f->run_id) {
        free(f->host);
        free(f->run_id);
        f->host = f->run_id = NULL;
        f->err = PYPROF_R_NOMEM;
        return -1;
    }
    f->err = PYPROF_R_OK;
    f->use = 1;
    return 0;
}

int logset_not_log(const logset_file *f)
{
    return f->err == PYPROF_R_NOT_LZ4 || f->err == PYPROF_R_NOT_PYPROF;
}

static int same_key(const logset_file *a, const logset_file *b)
{
    return a->pid == b->pid && a->window == b->window &&
           a->series_start_unix_ns == b->series_start_unix_ns && !strcmp(a->host, b->host) &&
           !strcmp(a->run_id, b->run_id);
}

/* By series (in the order series are first met), then by seq. */
static int cmp_series_order(const void *a, const void *b, void *arg)
{
    const logset_file *files = arg;
    const logset_file *x = &files[*(const size_t *)a], *y = &files[*(const size_t *)b];
    if (x->series != y->series)
        return x->series < y->series ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return 0;
}

long logset_series_order(logset *s, size_t **order)
{
    *order = NULL;
    size_t n = 0, nseries = 0;
    for (size_t i = 0; i < s->n; i++)
        n += s->files[i].use != 0;
    if (!n)
        return 0;
    size_t *o = malloc(n * sizeof *o);
    if (!o)
        return -1;
    n = 0;
    logset_file *f = s->files;
    for (size_t i = 0; i < s->n; i++) {
        if (!f[i].use)
            continue;
        /* The first series of its key that does not have its seq yet. */
        f[i].series = nseries;
        for (size_t j = 0; j < i; j++) {
            if (!f[j].use || !same_key(&f[i], &f[j]))
                continue;
            int taken = 0;
            for (size_t k = 0; k < i && !taken; k++)
                taken = f[k].use && f[k].series == f[j].series && f[k].seq == f[i].seq;
            if (!taken) {
                f[i].series = f[j].series;
                break;
            }
        }
        if (f[i].series == nseries)
            nseries++;
        o[n++] = i;
    }
    /* No two files of a series have one seq: the order is total. */
    qsort_r(o, n, sizeof *o, cmp_series_order, s->files);
    *order = o;
    return (long)n;
}

static int cmp_newest(const void *a, const void *b)
{
    const logset_file *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec > y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec > y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->path, y->path);
}

void logset_sort_newest(logset *s)
{
    if (s->n > 1)
        qsort(s->files, s->n, sizeof *s->files, cmp_newest);
}

long logset_next(const logset *s, uint64_t pid, const char *run_id, uint64_t window,
                 uint64_t seq, const char *skip)
{
    long best = -1;
    for (size_t i = 0; i < s->n; i++) {
        const logset_file *f = &s->files[i];
        if (f->err != PYPROF_R_OK || f->pid != pid || strcmp(f->run_id, run_id) ||
            (skip && !strcmp(f->path, skip)))
            continue;
        int later = f->window > window || (f->window == window && f->seq > seq);
        if (!later)
            continue;
        const logset_file *b = best >= 0 ? &s->files[best] : NULL;
        if (!b || f->window < b->window || (f->window == b->window && f->seq < b->seq))
            best = (long)i;
    }
    return best;
}

void logset_free(logset *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->files[i].path);
        free(s->files[i].host);
        free(s->files[i].run_id);
    }
    free(s->files);
    memset(s, 0, sizeof *s);
}
