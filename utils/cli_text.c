/*
 * cli_text: text from the logs, made safe to print or to write as UTF-8.  See cli_text.h.
 */
#include "cli_text.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

void cli_put_line(FILE *f, const char *s)
{
    for (; *s && *s != '\n'; s++)
        putc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

char *cli_utf8_dup(const char *s)
{
    /* A byte that becomes U+FFFD takes three. */
    size_t len = strlen(s);
    char *out = malloc(3 * len + 1);
    if (!out)
        return NULL;
    out[utf8_clean(out, 3 * len, (const uint8_t *)s, len, 0)] = 0;
    return out;
}

/* Whether `s` can be printed to a shell without quotes. */
static int shell_plain(const char *s)
{
    if (!s[0])
        return 0;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                    "@%+=:,./-_",
                    *s))
            return 0;
    return 1;
}

void cli_print_argv(FILE *f, char *const *argv, size_t argc)
{
    for (size_t i = 0; i < argc; i++) {
        if (i)
            putc(' ', f);
        if (shell_plain(argv[i])) {
            fputs(argv[i], f);
            continue;
        }
        putc('\'', f);
        for (const char *s = argv[i]; *s; s++) {
            if (*s == '\'')
                fputs("'\\''", f);
            else if ((unsigned char)*s < 0x20 || *s == 0x7f)
                putc('?', f); /* never send control characters to a terminal */
            else
                putc(*s, f);
        }
        putc('\'', f);
    }
}

void cli_json_func(jsonw *w, const profile_func *f)
{
    jsonw_key_string(w, "name", f->name);
    jsonw_key_string(w, "file", f->file);
    jsonw_key_i64(w, "line", f->line);
    jsonw_key_string(w, "kind",
                     f->kind == PROFILE_FUNC_NATIVE ? "native"
                     : f->kind == PROFILE_FUNC_TASK ? "task"
                                                    : "python");
}

void cli_print_func(FILE *out, const profile_func *f)
{
    if (f->kind == PROFILE_FUNC_NATIVE)
        fprintf(out, f->file[0] ? "%s [native] (%s)" : "%s [native]", f->name, f->file);
    else if (f->file[0])
        fprintf(out, "%s (%s:%" PRId64 ")", f->name, f->file, f->line);
    else
        fputs(f->name, out);
}
