/*
 * pyticdc.codec._native: the optional C helpers of the codecs' fast paths.
 *
 * Built by setup.py when a C compiler is present (``optional=True``: without one the install goes
 * on and every fast path keeps its pure-Python form, which the tests also run). Like the Python
 * fast paths, a helper here never reports an error about the input: on anything it does not
 * accept it answers None (a decline) and the caller sends the message to the reference path,
 * which alone judges it. TypeError is raised only for a wrong call (a bug, never the input).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* §3.1: a varint takes at most 10 bytes; the 10th holds only bit 63 (Go's binary.Uvarint). */
#define MAX_VARINT_LEN 10
#define MAX_INT32 2147483647LL
/* Lengths of up to this many columns live on the stack. */
#define STACK_COLUMNS 128

/* One §3.1 uvarint from p[0..n): the bytes it takes, 0 if truncated, too long or overflowing. */
static Py_ssize_t
read_uvarint(const unsigned char *p, Py_ssize_t n, uint64_t *out)
{
    uint64_t value = 0;
    Py_ssize_t limit = n < MAX_VARINT_LEN ? n : MAX_VARINT_LEN;
    for (Py_ssize_t i = 0; i < limit; i++) {
        unsigned char byte = p[i];
        if (byte < 0x80) {
            if (i == MAX_VARINT_LEN - 1 && byte > 1) {
                return 0;
            }
            *out = value | ((uint64_t)byte << (7 * i));
            return i + 1;
        }
        value |= (uint64_t)(byte & 0x7F) << (7 * i);
    }
    return 0;
}

static inline int64_t
unzigzag(uint64_t value)
{
    return (int64_t)(value >> 1) ^ -(int64_t)(value & 1);
}

/* One column value from its bytes by its kind (see craft_image); NULL with no error set = decline. */
static PyObject *
craft_value(char kind, const unsigned char *p, Py_ssize_t size)
{
    uint64_t bits;
    switch (kind) {
    case 'b':
        return PyBytes_FromStringAndSize((const char *)p, size);
    case 't': {
        PyObject *text = PyUnicode_DecodeUTF8((const char *)p, size, NULL);
        if (text == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear(); /* Go replaces invalid UTF-8: the reference path's go_string does that */
        }
        return text;
    }
    case 'u':
    case 'z':
        /* The value bytes are exactly one uvarint (values.exact_uvarint). */
        if (size == 0 || read_uvarint(p, size, &bits) != size) {
            return NULL;
        }
        return kind == 'u' ? PyLong_FromUnsignedLongLong(bits) : PyLong_FromLongLong(unzigzag(bits));
    case 'f': {
        /* §3.1 float64: exactly 8 bytes, little-endian, whatever the machine's byte order. */
        double number;
        if (size != 8) {
            return NULL;
        }
        bits = 0;
        for (int k = 7; k >= 0; k--) {
            bits = (bits << 8) | p[k];
        }
        memcpy(&number, &bits, sizeof number);
        return PyFloat_FromDouble(number);
    }
    case 'n':
        Py_RETURN_NONE; /* NULL, GEOMETRY and unknown types carry no value whatever the bytes */
    default:
        PyErr_Format(PyExc_TypeError, "craft_image: unknown value kind %c", kind);
        return NULL;
    }
}

PyDoc_STRVAR(craft_image_doc,
"craft_image(buf, at, end, kinds, names, row_type, /)\n--\n\n"
"A Craft column group's nullable bytes chunk buf[at:end] as a row_type mapping of names to values, "
"or None (a decline).\n\n"
"kinds holds one byte per column: b'b' bytes, b't' UTF-8 text (strict), b'u' uvarint, b'z' zigzag "
"varint, b'f' float64, b'n' always None. The chunk is len(kinds) zigzag varint lengths (-1 = NULL) "
"then the values, ending exactly at end.");

static PyObject *
craft_image(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "craft_image takes 6 positional arguments");
        return NULL;
    }
    PyObject *buf = args[0], *kinds = args[3], *names = args[4], *row_type = args[5];
    if (!PyBytes_Check(buf) || !PyBytes_Check(kinds) || !PyTuple_Check(names) || !PyType_Check(row_type)) {
        PyErr_SetString(PyExc_TypeError, "craft_image(bytes, int, int, bytes, tuple, type)");
        return NULL;
    }
    Py_ssize_t at = PyLong_AsSsize_t(args[1]);
    if (at == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if (end == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t count = PyBytes_GET_SIZE(kinds);
    if (PyTuple_GET_SIZE(names) != count) {
        PyErr_SetString(PyExc_TypeError, "craft_image: one name per kind");
        return NULL;
    }
    if (at < 0 || end < at || end > PyBytes_GET_SIZE(buf)) {
        Py_RETURN_NONE;
    }
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(buf);
    const char *kind = PyBytes_AS_STRING(kinds);

    Py_ssize_t stack_lengths[STACK_COLUMNS];
    Py_ssize_t *lengths = stack_lengths;
    if (count > STACK_COLUMNS) {
        lengths = PyMem_New(Py_ssize_t, count);
        if (lengths == NULL) {
            return PyErr_NoMemory();
        }
    }
    PyObject *row = NULL;
    Py_ssize_t pos = at;
    Py_ssize_t values = 0; /* the bytes the values take */
    for (Py_ssize_t i = 0; i < count; i++) {
        uint64_t code;
        Py_ssize_t used = read_uvarint(data + pos, end - pos, &code);
        if (used == 0) {
            goto decline;
        }
        pos += used;
        int64_t length = unzigzag(code);
        /* CraftReader.nullable_lengths: -1 is NULL, other negatives and lengths above MaxInt32 are errors. */
        if (length < -1 || length > MAX_INT32) {
            goto decline;
        }
        lengths[i] = (Py_ssize_t)length;
        if (length > 0) {
            values += (Py_ssize_t)length; /* count <= len(kinds) lengths of <= 2**31: no overflow */
        }
    }
    if (values != end - pos) {
        goto decline;
    }
    row = PyObject_CallNoArgs(row_type);
    if (row == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value;
        Py_ssize_t size = lengths[i];
        if (size < 0) {
            value = Py_NewRef(Py_None);
        }
        else {
            value = craft_value(kind[i], data + pos, size);
            if (value == NULL) {
                if (PyErr_Occurred()) {
                    goto fail;
                }
                goto decline;
            }
            pos += size;
        }
        /* PyDict_SetItem on the dict subclass: Row's immutability guards Python callers only. */
        int failed = PyDict_SetItem(row, PyTuple_GET_ITEM(names, i), value);
        Py_DECREF(value);
        if (failed) {
            goto fail;
        }
    }
    if (lengths != stack_lengths) {
        PyMem_Free(lengths);
    }
    return row;

decline:
    Py_XDECREF(row);
    if (lengths != stack_lengths) {
        PyMem_Free(lengths);
    }
    Py_RETURN_NONE;

fail:
    Py_XDECREF(row);
    if (lengths != stack_lengths) {
        PyMem_Free(lengths);
    }
    return NULL;
}

static PyMethodDef native_methods[] = {
    {"craft_image", (PyCFunction)(void (*)(void))craft_image, METH_FASTCALL, craft_image_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "pyticdc.codec._native",
    "The optional C helpers of the codecs' fast paths (pure-Python twins in each codec package).",
    0,
    native_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    return PyModule_Create(&native_module);
}
