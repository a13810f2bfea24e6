/* ncclshim._fast: the collectives' common case in C, for comm.Communicator (comm.py).
 *
 * Calls is Communicator's first base: its all_reduce, broadcast, reduce, all_gather,
 * reduce_scatter, send and recv take torch tensors of torch's exact Tensor type (CUDA,
 * contiguous, of one NCCL type, counts as the call needs), a stream given as None, an int in
 * [0, 2**64) or a type the Python layer has seen and knows the handle attribute of, a
 * reduction given by a name or an int in C's int range, a root or peer of the communicator,
 * and call the loaded NCCL's table entry directly. Anything else, and anything that raises
 * while it is read, is handed unchanged to comm._PyCalls' method of the same name, which
 * checks everything and says what is wrong: this file raises nothing of its own, so the two
 * paths cannot disagree on what is refused. What this path takes, it hands NCCL exactly as
 * the Python path would.
 *
 * Built against the stable ABI (Python 3.8 on, one binary per architecture); it links no
 * library: the NCCL table comes from libncclshim at run time (bind). */
#define Py_LIMITED_API 0x03080000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdint.h>

#include "ncclshim/ncclshim.h"

typedef struct {
  PyObject_HEAD void *comm; /* the ncclComm_t while ready and unwatched, else NULL */
  int watched;
  int nranks;
  /* Threads (comm.py's Communicator._settle): the calls in flight here, counted with the GIL
   * held, and whether the handle is torn down; the last call to return then frees it. */
  int calls;
  int ended;
} Calls;

enum { ALL_REDUCE, BROADCAST, REDUCE, ALL_GATHER, REDUCE_SCATTER, SEND, RECV, KINDS };
enum { MAX_ARGS = 5 };
/* Where each call's arguments are: -1 where it has none. */
typedef struct {
  const char *method, *nccl;
  int nnames;
  const char *names[MAX_ARGS];
  int required; /* positional arguments without a default */
  int op, root; /* the index of op, of root (or peer) */
  int in_place; /* recv may be None */
  int scaled;   /* the second buffer holds nranks x the first's count */
  int swapped;  /* the count is recv's (reduce_scatter): the first buffer read is recv */
} Spec;

/* clang-format off */
static const Spec specs[KINDS] = {
  /* kind               method            NCCL                 names                                     req op root in-place scaled swapped */
  [ALL_REDUCE]     = {"all_reduce",     "ncclAllReduce",     4, {"send", "recv", "op", "stream"},         1,  2, -1, 1, 0, 0},
  [BROADCAST]      = {"broadcast",      "ncclBroadcast",     4, {"send", "recv", "root", "stream"},       1, -1,  2, 1, 0, 0},
  [REDUCE]         = {"reduce",         "ncclReduce",        5, {"send", "recv", "root", "op", "stream"}, 1,  3,  2, 1, 0, 0},
  [ALL_GATHER]     = {"all_gather",     "ncclAllGather",     3, {"send", "recv", "stream"},               2, -1, -1, 0, 1, 0},
  [REDUCE_SCATTER] = {"reduce_scatter", "ncclReduceScatter", 4, {"send", "recv", "op", "stream"},         2,  2, -1, 0, 1, 1},
  [SEND]           = {"send",           "ncclSend",          3, {"buf", "peer", "stream"},                2, -1,  1, 0, 0, 0},
  [RECV]           = {"recv",           "ncclRecv",          3, {"buf", "peer", "stream"},                2, -1,  1, 0, 0, 0},
};
/* clang-format on */

static const ncclshim_nccl_table *table;
static PyObject *names[KINDS][MAX_ARGS]; /* interned */
static PyObject *nccl_names[KINDS];
static PyObject *fallbacks[KINDS]; /* _PyCalls' methods */
static PyObject *torch_codes, *op_codes, *stream_attrs, *current_stream, *tensor_type;
static PyObject *s_is_cuda, *s_dtype, *s_is_contiguous, *s_numel, *s_data_ptr, *s_comm, *s_tensor,
    *s_torch, *s_settle;

enum { BOOL_CODE = -1, UINT8_CODE = 1 }; /* buffers.BOOL, ncclUint8 */

/* The arguments as the method's signature places them (borrowed), or -1 where the call does
 * not fit it (the Python method then says why). */
static int parse(int kind, PyObject *args, PyObject *kw, PyObject **slots) {
  const Spec *spec = &specs[kind];
  Py_ssize_t given = PyTuple_Size(args);
  if (given < 0 || given > spec->nnames) return -1;
  for (int i = 0; i < spec->nnames; i++) slots[i] = i < given ? PyTuple_GetItem(args, i) : NULL;
  if (kw) {
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(kw, &pos, &key, &value)) {
      int j = 0;
      while (j < spec->nnames && key != names[kind][j]) j++;
      for (int k = 0; j == spec->nnames && k < spec->nnames; k++)
        if (PyUnicode_Compare(key, names[kind][k]) == 0) j = k;
      if (PyErr_Occurred()) PyErr_Clear();
      if (j == spec->nnames || slots[j]) return -1;
      slots[j] = value;
    }
  }
  for (int i = 0; i < spec->required; i++)
    if (!slots[i]) return -1;
  return 0;
}

/* An exact int in [0, ULLONG_MAX], owned reference consumed. */
static int take_u64(PyObject *value, unsigned long long *out) {
  if (!value) return -1;
  int ok = PyLong_CheckExact(value);
  unsigned long long v = ok ? PyLong_AsUnsignedLongLong(value) : 0;
  Py_DECREF(value);
  if (!ok || (v == (unsigned long long)-1 && PyErr_Occurred())) return -1;
  *out = v;
  return 0;
}

static int is_true(PyObject *value) { /* owned reference consumed */
  if (!value) return 0;
  int yes = value == Py_True;
  Py_DECREF(value);
  return yes;
}

typedef struct {
  unsigned long long ptr, count;
  int code; /* the NCCL code of the tensor's dtype (BOOL_CODE for torch.bool) */
} View;

static void replace(PyObject **slot, PyObject *value) {
  Py_XINCREF(value);
  Py_XDECREF(*slot);
  *slot = value;
}

/* Whether t's type is torch.Tensor itself (a subclass may change what the accessors mean).
 * The type is learned from the torch in sys.modules, again whenever it differs. */
static int is_tensor(PyObject *t) {
  if (tensor_type && (PyObject *)Py_TYPE(t) == tensor_type) return 1;
  PyObject *torch = PyDict_GetItem(PyImport_GetModuleDict(), s_torch);
  PyObject *type = torch ? PyObject_GetAttr(torch, s_tensor) : NULL;
  if (!type) return 0;
  replace(&tensor_type, type);
  Py_DECREF(type);
  return (PyObject *)Py_TYPE(t) == tensor_type;
}

/* A CUDA, contiguous tensor of torch's exact Tensor type whose dtype has a code. */
static int read_tensor(PyObject *t, View *v) {
  if (!is_tensor(t)) return -1;
  if (!is_true(PyObject_GetAttr(t, s_is_cuda)) ||
      !is_true(PyObject_CallMethodObjArgs(t, s_is_contiguous, NULL)))
    return -1;
  PyObject *dtype = PyObject_GetAttr(t, s_dtype);
  if (!dtype) return -1;
  PyObject *code = PyDict_GetItem(torch_codes, dtype); /* seen by the Python path first */
  /* Only the code is kept: a dtype object made afresh at each read is freed here, and the
   * next tensor's may take its address. */
  v->code = code ? (int)PyLong_AsLong(code) : 0;
  Py_DECREF(dtype);
  if (!code || PyErr_Occurred()) return -1;
  if (take_u64(PyObject_CallMethodObjArgs(t, s_numel, NULL), &v->count) ||
      take_u64(PyObject_CallMethodObjArgs(t, s_data_ptr, NULL), &v->ptr))
    return -1;
  return 0;
}

static int read_stream(PyObject *s, unsigned long long *out) {
  PyObject *h;
  if (!s || s == Py_None) {
    h = PyObject_CallFunctionObjArgs(current_stream, s_torch, NULL);
  } else if (PyLong_CheckExact(s)) {
    Py_INCREF(s);
    h = s;
  } else {
    PyObject *attr = PyDict_GetItem(stream_attrs, (PyObject *)Py_TYPE(s));
    h = attr ? PyObject_GetAttr(s, attr) : NULL;
  }
  return take_u64(h, out);
}

/* ncclRedOp_t of op: an exact int in C's int range, or a spelling the Python path has seen. */
static int read_op(PyObject *op, int code, int *out) {
  long v = 0;
  if (op && PyLong_CheckExact(op)) {
    v = PyLong_AsLong(op);
  } else if (op) {
    if (PyLong_Check(op)) /* bool, an int subclass: the Python path decides */
      return -1;
    PyObject *known = PyDict_GetItem(op_codes, op);
    if (!known) return -1;
    v = PyLong_AsLong(known);
  }
  if (PyErr_Occurred() || v < 0 || v > INT_MAX) return -1;
  if (code == BOOL_CODE) { /* torch's bool reductions: SUM is MAX, PROD is MIN */
    static const int bool_ops[4] = {2, 3, 2, 3};
    if (v > 3) return -1;
    v = bool_ops[v];
  }
  *out = (int)v;
  return 0;
}

static int read_rank(PyObject *value, int nranks, int *out) {
  long v = 0;
  if (value) {
    if (!PyLong_CheckExact(value)) return -1;
    v = PyLong_AsLong(value);
    if (PyErr_Occurred()) return -1;
  }
  if (v < 0 || v >= nranks) return -1;
  *out = (int)v;
  return 0;
}

static PyObject *defer(PyObject *self, int kind, PyObject *args, PyObject *kw) {
  if (PyErr_Occurred()) PyErr_Clear();
  if (!fallbacks[kind]) {
    PyErr_SetString(PyExc_RuntimeError,
                    "ncclshim._fast.Calls works inside ncclshim.Communicator only");
    return NULL;
  }
  Py_ssize_t n = PyTuple_Size(args);
  PyObject *full = PyTuple_New(n + 1);
  if (!full) return NULL;
  Py_INCREF(self);
  PyTuple_SetItem(full, 0, self);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PyTuple_GetItem(args, i);
    Py_INCREF(item);
    PyTuple_SetItem(full, i + 1, item);
  }
  PyObject *result = PyObject_Call(fallbacks[kind], full, kw);
  Py_DECREF(full);
  return result;
}

static int call_nccl(int kind, const View *a, const View *b, int dt, int op, int root,
                     ncclComm_t comm, cudaStream_t s) {
  const void *ap = (const void *)(uintptr_t)a->ptr;
  void *bp = (void *)(uintptr_t)b->ptr;
  size_t n = (size_t)a->count;
  ncclResult_t r = ncclInternalError;
  PyThreadState *state = PyEval_SaveThread(); /* NCCL may block: other threads go on */
  switch (kind) {
  case ALL_REDUCE:
    r = table->ncclAllReduce(ap, bp, n, dt, op, comm, s);
    break;
  case BROADCAST:
    r = table->ncclBroadcast(ap, bp, n, dt, root, comm, s);
    break;
  case REDUCE:
    r = table->ncclReduce(ap, bp, n, dt, op, root, comm, s);
    break;
  case ALL_GATHER:
    r = table->ncclAllGather(ap, bp, n, dt, comm, s);
    break;
  case REDUCE_SCATTER: /* a is recv (the call's count), b is send */
    r = table->ncclReduceScatter((const void *)(uintptr_t)b->ptr, (void *)(uintptr_t)a->ptr, n, dt,
                                 op, comm, s);
    break;
  case SEND:
    r = table->ncclSend(ap, n, dt, root, comm, s);
    break;
  case RECV:
    r = table->ncclRecv((void *)(uintptr_t)a->ptr, n, dt, root, comm, s);
    break;
  }
  PyEval_RestoreThread(state);
  return (int)r;
}

/* The NCCL call and what follows it, while counted as a call in flight. */
static PyObject *call_counted(Calls *self, int kind, const View *a, const View *b, int dt, int op,
                              int root, unsigned long long s) {
  PyObject *obj = (PyObject *)self;
  void *comm = self->comm;
  if (!comm) { /* watched, failed or closed: the Python side answers or raises */
    PyObject *raw = PyObject_CallMethodObjArgs(obj, s_comm, NULL);
    if (!raw) return NULL;
    comm = PyLong_AsVoidPtr(raw);
    Py_DECREF(raw);
    if (PyErr_Occurred()) return NULL;
  }
  int r = call_nccl(kind, a, b, dt, op, root, (ncclComm_t)comm, (cudaStream_t)(uintptr_t)s);
  if (r || self->watched) {
    PyObject *after =
        PyObject_CallMethod(obj, "_after", "iOKKi", r, nccl_names[kind], s, a->count, dt);
    if (!after) return NULL;
    Py_DECREF(after);
  }
  Py_RETURN_NONE;
}

static PyObject *collective(PyObject *obj, int kind, PyObject *args, PyObject *kw) {
  Calls *self = (Calls *)obj;
  const Spec *spec = &specs[kind];
  PyObject *slot[MAX_ARGS];
  View a, b;
  int op = 0, root = 0;
  unsigned long long s;
  if (!table || !torch_codes || self->nranks < 1 || parse(kind, args, kw, slot))
    return defer(obj, kind, args, kw);
  /* the first buffer read holds the call's count */
  PyObject *first = spec->swapped ? slot[1] : slot[0], *second = spec->swapped ? slot[0] : slot[1];
  if (kind == SEND || kind == RECV || second == Py_None) second = NULL;
  if ((!second && !spec->in_place && kind != SEND && kind != RECV) || read_tensor(first, &a))
    return defer(obj, kind, args, kw);
  if (second) {
    unsigned long long scale = spec->scaled ? (unsigned long long)self->nranks : 1;
    if (read_tensor(second, &b) || b.code != a.code || a.count > ULLONG_MAX / scale ||
        b.count != a.count * scale)
      return defer(obj, kind, args, kw);
  } else {
    b = a;
  }
  int dt = a.code;
  if (spec->op >= 0 ? read_op(slot[spec->op], a.code, &op) : 0) return defer(obj, kind, args, kw);
  if (dt == BOOL_CODE) dt = UINT8_CODE;
  if (spec->root >= 0 && read_rank(slot[spec->root], self->nranks, &root))
    return defer(obj, kind, args, kw);
  if (read_stream(slot[spec->nnames - 1], &s)) return defer(obj, kind, args, kw);
  self->calls++; /* before reading comm: close() clears it, then counts the calls */
  PyObject *result = call_counted(self, kind, &a, &b, dt, op, root, s);
  self->calls--;
  if (self->ended) { /* close() or abort() ran meanwhile: the last call frees the handle */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *settled = PyObject_CallMethodObjArgs(obj, s_settle, NULL);
    Py_XDECREF(settled);
    if (type) {
      PyErr_Restore(type, value, tb);
    } else if (!settled) {
      Py_XDECREF(result);
      return NULL;
    }
  }
  return result;
}

#define METHOD(fn, KIND)                                              \
  static PyObject *fn(PyObject *self, PyObject *args, PyObject *kw) { \
    return collective(self, KIND, args, kw);                          \
  }
METHOD(all_reduce, ALL_REDUCE)
METHOD(broadcast, BROADCAST)
METHOD(reduce, REDUCE)
METHOD(all_gather, ALL_GATHER)
METHOD(reduce_scatter, REDUCE_SCATTER)
METHOD(send, SEND)
METHOD(recv, RECV)

/* Each with its signature (inspect.signature reads it) and where the whole story is. */
/* clang-format off */
#define ENTRY(fn, params)                                                  \
  {#fn, (PyCFunction)(void (*)(void))fn, METH_VARARGS | METH_KEYWORDS,     \
   #fn "($self, " params ")\n--\n\nThe common case in C; every other "     \
   "call, and the checks: comm._PyCalls." #fn "."}
/* clang-format on */
static PyMethodDef calls_methods[] = {
    ENTRY(all_reduce, "send, recv=None, op='sum', stream=None, config=None"),
    ENTRY(broadcast, "send, recv=None, root=0, stream=None, config=None"),
    ENTRY(reduce, "send, recv=None, root=0, op='sum', stream=None, config=None"),
    ENTRY(all_gather, "send, recv, stream=None, config=None"),
    ENTRY(reduce_scatter, "send, recv, op='sum', stream=None, config=None"),
    ENTRY(send, "buf, peer, stream=None"),
    ENTRY(recv, "buf, peer, stream=None"),
    {NULL, NULL, 0, NULL}};

/* ---- the state the Python side keeps here ---- */

static PyObject *get_fast(PyObject *obj, void *unused) {
  (void)unused;
  void *comm = ((Calls *)obj)->comm;
  if (comm) return PyLong_FromVoidPtr(comm);
  Py_RETURN_NONE;
}

static int set_fast(PyObject *obj, PyObject *value, void *unused) {
  (void)unused;
  void *comm = NULL;
  if (value && value != Py_None) {
    comm = PyLong_AsVoidPtr(value);
    if (PyErr_Occurred()) return -1;
  }
  ((Calls *)obj)->comm = comm;
  return 0;
}

static PyObject *get_watched(PyObject *obj, void *unused) {
  (void)unused;
  return PyBool_FromLong(((Calls *)obj)->watched);
}

static int set_watched(PyObject *obj, PyObject *value, void *unused) {
  (void)unused;
  int yes = value ? PyObject_IsTrue(value) : 0;
  if (yes < 0) return -1;
  ((Calls *)obj)->watched = yes;
  return 0;
}

static PyObject *get_nranks(PyObject *obj, void *unused) {
  (void)unused;
  return PyLong_FromLong(((Calls *)obj)->nranks);
}

static int set_nranks(PyObject *obj, PyObject *value, void *unused) {
  (void)unused;
  long n = value ? PyLong_AsLong(value) : -1;
  if (n == -1 && PyErr_Occurred()) return -1;
  if (n < 1 || n > INT_MAX) {
    PyErr_SetString(PyExc_ValueError, "nranks must be in [1, 2147483647]");
    return -1;
  }
  ((Calls *)obj)->nranks = (int)n;
  return 0;
}

static PyObject *get_fast_calls(PyObject *obj, void *unused) {
  (void)unused;
  return PyLong_FromLong(((Calls *)obj)->calls);
}

static PyObject *get_ended(PyObject *obj, void *unused) {
  (void)unused;
  return PyBool_FromLong(((Calls *)obj)->ended);
}

static int set_ended(PyObject *obj, PyObject *value, void *unused) {
  (void)unused;
  int yes = value ? PyObject_IsTrue(value) : 0;
  if (yes < 0) return -1;
  ((Calls *)obj)->ended = yes;
  return 0;
}

static PyGetSetDef calls_getset[] = {
    {"_fast", get_fast, set_fast, "the ncclComm_t while ready and unwatched, else None", NULL},
    {"_watched", get_watched, set_watched, "whether a watchdog watches", NULL},
    {"nranks", get_nranks, set_nranks, "the communicator's number of ranks", NULL},
    {"_fast_calls", get_fast_calls, NULL, "the calls in flight on this path", NULL},
    {"_ended", get_ended, set_ended, "torn down: the last call in flight frees the handle", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot calls_slots[] = {{Py_tp_methods, calls_methods},
                                    {Py_tp_getset, calls_getset},
                                    {Py_tp_doc, "The collectives' common case in C."},
                                    {0, NULL}};
static PyType_Spec calls_spec = {"ncclshim._fast.Calls", sizeof(Calls), 0,
                                 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, calls_slots};

/* ---- module functions ---- */

static PyObject *setup(PyObject *module, PyObject *args) {
  (void)module;
  PyObject *fallback, *codes, *ops, *streams, *current;
  if (!PyArg_ParseTuple(args, "OO!O!O!O:setup", &fallback, &PyDict_Type, &codes, &PyDict_Type, &ops,
                        &PyDict_Type, &streams, &current))
    return NULL;
  for (int k = 0; k < KINDS; k++) {
    PyObject *fn = PyObject_GetAttrString(fallback, specs[k].method);
    if (!fn) return NULL;
    replace(&fallbacks[k], fn);
    Py_DECREF(fn);
  }
  replace(&torch_codes, codes);
  replace(&op_codes, ops);
  replace(&stream_attrs, streams);
  replace(&current_stream, current);
  Py_RETURN_NONE;
}

static PyObject *bind(PyObject *module, PyObject *address) {
  (void)module;
  void *p = PyLong_AsVoidPtr(address);
  if (PyErr_Occurred()) return NULL;
  if (!p) {
    PyErr_SetString(PyExc_ValueError, "bind: the NCCL table's address is NULL");
    return NULL;
  }
  table = (const ncclshim_nccl_table *)p;
  Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"setup", setup, METH_VARARGS,
     "setup(fallback, torch_codes, ops, stream_attrs, current): the Python side's tables"},
    {"bind", bind, METH_O, "bind(address): the loaded NCCL's ncclshim_nccl_table"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                                        "_fast",
                                        "The collectives' common case in C (comm.py).",
                                        -1,
                                        module_methods,
                                        NULL,
                                        NULL,
                                        NULL,
                                        NULL};

static PyObject *intern(const char *text) { return PyUnicode_InternFromString(text); }

PyMODINIT_FUNC PyInit__fast(void);
PyMODINIT_FUNC PyInit__fast(void) {
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  for (int k = 0; k < KINDS; k++) {
    for (int i = 0; i < specs[k].nnames; i++)
      if (!names[k][i] && !(names[k][i] = intern(specs[k].names[i]))) return NULL;
    if (!nccl_names[k] && !(nccl_names[k] = intern(specs[k].nccl))) return NULL;
  }
  if (!(s_is_cuda = intern("is_cuda")) || !(s_dtype = intern("dtype")) ||
      !(s_is_contiguous = intern("is_contiguous")) || !(s_numel = intern("numel")) ||
      !(s_data_ptr = intern("data_ptr")) || !(s_comm = intern("_comm")) ||
      !(s_tensor = intern("Tensor")) || !(s_torch = intern("torch")) ||
      !(s_settle = intern("_settle")))
    return NULL;
  PyObject *type = PyType_FromSpec(&calls_spec);
  if (!type || PyModule_AddObject(m, "Calls", type)) return NULL;
  return m;
}
