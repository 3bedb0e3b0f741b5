/*
 * The JSON check of kurahi.store._native: is a line one JSON.parse accepts, and is it
 * "plain" (see the top of _native.c), with its top-level type, id and parentId.
 *
 * Only static functions: _native.c includes this file once.
 */
#ifndef KURAHI_NATIVE_JSON_H
#define KURAHI_NATIVE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_DEPTH 512 /* deeper lines are flagged (Python decides) */

enum { F_TYPE = 0, F_ID = 1, F_PARENT = 2 };

typedef struct {
    const char *p;
    size_t n;
    int present;
    int null;
} Field;

static inline const char *skip_ws(const char *p, const char *pe)
{
    /* JSON.parse's whitespace exactly: tab, line feed, carriage return, space. */
    while (p < pe && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
        p++;
    return p;
}

static inline int is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* From just after an opening quote to its closing quote; NULL if the string is not valid.
 * *escaped is set when a backslash occurs. Bytes >= 0x80 are accepted whatever they are:
 * Node decodes the file with replacement, so no byte sequence there breaks JSON.parse. */
static inline __attribute__((always_inline)) const char *scan_string(const char *p, const char *pe, int *escaped)
{
    for (;;) {
#if defined(__SSE2__)
        const __m128i quote = _mm_set1_epi8('"');
        const __m128i bslash = _mm_set1_epi8('\\');
        const __m128i ctl = _mm_set1_epi8(0x1f);
        while (pe - p >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
            __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                       _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl)); /* byte <= 0x1f */
            int bits = _mm_movemask_epi8(hit);
            if (bits) {
                p += __builtin_ctz((unsigned)bits);
                goto special;
            }
            p += 16;
        }
#endif
        while (p < pe && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
            p++;
        if (p >= pe)
            return NULL; /* unterminated */
#if defined(__SSE2__)
    special:
#endif
        if (*p == '"')
            return p;
        if ((unsigned char)*p < 0x20)
            return NULL; /* a raw control character */
        *escaped = 1;
        p++;
        if (p >= pe)
            return NULL;
        switch (*p) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p++;
            break;
        case 'u':
            if (pe - p < 5 || !is_hex((unsigned char)p[1]) || !is_hex((unsigned char)p[2]) ||
                !is_hex((unsigned char)p[3]) || !is_hex((unsigned char)p[4]))
                return NULL;
            p += 5;
            break;
        default:
            return NULL;
        }
    }
}

static const char *scan_number(const char *p, const char *pe)
{
    if (p < pe && *p == '-')
        p++;
    if (p >= pe)
        return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < pe && is_digit((unsigned char)*p))
            p++;
    } else {
        return NULL;
    }
    if (p < pe && *p == '.') {
        p++;
        if (p >= pe || !is_digit((unsigned char)*p))
            return NULL;
        while (p < pe && is_digit((unsigned char)*p))
            p++;
    }
    if (p < pe && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < pe && (*p == '+' || *p == '-'))
            p++;
        if (p >= pe || !is_digit((unsigned char)*p))
            return NULL;
        while (p < pe && is_digit((unsigned char)*p))
            p++;
    }
    return p; /* what may follow a number is checked by the caller's grammar */
}

static int which_key(const char *k, size_t n)
{
    if (n == 4 && memcmp(k, "type", 4) == 0)
        return F_TYPE;
    if (n == 2 && memcmp(k, "id", 2) == 0)
        return F_ID;
    if (n == 8 && memcmp(k, "parentId", 8) == 0)
        return F_PARENT;
    return -1;
}

static int printable_ascii(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] >= 0x7f)
            return 0;
    return 1;
}

/* 1 when the line is plain (see the top of the file), with its three fields in f. */
static int classify(const char *p, const char *pe, Field f[3])
{
    char stack[MAX_DEPTH];
    int depth = 0;
    int escaped;
    memset(f, 0, 3 * sizeof(Field));

    p = skip_ws(p, pe);
    if (p >= pe || *p != '{')
        return 0;
    p++;
    stack[depth++] = '{';

obj_start: /* just after '{' */
    p = skip_ws(p, pe);
    if (p < pe && *p == '}') {
        p++;
        goto closed;
    }
obj_key:
    p = skip_ws(p, pe);
    if (p >= pe || *p != '"')
        return 0;
    {
        const char *key = ++p;
        escaped = 0;
        p = scan_string(p, pe, &escaped);
        if (p == NULL)
            return 0;
        size_t keylen = (size_t)(p - key);
        p++;
        int which = -1;
        if (depth == 1) {
            if (escaped)
                return 0; /* "i\u0064" is "id": let Python decode it */
            which = which_key(key, keylen);
        }
        p = skip_ws(p, pe);
        if (p >= pe || *p != ':')
            return 0;
        p = skip_ws(p + 1, pe);
        if (which >= 0) {
            Field *fld = &f[which];
            if (fld->present)
                return 0; /* a repeated key: the last one wins in JSON.parse; Python decides */
            fld->present = 1;
            if (p < pe && *p == '"') {
                const char *s = ++p;
                escaped = 0;
                p = scan_string(p, pe, &escaped);
                if (p == NULL || escaped || !printable_ascii(s, (size_t)(p - s)))
                    return 0;
                fld->p = s;
                fld->n = (size_t)(p - s);
                p++;
            } else if (which == F_PARENT && pe - p >= 4 && memcmp(p, "null", 4) == 0) {
                fld->null = 1;
                p += 4;
            } else {
                return 0; /* a number, object, ... as type, id or parentId */
            }
            goto after_value;
        }
    }
    goto value;

arr_start: /* just after '[' */
    p = skip_ws(p, pe);
    if (p < pe && *p == ']') {
        p++;
        goto closed;
    }
value:
    p = skip_ws(p, pe);
    if (p >= pe)
        return 0;
    switch (*p) {
    case '"':
        escaped = 0;
        p = scan_string(p + 1, pe, &escaped);
        if (p == NULL)
            return 0;
        p++;
        goto after_value;
    case '{':
        if (depth >= MAX_DEPTH)
            return 0;
        stack[depth++] = '{';
        p++;
        goto obj_start;
    case '[':
        if (depth >= MAX_DEPTH)
            return 0;
        stack[depth++] = '[';
        p++;
        goto arr_start;
    case 't':
        if (pe - p < 4 || memcmp(p, "true", 4) != 0)
            return 0;
        p += 4;
        goto after_value;
    case 'f':
        if (pe - p < 5 || memcmp(p, "false", 5) != 0)
            return 0;
        p += 5;
        goto after_value;
    case 'n':
        if (pe - p < 4 || memcmp(p, "null", 4) != 0)
            return 0;
        p += 4;
        goto after_value;
    default:
        p = scan_number(p, pe);
        if (p == NULL)
            return 0;
        goto after_value;
    }

closed: /* a container just ended */
    depth--;
    if (depth == 0)
        goto done;
after_value:
    p = skip_ws(p, pe);
    if (p >= pe)
        return 0;
    if (stack[depth - 1] == '{') {
        if (*p == ',') {
            p++;
            goto obj_key;
        }
        if (*p == '}') {
            p++;
            goto closed;
        }
        return 0;
    }
    if (*p == ',') {
        p++;
        goto value;
    }
    if (*p == ']') {
        p++;
        goto closed;
    }
    return 0;

done:
    if (skip_ws(p, pe) != pe)
        return 0;
    if (!f[F_TYPE].present || !f[F_ID].present || !f[F_PARENT].present)
        return 0; /* Python gives absent keys JavaScript's undefined */
    if (f[F_TYPE].n == 7 && memcmp(f[F_TYPE].p, "session", 7) == 0)
        return 0; /* a header in the middle: Python warns */
    return 1;
}

#endif /* KURAHI_NATIVE_JSON_H */
