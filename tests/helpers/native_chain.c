/*
 * native_chain: a small C extension for the native-frame tests.  It makes the chain
 *
 *     Python caller -> chain_call (C) -> the Python callback -> chain_spin (C)
 *                   -> chain_spin_loop (C, where the CPU time goes)
 *
 * so a merged stack must show, innermost last:
 *
 *     ... outer ; chain_call ; callback ; chain_spin ; chain_spin_loop
 *
 *   native_chain.call(f)      calls f() from C and returns its result
 *   native_chain.spin(n)      n rounds of integer arithmetic in chain_spin_loop; returns
 *                             the result (so the loop cannot be optimised away)
 *
 * The functions are kept out of line and their calls out of tail position, so each is a
 * real frame of its own.  The tests build it once per interpreter with that version's
 * headers (native_chain() in tests/integration/pyprof_testlib.py), with -g so the tool
 * can show source lines; it compiles against 2.7 and every 3.x.
 */
#include <Python.h>

#define NOINLINE __attribute__((noinline, noclone))

NOINLINE static unsigned long long chain_spin_loop(unsigned long long n)
{
    unsigned long long x = 88172645463325252ull;
    for (unsigned long long i = 0; i < n; i++) {
        x ^= x << 13; /* xorshift: cheap, and no call leaves the loop */
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

NOINLINE static PyObject *chain_spin(PyObject *self, PyObject *args)
{
    unsigned long long n;
    (void)self;
    if (!PyArg_ParseTuple(args, "K", &n))
        return NULL;
    unsigned long long x = chain_spin_loop(n);
    return PyLong_FromUnsignedLongLong(x);
}

NOINLINE static PyObject *chain_call(PyObject *self, PyObject *args)
{
    PyObject *f;
    (void)self;
    if (!PyArg_ParseTuple(args, "O", &f))
        return NULL;
    PyObject *r = PyObject_CallObject(f, NULL);
    if (r == NULL)
        return NULL;
    /* Something after the call, so it is not a tail call. */
    PyObject *t = PyTuple_Pack(1, r);
    Py_DECREF(r);
    return t;
}

static PyMethodDef chain_methods[] = {
    {"call", chain_call, METH_VARARGS, "call(f): f() called from C"},
    {"spin", chain_spin, METH_VARARGS, "spin(n): n rounds of arithmetic in C"},
    {NULL, NULL, 0, NULL},
};

#if PY_MAJOR_VERSION >= 3
static struct PyModuleDef chain_module = {
    PyModuleDef_HEAD_INIT, "native_chain", NULL, -1, chain_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_native_chain(void);
PyMODINIT_FUNC PyInit_native_chain(void) { return PyModule_Create(&chain_module); }
#else
PyMODINIT_FUNC initnative_chain(void);
PyMODINIT_FUNC initnative_chain(void) { Py_InitModule("native_chain", chain_methods); }
#endif
