/*
 * fastcall.c: the C entry of a generated C kernel (one state, or a small batch), as a
 * CPython callable.
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
 *
 * A small batch (a model-predictive controller's horizon: every input other than p of shape
 * (N, size), 1 <= N <= MAX_BATCH, p of shape (N, np), or (np,) or omitted and repeated for
 * every state) calls the kernel's _batch_entry on the inputs in place, after the same checks;
 * ``out`` arrays of shape (N, *shape) must then not overlap the inputs. The GIL is released
 * while the batch runs. Larger batches, and ``threads``, take the general path. A failed
 * state with errors="raise" raises the error that the entry's ``fail`` callable makes of the
 * states' statuses (the general path's message, made in one place: runtime/kernel.py); an
 * entry without one returns NotImplemented then (the general path computes the batch again).
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
#define MAX_BATCH 512       /* states of a batch called here, the GIL held (see the top) */
#define MAX_DOUBLES ((Py_ssize_t)(PY_SSIZE_T_MAX / sizeof(double)))   /* sizes in doubles */

typedef double *P;
/* a kernel's _entry form: its pointers in one array, inputs then outputs
 * (templates/c/signature.j2) */
typedef int (*entry_fn)(double *const *);
/* and its _batch_entry form: n states one after another, one status per state */
typedef int64_t (*batch_entry_fn)(int64_t, double *const *, int32_t *);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    entry_fn fn;
    batch_entry_fn batch_fn;    /* NULL: batches take the general path */
    int n_in, n_out;
    Py_ssize_t in_size[MAX_ARGS], in_offset[MAX_ARGS];
    int out_ndim[MAX_ARGS];
    npy_intp out_dims[MAX_ARGS][MAX_NDIM];
    Py_ssize_t out_size[MAX_ARGS];
    int p_index;                /* -1: no parameter input */
    PyObject *p_default;        /* a float64 array of the defaults, or NULL */
    PyObject *fail;             /* statuses (int32 array) -> the batch's error, or NULL */
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

/* Whether [lo, lo + a) and [lo2, lo2 + b) (bytes) overlap; addresses compared as integers:
 * the arrays are different objects. An empty range overlaps nothing. */
static int overlap(const void *p, size_t a, const void *q, size_t b)
{
    uintptr_t lo = (uintptr_t)p, lo2 = (uintptr_t)q;
    return a > 0 && b > 0 && lo < lo2 + b && lo2 < lo + a;
}

/* The given ``out`` as n_out arrays into ptr and arrays, of the outputs' shapes led by
 * ``lead`` states (0: one state, no leading dimension); 0 if it does not qualify. */
static int given_outputs(Entry *e, PyObject *out, npy_intp lead, P *ptr, PyObject **arrays)
{
    int extra = lead > 0;
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
        if (PyArray_NDIM(a) != e->out_ndim[j] + extra || !is_plain_f64(a, FLAGS_OUT)
            || (extra && PyArray_DIM(a, 0) != lead))
            return 0;
        for (int d = 0; d < e->out_ndim[j]; d++)
            if (PyArray_DIM(a, d + extra) != e->out_dims[j][d])
                return 0;
        ptr[j] = (double *)PyArray_DATA(a);
        arrays[j] = items[j];
    }
    size_t states = extra ? (size_t)lead : 1;
    for (int j = 0; j < e->n_out; j++)         /* outputs must not overlap each other */
        for (int k = 0; k < j; k++)
            if (overlap(ptr[j], states * (size_t)e->out_size[j] * sizeof(double),
                        ptr[k], states * (size_t)e->out_size[k] * sizeof(double)))
                return 0;
    return 1;
}

static PyObject *p_name;          /* "p", interned */

static PyObject *not_implemented(void)
{
    Py_RETURN_NOTIMPLEMENTED;
}

/* The outputs as the call returns them: one array, ``out`` itself when it is a tuple, or a
 * new tuple. ``fresh``: the arrays are new references (made here), else borrowed from out. */
static PyObject *result_of(Entry *e, PyObject **arrays, int fresh, PyObject *out)
{
    if (e->n_out == 1 || (!fresh && PyTuple_CheckExact(out))) {
        PyObject *result = e->n_out == 1 ? arrays[0] : out;   /* an out tuple comes back itself */
        if (!fresh)
            Py_INCREF(result);
        return result;
    }
    PyObject *result = PyTuple_New(e->n_out);
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

static void release(Entry *e, PyObject **arrays, int fresh)
{
    if (fresh)
        for (int j = 0; j < e->n_out; j++)
            Py_DECREF(arrays[j]);
}

/* Fresh outputs of the outputs' shapes led by ``lead`` states (0: none) into ptr and
 * arrays; 0 with an exception set on failure. */
static int new_outputs(Entry *e, npy_intp lead, P *ptr, PyObject **arrays)
{
    int extra = lead > 0;
    for (int j = 0; j < e->n_out; j++) {
        npy_intp dims[MAX_NDIM + 1];
        dims[0] = lead;
        memcpy(dims + extra, e->out_dims[j], sizeof(npy_intp) * (size_t)e->out_ndim[j]);
        arrays[j] = PyArray_SimpleNew(e->out_ndim[j] + extra, dims, NPY_DOUBLE);
        if (arrays[j] == NULL) {
            while (j--)
                Py_DECREF(arrays[j]);
            return 0;
        }
        ptr[j] = (double *)PyArray_DATA((PyArrayObject *)arrays[j]);
    }
    return 1;
}

static int all_finite(const double *x, Py_ssize_t n)
{
    int finite = 1;
    for (Py_ssize_t k = 0; k < n; k++)
        finite &= isfinite(x[k]) != 0;
    return finite;
}

/* One state: inputs[i] is input i (None: the parameter defaults). */
static PyObject *single_call(Entry *e, PyObject **inputs, PyObject *out, int raise)
{
    const double *src[MAX_ARGS];
    for (int i = 0; i < e->n_in; i++) {
        src[i] = input_data(e, i, inputs[i]);
        if (src[i] == NULL)
            return not_implemented();
    }

    P ptr[MAX_ARGS];
    PyObject *arrays[MAX_ARGS];
    int fresh = out == Py_None;
    /* The outputs are made before the copy into the shared buffer, so that no Python API is
     * called between that copy and the end of the kernel (the inputs' data pointers above are
     * borrowed from arrays the caller's args hold; making an ndarray runs no Python code). */
    if (fresh) {
        if (!new_outputs(e, 0, ptr + e->n_in, arrays))
            return NULL;
    } else if (!given_outputs(e, out, 0, ptr + e->n_in, arrays)) {
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
        release(e, arrays, fresh);
        return not_implemented();
    }

    int status = e->fn(ptr);

    if (status != 0 && raise) {
        release(e, arrays, fresh);
        return PyLong_FromLong(status);
    }
    return result_of(e, arrays, fresh, out);
}

/* The states of a batch input i: an exact plain float64 ndarray (lead, size); NULL if not. */
static const double *batch_data(Entry *e, int i, PyObject *v, npy_intp lead)
{
    if (!PyArray_CheckExact(v))
        return NULL;
    PyArrayObject *a = (PyArrayObject *)v;
    if (PyArray_NDIM(a) != 2 || PyArray_DIM(a, 0) != lead || PyArray_DIM(a, 1) != e->in_size[i]
        || !is_plain_f64(a, FLAGS_IN))
        return NULL;
    return (const double *)PyArray_DATA(a);
}

/* The error of a batch with a failed state: ``fail`` called on the states' statuses (an
 * int32 array), its result raised; NotImplemented without ``fail``. */
static PyObject *batch_failure(Entry *e, const int32_t *status, npy_intp lead)
{
    if (e->fail == NULL)
        return not_implemented();
    PyObject *codes = PyArray_SimpleNew(1, &lead, NPY_INT32);
    if (codes == NULL)
        return NULL;
    memcpy(PyArray_DATA((PyArrayObject *)codes), status, (size_t)lead * sizeof(int32_t));
    PyObject *error = PyObject_CallOneArg(e->fail, codes);
    Py_DECREF(codes);
    if (error == NULL)
        return NULL;
    if (!PyExceptionInstance_Check(error)) {
        PyErr_SetString(PyExc_TypeError, "Entry: fail must return an exception");
    } else {
        PyErr_SetObject((PyObject *)Py_TYPE(error), error);
    }
    Py_DECREF(error);
    return NULL;
}

/* A batch of ``lead`` states (1 <= lead <= MAX_BATCH): the inputs are read in place (a
 * parameter vector given once, or the defaults, is repeated for every state in a buffer of
 * this call) and the kernel's _batch_entry called. Every value is checked finite first. A
 * failed state with errors="raise" raises :func:`batch_failure` (the outputs given in
 * ``out`` are written, as on the general path). */
static PyObject *batch_call(Entry *e, PyObject **inputs, npy_intp lead, PyObject *out,
                            int raise)
{
    P ptr[MAX_ARGS];
    const void *data[MAX_ARGS];         /* each input's own memory, and its size in bytes */
    size_t bytes[MAX_ARGS];
    double *repeated = NULL;            /* the parameter vector, once per state */
    for (int i = 0; i < e->n_in; i++) {
        PyObject *v = inputs[i];
        const double *one = NULL;
        if (i == e->p_index) {
            if (v == Py_None && e->p_default != NULL)
                v = e->p_default;
            if (PyArray_CheckExact(v) && PyArray_NDIM((PyArrayObject *)v) == 1)
                one = input_data(e, i, v);
            if (one != NULL) {
                Py_ssize_t size = e->in_size[i];
                if (!all_finite(one, size))
                    return not_implemented();
                repeated = PyMem_Malloc((size_t)(lead * size + 1) * sizeof(double));
                if (repeated == NULL)
                    return PyErr_NoMemory();
                for (npy_intp k = 0; k < lead; k++)
                    memcpy(repeated + k * size, one, (size_t)size * sizeof(double));
                ptr[i] = repeated;
                data[i] = one;
                bytes[i] = (size_t)size * sizeof(double);
                continue;
            }
        }
        const double *x = batch_data(e, i, v, lead);
        if (x == NULL || !all_finite(x, lead * e->in_size[i])) {
            PyMem_Free(repeated);
            return not_implemented();
        }
        ptr[i] = (double *)x;           /* read only: the kernel's inputs are const */
        data[i] = x;
        bytes[i] = (size_t)lead * (size_t)e->in_size[i] * sizeof(double);
    }

    PyObject *arrays[MAX_ARGS];
    int fresh = out == Py_None;
    if (fresh) {
        if (!new_outputs(e, lead, ptr + e->n_in, arrays)) {
            PyMem_Free(repeated);
            return NULL;
        }
    } else {
        /* outputs must not overlap the inputs' own memory (a repeated p's too: the general
         * path reads it again after a failed state) */
        int ok = given_outputs(e, out, lead, ptr + e->n_in, arrays);
        for (int j = 0; ok && j < e->n_out; j++)
            for (int i = 0; ok && i < e->n_in; i++)
                ok = !overlap(ptr[e->n_in + j],
                              (size_t)lead * (size_t)e->out_size[j] * sizeof(double),
                              data[i], bytes[i]);
        if (!ok) {
            PyMem_Free(repeated);
            return not_implemented();
        }
    }

    /* The GIL is released for the kernel (as cffi does on the general path): this call owns
     * every buffer it passes, and holds a reference to every array it reads or writes, so
     * that another thread cannot free one (or resize it: numpy refuses while referenced). */
    int32_t status[MAX_BATCH];
    for (int i = 0; i < e->n_in; i++)
        Py_XINCREF(inputs[i]);
    if (!fresh)
        for (int j = 0; j < e->n_out; j++)
            Py_INCREF(arrays[j]);
    int64_t failed;
    Py_BEGIN_ALLOW_THREADS
    failed = e->batch_fn((int64_t)lead, ptr, status);
    Py_END_ALLOW_THREADS
    for (int i = 0; i < e->n_in; i++)
        Py_XDECREF(inputs[i]);
    if (!fresh)
        for (int j = 0; j < e->n_out; j++)
            Py_DECREF(arrays[j]);
    PyMem_Free(repeated);

    if (failed != 0 && raise) {
        release(e, arrays, fresh);
        return batch_failure(e, status, lead);
    }
    return result_of(e, arrays, fresh, out);
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

    PyObject *inputs[MAX_ARGS];         /* borrowed; None: the parameter defaults */
    for (int i = 0; i < e->n_in; i++)
        inputs[i] = i < n ? items[i] : p_keyword ? p_keyword : Py_None;

    /* A batch when the first input other than p is a 2-d array (N, size) */
    int first = e->p_index == 0 ? 1 : 0;
    if (first < e->n_in && PyArray_CheckExact(inputs[first])
        && PyArray_NDIM((PyArrayObject *)inputs[first]) == 2) {
        npy_intp lead = PyArray_DIM((PyArrayObject *)inputs[first], 0);
        if (e->batch_fn == NULL || lead < 1 || lead > MAX_BATCH)
            return not_implemented();
        return batch_call(e, inputs, lead, out, raise);
    }
    return single_call(e, inputs, out, raise);
}

/* Entry(address, batch_address, input_sizes, output_shapes, p_index, p_default[, fail]); a
 * batch_address of 0: no batch entry (batches take the general path); fail: None or a
 * callable, statuses -> exception (batch_failure) */
static PyObject *entry_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    unsigned long long address, batch_address;
    PyObject *sizes, *shapes, *p_default, *fail = Py_None;
    int p_index;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "Entry takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "KKO!O!iO|O", &address, &batch_address, &PyTuple_Type, &sizes,
                          &PyTuple_Type, &shapes, &p_index, &p_default, &fail))
        return NULL;
    if (fail != Py_None && !PyCallable_Check(fail)) {
        PyErr_SetString(PyExc_TypeError, "Entry: fail must be None or callable");
        return NULL;
    }
    Py_ssize_t n_in = PyTuple_GET_SIZE(sizes), n_out = PyTuple_GET_SIZE(shapes);
    if (address == 0 || address > UINTPTR_MAX || batch_address > UINTPTR_MAX || n_in < 0
        || n_out < 1
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
    e->batch_fn = batch_address ? (batch_entry_fn)(uintptr_t)batch_address : NULL;
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
    if (fail != Py_None) {
        Py_INCREF(fail);
        e->fail = fail;
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
    Py_XDECREF(e->fail);
    PyMem_Free(e->buffer);
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mechgen_fastcall.Entry",
    .tp_basicsize = sizeof(Entry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Entry(address, batch_address, input_sizes, output_shapes, p_index, p_default"
              "[, fail]): "
              "the C entry of one C kernel; call as entry(args, out, errors, threads, kwargs).",
    .tp_new = entry_new,
    .tp_dealloc = entry_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Entry, vectorcall),
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_mechgen_fastcall",
    "The C entry of generated C kernels (runtime/csrc/extension/fastcall.c).", -1,
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
