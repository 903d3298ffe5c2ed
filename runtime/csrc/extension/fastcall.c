/*
 * fastcall.c: the single-state entry of a generated C kernel, as a CPython callable.
 *
 * A kernel called from Python one state at a time (an integrator's or a controller's loop)
 * would otherwise pay for cffi pointers, numpy calls and Python bookkeeping, several times the
 * kernel's own time for a small kernel. An Entry holds the kernel's C function pointer (taken
 * from its cffi module), the sizes of its inputs and the shapes of its outputs; calling it
 *
 *     entry(args, out, errors, threads, kwargs)
 *
 * checks every input (an exact ndarray, native float64, 1-D of the input's size, C-contiguous
 * and aligned), copies the inputs into the entry's buffer while checking that every value is
 * finite, makes the outputs (or checks the ``out`` arrays: exact ndarrays, native float64, the
 * output's shape, C-contiguous, aligned, writeable, not overlapping each other), and calls the
 * kernel through its ``_entry`` form (one array of pointers; generated beside every kernel, so
 * that one function type serves them all). It returns the output (one output) or a tuple of them
 * (``out`` itself when that is a tuple), or the kernel's non-zero status
 * as an int when ``errors`` is "raise". Whenever anything is not exactly as above it returns
 * NotImplemented, and the caller (runtime/kernel.py) takes its general path, which converts the
 * input or raises the error naming the argument: this file never explains an error itself.
 *
 * ``args`` is a tuple or list of the inputs in order; the parameter input p (if the kernel has
 * one and the spec gives every default) may be None or omitted when last, and the defaults are
 * used; ``kwargs`` (a dict) may hold p alone, given after all other inputs. ``threads`` must
 * be the int 1 (a batch split across threads is the general path's).
 *
 * The inputs are copied, so an ``out`` array may be an input too (an integrator's state updated
 * in place). The GIL is held throughout; between the copy into the buffer and the end of the
 * kernel no Python API is called, so no other call of the same entry can interleave.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MAX_ARGS 24
#define MAX_NDIM 3
#define MAX_DOUBLES ((Py_ssize_t)(PY_SSIZE_T_MAX / sizeof(double)))   /* sizes in doubles */

typedef double *P;
/* a kernel's _entry form: its pointers in one array, inputs then outputs
 * (templates/c/signature.j2) */
typedef int (*entry_fn)(double *const *);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    entry_fn fn;
    int n_in, n_out;
    Py_ssize_t in_size[MAX_ARGS], in_offset[MAX_ARGS];
    int out_ndim[MAX_ARGS];
    npy_intp out_dims[MAX_ARGS][MAX_NDIM];
    Py_ssize_t out_size[MAX_ARGS];
    int p_index;                /* -1: no parameter input */
    PyObject *p_default;        /* a float64 array of the defaults, or NULL */
    double *buffer;             /* the inputs, one after another */
} Entry;

#define FLAGS_IN (NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED)
#define FLAGS_OUT (NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE)

/* A native float64 array with all of ``flags``. */
static int is_plain_f64(PyArrayObject *a, int flags)
{
    return PyArray_TYPE(a) == NPY_DOUBLE && PyArray_ISNOTSWAPPED(a)
           && (PyArray_FLAGS(a) & flags) == flags;
}

/* The data of input i: the argument's, or the parameter defaults; NULL if the argument does
 * not qualify for this path. */
static const double *input_data(Entry *e, int i, PyObject *v)
{
    if (v == Py_None && i == e->p_index && e->p_default != NULL)
        v = e->p_default;
    if (!PyArray_CheckExact(v))
        return NULL;
    PyArrayObject *a = (PyArrayObject *)v;
    if (PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != e->in_size[i] || !is_plain_f64(a, FLAGS_IN))
        return NULL;
    return (const double *)PyArray_DATA(a);
}

/* The given ``out`` as n_out arrays into ptr and arrays; 0 if it does not qualify. */
static int given_outputs(Entry *e, PyObject *out, P *ptr, PyObject **arrays)
{
    PyObject *const *items;
    if (e->n_out == 1 && PyArray_Check(out)) {
        items = &out;
    } else if (PyTuple_CheckExact(out) && PyTuple_GET_SIZE(out) == e->n_out) {
        items = &PyTuple_GET_ITEM(out, 0);
    } else if (PyList_CheckExact(out) && PyList_GET_SIZE(out) == e->n_out) {
        items = &PyList_GET_ITEM(out, 0);
    } else {
        return 0;
    }
    for (int j = 0; j < e->n_out; j++) {
        if (!PyArray_CheckExact(items[j]))
            return 0;
        PyArrayObject *a = (PyArrayObject *)items[j];
        if (PyArray_NDIM(a) != e->out_ndim[j] || !is_plain_f64(a, FLAGS_OUT))
            return 0;
        for (int d = 0; d < e->out_ndim[j]; d++)
            if (PyArray_DIM(a, d) != e->out_dims[j][d])
                return 0;
        ptr[j] = (double *)PyArray_DATA(a);
        arrays[j] = items[j];
    }
    /* outputs must not overlap each other (addresses compared as integers: the arrays are
     * different objects; an empty output overlaps nothing) */
    for (int j = 0; j < e->n_out; j++) {
        uintptr_t lo_j = (uintptr_t)ptr[j];
        uintptr_t hi_j = lo_j + (uintptr_t)e->out_size[j] * sizeof(double);
        for (int k = 0; k < j; k++) {
            uintptr_t lo_k = (uintptr_t)ptr[k];
            uintptr_t hi_k = lo_k + (uintptr_t)e->out_size[k] * sizeof(double);
            if (lo_j < hi_j && lo_k < hi_k && lo_j < hi_k && lo_k < hi_j)
                return 0;
        }
    }
    return 1;
}

static PyObject *p_name;          /* "p", interned */

static PyObject *not_implemented(void)
{
    Py_RETURN_NOTIMPLEMENTED;
}

static PyObject *entry_call(PyObject *self, PyObject *const *argv, size_t nargsf,
                            PyObject *kwnames)
{
    Entry *e = (Entry *)self;
    if (kwnames != NULL || PyVectorcall_NARGS(nargsf) != 5 || !PyDict_Check(argv[4])) {
        PyErr_SetString(PyExc_TypeError, "entry(args, out, errors, threads, kwargs) takes 5 "
                        "positional arguments, kwargs a dict");
        return NULL;
    }
    PyObject *args = argv[0], *out = argv[1], *errors = argv[2], *threads = argv[3];
    PyObject *kwargs = argv[4], *p_keyword = NULL;
    int raise, overflow;
    if (!PyLong_CheckExact(threads) || PyLong_AsLongAndOverflow(threads, &overflow) != 1
        || !PyUnicode_Check(errors))
        return not_implemented();
    if (PyUnicode_CompareWithASCIIString(errors, "raise") == 0)
        raise = 1;
    else if (PyUnicode_CompareWithASCIIString(errors, "nan") == 0)
        raise = 0;
    else
        return not_implemented();

    PyObject *const *items;
    Py_ssize_t n;
    if (PyTuple_CheckExact(args)) {
        items = &PyTuple_GET_ITEM(args, 0);
        n = PyTuple_GET_SIZE(args);
    } else if (PyList_CheckExact(args)) {
        items = &PyList_GET_ITEM(args, 0);
        n = PyList_GET_SIZE(args);
    } else {
        return not_implemented();
    }
    int last_is_p = n == e->n_in - 1 && e->p_index == e->n_in - 1;
    if (PyDict_GET_SIZE(kwargs) != 0) {         /* only p=..., after the other inputs */
        if (!last_is_p || PyDict_GET_SIZE(kwargs) != 1)
            return not_implemented();
        p_keyword = PyDict_GetItemWithError(kwargs, p_name);      /* borrowed */
        if (p_keyword == NULL) {
            if (PyErr_Occurred())
                return NULL;
            return not_implemented();
        }
    } else if (n != e->n_in && !(last_is_p && e->p_default != NULL)) {
        return not_implemented();
    }

    const double *src[MAX_ARGS];
    for (int i = 0; i < e->n_in; i++) {
        src[i] = input_data(e, i, i < n ? items[i] : p_keyword ? p_keyword : Py_None);
        if (src[i] == NULL)
            return not_implemented();
    }

    P ptr[MAX_ARGS];
    PyObject *arrays[MAX_ARGS];
    PyObject *result;
    int fresh = out == Py_None;
    /* The outputs are made before the copy into the shared buffer, so that no Python API is
     * called between that copy and the end of the kernel (the inputs' data pointers above are
     * borrowed from arrays the caller's args hold; making an ndarray runs no Python code). */
    if (fresh) {
        for (int j = 0; j < e->n_out; j++) {
            arrays[j] = PyArray_SimpleNew(e->out_ndim[j], e->out_dims[j], NPY_DOUBLE);
            if (arrays[j] == NULL) {
                while (j--)
                    Py_DECREF(arrays[j]);
                return NULL;
            }
            ptr[e->n_in + j] = (double *)PyArray_DATA((PyArrayObject *)arrays[j]);
        }
    } else if (!given_outputs(e, out, ptr + e->n_in, arrays)) {
        return not_implemented();
    }

    int finite = 1;
    for (int i = 0; i < e->n_in; i++) {
        double *dst = e->buffer + e->in_offset[i];
        const double *s = src[i];
        for (Py_ssize_t k = 0; k < e->in_size[i]; k++) {
            double x = s[k];
            finite &= isfinite(x) != 0;
            dst[k] = x;
        }
        ptr[i] = dst;
    }
    if (!finite) {
        if (fresh)
            for (int j = 0; j < e->n_out; j++)
                Py_DECREF(arrays[j]);
        return not_implemented();
    }

    int status = e->fn(ptr);

    if (status != 0 && raise) {
        if (fresh)
            for (int j = 0; j < e->n_out; j++)
                Py_DECREF(arrays[j]);
        return PyLong_FromLong(status);
    }
    if (e->n_out == 1 || (!fresh && PyTuple_CheckExact(out))) {
        result = e->n_out == 1 ? arrays[0] : out;      /* an out tuple comes back itself */
        if (!fresh)
            Py_INCREF(result);
        return result;
    }
    result = PyTuple_New(e->n_out);
    if (result == NULL) {
        if (fresh)
            for (int j = 0; j < e->n_out; j++)
                Py_DECREF(arrays[j]);
        return NULL;
    }
    for (int j = 0; j < e->n_out; j++) {
        if (!fresh)
            Py_INCREF(arrays[j]);
        PyTuple_SET_ITEM(result, j, arrays[j]);        /* steals the reference */
    }
    return result;
}

/* Entry(address, input_sizes, output_shapes, p_index, p_default) */
static PyObject *entry_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    unsigned long long address;
    PyObject *sizes, *shapes, *p_default;
    int p_index;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "Entry takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "KO!O!iO", &address, &PyTuple_Type, &sizes, &PyTuple_Type,
                          &shapes, &p_index, &p_default))
        return NULL;
    Py_ssize_t n_in = PyTuple_GET_SIZE(sizes), n_out = PyTuple_GET_SIZE(shapes);
    if (address == 0 || address > UINTPTR_MAX || n_in < 0 || n_out < 1
        || n_in + n_out > MAX_ARGS
        || p_index < -1 || p_index >= n_in) {
        PyErr_Format(PyExc_ValueError, "Entry: a kernel with %zd inputs and %zd outputs (at "
                     "most %d in all), parameter index %d, address %llu is not supported",
                     n_in, n_out, MAX_ARGS, p_index, address);
        return NULL;
    }
    Entry *e = (Entry *)type->tp_alloc(type, 0);
    if (e == NULL)
        return NULL;
    e->vectorcall = entry_call;
    e->fn = (entry_fn)(uintptr_t)address;
    e->n_in = (int)n_in;
    e->n_out = (int)n_out;
    e->p_index = p_index;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n_in; i++) {
        Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(sizes, i));
        if (s < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "Entry: an input size is negative");
            Py_DECREF(e);
            return NULL;
        }
        if (s > MAX_DOUBLES - total) {
            PyErr_SetString(PyExc_ValueError, "Entry: the inputs are too large");
            Py_DECREF(e);
            return NULL;
        }
        e->in_size[i] = s;
        e->in_offset[i] = total;
        total += s;
    }
    for (Py_ssize_t j = 0; j < n_out; j++) {
        PyObject *shape = PyTuple_GET_ITEM(shapes, j);
        if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) > MAX_NDIM) {
            PyErr_Format(PyExc_ValueError, "Entry: output %zd's shape must be a tuple of at "
                         "most %d sizes", j, MAX_NDIM);
            Py_DECREF(e);
            return NULL;
        }
        e->out_ndim[j] = (int)PyTuple_GET_SIZE(shape);
        e->out_size[j] = 1;
        for (int d = 0; d < e->out_ndim[j]; d++) {
            Py_ssize_t s = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, d));
            if (s < 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "Entry: an output size is negative");
                Py_DECREF(e);
                return NULL;
            }
            if (s > 0 && e->out_size[j] > MAX_DOUBLES / s) {
                PyErr_Format(PyExc_ValueError, "Entry: output %zd is too large", j);
                Py_DECREF(e);
                return NULL;
            }
            e->out_dims[j][d] = s;
            e->out_size[j] *= s;
        }
    }
    if (p_default != Py_None) {
        if (p_index < 0 || !PyArray_CheckExact(p_default)
            || PyArray_NDIM((PyArrayObject *)p_default) != 1
            || PyArray_DIM((PyArrayObject *)p_default, 0) != e->in_size[p_index]
            || !is_plain_f64((PyArrayObject *)p_default, FLAGS_IN)) {
            PyErr_SetString(PyExc_ValueError, "Entry: p_default must be a float64 array of "
                            "the parameter input's size");
            Py_DECREF(e);
            return NULL;
        }
        Py_INCREF(p_default);
        e->p_default = p_default;
    }
    e->buffer = PyMem_Calloc(total > 0 ? (size_t)total : 1, sizeof(double));
    if (e->buffer == NULL) {
        Py_DECREF(e);
        return PyErr_NoMemory();
    }
    return (PyObject *)e;
}

static void entry_dealloc(PyObject *self)
{
    Entry *e = (Entry *)self;
    Py_XDECREF(e->p_default);
    PyMem_Free(e->buffer);
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mechgen_fastcall.Entry",
    .tp_basicsize = sizeof(Entry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Entry(address, input_sizes, output_shapes, p_index, p_default): the single-state "
              "entry of one C kernel; call as entry(args, out, errors, threads, kwargs).",
    .tp_new = entry_new,
    .tp_dealloc = entry_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Entry, vectorcall),
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_mechgen_fastcall",
    "The single-state entry of generated C kernels (runtime/csrc/extension/fastcall.c).", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__mechgen_fastcall(void)
{
    import_array();
    p_name = PyUnicode_InternFromString("p");
    if (p_name == NULL)
        return NULL;
    if (PyType_Ready(&EntryType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&EntryType);
    if (PyModule_AddObject(m, "Entry", (PyObject *)&EntryType) < 0) {
        Py_DECREF(&EntryType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
