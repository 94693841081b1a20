/*
 * pymain_host: a `python` executable of our own making (Python 3.8+): main() hands its
 * arguments to Py_BytesMain, as CPython's own programs/python.c does.  test_faults.py
 * links it against libpython and the library under test (a DT_NEEDED entry instead of
 * LD_PRELOAD, which the dynamic loader ignores in secure-execution mode) to check that
 * a set-uid/set-gid python leaves no log.
 */
#include <Python.h>

int main(int argc, char **argv) { return Py_BytesMain(argc, argv); }
