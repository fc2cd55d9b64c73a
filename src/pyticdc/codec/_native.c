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

/* A call of ``name`` with other than ``expected`` positional arguments: TypeError (a bug, never the input). */
#define CHECK_NARGS(name, expected)                                                         \
    do {                                                                                    \
        if (nargs != (expected)) {                                                          \
            PyErr_SetString(PyExc_TypeError, name " takes " #expected " positional arguments"); \
            return NULL;                                                                    \
        }                                                                                   \
    } while (0)

/* A plan that is not what the Python side builds: TypeError (a bug). */
static PyObject *
malformed(const char *function)
{
    PyErr_Format(PyExc_TypeError, "%s: a malformed plan", function);
    return NULL;
}

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
    CHECK_NARGS("craft_image", 6);
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

/* ------------------------------------------------------------------ Simple-JSON row messages */

/* A growing output buffer: on the stack until it outgrows it. */
typedef struct {
    char *data;
    Py_ssize_t size;
    Py_ssize_t capacity;
    char stack[2048];
} Out;

static void
out_init(Out *out)
{
    out->data = out->stack;
    out->size = 0;
    out->capacity = (Py_ssize_t)sizeof out->stack;
}

static void
out_free(Out *out)
{
    if (out->data != out->stack) {
        PyMem_Free(out->data);
    }
}

static int
out_reserve(Out *out, Py_ssize_t more)
{
    if (out->size + more <= out->capacity) {
        return 0;
    }
    Py_ssize_t capacity = out->capacity;
    while (capacity < out->size + more) {
        if (capacity > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        capacity *= 2;
    }
    char *data;
    if (out->data == out->stack) {
        data = PyMem_Malloc((size_t)capacity);
        if (data != NULL) {
            memcpy(data, out->stack, (size_t)out->size);
        }
    }
    else {
        data = PyMem_Realloc(out->data, (size_t)capacity);
    }
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out->data = data;
    out->capacity = capacity;
    return 0;
}

static inline int
out_put(Out *out, const char *bytes, Py_ssize_t size)
{
    if (out_reserve(out, size) < 0) {
        return -1;
    }
    memcpy(out->data + out->size, bytes, (size_t)size);
    out->size += size;
    return 0;
}

static int
out_bytes_object(Out *out, PyObject *bytes)
{
    return out_put(out, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
}

/* A writer's answer from its buffer and result: the bytes (0), None (-2, a decline) or NULL (-1, an error
 * set); the buffer is freed. */
static PyObject *
out_finish(Out *out, int result)
{
    PyObject *bytes = result == 0 ? PyBytes_FromStringAndSize(out->data, out->size) : NULL;
    out_free(out);
    if (result == -2) {
        Py_RETURN_NONE;
    }
    return bytes;
}

static int
out_uint(Out *out, unsigned long long value)
{
    char digits[24];
    int n = 0;
    do {
        digits[sizeof digits - 1 - n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    return out_put(out, digits + sizeof digits - n, n);
}

static int
out_int(Out *out, long long value)
{
    if (value < 0) {
        if (out_put(out, "-", 1) < 0) {
            return -1;
        }
        return out_uint(out, 0ULL - (unsigned long long)value);
    }
    return out_uint(out, (unsigned long long)value);
}

/* An exact int in the range of ``kind`` ('i' int64, 'p' 0..int64, 'u' 0..uint64) as its 64 bits (an int64
 * two's complement): 0; -2 for another type or a value out of range (a decline); -1 for an error. */
static int
ranged_int(PyObject *value, char kind, unsigned long long *bits)
{
    if (!PyLong_CheckExact(value)) {
        return -2;
    }
    int overflow;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (number == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow == 0 && (kind == 'i' || number >= 0)) {
        *bits = (unsigned long long)number;
        return 0;
    }
    if (overflow > 0 && kind == 'u') {
        *bits = PyLong_AsUnsignedLongLong(value);
        if (*bits == (unsigned long long)-1 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
                return -1;
            }
            PyErr_Clear();
            return -2;
        }
        return 0;
    }
    return -2;
}

/* Bytes written as they are inside a JSON string; the rest is escaped (json_escape). */
static unsigned char json_plain[256];

static void
init_json_plain(void)
{
    for (int c = 0; c < 256; c++) {
        json_plain[c] = c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&';
    }
}

/* The length of the well-formed UTF-8 sequence at p[0..n) (what Python's strict decoder accepts),
 * or 0 if there is none. */
static Py_ssize_t
utf8_sequence(const unsigned char *p, Py_ssize_t n)
{
    unsigned char c = p[0];
    if (c >= 0xC2 && c <= 0xDF) {
        return n >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char low = c == 0xE0 ? 0xA0 : 0x80, high = c == 0xED ? 0x9F : 0xBF;
        return n >= 3 && p[1] >= low && p[1] <= high && (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char low = c == 0xF0 ? 0x90 : 0x80, high = c == 0xF4 ? 0x8F : 0xBF;
        return n >= 4 && p[1] >= low && p[1] <= high && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* ``"text"`` as Go's encoding/json writes a string (msgspec's escapes, then Go's HTML-safe ones:
 * < > & U+2028 U+2029). -1: an error is set; -2: not well-formed UTF-8 (only when ``check``). */
static int
json_string_as(Out *out, const unsigned char *p, Py_ssize_t n, int check, int easy, int latin1)
{
    static const char hex[] = "0123456789abcdef";
    if (out_reserve(out, n + 2) < 0) {
        return -1;
    }
    out->data[out->size++] = '"';
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t start = i;
        while (i < n && json_plain[p[i]]) {
            i++;
        }
        if (i > start && out_put(out, (const char *)p + start, i - start) < 0) {
            return -1;
        }
        if (i >= n) {
            break;
        }
        unsigned char c = p[i];
        char escape[6];
        int size = 2;
        escape[0] = '\\';
        if (c >= 0x80 && latin1) {
            /* a Latin-1 byte is the code point of its value: two UTF-8 bytes */
            char pair[2] = {(char)(0xC0 | (c >> 6)), (char)(0x80 | (c & 0x3F))};
            if (out_put(out, pair, 2) < 0) {
                return -1;
            }
            i++;
            continue;
        }
        if (c >= 0x80) {
            Py_ssize_t length = check ? utf8_sequence(p + i, n - i) : (c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2);
            if (length == 0) {
                return -2;
            }
            if (c == 0xE2 && p[i + 1] == 0x80 && (p[i + 2] == 0xA8 || p[i + 2] == 0xA9)) {
                if (out_put(out, p[i + 2] == 0xA8 ? "\\u2028" : "\\u2029", 6) < 0) {
                    return -1;
                }
            }
            else if (out_put(out, (const char *)p + i, length) < 0) {
                return -1;
            }
            i += length;
            continue;
        }
        if (easy && (c == '\b' || c == '\f')) {
            c = c == '\b' ? 0x08 : 0x0C; /* written as \u0008 \u000c below */
            escape[1] = 'u';
            escape[2] = '0';
            escape[3] = '0';
            escape[4] = '0';
            escape[5] = c == 0x08 ? '8' : 'c';
            if (out_put(out, escape, 6) < 0) {
                return -1;
            }
            i++;
            continue;
        }
        switch (c) {
        case '"': escape[1] = '"'; break;
        case '\\': escape[1] = '\\'; break;
        case '\b': escape[1] = 'b'; break;
        case '\f': escape[1] = 'f'; break;
        case '\n': escape[1] = 'n'; break;
        case '\r': escape[1] = 'r'; break;
        case '\t': escape[1] = 't'; break;
        default: /* other control characters, < > & */
            escape[1] = 'u';
            escape[2] = '0';
            escape[3] = '0';
            escape[4] = hex[c >> 4];
            escape[5] = hex[c & 0xF];
            size = 6;
        }
        if (out_put(out, escape, size) < 0) {
            return -1;
        }
        i++;
    }
    return out_put(out, "\"", 1);
}

/* ``"text"`` as Go's encoding/json writes it (see json_string_as). */
static int
json_string(Out *out, const unsigned char *p, Py_ssize_t n, int check)
{
    return json_string_as(out, p, n, check, 0, 0);
}

/* A str's UTF-8 (cached in the object) and its size: 0; -2 for a lone surrogate (a decline: only Python's
 * surrogatepass encodes it); -1 with an error set. */
static int
utf8_of(PyObject *text, const char **utf8, Py_ssize_t *size)
{
    *utf8 = PyUnicode_AsUTF8AndSize(text, size);
    if (*utf8 != NULL) {
        return 0;
    }
    if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        PyErr_Clear();
        return -2;
    }
    return -1;
}

/* A str as a JSON string (``easy``: easyjson's \u0008 \u000c); -2 for a lone surrogate (a decline). */
static int
json_str(Out *out, PyObject *text, int easy)
{
    const char *utf8;
    Py_ssize_t size;
    int found = utf8_of(text, &utf8, &size);
    return found < 0 ? found : json_string_as(out, (const unsigned char *)utf8, size, 0, easy, 0);
}

/* The standard base64 (padded) of p[0..n) into w, which has room for (n + 2) / 3 * 4 characters. */
static void
base64_encode(const unsigned char *p, Py_ssize_t n, char *w)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        *w++ = alphabet[v >> 18];
        *w++ = alphabet[(v >> 12) & 63];
        *w++ = alphabet[(v >> 6) & 63];
        *w++ = alphabet[v & 63];
    }
    if (n - i >= 1) {
        unsigned v = (unsigned)p[i] << 16 | (n - i == 2 ? (unsigned)p[i + 1] << 8 : 0);
        *w++ = alphabet[v >> 18];
        *w++ = alphabet[(v >> 12) & 63];
        *w++ = n - i == 2 ? alphabet[(v >> 6) & 63] : '=';
        *w = '=';
    }
}

/* Bytes as msgspec writes them: a string of their standard base64, padded. */
static int
json_base64(Out *out, const unsigned char *p, Py_ssize_t n)
{
    if (n > (PY_SSIZE_T_MAX - 8) / 4 * 3) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t size = (n + 2) / 3 * 4;
    if (out_reserve(out, size + 2) < 0) {
        return -1;
    }
    out->data[out->size] = '"';
    base64_encode(p, n, out->data + out->size + 1);
    out->data[out->size + 1 + size] = '"';
    out->size += size + 2;
    return 0;
}

/* Whether ``floats`` is a writer's (F32 texts, f32, F64 texts, f64): the remembered texts and their functions. */
static int
float_texts(PyObject *floats)
{
    return PyTuple_Check(floats) && PyTuple_GET_SIZE(floats) == 4 && PyDict_Check(PyTuple_GET_ITEM(floats, 0))
           && PyDict_Check(PyTuple_GET_ITEM(floats, 2));
}

/* A float's text from the writer's cache, else from its text function (finite values only). */
static int
json_float(Out *out, PyObject *value, PyObject *cache, PyObject *text_of, int easy)
{
    double number = PyFloat_AS_DOUBLE(value);
    if (number - number != 0.0) {
        return -2; /* NaN, ±Inf: the reference's error */
    }
    PyObject *text = PyDict_GetItemWithError(cache, value);
    if (text != NULL) {
        Py_INCREF(text);
    }
    else if (PyErr_Occurred()) {
        return -1;
    }
    else {
        text = PyObject_CallOneArg(text_of, value);
        if (text == NULL) {
            return -1;
        }
    }
    int result = PyUnicode_CheckExact(text) ? json_str(out, text, easy) : -2;
    Py_DECREF(text);
    return result;
}

/* The plan of a table's row messages of one type (writer_json builds it):
 * (head, after_table_id, after_commit_ts, after_build_ts, image_keys, names, keys, kinds, floats). */
enum { PLAN_HEAD, PLAN_TABLE_ID, PLAN_COMMIT_TS, PLAN_BUILD_TS, PLAN_IMAGE_KEYS, PLAN_NAMES, PLAN_KEYS, PLAN_KINDS,
       PLAN_FLOATS, PLAN_SIZE };

/* One image ``{"name":value,...}``; -2 = a decline. */
/* The value of column names[i] in image (borrowed): 0, or -2 when the image lacks it (a decline), -1 on error. */
static int
image_value(PyObject *image, PyObject *names, Py_ssize_t i, PyObject **value)
{
    *value = PyDict_GetItemWithError(image, PyTuple_GET_ITEM(names, i));
    if (*value != NULL) {
        return 0;
    }
    return PyErr_Occurred() ? -1 : -2;
}

static int
json_image(Out *out, PyObject *image, PyObject *names, PyObject *keys, const char *kinds, PyObject *floats,
           PyObject *location)
{
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    if (!PyDict_Check(image) || PyDict_GET_SIZE(image) != count) {
        return -2;
    }
    if (out_put(out, "{", 1) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if (i && out_put(out, ",", 1) < 0) {
            return -1;
        }
        if (out_bytes_object(out, PyTuple_GET_ITEM(keys, i)) < 0) {
            return -1;
        }
        PyObject *value;
        int result = image_value(image, names, i, &value);
        if (result != 0) {
            return result;
        }
        char kind = kinds[i];
        if (value == Py_None) {
            result = out_put(out, "null", 4);
        }
        else if (kind == 'i' || kind == 'u' || kind == 'p') {
            /* TINYINT..BIGINT, YEAR (int64), BIGINT UNSIGNED (uint64), other unsigned (0..int64): text */
            unsigned long long bits;
            result = ranged_int(value, kind, &bits);
            if (result == 0) {
                result = out_put(out, "\"", 1) < 0
                         || (kind == 'i' ? out_int(out, (long long)bits) : out_uint(out, bits)) < 0
                         || out_put(out, "\"", 1) < 0 ? -1 : 0;
            }
        }
        else if (kind == 'f' || kind == 'd') {
            if (!PyFloat_CheckExact(value)) {
                return -2;
            }
            int k = kind == 'f' ? 0 : 2;
            result = json_float(out, value, PyTuple_GET_ITEM(floats, k), PyTuple_GET_ITEM(floats, k + 1), 0);
        }
        else if (kind == 'b') {
            /* CHAR..BLOB of a text charset: the bytes as text (invalid UTF-8: a decline) */
            if (!PyBytes_CheckExact(value)) {
                return -2;
            }
            result = json_string(out, (const unsigned char *)PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value), 1);
        }
        else if (kind == 'B') {
            /* of the binary charset: base64 */
            if (!PyBytes_CheckExact(value)) {
                return -2;
            }
            result = json_base64(out, (const unsigned char *)PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value));
        }
        else if (kind == 'T') {
            /* TIMESTAMP: {"location": the encoder's zone, "value": the text} */
            if (!PyUnicode_CheckExact(value)) {
                return -2;
            }
            result = out_put(out, "{\"location\":", 12);
            if (result == 0) {
                result = json_str(out, location, 0);
            }
            if (result == 0) {
                result = out_put(out, ",\"value\":", 9);
            }
            if (result == 0) {
                result = json_str(out, value, 0);
            }
            if (result == 0) {
                result = out_put(out, "}", 1);
            }
        }
        else if (kind == 's') {
            if (!PyUnicode_CheckExact(value)) {
                return -2;
            }
            result = json_str(out, value, 0);
        }
        else {
            PyErr_Format(PyExc_TypeError, "simple_json_row: unknown value kind %c", kind);
            return -1;
        }
        if (result < 0) {
            return result;
        }
    }
    return out_put(out, "}", 1);
}

PyDoc_STRVAR(simple_json_row_doc,
"simple_json_row(plan, table_id, commit_ts, build_ts, first, second, location, /)\n--\n\n"
"A Simple-JSON row message as TiCDC writes it, from its writer's plan (writer_json._native_plans) and "
"the images (second None but for UPDATE), or None (a decline: the generated writer writes it).");

static PyObject *
simple_json_row(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    CHECK_NARGS("simple_json_row", 7);
    PyObject *plan = args[0], *location = args[6];
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != PLAN_SIZE || !PyUnicode_Check(location)) {
        PyErr_SetString(PyExc_TypeError, "simple_json_row: a plan tuple and a location str");
        return NULL;
    }
    PyObject *image_keys = PyTuple_GET_ITEM(plan, PLAN_IMAGE_KEYS);
    PyObject *names = PyTuple_GET_ITEM(plan, PLAN_NAMES);
    PyObject *keys = PyTuple_GET_ITEM(plan, PLAN_KEYS);
    PyObject *kinds = PyTuple_GET_ITEM(plan, PLAN_KINDS);
    PyObject *floats = PyTuple_GET_ITEM(plan, PLAN_FLOATS);
    if (!PyTuple_Check(image_keys) || !PyTuple_Check(names) || !PyTuple_Check(keys) || !PyBytes_Check(kinds)
        || !float_texts(floats) || PyTuple_GET_SIZE(keys) != PyTuple_GET_SIZE(names)
        || PyBytes_GET_SIZE(kinds) != PyTuple_GET_SIZE(names) || PyTuple_GET_SIZE(image_keys) < 1
        || PyTuple_GET_SIZE(image_keys) > 2) {
        return malformed("simple_json_row");
    }
    for (int k = PLAN_HEAD; k <= PLAN_BUILD_TS; k++) {
        if (!PyBytes_Check(PyTuple_GET_ITEM(plan, k))) {
            return malformed("simple_json_row");
        }
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names); k++) {
        if (!PyBytes_Check(PyTuple_GET_ITEM(keys, k)) || !PyUnicode_Check(PyTuple_GET_ITEM(names, k))) {
            return malformed("simple_json_row");
        }
    }
    /* The numbers: exact ints of 64 bits (anything else is the generated writer's). */
    if (!PyLong_CheckExact(args[1]) || !PyLong_CheckExact(args[2]) || !PyLong_CheckExact(args[3])) {
        Py_RETURN_NONE;
    }
    int overflow_table, overflow_build;
    long long table_id = PyLong_AsLongLongAndOverflow(args[1], &overflow_table);
    long long build_ts = PyLong_AsLongLongAndOverflow(args[3], &overflow_build);
    unsigned long long commit_ts = PyLong_AsUnsignedLongLong(args[2]);
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
            return NULL;
        }
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (overflow_table || overflow_build) {
        Py_RETURN_NONE;
    }
    Out out;
    out_init(&out);
    int result = 0;
    if (out_bytes_object(&out, PyTuple_GET_ITEM(plan, PLAN_HEAD)) < 0 || out_int(&out, table_id) < 0
        || out_bytes_object(&out, PyTuple_GET_ITEM(plan, PLAN_TABLE_ID)) < 0 || out_uint(&out, commit_ts) < 0
        || out_bytes_object(&out, PyTuple_GET_ITEM(plan, PLAN_COMMIT_TS)) < 0 || out_int(&out, build_ts) < 0
        || out_bytes_object(&out, PyTuple_GET_ITEM(plan, PLAN_BUILD_TS)) < 0) {
        result = -1;
    }
    for (Py_ssize_t k = 0; result == 0 && k < PyTuple_GET_SIZE(image_keys); k++) {
        PyObject *image = args[4 + k];
        PyObject *key = PyTuple_GET_ITEM(image_keys, k);
        if (!PyBytes_Check(key)) {
            malformed("simple_json_row");
            result = -1;
        }
        else if (out_bytes_object(&out, key) < 0) {
            result = -1;
        }
        else {
            result = json_image(&out, image, names, keys, PyBytes_AS_STRING(kinds), floats, location);
        }
    }
    if (result == 0) {
        result = out_put(&out, "}", 1);
    }
    return out_finish(&out, result);
}

/* ------------------------------------------------------------------ canonical text of row images */

/* Standard base64 (padded) of bytes, as a str. */
static PyObject *
base64_str(const unsigned char *p, Py_ssize_t n)
{
    if (n > (PY_SSIZE_T_MAX - 3) / 4 * 3) {
        return PyErr_NoMemory();
    }
    PyObject *text = PyUnicode_New((n + 2) / 3 * 4, 127);
    if (text != NULL) {
        base64_encode(p, n, (char *)PyUnicode_1BYTE_DATA(text));
    }
    return text;
}

/* One value's canonical text (see row_text's docstring); *base64 set when it is base64. */
static PyObject *
value_text(PyObject *name, PyObject *value, PyObject *binary, int *base64)
{
    *base64 = 0;
    if (value == Py_None || PyUnicode_CheckExact(value)) {
        return Py_NewRef(value);
    }
    if (PyLong_CheckExact(value)) {
        return PyObject_Str(value);
    }
    if (PyFloat_CheckExact(value)) {
        return PyObject_Repr(value);
    }
    if (PyBytes_CheckExact(value) || PyByteArray_CheckExact(value) || PyMemoryView_Check(value)) {
        PyObject *data = PyBytes_CheckExact(value) ? Py_NewRef(value) : PyBytes_FromObject(value);
        if (data == NULL) {
            return NULL;
        }
        int is_binary = PySet_Contains(binary, name);
        if (is_binary < 0) {
            Py_DECREF(data);
            return NULL;
        }
        PyObject *text = NULL;
        if (!is_binary) {
            text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), NULL);
            if (text == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                    Py_DECREF(data);
                    return NULL;
                }
                PyErr_Clear();
            }
        }
        if (text == NULL) {
            text = base64_str((const unsigned char *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data));
            *base64 = text != NULL;
        }
        Py_DECREF(data);
        return text;
    }
    return PyObject_Str(value);
}

/* The arguments of row_text and row_json: (dict, set, list | None); 0, or -1 with a TypeError set. */
static int
image_arguments(const char *signature, PyObject *const *args, PyObject **row, PyObject **binary, PyObject **names)
{
    *row = args[0];
    *binary = args[1];
    *names = args[2];
    if (!PyDict_Check(*row) || !PyAnySet_Check(*binary) || (*names != Py_None && !PyList_Check(*names))) {
        PyErr_SetString(PyExc_TypeError, signature);
        return -1;
    }
    return 0;
}

/* The canonical text of one value (value_text), its name appended once to ``names`` (a list, or None) when
 * the text is base64; NULL with an error set. The caller holds a reference to ``name``. */
static PyObject *
named_text(PyObject *name, PyObject *value, PyObject *binary, PyObject *names)
{
    int base64;
    /* Owned while str() of an odd value may run Python code. */
    Py_INCREF(value);
    PyObject *text = value_text(name, value, binary, &base64);
    Py_DECREF(value);
    if (text != NULL && base64 && names != Py_None) {
        int known = PySequence_Contains(names, name);
        if (known < 0 || (!known && PyList_Append(names, name) < 0)) {
            Py_CLEAR(text);
        }
    }
    return text;
}

PyDoc_STRVAR(row_text_doc,
"row_text(row, binary, base64_names, /)\n--\n\n"
"Keys and canonical texts of a row image (pyticdc.arrow.rows.row_text): str and None as they are, int "
"by str, float by repr, bytes as UTF-8 text unless binary or not UTF-8, else base64 (its name appended "
"to base64_names once, when that is a list), anything else by str.");

static PyObject *
row_text(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    CHECK_NARGS("row_text", 3);
    PyObject *row, *binary, *names;
    if (image_arguments("row_text(dict, frozenset, list | None)", args, &row, &binary, &names) < 0) {
        return NULL;
    }
    Py_ssize_t count = PyDict_GET_SIZE(row);
    PyObject *keys = PyList_New(count);
    PyObject *texts = PyList_New(count);
    if (keys == NULL || texts == NULL) {
        goto fail;
    }
    Py_ssize_t at = 0, i = 0;
    PyObject *name, *value;
    while (PyDict_Next(row, &at, &name, &value)) {
        if (i >= count) {
            PyErr_SetString(PyExc_RuntimeError, "row_text: the row changed size");
            goto fail;
        }
        Py_INCREF(name);
        PyObject *text = named_text(name, value, binary, names);
        if (text == NULL) {
            Py_DECREF(name);
            goto fail;
        }
        PyList_SET_ITEM(keys, i, name);
        PyList_SET_ITEM(texts, i, text);
        i++;
    }
    if (i != count) {
        PyErr_SetString(PyExc_RuntimeError, "row_text: the row changed size");
        goto fail;
    }
    PyObject *pair = PyTuple_Pack(2, keys, texts);
    Py_DECREF(keys);
    Py_DECREF(texts);
    return pair;

fail:
    Py_XDECREF(keys);
    Py_XDECREF(texts);
    return NULL;
}

PyDoc_STRVAR(row_json_doc,
"row_json(row, binary, base64_names, /)\n--\n\n"
"A row image's canonical texts (row_text's) as one JSON object text {name: text or null}, or None (a "
"decline: a name or text that is not valid UTF-8, such as a lone surrogate).");

static PyObject *
row_json(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    CHECK_NARGS("row_json", 3);
    PyObject *row, *binary, *names;
    if (image_arguments("row_json(dict, frozenset, list | None)", args, &row, &binary, &names) < 0) {
        return NULL;
    }
    Out out;
    out_init(&out);
    int result = out_put(&out, "{", 1);
    Py_ssize_t at = 0, written = 0, count = PyDict_GET_SIZE(row);
    PyObject *name, *value;
    while (result == 0 && PyDict_Next(row, &at, &name, &value)) {
        if (written >= count || !PyUnicode_Check(name)) {
            result = -2;  /* a changing row or a name that is no str: the Python form words it */
            break;
        }
        Py_INCREF(name);
        PyObject *text = named_text(name, value, binary, names);
        if (text == NULL) {
            Py_DECREF(name);
            result = -1;
            break;
        }
        if (written > 0) {
            result = out_put(&out, ",", 1);
        }
        if (result == 0) {
            result = json_str(&out, name, 0);
        }
        if (result == 0) {
            result = out_put(&out, ":", 1);
        }
        if (result == 0) {
            result = text == Py_None ? out_put(&out, "null", 4) : json_str(&out, text, 0);
        }
        Py_DECREF(text);
        Py_DECREF(name);
        written++;
    }
    if (result == 0 && written != count) {
        result = -2;
    }
    if (result == 0) {
        result = out_put(&out, "}", 1);
    }
    PyObject *json = result == 0 ? PyUnicode_DecodeUTF8(out.data, out.size, NULL) : NULL;
    out_free(&out);
    if (result == -2) {
        Py_RETURN_NONE;
    }
    return json;
}

/* ------------------------------------------------------------------ Simple-Avro row images */

/* An Avro long at p[0..n): a zigzag varint of 64 bits (the uvarint rules of read_uvarint); the bytes it
 * takes, 0 if none. */
static Py_ssize_t
avro_long(const unsigned char *p, Py_ssize_t n, int64_t *out)
{
    uint64_t value;
    Py_ssize_t used = read_uvarint(p, n, &value);
    if (used) {
        *out = unzigzag(value);
    }
    return used;
}

/* The Avro string or bytes at p[0..n): its data's offset and size; 0 if it does not fit. */
static Py_ssize_t
avro_bytes(const unsigned char *p, Py_ssize_t n, Py_ssize_t *size)
{
    int64_t length;
    Py_ssize_t used = avro_long(p, n, &length);
    if (used == 0 || length < 0 || length > n - used) {
        return 0;
    }
    *size = (Py_ssize_t)length;
    return used;
}

PyDoc_STRVAR(avro_image_doc,
"avro_image(buf, pos, plan, row_type, /)\n--\n\n"
"A Simple-Avro row image (the map at its union branch byte, entries in table order) as (row, the "
"offset after it), or None (a decline: the generated reader takes it). plan is (entry prefixes with "
"the value's branch, entry prefixes with the null branch, handlers, names) as fastpath_avro builds it.");

static PyObject *
avro_image(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    CHECK_NARGS("avro_image", 4);
    PyObject *buf = args[0], *plan = args[2], *row_type = args[3];
    if (!PyBytes_Check(buf) || !PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 4 || !PyType_Check(row_type)) {
        PyErr_SetString(PyExc_TypeError, "avro_image(bytes, int, plan, type)");
        return NULL;
    }
    PyObject *with_value = PyTuple_GET_ITEM(plan, 0), *with_null = PyTuple_GET_ITEM(plan, 1);
    PyObject *handlers = PyTuple_GET_ITEM(plan, 2), *names = PyTuple_GET_ITEM(plan, 3);
    if (!PyTuple_Check(with_value) || !PyTuple_Check(with_null) || !PyBytes_Check(handlers) || !PyTuple_Check(names)
        || PyTuple_GET_SIZE(with_value) != PyTuple_GET_SIZE(names)
        || PyTuple_GET_SIZE(with_null) != PyTuple_GET_SIZE(names)
        || PyBytes_GET_SIZE(handlers) != PyTuple_GET_SIZE(names)) {
        return malformed("avro_image");
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t size = PyBytes_GET_SIZE(buf);
    if (pos < 0 || pos > size) {
        Py_RETURN_NONE;
    }
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(buf);
    const char *handler = PyBytes_AS_STRING(handlers);
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    PyObject *row = PyObject_CallNoArgs(row_type);
    if (row == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *prefix = PyTuple_GET_ITEM(with_value, i), *null_prefix = PyTuple_GET_ITEM(with_null, i);
        if (!PyBytes_Check(prefix) || !PyBytes_Check(null_prefix)) {
            malformed("avro_image");
            goto fail;
        }
        Py_ssize_t length = PyBytes_GET_SIZE(prefix);
        PyObject *value = NULL;
        if (length <= size - pos && memcmp(data + pos, PyBytes_AS_STRING(prefix), (size_t)length) == 0) {
            pos += length;
            const unsigned char *p = data + pos;
            Py_ssize_t left = size - pos, used = 0, start, bytes;
            int64_t number;
            switch (handler[i]) {
            case 'l': /* long */
            case 'u': /* long of an unsigned column, UnsignedBigint: the int64's uint64 */
                used = avro_long(p, left, &number);
                if (used) {
                    value = handler[i] == 'l' ? PyLong_FromLongLong(number)
                                              : PyLong_FromUnsignedLongLong((unsigned long long)number);
                }
                break;
            case 'f': /* float: 4 bytes little-endian */
                if (left >= 4) {
                    uint32_t bits = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
                    float single;
                    memcpy(&single, &bits, sizeof single);
                    value = PyFloat_FromDouble((double)single);
                    used = 4;
                }
                break;
            case 'd': /* double: 8 bytes little-endian */
                if (left >= 8) {
                    uint64_t bits = 0;
                    for (int k = 7; k >= 0; k--) {
                        bits = (bits << 8) | p[k];
                    }
                    double number_d;
                    memcpy(&number_d, &bits, sizeof number_d);
                    value = PyFloat_FromDouble(number_d);
                    used = 8;
                }
                break;
            case 'b': /* bytes, or the string of a text column: the raw bytes */
            case 't': /* string: strict UTF-8 (invalid text is the reference path's) */
            case 'T': /* Timestamp{location, value}: the value */
                start = avro_bytes(p, left, &bytes);
                if (start && handler[i] == 'T') {
                    /* the location skipped, then the value */
                    Py_ssize_t skip = start + bytes;
                    start = avro_bytes(p + skip, left - skip, &bytes);
                    start = start ? skip + start : 0;
                }
                if (start) {
                    used = start + bytes;
                    if (handler[i] == 'b') {
                        value = PyBytes_FromStringAndSize((const char *)p + start, bytes);
                    }
                    else {
                        value = PyUnicode_DecodeUTF8((const char *)p + start, bytes, NULL);
                        if (value == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                            PyErr_Clear();
                        }
                    }
                }
                break;
            default:
                PyErr_Format(PyExc_TypeError, "avro_image: unknown handler %c", handler[i]);
                goto fail;
            }
            if (value == NULL) {
                if (PyErr_Occurred()) {
                    goto fail;
                }
                goto decline;
            }
            pos += used;
        }
        else {
            length = PyBytes_GET_SIZE(null_prefix);
            if (length > size - pos || memcmp(data + pos, PyBytes_AS_STRING(null_prefix), (size_t)length) != 0) {
                goto decline;
            }
            pos += length;
            value = Py_NewRef(Py_None);
        }
        int failed = PyDict_SetItem(row, PyTuple_GET_ITEM(names, i), value);
        Py_DECREF(value);
        if (failed) {
            goto fail;
        }
    }
    /* the map's end: a zero block count */
    if (count == 0 || pos >= size || data[pos] != 0) {
        goto decline;
    }
    PyObject *pair = Py_BuildValue("(Nn)", row, pos + 1);
    return pair;

decline:
    Py_DECREF(row);
    Py_RETURN_NONE;

fail:
    Py_DECREF(row);
    return NULL;
}

/* ------------------------------------------------------------------ Canal-JSON row images */

PyDoc_STRVAR(canal_image_doc,
"canal_image(image, plan, /)\n--\n\n"
"A Canal-JSON row image ``{\"name\":\"text\",...}`` as TiCDC's easyjson writes it, or None (a decline: the "
"generated writer writes it). plan is (names, quoted keys with their colon, kinds, (F32 texts, f32, F64 "
"texts, f64)) as canal_json.writer builds it.");

static PyObject *
canal_image(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    CHECK_NARGS("canal_image", 2);
    PyObject *image = args[0], *plan = args[1];
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 4) {
        return malformed("canal_image");
    }
    PyObject *names = PyTuple_GET_ITEM(plan, 0), *keys = PyTuple_GET_ITEM(plan, 1);
    PyObject *kinds = PyTuple_GET_ITEM(plan, 2), *floats = PyTuple_GET_ITEM(plan, 3);
    if (!PyTuple_Check(names) || !PyTuple_Check(keys) || !PyBytes_Check(kinds) || !float_texts(floats)
        || PyTuple_GET_SIZE(keys) != PyTuple_GET_SIZE(names)
        || PyBytes_GET_SIZE(kinds) != PyTuple_GET_SIZE(names)) {
        return malformed("canal_image");
    }
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    if (!PyDict_Check(image) || PyDict_GET_SIZE(image) != count) {
        Py_RETURN_NONE;
    }
    const char *kind = PyBytes_AS_STRING(kinds);
    Out out;
    out_init(&out);
    int result = out_put(&out, "{", 1);
    for (Py_ssize_t i = 0; result == 0 && i < count; i++) {
        PyObject *key = PyTuple_GET_ITEM(keys, i);
        if (!PyBytes_Check(key)) {
            malformed("canal_image");
            result = -1;
            break;
        }
        if ((i && out_put(&out, ",", 1) < 0) || out_bytes_object(&out, key) < 0) {
            result = -1;
            break;
        }
        PyObject *value;
        if ((result = image_value(image, names, i, &value)) != 0) {
            break;
        }
        if (value == Py_None) {
            result = out_put(&out, "null", 4);
            continue;
        }
        switch (kind[i]) {
        case 'i': /* integer types: str of an exact int */
            if (!PyLong_CheckExact(value)) {
                result = -2;
                break;
            }
            {
                PyObject *text = PyObject_Str(value);
                result = text == NULL ? -1 : json_str(&out, text, 1);
                Py_XDECREF(text);
            }
            break;
        case 's': /* CHAR..BLOB of a text charset: UTF-8 (invalid: a decline) */
        case 'L': /* of the binary charset: each byte as the Latin-1 character */
            if (!PyBytes_CheckExact(value)) {
                result = -2;
                break;
            }
            result = json_string_as(&out, (const unsigned char *)PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value),
                                    kind[i] == 's', 1, kind[i] == 'L');
            break;
        case 'f': /* FLOAT, DOUBLE: the remembered text, else the text function's (finite values only) */
        case 'd':
            if (!PyFloat_CheckExact(value)) {
                result = -2;
                break;
            }
            {
                int k = kind[i] == 'f' ? 0 : 2;
                result = json_float(&out, value, PyTuple_GET_ITEM(floats, k), PyTuple_GET_ITEM(floats, k + 1), 1);
            }
            break;
        case 'S': /* the others: an exact str */
            result = PyUnicode_CheckExact(value) ? json_str(&out, value, 1) : -2;
            break;
        default:
            PyErr_Format(PyExc_TypeError, "canal_image: unknown value kind %c", kind[i]);
            result = -1;
        }
    }
    if (result == 0) {
        result = out_put(&out, "}", 1);
    }
    return out_finish(&out, result);
}

/* ------------------------------------------------------------------ Simple-Avro row images, written */

/* An Avro long: the zigzag of ``value`` as a varint. */
static int
out_avro_long(Out *out, int64_t value)
{
    uint64_t zigzag = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    char bytes[10];
    int n = 0;
    while (zigzag > 0x7F) {
        bytes[n++] = (char)((zigzag & 0x7F) | 0x80);
        zigzag >>= 7;
    }
    bytes[n++] = (char)zigzag;
    return out_put(out, bytes, n);
}

/* Avro bytes or string: the length as a long, then the data. */
static int
out_avro_bytes(Out *out, const char *data, Py_ssize_t size)
{
    if (out_avro_long(out, (int64_t)size) < 0) {
        return -1;
    }
    return out_put(out, data, size);
}

PyDoc_STRVAR(avro_row_image_doc,
"avro_row_image(image, plan, location, /)\n--\n\n"
"A Simple-Avro row image (its map: entries in table order, the end byte) as TiCDC writes it, or None (a "
"decline: the generated writer writes it). plan is (names, entry prefixes with the value's branch, entry "
"prefixes with the null branch, kinds) as writer_avro builds it; location the encoded zone.");

static PyObject *
avro_row_image(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    CHECK_NARGS("avro_row_image", 3);
    PyObject *image = args[0], *plan = args[1], *location = args[2];
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 4 || !PyBytes_Check(location)) {
        return malformed("avro_row_image");
    }
    PyObject *names = PyTuple_GET_ITEM(plan, 0), *with_value = PyTuple_GET_ITEM(plan, 1);
    PyObject *with_null = PyTuple_GET_ITEM(plan, 2), *kinds = PyTuple_GET_ITEM(plan, 3);
    if (!PyTuple_Check(names) || !PyTuple_Check(with_value) || !PyTuple_Check(with_null) || !PyBytes_Check(kinds)
        || PyTuple_GET_SIZE(with_value) != PyTuple_GET_SIZE(names)
        || PyTuple_GET_SIZE(with_null) != PyTuple_GET_SIZE(names) || PyBytes_GET_SIZE(kinds) != PyTuple_GET_SIZE(names)) {
        return malformed("avro_row_image");
    }
    if (!PyDict_Check(image)) {
        Py_RETURN_NONE;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    const char *kind = PyBytes_AS_STRING(kinds);
    Out out;
    out_init(&out);
    int result = 0;
    for (Py_ssize_t i = 0; result == 0 && i < count; i++) {
        PyObject *prefix = PyTuple_GET_ITEM(with_value, i), *null_prefix = PyTuple_GET_ITEM(with_null, i);
        if (!PyBytes_Check(prefix) || !PyBytes_Check(null_prefix)) {
            malformed("avro_row_image");
            result = -1;
            break;
        }
        PyObject *value;
        if ((result = image_value(image, names, i, &value)) != 0) {
            break;
        }
        if (value == Py_None) {
            result = out_bytes_object(&out, null_prefix);
            continue;
        }
        switch (kind[i]) {
        case 'i': /* a signed integer: an int64 */
        case 'p': /* an unsigned integer below BIGINT: 0..int64 */
        case 'u': /* BIGINT UNSIGNED, BIT, ENUM, SET: the uint64's int64 */
            {
                unsigned long long bits;
                result = ranged_int(value, kind[i], &bits);
                if (result == 0) {
                    result = out_bytes_object(&out, prefix) < 0 || out_avro_long(&out, (int64_t)bits) < 0 ? -1 : 0;
                }
            }
            break;
        case 'f': /* FLOAT: a float32, little-endian (past float32: a decline) */
        case 'd': /* DOUBLE: 8 bytes little-endian */
            if (!PyFloat_CheckExact(value)) {
                result = -2;
                break;
            }
            {
                double number = PyFloat_AS_DOUBLE(value);
                unsigned char bytes[8];
                int size = kind[i] == 'f' ? 4 : 8;
                uint64_t bits;
                if (number - number != 0.0) {
                    result = -2;
                    break;
                }
                if (size == 4) {
                    float single = (float)number;
                    uint32_t bits32;
                    if (single - single != 0.0f) {
                        result = -2; /* overflow to ±Inf: struct.pack's OverflowError */
                        break;
                    }
                    memcpy(&bits32, &single, 4);
                    bits = bits32;
                }
                else {
                    memcpy(&bits, &number, 8);
                }
                for (int k = 0; k < size; k++) {
                    bytes[k] = (unsigned char)(bits >> (8 * k));
                }
                result = out_bytes_object(&out, prefix) < 0 || out_put(&out, (const char *)bytes, size) < 0 ? -1 : 0;
            }
            break;
        case 'b': /* CHAR..BLOB of a text charset */
        case 'B': /* of the binary charset: the bytes either way */
            if (!PyBytes_CheckExact(value)) {
                result = -2;
                break;
            }
            result = out_bytes_object(&out, prefix) < 0
                     || out_avro_bytes(&out, PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value)) < 0 ? -1 : 0;
            break;
        case 's': /* text: UTF-8, strictly (a lone surrogate: a decline) */
        case 'T': /* TIMESTAMP: the encoded location, then the text */
            if (!PyUnicode_CheckExact(value)) {
                result = -2;
                break;
            }
            {
                const char *utf8;
                Py_ssize_t size;
                result = utf8_of(value, &utf8, &size);
                if (result < 0) {
                    break;
                }
                if (out_bytes_object(&out, prefix) < 0 || (kind[i] == 'T' && out_bytes_object(&out, location) < 0)
                    || out_avro_bytes(&out, utf8, size) < 0) {
                    result = -1;
                }
            }
            break;
        default:
            PyErr_Format(PyExc_TypeError, "avro_row_image: unknown value kind %c", kind[i]);
            result = -1;
        }
    }
    if (result == 0) {
        result = out_put(&out, "", 1); /* the map's end: a zero block count */
    }
    return out_finish(&out, result);
}

/* ------------------------------------------------------------------ change-row digests */

/* BLAKE2b (RFC 7693) with a 16-byte digest and no key: what hashlib.blake2b(data, digest_size=16) gives, without
 * a hash object and two Python calls per digest (the decode takes three digests a row). */
static const uint64_t blake2b_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

/* The message schedule of rounds 0-9; rounds 10 and 11 take rows 0 and 1 again. */
static const uint8_t blake2b_sigma[10][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
};

static inline uint64_t
rotr64(uint64_t value, unsigned bits)
{
    return (value >> bits) | (value << (64 - bits));
}

static inline uint64_t
load64_le(const unsigned char *p)
{
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) | ((uint64_t)p[3] << 24)
           | ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) | ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
}

#define BLAKE2B_G(a, b, c, d, x, y)       \
    do {                                  \
        a = a + b + (x);                  \
        d = rotr64(d ^ a, 32);            \
        c = c + d;                        \
        b = rotr64(b ^ c, 24);            \
        a = a + b + (y);                  \
        d = rotr64(d ^ a, 16);            \
        c = c + d;                        \
        b = rotr64(b ^ c, 63);            \
    } while (0)

/* One 128-byte block into the state h; ``count``: the message bytes so far, this block's included. */
static void
blake2b_compress(uint64_t h[8], const unsigned char block[128], uint64_t count, int last)
{
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) {
        m[i] = load64_le(block + 8 * i);
    }
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = blake2b_iv[i];
    }
    v[12] ^= count; /* the counter's high word stays 0: a message here is far below 2**64 bytes */
    if (last) {
        v[14] = ~v[14];
    }
    for (int round = 0; round < 12; round++) {
        const uint8_t *s = blake2b_sigma[round % 10];
        BLAKE2B_G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
        BLAKE2B_G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
        BLAKE2B_G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
        BLAKE2B_G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
        BLAKE2B_G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
        BLAKE2B_G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
        BLAKE2B_G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
        BLAKE2B_G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) {
        h[i] ^= v[i] ^ v[i + 8];
    }
}

/* blake2b(data, digest_size=16).digest() as a bytes object. */
static PyObject *
blake2b_16(const char *data, Py_ssize_t size)
{
    uint64_t h[8];
    memcpy(h, blake2b_iv, sizeof h);
    h[0] ^= 0x01010000ULL ^ 16; /* parameter block: digest length 16, no key, fanout 1, depth 1 */
    const unsigned char *p = (const unsigned char *)data;
    uint64_t count = 0;
    while (size > 128) { /* the last block, full or not, is compressed as the last */
        count += 128;
        blake2b_compress(h, p, count, 0);
        p += 128;
        size -= 128;
    }
    unsigned char block[128] = {0};
    memcpy(block, p, (size_t)size);
    count += (uint64_t)size;
    blake2b_compress(h, block, count, 1);
    unsigned char digest[16];
    for (int i = 0; i < 16; i++) {
        digest[i] = (unsigned char)(h[i / 8] >> (8 * (i % 8)));
    }
    return PyBytes_FromStringAndSize((const char *)digest, 16);
}

PyDoc_STRVAR(text_digest_doc,
"text_digest(text, /)\n--\n\n"
"blake2b(text.encode('utf-8', 'surrogatepass'), digest_size=16).digest().");

static PyObject *
text_digest(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    CHECK_NARGS("text_digest", 1);
    if (!PyUnicode_Check(args[0])) {
        return malformed("text_digest");
    }
    PyObject *data = PyUnicode_AsEncodedString(args[0], "utf-8", "surrogatepass");
    if (data == NULL) {
        return NULL;
    }
    PyObject *digest = blake2b_16(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data));
    Py_DECREF(data);
    return digest;
}

static PyObject *getitem_name;   /* "__getitem__" */
static PyObject *dict_getitem;   /* dict.__getitem__ */

/* A str appended as UTF-8; -2 = a decline (not encodable without surrogatepass). */
static int
out_text(Out *out, PyObject *text)
{
    const char *utf8;
    Py_ssize_t size;
    int found = utf8_of(text, &utf8, &size);
    return found < 0 ? found : out_put(out, utf8, size);
}

/* repr(value) appended as UTF-8: an exact int in 64 bits and None written here, anything else by its repr;
 * -2 = a decline (a repr that is not UTF-8: a lone surrogate, which only Python's surrogatepass may encode). */
static int
out_repr(Out *out, PyObject *value)
{
    if (value == Py_None) {
        return out_put(out, "None", 4);
    }
    if (PyLong_CheckExact(value)) {
        int overflow;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (!overflow && !(number == -1 && PyErr_Occurred())) {
            return out_int(out, number);
        }
        if (PyErr_Occurred()) {
            return -1;
        }
    }
    PyObject *text = PyObject_Repr(value);
    if (text == NULL) {
        return -1;
    }
    int result = out_text(out, text);
    Py_DECREF(text);
    return result;
}

/* repr(('key', (image[c] for c in columns))) appended, or "None" for no image; -2 = a decline (not a dict, a
 * key column missing: the Python form's row id and whole-image handles). */
static int
out_key_handle(Out *out, PyObject *image, PyObject *columns)
{
    if (image == Py_None) {
        return out_put(out, "None", 4);
    }
    /* A dict, or a subclass (Row) whose item lookup is dict's: a missing key declines, so __missing__ never
     * matters. */
    if (!PyDict_Check(image)) {
        return -2;
    }
    if (!PyDict_CheckExact(image)) {
        PyObject *lookup = PyObject_GetAttr((PyObject *)Py_TYPE(image), getitem_name);
        if (lookup == NULL) {
            return -1;
        }
        Py_DECREF(lookup);
        if (lookup != dict_getitem) {
            return -2;
        }
    }
    Py_ssize_t count = PyTuple_GET_SIZE(columns);
    if (out_put(out, "('key', (", 9) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value = PyDict_GetItemWithError(image, PyTuple_GET_ITEM(columns, i));
        if (value == NULL) {
            return PyErr_Occurred() ? -1 : -2;
        }
        Py_INCREF(value); /* a repr may run Python code that changes the image */
        int result = (i > 0 ? out_put(out, ", ", 2) : 0);
        if (result == 0) {
            result = out_repr(out, value);
        }
        Py_DECREF(value);
        if (result < 0) {
            return result;
        }
    }
    return count == 1 ? out_put(out, ",))", 3) : out_put(out, "))", 2);
}

PyDoc_STRVAR(change_digests_doc,
"change_digests(names, table_id, commit_ts, op, pre, post, columns, /)\n--\n\n"
"The digests of a change row whose images are keyed by ``columns``: (identity, pre-image handle or None, "
"post-image handle or None), each blake2b(repr(...), digest_size=16) of the UTF-8 text, the identity's text "
"``(names, table_id, commit_ts, op, pre handle, post handle)`` with ``names`` and ``op`` already reprs. None "
"(a decline) when an image lacks a key column or is not a dict, or a repr holds a lone surrogate.");

static PyObject *
change_digests(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    CHECK_NARGS("change_digests", 7);
    PyObject *names = args[0], *table_id = args[1], *commit_ts = args[2], *op = args[3];
    PyObject *pre = args[4], *post = args[5], *columns = args[6];
    if (!PyUnicode_Check(names) || !PyUnicode_Check(op) || !PyTuple_Check(columns)) {
        return malformed("change_digests");
    }
    if (PyTuple_GET_SIZE(columns) == 0) {
        Py_RETURN_NONE;
    }
    /* One buffer: the identity's text, which holds both handles' texts (their digests read them in place). */
    Out out;
    out_init(&out);
    Py_ssize_t pre_start, pre_end, post_start, post_end;
    int result = out_put(&out, "(", 1);
    if (result == 0) result = out_text(&out, names);
    if (result == 0) result = out_put(&out, ", ", 2);
    if (result == 0) result = out_repr(&out, table_id);
    if (result == 0) result = out_put(&out, ", ", 2);
    if (result == 0) result = out_repr(&out, commit_ts);
    if (result == 0) result = out_put(&out, ", ", 2);
    if (result == 0) result = out_text(&out, op);
    if (result == 0) result = out_put(&out, ", ", 2);
    pre_start = out.size;
    if (result == 0) result = out_key_handle(&out, pre, columns);
    pre_end = out.size;
    if (result == 0) result = out_put(&out, ", ", 2);
    post_start = out.size;
    if (result == 0) result = out_key_handle(&out, post, columns);
    post_end = out.size;
    if (result == 0) result = out_put(&out, ")", 1);
    PyObject *answer = NULL;
    if (result == -2) {
        Py_INCREF(Py_None);
        answer = Py_None;
    }
    else if (result == 0) {
        PyObject *ident = blake2b_16(out.data, out.size);
        PyObject *pre_digest = pre == Py_None ? Py_NewRef(Py_None) : blake2b_16(out.data + pre_start,
                                                                              pre_end - pre_start);
        PyObject *post_digest = post == Py_None ? Py_NewRef(Py_None) : blake2b_16(out.data + post_start,
                                                                                post_end - post_start);
        if (ident != NULL && pre_digest != NULL && post_digest != NULL) {
            answer = PyTuple_Pack(3, ident, pre_digest, post_digest);
        }
        Py_XDECREF(ident);
        Py_XDECREF(pre_digest);
        Py_XDECREF(post_digest);
    }
    out_free(&out);
    return answer;
}

static PyMethodDef native_methods[] = {
    {"craft_image", (PyCFunction)(void (*)(void))craft_image, METH_FASTCALL, craft_image_doc},
    {"simple_json_row", (PyCFunction)(void (*)(void))simple_json_row, METH_FASTCALL, simple_json_row_doc},
    {"row_text", (PyCFunction)(void (*)(void))row_text, METH_FASTCALL, row_text_doc},
    {"row_json", (PyCFunction)(void (*)(void))row_json, METH_FASTCALL, row_json_doc},
    {"avro_image", (PyCFunction)(void (*)(void))avro_image, METH_FASTCALL, avro_image_doc},
    {"canal_image", (PyCFunction)(void (*)(void))canal_image, METH_FASTCALL, canal_image_doc},
    {"avro_row_image", (PyCFunction)(void (*)(void))avro_row_image, METH_FASTCALL, avro_row_image_doc},
    {"change_digests", (PyCFunction)(void (*)(void))change_digests, METH_FASTCALL, change_digests_doc},
    {"text_digest", (PyCFunction)(void (*)(void))text_digest, METH_FASTCALL, text_digest_doc},
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
    init_json_plain();
    getitem_name = PyUnicode_InternFromString("__getitem__");
    dict_getitem = getitem_name == NULL ? NULL : PyObject_GetAttr((PyObject *)&PyDict_Type, getitem_name);
    if (dict_getitem == NULL) {
        return NULL;
    }
    return PyModule_Create(&native_module);
}
