/*
 * embed_host: the smallest program that embeds CPython, for the integration tests.
 *
 *     embed_host SCRIPT [ARGS...]
 *
 * It is linked against libpython (it is not a `python` executable), initializes the
 * interpreter with Py_InitializeEx(0) as most embedding hosts do (no Python signal
 * handlers), sets sys.argv to SCRIPT ARGS..., runs SCRIPT with PyRun_SimpleFileExFlags,
 * then calls Py_FinalizeEx (Py_Finalize on 2.7) itself.  Its exit status is what the
 * python executable's would be: 0 when the script ran to its end, 1 when it raised,
 * 120 when finalization failed; sys.exit(n) exits with n from inside the run call, as in
 * python.
 *
 * Built with -DEMBED_PLUGIN -shared, the same code is a plugin instead: main becomes the
 * exported `embed_plugin_main`, which tests/helpers/plugin_host.c (a program that does not
 * link libpython) opens with dlopen(RTLD_LOCAL) after start, as application servers
 * such as uwsgi load their Python plugin.
 *
 * The tests compile it once per interpreter with that version's python-config (see
 * embed_host() in tests/integration/pyprof_testlib.py), so it builds against every
 * version from 2.7 to 3.13.
 */
#include <Python.h>

#include <stdio.h>

#ifdef EMBED_PLUGIN
__attribute__((visibility("default"))) int embed_plugin_main(int argc, char **argv);
int embed_plugin_main(int argc, char **argv)
#else
int main(int argc, char **argv)
#endif
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCRIPT [ARGS...]\n", argv[0]);
        return 2;
    }
    FILE *fp = fopen(argv[1], "r");
    if (fp == NULL) {
        perror(argv[1]);
        return 2;
    }

    Py_InitializeEx(0);

#if PY_MAJOR_VERSION >= 3
    /* sys.argv holds wide strings on 3.x; Py_DecodeLocale is what python itself uses.
     * The array lives as long as the process: the interpreter may keep pointers. */
    wchar_t **wargv = PyMem_RawMalloc(sizeof(wchar_t *) * (size_t)(argc - 1));
    if (wargv == NULL) {
        fprintf(stderr, "embed_host: out of memory\n");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        wargv[i - 1] = Py_DecodeLocale(argv[i], NULL);
        if (wargv[i - 1] == NULL) {
            fprintf(stderr, "embed_host: cannot decode argument %d\n", i);
            return 2;
        }
    }
    PySys_SetArgvEx(argc - 1, wargv, 0);
#else
    PySys_SetArgvEx(argc - 1, argv + 1, 0);
#endif

    /* closeit=1: the interpreter closes fp.  Returns 0, or -1 after printing the
     * traceback of an uncaught exception. */
    int rc = PyRun_SimpleFileExFlags(fp, argv[1], 1, NULL) == 0 ? 0 : 1;

#if PY_VERSION_HEX >= 0x03060000
    if (Py_FinalizeEx() < 0)
        rc = 120;
#else
    Py_Finalize();
#endif
    return rc;
}
