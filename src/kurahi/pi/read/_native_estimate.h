/* Pi's token estimate of the message shapes nearly every history has, over decoded values.
 *
 * kurahi.context.tokens._plain_estimate in C: a dict whose role is "user", "custom" or
 * "toolResult" with string content or a list of "text" and "image" blocks, or "assistant" with
 * a list of "text", "thinking" and "toolCall" blocks. Anything else gives -1 ("not plain"), and
 * Python estimates that message rule by rule, knowing where Pi throws. A tool call's arguments
 * are measured here when they hold nothing JavaScript could write differently (json_length),
 * else by the Python callable passed in (JSON.stringify's length, JavaScript's number forms and
 * all); when that raises, the message is "not plain" too and Python says why.
 *
 * Lengths are JavaScript's: UTF-16 code units, so a code point past U+FFFF counts 2 and a lone
 * surrogate (a str may hold one) counts 1.
 */

#define IMAGE_CHARS 4800 /* kurahi.context.tokens.IMAGE_CHARS */

enum { K_ROLE, K_CONTENT, K_TYPE, K_TEXT, K_THINKING, K_NAME, K_ARGUMENTS, K_COUNT };
static PyObject *est_keys[K_COUNT]; /* the keys read, interned once */

static int est_setup(void)
{
    static const char *const names[K_COUNT] = {"role", "content", "type", "text", "thinking", "name", "arguments"};
    for (int i = 0; i < K_COUNT; i++)
        if (est_keys[i] == NULL && (est_keys[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return -1;
    return 0;
}

static Py_ssize_t utf16_units(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (PyUnicode_KIND(s) != PyUnicode_4BYTE_KIND)
        return n;
    const Py_UCS4 *d = PyUnicode_4BYTE_DATA(s);
    Py_ssize_t astral = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        astral += d[i] > 0xFFFF;
    return n + astral;
}

/* value == s in Python: a str (a subclass too) equal to the ASCII literal s. */
static int is_ascii_str(PyObject *value, const char *s)
{
    return value != NULL && PyUnicode_Check(value) && PyUnicode_CompareWithASCIIString(value, s) == 0;
}

/* d.get(key): a borrowed reference, NULL when absent; *err set to 1 on an error (raised). */
static PyObject *get(PyObject *d, int key, int *err)
{
    PyObject *v = PyDict_GetItemWithError(d, est_keys[key]);
    if (v == NULL && PyErr_Occurred())
        *err = 1;
    return v;
}

/* JSON.stringify(v).length for the values it is sure of, -1 for any other (a float: JavaScript
 * writes numbers its own way; a str holding a surrogate: JavaScript may see a pair in two of
 * them; an int past 2**53; a deep value; a type JSON has not). */
static long long json_length(PyObject *v, int depth)
{
    if (v == Py_None || v == Py_True)
        return 4;
    if (v == Py_False)
        return 5;
    if (depth > 64)
        return -1;
    if (PyUnicode_CheckExact(v)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(v);
        int kind = PyUnicode_KIND(v);
        const void *d = PyUnicode_DATA(v);
        long long units = 2;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, d, i);
            if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
                units += 2;
            else if (c < 0x20)
                units += 6;
            else if (c >= 0xD800 && c <= 0xDFFF)
                return -1;
            else
                units += c > 0xFFFF ? 2 : 1;
        }
        return units;
    }
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || x > 9007199254740991LL || x < -9007199254740991LL)
            return -1;
        long long digits = x < 0 ? 2 : 1;
        for (unsigned long long u = x < 0 ? (unsigned long long)-x : (unsigned long long)x; u >= 10; u /= 10)
            digits++;
        return digits;
    }
    if (PyList_CheckExact(v)) {
        Py_ssize_t n = PyList_GET_SIZE(v);
        long long total = n > 1 ? 2 + (n - 1) : 2;
        for (Py_ssize_t i = 0; i < n; i++) {
            long long item = json_length(PyList_GET_ITEM(v, i), depth + 1);
            if (item < 0)
                return -1;
            total += item;
        }
        return total;
    }
    if (PyDict_CheckExact(v)) {
        Py_ssize_t pos = 0, n = 0;
        PyObject *key, *value;
        long long total = 2;
        while (PyDict_Next(v, &pos, &key, &value)) {
            if (!PyUnicode_CheckExact(key))
                return -1;
            long long k = json_length(key, depth + 1), item = json_length(value, depth + 1);
            if (k < 0 || item < 0)
                return -1;
            total += k + 1 + item + (n++ > 0);
        }
        return total;
    }
    return -1;
}

/* The estimate of one message, -1 when it is not plain, -2 on an error (set). */
static long long plain_estimate(PyObject *m, PyObject *stringified_length)
{
    int err = 0;
    if (!PyDict_CheckExact(m))
        return -1;
    PyObject *role = get(m, K_ROLE, &err);
    PyObject *content = get(m, K_CONTENT, &err);
    if (err)
        return -2;
    long long chars = 0;
    int text_role = is_ascii_str(role, "user") || is_ascii_str(role, "custom") || is_ascii_str(role, "toolResult");
    if (text_role && content != NULL && PyUnicode_CheckExact(content))
        return (utf16_units(content) + 3) / 4;
    if (!(text_role || is_ascii_str(role, "assistant")) || content == NULL || !PyList_CheckExact(content))
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(content); i++) {
        PyObject *block = PyList_GET_ITEM(content, i);
        if (!PyDict_CheckExact(block))
            return -1;
        PyObject *kind = get(block, K_TYPE, &err);
        if (err)
            return -2;
        int text = is_ascii_str(kind, "text");
        int thinking = !text && !text_role && is_ascii_str(kind, "thinking");
        if (text || thinking) {
            PyObject *value = get(block, text ? K_TEXT : K_THINKING, &err);
            if (err)
                return -2;
            if (value == NULL || !PyUnicode_CheckExact(value))
                return -1;
            chars += utf16_units(value);
        } else if (text_role) {
            if (is_ascii_str(kind, "image"))
                chars += IMAGE_CHARS;
        } else if (is_ascii_str(kind, "toolCall")) {
            PyObject *name = get(block, K_NAME, &err);
            PyObject *arguments = get(block, K_ARGUMENTS, &err);
            if (err)
                return -2;
            if (name == NULL || !PyUnicode_CheckExact(name) || arguments == NULL)
                return -1;
            long long length = json_length(arguments, 0);
            if (length < 0) {
                PyObject *n = PyObject_CallOneArg(stringified_length, arguments);
                length = n != NULL && PyLong_CheckExact(n) ? PyLong_AsLongLong(n) : -1;
                Py_XDECREF(n);
            }
            if (length < 0) {
                PyErr_Clear(); /* Python's own rule-by-rule estimate says what is wrong */
                return -1;
            }
            chars += utf16_units(name) + length;
        }
    }
    return (chars + 3) / 4;
}

static PyObject *native_plain_estimates(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *messages, *stringified_length;
    if (!PyArg_ParseTuple(args, "O!O:plain_estimates", &PyList_Type, &messages, &stringified_length))
        return NULL;
    if (est_setup() < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(messages);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* Held while the callable (ours, and it only measures a value) may run Python code. */
        PyObject *m = Py_NewRef(PyList_GET_ITEM(messages, i));
        long long e = plain_estimate(m, stringified_length);
        Py_DECREF(m);
        PyObject *v = e == -2 ? NULL : e == -1 ? Py_NewRef(Py_None) : PyLong_FromLongLong(e);
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, v);
    }
    return out;
}
