/*
 * The content hash of kurahi.lineage.check, in C: the canonical JSON of a value exactly as
 *
 *     json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
 *         .encode("utf-8", "surrogatepass")
 *
 * writes it, from a Python value or from JSON text (then the value is json.loads(text)).
 * Nothing is decoded into Python objects on the text path: a live context of 200k stored
 * messages is hashed from the bytes of its transcript.
 *
 * Every rule is Python's own: keys sorted by code point (the last of a repeated key kept,
 * as a dict keeps it); strings escaped as json's encoder escapes them (", \, and C0 controls,
 * \b \f \n \r \t short, the rest \u00xx lowercase; everything else raw, a lone surrogate as
 * its three bytes); integers in full ("-0" is 0); a float as repr() writes it, from the
 * double float() reads (PyOS_string_to_double / PyOS_double_to_string, the very functions
 * float() and repr() use), Infinity and NaN spelled as json writes them. Whatever this code
 * does not take (a value of another type, a key that is not a str, nesting deeper than
 * CANON_MAX_DEPTH, text that is not JSON or not UTF-8, an integer of more than
 * CANON_MAX_DIGITS digits) answers CANON_NO, and the caller hashes in Python.
 *
 * Only static functions: _native.c includes this file once, after Python.h. The GIL is held.
 */
#ifndef KURAHI_NATIVE_CANON_H
#define KURAHI_NATIVE_CANON_H

#include <math.h>

#define CANON_OK 0
#define CANON_NO 1   /* not taken here: hash in Python */
#define CANON_ERR -1 /* a Python exception is set (memory) */
#define CANON_MAX_DEPTH 512
#define CANON_MAX_DIGITS 4000 /* Python's int() refuses more than 4300 digits by default */

typedef struct {
    char *p;
    size_t len, cap;
} CBuf;

static int cb_grow(CBuf *b, size_t extra)
{
    size_t need = b->len + extra;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap *= 2;
    char *np = realloc(b->p, cap);
    if (np == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = np;
    b->cap = cap;
    return 0;
}

static inline int cb_put(CBuf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap && cb_grow(b, n) < 0)
        return -1;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

static inline int cb_byte(CBuf *b, char c)
{
    if (b->len == b->cap && cb_grow(b, 1) < 0)
        return -1;
    b->p[b->len++] = c;
    return 0;
}

typedef struct {
    size_t koff, klen; /* the decoded key, in keys */
    size_t voff, vlen; /* its canonical value, in out */
    size_t order;      /* position in the object: the last of a repeated key wins */
} Member;

typedef struct {
    CBuf out;  /* canonical bytes of the value being written */
    CBuf keys; /* decoded keys of the open objects (text path) */
    CBuf tmp;  /* an object's member values while they are put in key order */
    Member *m;
    size_t nm, capm;
    const char *keybase; /* keys.p while sorting */
} Canon;

static void canon_free(Canon *c)
{
    free(c->out.p);
    free(c->keys.p);
    free(c->tmp.p);
    free(c->m);
    memset(c, 0, sizeof *c);
}

/* -- writing ------------------------------------------------------------------------------ */

static const char HEX[] = "0123456789abcdef";

/* One code point as json.dumps(ensure_ascii=False) writes it, then UTF-8 (surrogatepass). */
static inline int put_code_point(CBuf *b, uint32_t cp)
{
    char t[6];
    if (cp < 0x80) {
        if (cp >= 0x20 && cp != '"' && cp != '\\')
            return cb_byte(b, (char)cp);
        t[0] = '\\';
        switch (cp) {
        case '"': t[1] = '"'; return cb_put(b, t, 2);
        case '\\': t[1] = '\\'; return cb_put(b, t, 2);
        case '\b': t[1] = 'b'; return cb_put(b, t, 2);
        case '\f': t[1] = 'f'; return cb_put(b, t, 2);
        case '\n': t[1] = 'n'; return cb_put(b, t, 2);
        case '\r': t[1] = 'r'; return cb_put(b, t, 2);
        case '\t': t[1] = 't'; return cb_put(b, t, 2);
        default:
            t[1] = 'u';
            t[2] = '0';
            t[3] = '0';
            t[4] = HEX[(cp >> 4) & 15];
            t[5] = HEX[cp & 15];
            return cb_put(b, t, 6);
        }
    }
    if (cp < 0x800) {
        t[0] = (char)(0xc0 | (cp >> 6));
        t[1] = (char)(0x80 | (cp & 0x3f));
        return cb_put(b, t, 2);
    }
    if (cp < 0x10000) { /* surrogates too: "surrogatepass" writes them as any other */
        t[0] = (char)(0xe0 | (cp >> 12));
        t[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        t[2] = (char)(0x80 | (cp & 0x3f));
        return cb_put(b, t, 3);
    }
    t[0] = (char)(0xf0 | (cp >> 18));
    t[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    t[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    t[3] = (char)(0x80 | (cp & 0x3f));
    return cb_put(b, t, 4);
}

/* Decoded UTF-8 (surrogates as three bytes) written as a json.dumps string, quotes included. */
static int put_escaped_utf8(CBuf *b, const char *p, size_t n)
{
    if (cb_byte(b, '"') < 0)
        return -1;
    size_t i = 0, run = 0;
    while (i < n) {
        /* Eight bytes at a time while none needs escaping (SWAR: a control byte, '"' or '\\'). */
        while (i + 8 <= n) {
            uint64_t x;
            memcpy(&x, p + i, 8);
            const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
            uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');
            if (((x - ones * 0x20) | (q - ones) | (bs - ones)) & ~x & high)
                break; /* (a byte of x under 0x20, or equal to one of the two; never a high byte) */
            i += 8;
        }
        if (i >= n)
            break;
        unsigned char ch = (unsigned char)p[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') {
            i++;
            continue;
        }
        if (cb_put(b, p + run, i - run) < 0 || put_code_point(b, ch) < 0)
            return -1;
        run = ++i;
    }
    if (cb_put(b, p + run, n - run) < 0)
        return -1;
    return cb_byte(b, '"');
}

/* repr(float) as json.dumps writes a float. */
static int put_double(CBuf *b, double d)
{
    if (!isfinite(d)) {
        if (isnan(d))
            return cb_put(b, "NaN", 3);
        return d > 0 ? cb_put(b, "Infinity", 8) : cb_put(b, "-Infinity", 9);
    }
    char *s = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (s == NULL)
        return -1;
    int rc = cb_put(b, s, strlen(s));
    PyMem_Free(s);
    return rc;
}

static int member_cmp(const void *x, const void *y, const char *keys)
{
    const Member *a = (const Member *)x, *b = (const Member *)y;
    size_t n = a->klen < b->klen ? a->klen : b->klen;
    int c = memcmp(keys + a->koff, keys + b->koff, n);
    if (c)
        return c;
    if (a->klen != b->klen)
        return a->klen < b->klen ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Members [lo, hi) in key order, by insertion sort (objects are small) or a merge sort. */
static int sort_members(Canon *c, size_t lo, size_t hi)
{
    Member *m = c->m + lo;
    size_t n = hi - lo;
    const char *keys = c->keybase;
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            Member x = m[i];
            size_t j = i;
            while (j > 0 && member_cmp(&m[j - 1], &x, keys) > 0) {
                m[j] = m[j - 1];
                j--;
            }
            m[j] = x;
        }
        return 0;
    }
    Member *tmp = malloc(n * sizeof(Member));
    if (tmp == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t i = 0; i < n; i += 2 * width) {
            size_t mid = i + width < n ? i + width : n, end = i + 2 * width < n ? i + 2 * width : n;
            size_t a = i, bb = mid, k = i;
            while (a < mid && bb < end)
                tmp[k++] = member_cmp(&m[a], &m[bb], keys) <= 0 ? m[a++] : m[bb++];
            while (a < mid)
                tmp[k++] = m[a++];
            while (bb < end)
                tmp[k++] = m[bb++];
        }
        memcpy(m, tmp, n * sizeof(Member));
    }
    free(tmp);
    return 0;
}

static int push_member(Canon *c, Member mem)
{
    if (c->nm == c->capm) {
        size_t cap = c->capm ? c->capm * 2 : 64;
        Member *nm = realloc(c->m, cap * sizeof(Member));
        if (nm == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        c->m = nm;
        c->capm = cap;
    }
    c->m[c->nm++] = mem;
    return 0;
}

/* The members [base, nm) were written to out from obj_start on, in input order: rewrite them
 * there as "{key:value,...}" in key order, the last of a repeated key only. */
static int close_object(Canon *c, size_t base, size_t obj_start, const char *keys)
{
    size_t n = c->nm - base, body = c->out.len - obj_start;
    c->keybase = keys;
    if (sort_members(c, base, c->nm) < 0)
        return -1;
    c->tmp.len = 0;
    if (cb_put(&c->tmp, c->out.p + obj_start, body) < 0)
        return -1;
    c->out.len = obj_start;
    if (cb_byte(&c->out, '{') < 0)
        return -1;
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        const Member *m = &c->m[base + i];
        if (i + 1 < n) {
            const Member *next = &c->m[base + i + 1];
            if (next->klen == m->klen && memcmp(keys + next->koff, keys + m->koff, m->klen) == 0)
                continue; /* a later value for the same key replaces this one */
        }
        if ((!first && cb_byte(&c->out, ',') < 0) || put_escaped_utf8(&c->out, keys + m->koff, m->klen) < 0 ||
            cb_byte(&c->out, ':') < 0 || cb_put(&c->out, c->tmp.p + (m->voff - obj_start), m->vlen) < 0)
            return -1;
        first = 0;
    }
    c->nm = base;
    return cb_byte(&c->out, '}');
}

/* -- from JSON text ------------------------------------------------------------------------ */

static inline int hexval(unsigned char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static inline int read_u4(const char *p, const char *pe, uint32_t *cp)
{
    if (pe - p < 4)
        return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval((unsigned char)p[i]);
        if (h < 0)
            return 0;
        v = v << 4 | (uint32_t)h;
    }
    *cp = v;
    return 1;
}

/* A JSON string from just after its opening quote: decoded as json.loads decodes it (a pair of
 * \u escapes joined, a lone surrogate kept) and written to b, either raw (UTF-8, surrogates as
 * three bytes) or escaped as json.dumps writes it (with the quotes). *pp ends after the closing
 * quote. CANON_NO for text that is not a JSON string or not UTF-8. */
static int text_string(const char **pp, const char *pe, CBuf *b, int escaped)
{
    const char *p = *pp;
    if (escaped && cb_byte(b, '"') < 0)
        return CANON_ERR;
    for (;;) {
        const char *run = p;
        while (p < pe && (unsigned char)*p >= 0x20 && *p != '"' && *p != '\\')
            p++;
        if (p > run) {
            if (!utf8_ok(run, (size_t)(p - run)))
                return CANON_NO;
            if (cb_put(b, run, (size_t)(p - run)) < 0)
                return CANON_ERR;
        }
        if (p >= pe || (unsigned char)*p < 0x20)
            return CANON_NO; /* unterminated, or a raw control character */
        if (*p == '"')
            break;
        p++; /* the backslash */
        if (p >= pe)
            return CANON_NO;
        uint32_t cp;
        switch (*p++) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (!read_u4(p, pe, &cp))
                return CANON_NO;
            p += 4;
            if (cp >= 0xd800 && cp <= 0xdbff && pe - p >= 6 && p[0] == '\\' && p[1] == 'u') {
                uint32_t lo;
                if (read_u4(p + 2, pe, &lo) && lo >= 0xdc00 && lo <= 0xdfff) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    p += 6;
                }
            }
            break;
        default:
            return CANON_NO;
        }
        int rc;
        if (escaped) {
            rc = put_code_point(b, cp);
        } else if (cp < 0x80) {
            rc = cb_byte(b, (char)cp);
        } else {
            /* raw: the UTF-8 of cp (put_code_point escapes nothing from 0x80 up) */
            rc = put_code_point(b, cp);
        }
        if (rc < 0)
            return CANON_ERR;
    }
    *pp = p + 1;
    if (escaped && cb_byte(b, '"') < 0)
        return CANON_ERR;
    return CANON_OK;
}

static int text_number(const char **pp, const char *pe, CBuf *b)
{
    const char *start = *pp, *p = scan_number(start, pe);
    if (p == NULL)
        return CANON_NO;
    *pp = p;
    size_t n = (size_t)(p - start);
    int is_float = 0;
    for (const char *q = start; q < p; q++)
        if (*q == '.' || *q == 'e' || *q == 'E')
            is_float = 1;
    if (!is_float) {
        if (n > CANON_MAX_DIGITS)
            return CANON_NO;
        if (n == 2 && start[0] == '-' && start[1] == '0')
            return cb_byte(b, '0') < 0 ? CANON_ERR : CANON_OK; /* int("-0") is 0 */
        return cb_put(b, start, n) < 0 ? CANON_ERR : CANON_OK;
    }
    char small[64];
    char *s = n < sizeof small ? small : malloc(n + 1);
    if (s == NULL) {
        PyErr_NoMemory();
        return CANON_ERR;
    }
    memcpy(s, start, n);
    s[n] = '\0';
    char *end = NULL;
    double d = PyOS_string_to_double(s, &end, NULL); /* what float() reads; an overflow is inf */
    int ok = d != -1.0 || !PyErr_Occurred();
    int whole = ok && end == s + n;
    if (s != small)
        free(s);
    if (!ok) {
        PyErr_Clear();
        return CANON_NO;
    }
    if (!whole)
        return CANON_NO;
    return put_double(b, d) < 0 ? CANON_ERR : CANON_OK;
}

static int text_value(Canon *c, const char **pp, const char *pe, int depth)
{
    const char *p = skip_ws(*pp, pe);
    if (p >= pe)
        return CANON_NO;
    int rc;
    switch (*p) {
    case '{': {
        if (depth >= CANON_MAX_DEPTH)
            return CANON_NO;
        size_t base = c->nm, kbase = c->keys.len, obj_start = c->out.len;
        p = skip_ws(p + 1, pe);
        if (p < pe && *p == '}') {
            *pp = p + 1;
            return cb_put(&c->out, "{}", 2) < 0 ? CANON_ERR : CANON_OK;
        }
        for (size_t order = 0;; order++) {
            p = skip_ws(p, pe);
            if (p >= pe || *p != '"')
                return CANON_NO;
            p++;
            Member m;
            m.koff = c->keys.len;
            if ((rc = text_string(&p, pe, &c->keys, 0)) != CANON_OK)
                return rc;
            m.klen = c->keys.len - m.koff;
            p = skip_ws(p, pe);
            if (p >= pe || *p != ':')
                return CANON_NO;
            p++;
            m.voff = c->out.len;
            if ((rc = text_value(c, &p, pe, depth + 1)) != CANON_OK)
                return rc;
            m.vlen = c->out.len - m.voff;
            m.order = order;
            if (push_member(c, m) < 0)
                return CANON_ERR;
            p = skip_ws(p, pe);
            if (p < pe && *p == ',') {
                p++;
                continue;
            }
            if (p < pe && *p == '}') {
                p++;
                break;
            }
            return CANON_NO;
        }
        if (close_object(c, base, obj_start, c->keys.p) < 0)
            return CANON_ERR;
        c->keys.len = kbase;
        *pp = p;
        return CANON_OK;
    }
    case '[': {
        if (depth >= CANON_MAX_DEPTH)
            return CANON_NO;
        if (cb_byte(&c->out, '[') < 0)
            return CANON_ERR;
        p = skip_ws(p + 1, pe);
        if (p < pe && *p == ']') {
            *pp = p + 1;
            return cb_byte(&c->out, ']') < 0 ? CANON_ERR : CANON_OK;
        }
        for (int first = 1;; first = 0) {
            if (!first && cb_byte(&c->out, ',') < 0)
                return CANON_ERR;
            if ((rc = text_value(c, &p, pe, depth + 1)) != CANON_OK)
                return rc;
            p = skip_ws(p, pe);
            if (p < pe && *p == ',') {
                p++;
                continue;
            }
            if (p < pe && *p == ']') {
                p++;
                break;
            }
            return CANON_NO;
        }
        *pp = p;
        return cb_byte(&c->out, ']') < 0 ? CANON_ERR : CANON_OK;
    }
    case '"':
        p++;
        rc = text_string(&p, pe, &c->out, 1);
        *pp = p;
        return rc;
    case 't':
        if (pe - p < 4 || memcmp(p, "true", 4) != 0)
            return CANON_NO;
        *pp = p + 4;
        return cb_put(&c->out, "true", 4) < 0 ? CANON_ERR : CANON_OK;
    case 'f':
        if (pe - p < 5 || memcmp(p, "false", 5) != 0)
            return CANON_NO;
        *pp = p + 5;
        return cb_put(&c->out, "false", 5) < 0 ? CANON_ERR : CANON_OK;
    case 'n':
        if (pe - p < 4 || memcmp(p, "null", 4) != 0)
            return CANON_NO;
        *pp = p + 4;
        return cb_put(&c->out, "null", 4) < 0 ? CANON_ERR : CANON_OK;
    default:
        *pp = p;
        return text_number(pp, pe, &c->out);
    }
}

/* The canonical bytes of json.loads(text), appended to c->out. */
static int canon_text(Canon *c, const char *p, size_t n)
{
    const char *pe = p + n;
    int rc = text_value(c, &p, pe, 0);
    if (rc != CANON_OK)
        return rc;
    return skip_ws(p, pe) == pe ? CANON_OK : CANON_NO; /* json.loads: "Extra data" */
}

/* -- from Python values ------------------------------------------------------------------- */

static int put_pystr(CBuf *b, PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    if (PyUnicode_IS_ASCII(s))
        return put_escaped_utf8(b, (const char *)data, (size_t)n);
    if (cb_byte(b, '"') < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (put_code_point(b, PyUnicode_READ(kind, data, i)) < 0)
            return -1;
    return cb_byte(b, '"');
}

static int value_canon(Canon *c, PyObject *v, int depth);

/* Python's str order (by code point, as sorted() orders keys): the bytes of two one-byte
 * strings compare as their code points; anything else asks Python. */
static inline int key_cmp(PyObject *a, PyObject *b)
{
    if (PyUnicode_KIND(a) == PyUnicode_1BYTE_KIND && PyUnicode_KIND(b) == PyUnicode_1BYTE_KIND) {
        Py_ssize_t na = PyUnicode_GET_LENGTH(a), nb = PyUnicode_GET_LENGTH(b);
        int c = memcmp(PyUnicode_1BYTE_DATA(a), PyUnicode_1BYTE_DATA(b), (size_t)(na < nb ? na : nb));
        return c ? c : (na > nb) - (na < nb);
    }
    return PyUnicode_Compare(a, b); /* never fails on two str */
}

#define SMALL_DICT 16

static int value_members(Canon *c, PyObject **k, PyObject **v, Py_ssize_t n, int depth)
{
    int rc = cb_byte(&c->out, '{') < 0 ? CANON_ERR : CANON_OK;
    for (Py_ssize_t i = 0; i < n && rc == CANON_OK; i++) {
        if ((i && cb_byte(&c->out, ',') < 0) || put_pystr(&c->out, k[i]) < 0 || cb_byte(&c->out, ':') < 0)
            return CANON_ERR;
        rc = value_canon(c, v[i], depth + 1);
    }
    if (rc == CANON_OK && cb_byte(&c->out, '}') < 0)
        rc = CANON_ERR;
    return rc;
}

static int value_dict(Canon *c, PyObject *d, int depth)
{
    Py_ssize_t n = PyDict_GET_SIZE(d);
    if (n == 0)
        return cb_put(&c->out, "{}", 2) < 0 ? CANON_ERR : CANON_OK;
    if (n <= SMALL_DICT) {
        /* The usual object: its members taken in one pass and put in key order by insertion
         * sort, on the stack (no key list, no sort through Python, no lookup per key). The
         * references are held while the members are written, as the list of keys held them. */
        PyObject *k[SMALL_DICT], *v[SMALL_DICT];
        Py_ssize_t pos = 0, m = 0;
        PyObject *key, *value;
        while (PyDict_Next(d, &pos, &key, &value)) {
            if (!PyUnicode_CheckExact(key) || m == n)
                return CANON_NO; /* json.dumps converts or refuses other keys (or the dict grew): Python decides */
            Py_ssize_t j = m++;
            while (j > 0 && key_cmp(k[j - 1], key) > 0) {
                k[j] = k[j - 1];
                v[j] = v[j - 1];
                j--;
            }
            k[j] = key;
            v[j] = value;
        }
        if (m != n)
            return CANON_NO;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_INCREF(k[i]);
            Py_INCREF(v[i]);
        }
        int rc = value_members(c, k, v, n, depth);
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_DECREF(k[i]);
            Py_DECREF(v[i]);
        }
        return rc;
    }
    PyObject *keys = PyDict_Keys(d);
    if (keys == NULL)
        return CANON_ERR;
    int rc = CANON_OK;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(keys, i))) {
            Py_DECREF(keys);
            return CANON_NO; /* json.dumps converts or refuses other keys: Python decides */
        }
    }
    if (n > 1 && PyList_Sort(keys) < 0) { /* str order: by code point, as sorted() orders them */
        Py_DECREF(keys);
        return CANON_ERR;
    }
    if (cb_byte(&c->out, '{') < 0)
        rc = CANON_ERR;
    for (Py_ssize_t i = 0; i < n && rc == CANON_OK; i++) {
        PyObject *k = PyList_GET_ITEM(keys, i);
        PyObject *val = PyDict_GetItemWithError(d, k);
        if (val == NULL) {
            rc = PyErr_Occurred() ? CANON_ERR : CANON_NO; /* the dict changed under us */
            break;
        }
        if ((i && cb_byte(&c->out, ',') < 0) || put_pystr(&c->out, k) < 0 || cb_byte(&c->out, ':') < 0) {
            rc = CANON_ERR;
            break;
        }
        Py_INCREF(val);
        rc = value_canon(c, val, depth + 1);
        Py_DECREF(val);
    }
    Py_DECREF(keys);
    if (rc == CANON_OK && cb_byte(&c->out, '}') < 0)
        rc = CANON_ERR;
    return rc;
}

static int value_canon(Canon *c, PyObject *v, int depth)
{
    if (v == Py_None)
        return cb_put(&c->out, "null", 4) < 0 ? CANON_ERR : CANON_OK;
    if (v == Py_True)
        return cb_put(&c->out, "true", 4) < 0 ? CANON_ERR : CANON_OK;
    if (v == Py_False)
        return cb_put(&c->out, "false", 5) < 0 ? CANON_ERR : CANON_OK;
    if (PyUnicode_CheckExact(v))
        return put_pystr(&c->out, v) < 0 ? CANON_ERR : CANON_OK;
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return CANON_ERR;
        if (!overflow) { /* the digits, written from the end (snprintf was a tenth of the time) */
            char t[24];
            char *e = t + sizeof t, *q = e;
            unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
            do
                *--q = (char)('0' + u % 10);
            while (u /= 10);
            if (x < 0)
                *--q = '-';
            return cb_put(&c->out, q, (size_t)(e - q)) < 0 ? CANON_ERR : CANON_OK;
        }
        PyObject *s = PyObject_Str(v); /* int.__repr__, as json.dumps writes it */
        if (s == NULL) {
            PyErr_Clear(); /* more digits than str() gives: Python says so */
            return CANON_NO;
        }
        Py_ssize_t k;
        const char *u = PyUnicode_AsUTF8AndSize(s, &k);
        int rc = u == NULL ? CANON_ERR : cb_put(&c->out, u, (size_t)k) < 0 ? CANON_ERR : CANON_OK;
        Py_DECREF(s);
        return rc;
    }
    if (PyFloat_CheckExact(v))
        return put_double(&c->out, PyFloat_AS_DOUBLE(v)) < 0 ? CANON_ERR : CANON_OK;
    if (depth >= CANON_MAX_DEPTH)
        return CANON_NO;
    if (PyDict_CheckExact(v))
        return value_dict(c, v, depth);
    if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
        PyObject *seq = PySequence_Fast(v, "");
        if (seq == NULL)
            return CANON_ERR;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        int rc = cb_byte(&c->out, '[') < 0 ? CANON_ERR : CANON_OK;
        for (Py_ssize_t i = 0; i < n && rc == CANON_OK; i++) {
            if (i && cb_byte(&c->out, ',') < 0) {
                rc = CANON_ERR;
                break;
            }
            PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
            Py_INCREF(item);
            rc = value_canon(c, item, depth + 1);
            Py_DECREF(item);
        }
        Py_DECREF(seq);
        if (rc == CANON_OK && cb_byte(&c->out, ']') < 0)
            rc = CANON_ERR;
        return rc;
    }
    return CANON_NO; /* another type: json.dumps decides (or refuses) */
}

#endif /* KURAHI_NATIVE_CANON_H */
