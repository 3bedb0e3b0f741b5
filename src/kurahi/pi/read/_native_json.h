/*
 * The JSON check of kurahi.pi.read._native: is a line one JSON.parse accepts, and is it
 * "plain" (see the top of _native.c), with its top-level type, id and parentId.
 *
 * Only static functions: _native.c includes this file once.
 */
#ifndef KURAHI_NATIVE_JSON_H
#define KURAHI_NATIVE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_DEPTH 512 /* nesting kept on the C stack; deeper lines grow a heap copy (JSON.parse has no limit) */

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
 * *escaped is set when a backslash occurs, *odd when the escape is one JSON.stringify never
 * writes for the character (\/, and \u, which it writes only for control characters and
 * lone surrogates: those are rare, so every \u counts). Bytes >= 0x80 are accepted whatever
 * they are: Node decodes the file with replacement, so no byte sequence there breaks
 * JSON.parse (whether they are valid UTF-8 is checked where it matters, in Python). */
static inline __attribute__((always_inline)) const char *scan_string(const char *p, const char *pe, int *escaped,
                                                                     int *odd)
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
        case '/':
            *odd = 1;
            p++;
            break;
        case '"': case '\\': case 'b': case 'f': case 'n': case 'r': case 't':
            p++;
            break;
        case 'u':
            *odd = 1;
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

/* Whether a number token [p, pe) is exactly what JSON.stringify writes for the number
 * JSON.parse reads from it. Sufficient, not necessary (false costs only time): an integer of
 * at most 15 digits (every such integer is a double, printed in full) other than -0; or a
 * plain decimal of at most 15 significant digits, no trailing zero in its fraction and at
 * most five zeros after the point before the first other digit (so at least 1e-6): such a
 * decimal is the shortest one that reads back as its double, and JavaScript prints numbers
 * from 1e-6 up to 1e21 without an exponent. */
static int number_canonical(const char *p, const char *pe)
{
    int negative = *p == '-';
    if (negative)
        p++;
    const char *dot = NULL;
    for (const char *q = p; q < pe; q++) {
        if (*q == 'e' || *q == 'E')
            return 0;
        if (*q == '.')
            dot = q;
    }
    if (dot == NULL) {
        if (negative && pe - p == 1 && *p == '0')
            return 0; /* -0 is written 0 */
        return pe - p <= 15;
    }
    if (pe[-1] == '0')
        return 0; /* 1.50 and 2.0 are written 1.5 and 2 */
    if (dot - p == 1 && *p == '0') {
        const char *q = dot + 1;
        while (q < pe && *q == '0')
            q++;
        if (q - (dot + 1) > 5)
            return 0; /* below 1e-6: JavaScript writes an exponent */
        return pe - q <= 15;
    }
    return (dot - p) + (pe - dot - 1) <= 15;
}

/* Whether the JSON value at p is one of the strings "system", "user", "assistant" or
 * "toolResult" written without escapes (an escaped one makes the message not canonical). */
static int has_normalised_role(const char *p, const char *pe)
{
    static const char *const roles[] = {"\"system\"", "\"user\"", "\"assistant\"", "\"toolResult\""};
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        size_t n = strlen(roles[i]);
        if ((size_t)(pe - p) >= n && memcmp(p, roles[i], n) == 0)
            return 1;
    }
    return 0;
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

/* Strict UTF-8 (what Python's bytes.decode accepts): no overlong forms, no surrogates, nothing
 * past U+10FFFF. Node reads anything else as U+FFFD, so such a message is not copied. */
static int valid_utf8(const unsigned char *p, size_t n)
{
    const unsigned char *pe = p + n;
    while (p < pe) {
        unsigned char c = *p;
        if (c < 0x80) {
            p++;
            continue;
        }
        size_t need;
        unsigned char lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf) {
            need = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            need = 2;
            if (c == 0xe0)
                lo = 0xa0;
            else if (c == 0xed)
                hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            need = 3;
            if (c == 0xf0)
                lo = 0x90;
            else if (c == 0xf4)
                hi = 0x8f;
        } else {
            return 0;
        }
        if ((size_t)(pe - p) <= need || p[1] < lo || p[1] > hi)
            return 0;
        for (size_t i = 2; i <= need; i++)
            if ((p[i] & 0xc0) != 0x80)
                return 0;
        p += need + 1;
    }
    return 1;
}

/* Whether [p, p + n) is valid UTF-8, at memory speed for the common all-ASCII text. */
static int utf8_ok(const char *p, size_t n)
{
    size_t i = 0;
#if defined(__SSE2__)
    __m128i acc = _mm_setzero_si128();
    for (; i + 16 <= n; i += 16)
        acc = _mm_or_si128(acc, _mm_loadu_si128((const __m128i *)(const void *)(p + i)));
    if (_mm_movemask_epi8(acc) != 0)
        return valid_utf8((const unsigned char *)p, n);
#endif
    for (; i < n; i++)
        if ((unsigned char)p[i] >= 0x80)
            return valid_utf8((const unsigned char *)p, n);
    return 1;
}

typedef struct {
    uint32_t off; /* from the start of the line */
    uint32_t len; /* 0: the message is not to be copied as stored */
} Span;

/* The value of a top-level type, id or parentId key at p: a plain printable ASCII string
 * without escapes (or null for parentId), recorded in fld. NULL when it is anything else or
 * the key came before: such a line is left to the Python reader. */
static inline const char *read_field(const char *p, const char *pe, int which, Field *fld)
{
    int escaped = 0, odd = 0;
    if (fld->present)
        return NULL;
    fld->present = 1;
    if (p < pe && *p == '"') {
        const char *s = ++p;
        p = scan_string(p, pe, &escaped, &odd);
        if (p == NULL || escaped || !printable_ascii(s, (size_t)(p - s)))
            return NULL;
        fld->p = s;
        fld->n = (size_t)(p - s);
        return p + 1;
    }
    if (which == F_PARENT && pe - p >= 4 && memcmp(p, "null", 4) == 0) {
        fld->null = 1;
        return p + 4;
    }
    return NULL;
}

#define MAX_KEYS 256 /* keys of the open objects inside a message, for the repeated-key check */

/* 1 when the line is plain (see the top of the file), with its three fields in f.
 *
 * m gets the bytes of the top-level "message" value when they can be copied into JSON output
 * as they are: they must be exactly what JSON.stringify writes for the value JSON.parse reads
 * from them (no whitespace between tokens, only the escapes JSON.stringify uses, numbers in
 * its form, no key repeated in an object or led by a digit, which JavaScript orders first),
 * and the value an object with one "content" key that is not null (Pi 1.6.0 rewrites a null
 * or missing content), and the bytes valid UTF-8 (Node reads anything else as U+FFFD). */
/* Doubles classify()'s nesting stack: the first time from its arrays on the C stack to the heap. */
static int grow_stack(char **stack, int **kbase, char *stack_buf, int *kbase_buf, int *cap)
{
    if (*cap > (1 << 29))
        return 0;
    int n = *cap * 2;
    char *s = *stack == stack_buf ? malloc((size_t)n) : realloc(*stack, (size_t)n);
    if (s == NULL)
        return 0;
    if (*stack == stack_buf)
        memcpy(s, stack_buf, (size_t)*cap);
    *stack = s; /* kept even if the next allocation fails: out: frees it */
    int *k = *kbase == kbase_buf ? malloc((size_t)n * sizeof(int)) : realloc(*kbase, (size_t)n * sizeof(int));
    if (k == NULL) {
        if (*kbase == kbase_buf) {
            /* stack is on the heap, kbase is not: keep them paired for out: by freeing the one */
            free(s);
            *stack = stack_buf;
        }
        return 0;
    }
    if (*kbase == kbase_buf)
        memcpy(k, kbase_buf, (size_t)*cap * sizeof(int));
    *kbase = k;
    *cap = n;
    return 1;
}

static int classify(const char *p, const char *pe, Field f[3], Span *m)
{
    char stack_buf[MAX_DEPTH];
    int kbase_buf[MAX_DEPTH];
    char *stack = stack_buf;
    int *kbase = kbase_buf;
    int cap = MAX_DEPTH, ret_ = 0;
    const char *kp[MAX_KEYS];
    size_t kn[MAX_KEYS];
    int ktop = 0;
    int depth = 0;
    int escaped, odd;
    const char *const line = p;
    int in_msg = 0, canon = 1, msg_count = 0, content_count = 0, content_null = 0, normalised_role = 0;
    const char *msg_start = NULL, *msg_end = NULL;
    memset(f, 0, 3 * sizeof(Field));
    m->off = m->len = 0;

/* Whitespace between tokens; inside the message value JSON.stringify writes none. */
#define WS()                                                                                                         \
    do {                                                                                                             \
        if (p < pe && (unsigned char)*p > ' ')                                                                       \
            break; /* the usual case: no whitespace at all */                                                        \
        const char *q_ = skip_ws(p, pe);                                                                           \
        if (q_ != p && in_msg)                                                                                       \
            canon = 0;                                                                                               \
        p = q_;                                                                                                      \
    } while (0)

/* Every exit frees the heap copy of the nesting stack, if one was made. */
#define RETURN(v)                                                                                                    \
    do {                                                                                                             \
        ret_ = (v);                                                                                                  \
        goto out;                                                                                                    \
    } while (0)
/* Deeper than the C stack's arrays: double them on the heap (0 when memory runs out; the line
 * then goes to Python, which reads it at any depth). */
#define GROW() grow_stack(&stack, &kbase, stack_buf, kbase_buf, &cap)

    p = skip_ws(p, pe);
    if (p >= pe || *p != '{')
        RETURN(0);
    p++;
    kbase[depth] = 0;
    stack[depth++] = '{';

obj_start: /* just after '{' */
    WS();
    if (p < pe && *p == '}') {
        p++;
        goto closed;
    }
obj_key:
    WS();
    if (p >= pe || *p != '"')
        RETURN(0);
    {
        const char *key = ++p;
        escaped = odd = 0;
        p = scan_string(p, pe, &escaped, &odd);
        if (p == NULL)
            RETURN(0);
        size_t keylen = (size_t)(p - key);
        p++;
        int which = -1, is_message = 0;
        if (depth == 1) {
            if (escaped)
                RETURN(0); /* "i\u0064" is "id": let Python decode it */
            which = which_key(key, keylen);
            is_message = keylen == 7 && memcmp(key, "message", 7) == 0;
        } else if (in_msg) {
            if (odd || (keylen > 0 && is_digit((unsigned char)key[0])))
                canon = 0;
            for (int i = kbase[depth - 1]; i < ktop && canon; i++)
                if (kn[i] == keylen && (keylen == 0 || (kp[i][0] == key[0] && memcmp(kp[i], key, keylen) == 0)))
                    canon = 0; /* JSON.parse keeps one of them */
            if (ktop < MAX_KEYS) {
                kp[ktop] = key;
                kn[ktop++] = keylen;
            } else {
                canon = 0;
            }
            if (depth == 2 && stack[1] == '{' && keylen == 7 && memcmp(key, "content", 7) == 0)
                content_count++;
        }
        WS();
        if (p >= pe || *p != ':')
            RETURN(0);
        p++;
        WS();
        if (is_message) {
            msg_count++;
            msg_start = p;
            in_msg = 1;
        } else if (in_msg && depth == 2 && stack[1] == '{') {
            if (keylen == 7 && memcmp(key, "content", 7) == 0 && p < pe && *p == 'n')
                content_null = 1;
            else if (keylen == 4 && memcmp(key, "role", 4) == 0)
                normalised_role = has_normalised_role(p, pe);
        }
        if (which >= 0) {
            /* a repeated key (the last one wins in JSON.parse: Python decides), or a number,
             * object, ... as type, id or parentId */
            p = read_field(p, pe, which, &f[which]);
            if (p == NULL)
                RETURN(0);
            goto after_value;
        }
    }
    goto value;

arr_start: /* just after '[' */
    WS();
    if (p < pe && *p == ']') {
        p++;
        goto closed;
    }
value:
    WS();
    if (p >= pe)
        RETURN(0);
    switch (*p) {
    case '"':
        escaped = odd = 0;
        p = scan_string(p + 1, pe, &escaped, &odd);
        if (p == NULL)
            RETURN(0);
        if (odd && in_msg)
            canon = 0;
        p++;
        goto after_value;
    case '{':
        if (depth >= cap && !GROW())
            RETURN(0);
        kbase[depth] = ktop;
        stack[depth++] = '{';
        p++;
        goto obj_start;
    case '[':
        if (depth >= cap && !GROW())
            RETURN(0);
        kbase[depth] = ktop;
        stack[depth++] = '[';
        p++;
        goto arr_start;
    case 't':
        if (pe - p < 4 || memcmp(p, "true", 4) != 0)
            RETURN(0);
        p += 4;
        goto after_value;
    case 'f':
        if (pe - p < 5 || memcmp(p, "false", 5) != 0)
            RETURN(0);
        p += 5;
        goto after_value;
    case 'n':
        if (pe - p < 4 || memcmp(p, "null", 4) != 0)
            RETURN(0);
        p += 4;
        goto after_value;
    default: {
        const char *num = p;
        p = scan_number(p, pe);
        if (p == NULL)
            RETURN(0);
        if (in_msg && !number_canonical(num, p))
            canon = 0;
        goto after_value;
    }
    }

closed: /* a container just ended */
    ktop = kbase[depth - 1];
    depth--;
    if (depth == 0)
        goto done;
after_value:
    if (in_msg && depth == 1) {
        msg_end = p; /* the message value ends here */
        in_msg = 0;
    }
    WS();
    if (p >= pe)
        RETURN(0);
    if (stack[depth - 1] == '{') {
        if (*p == ',') {
            p++;
            goto obj_key;
        }
        if (*p == '}') {
            p++;
            goto closed;
        }
        RETURN(0);
    }
    if (*p == ',') {
        p++;
        goto value;
    }
    if (*p == ']') {
        p++;
        goto closed;
    }
    RETURN(0);
#undef WS

done:
    if (skip_ws(p, pe) != pe)
        RETURN(0);
    if (!f[F_TYPE].present || !f[F_ID].present || !f[F_PARENT].present)
        RETURN(0); /* Python gives absent keys JavaScript's undefined */
    if (f[F_TYPE].n == 7 && memcmp(f[F_TYPE].p, "session", 7) == 0)
        RETURN(0); /* a header in the middle: Python warns */
    /* Pi 1.6.0 gives a system, user, assistant or toolResult message without content (or with
     * a null one) an empty content: such a message is not copied. */
    int content_kept = (content_count == 1 && !content_null) || !normalised_role;
    if (msg_count == 1 && canon && msg_end != NULL && *msg_start == '{' && content_kept &&
        (uint64_t)(msg_end - msg_start) < 0xffffffffu && utf8_ok(msg_start, (size_t)(msg_end - msg_start))) {
        m->off = (uint32_t)(msg_start - line);
        m->len = (uint32_t)(msg_end - msg_start);
    }
    RETURN(1);
out:
    if (stack != stack_buf) {
        free(stack);
        free(kbase);
    }
    return ret_;
#undef RETURN
#undef GROW
}

/* -- skim: the top-level type, id and parentId without checking the rest ---------------------
 *
 * classify() checks every byte of a line as JSON.parse would, and that check is most of what
 * reading a large file costs. A projection needs it for few lines: Pi reads only the leaf's
 * path, and a line matters elsewhere only through its id. skim() reads the top level of a
 * line exactly as classify() does (every key, colon and comma; the three fields with the same
 * rules) but steps over the other values without checking them: a nested value by counting
 * brackets outside strings, a number or literal up to the next delimiter. So for every line
 * JSON.parse accepts it gives the fields classify() gives, and it flags whatever classify()
 * flags there; for a line JSON.parse refuses it may answer anything. kurahi.pi.read.quick makes
 * that exact: it checks each line of the path with classify() (Table.verify) and reads the
 * file again with classify() when one fails. */

static const unsigned char SKIM_STOP[256] = {['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1};

/* From just after an opening '{' or '[' to just after its matching close, or NULL: exact when the
 * value is JSON, anything otherwise. */
static const char *skip_nested_scalar(const char *p, const char *pe)
{
    int depth = 1, escaped, odd;
    for (;;) {
        while (p < pe && !SKIM_STOP[(unsigned char)*p])
            p++;
        if (p >= pe)
            return NULL;
        switch (*p++) {
        case '"':
            p = scan_string(p, pe, &escaped, &odd);
            if (p == NULL)
                return NULL;
            p++;
            break;
        case '{': case '[':
            depth++;
            break;
        default:
            if (--depth == 0)
                return p;
        }
    }
}

#if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
/* The same, 64 bytes at a time, in the manner of simdjson's first stage: bit masks of the
 * quotes, backslashes and brackets of a block; the escaped characters (odd runs of
 * backslashes, carried across blocks); the bytes inside strings (a prefix XOR of the real
 * quotes, carried); then only the brackets outside strings are visited, one bit each. With
 * AVX2 (chosen at run time) a block is two loads instead of four. */
#define SKIP_SIMD 1

typedef struct {
    uint64_t bs, quote, open, close;
} Masks;

static inline uint64_t prefix_xor(uint64_t x)
{
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

static inline uint64_t find_escaped(uint64_t backslash, uint64_t *prev_escaped)
{
    backslash &= ~*prev_escaped;
    uint64_t follows_escape = backslash << 1 | *prev_escaped;
    const uint64_t even_bits = 0x5555555555555555ULL;
    uint64_t odd_sequence_starts = backslash & ~even_bits & ~follows_escape;
    unsigned long long sequences_starting_on_even_bits;
    *prev_escaped = __builtin_uaddll_overflow(odd_sequence_starts, backslash, &sequences_starting_on_even_bits);
    uint64_t invert_mask = (uint64_t)sequences_starting_on_even_bits << 1;
    return (even_bits ^ invert_mask) & follows_escape;
}

/* '[' and ']' are '{' and '}' without bit 5: one compare each finds both after setting it. */
static inline Masks masks_sse2(const char *p)
{
    Masks m = {0, 0, 0, 0};
    const __m128i bs = _mm_set1_epi8('\\'), quote = _mm_set1_epi8('"'), bit5 = _mm_set1_epi8(0x20);
    const __m128i open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}');
    for (int i = 0; i < 4; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        __m128i folded = _mm_or_si128(v, bit5);
        int sh = 16 * i;
        m.bs |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, bs)) << sh;
        m.quote |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)) << sh;
        m.open |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(folded, open)) << sh;
        m.close |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(folded, close)) << sh;
    }
    return m;
}

/* One block: -1, or the index of the bracket that closes the value. */
static inline int skip_block(Masks m, int *depth, uint64_t *in_string, uint64_t *escaped)
{
    if (m.bs | *escaped)
        m.quote &= ~find_escaped(m.bs, escaped);
    uint64_t strings = prefix_xor(m.quote) ^ *in_string;
    *in_string = (uint64_t)((int64_t)strings >> 63);
    uint64_t opens = m.open & ~strings, s = (m.open | m.close) & ~strings;
    while (s) {
        uint64_t bit = s & (0 - s);
        if (opens & bit)
            ++*depth;
        else if (--*depth == 0)
            return __builtin_ctzll(s);
        s ^= bit;
    }
    return -1;
}

/* The last bytes (fewer than 64) go through one more block, copied into spaces: no space is a
 * quote, a backslash or a bracket, so the masks see only those bytes. */
#define DEFINE_SKIP_NESTED(NAME, MASKS, ATTR)                                                                        \
    ATTR static const char *NAME(const char *p, const char *pe)                                                      \
    {                                                                                                                \
        int depth = 1, at;                                                                                           \
        uint64_t in_string = 0, escaped = 0;                                                                         \
        for (; pe - p >= 64; p += 64)                                                                                \
            if ((at = skip_block(MASKS(p), &depth, &in_string, &escaped)) >= 0)                                      \
                return p + at + 1;                                                                                   \
        if (p >= pe)                                                                                                 \
            return NULL;                                                                                             \
        char last[64];                                                                                               \
        memset(last, ' ', sizeof last);                                                                              \
        memcpy(last, p, (size_t)(pe - p));                                                                           \
        at = skip_block(MASKS(last), &depth, &in_string, &escaped);                                                  \
        return at >= 0 ? p + at + 1 : NULL;                                                                          \
    }

DEFINE_SKIP_NESTED(skip_nested_sse2, masks_sse2, )

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SKIP_AVX2 1

__attribute__((target("avx2"))) static inline Masks masks_avx2(const char *p)
{
    const __m256i bs = _mm256_set1_epi8('\\'), quote = _mm256_set1_epi8('"'), bit5 = _mm256_set1_epi8(0x20);
    const __m256i open = _mm256_set1_epi8('{'), close = _mm256_set1_epi8('}');
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)p);
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
    __m256i fa = _mm256_or_si256(a, bit5), fb = _mm256_or_si256(b, bit5);
    Masks m;
    m.bs = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, bs)) |
           (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, bs)) << 32;
    m.quote = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, quote)) |
              (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, quote)) << 32;
    m.open = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(fa, open)) |
             (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(fb, open)) << 32;
    m.close = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(fa, close)) |
              (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(fb, close)) << 32;
    return m;
}

DEFINE_SKIP_NESTED(skip_nested_avx2, masks_avx2, __attribute__((target("avx2"))))
#endif
#endif

typedef const char *(*skip_fn)(const char *, const char *);

/* A string value of the kind classify() keeps (printable ASCII, no escape), from just after
 * its opening quote: where its closing quote is, or NULL (then the general path decides). */
static inline const char *plain_value(const char *p, const char *pe)
{
    while (p < pe && (unsigned char)(*p - 0x20) < 0x5f && *p != '"' && *p != '\\')
        p++;
    return p < pe && *p == '"' ? p : NULL;
}

/* Pi writes every entry with "type", "id" and "parentId" first and no whitespace: read that
 * prefix with a few compares. Just after the parentId value, or NULL (f is then to be reset). */
static inline const char *pi_prefix(const char *p, const char *pe, Field f[3])
{
    if (pe - p < 9 || memcmp(p, "{\"type\":\"", 9) != 0)
        return NULL;
    const char *t = p + 9, *q = plain_value(t, pe);
    if (q == NULL || pe - q < 8 || memcmp(q, "\",\"id\":\"", 8) != 0)
        return NULL;
    const char *i = q + 8, *r = plain_value(i, pe);
    if (r == NULL || pe - r < 13 || memcmp(r, "\",\"parentId\":", 13) != 0)
        return NULL;
    f[F_TYPE].p = t;
    f[F_TYPE].n = (size_t)(q - t);
    f[F_TYPE].present = 1;
    f[F_ID].p = i;
    f[F_ID].n = (size_t)(r - i);
    f[F_ID].present = 1;
    f[F_PARENT].present = 1;
    p = r + 13;
    if (pe - p >= 4 && memcmp(p, "null", 4) == 0) {
        f[F_PARENT].null = 1;
        return p + 4;
    }
    if (p < pe && *p == '"') {
        const char *v = p + 1, *w = plain_value(v, pe);
        if (w != NULL) {
            f[F_PARENT].p = v;
            f[F_PARENT].n = (size_t)(w - v);
            return w + 1;
        }
    }
    return NULL;
}

/* 1 when the top level is plain as classify() would find it, with the three fields in f;
 * nested values are stepped over with skip. */
static inline int skim_with(const char *p, const char *pe, Field f[3], skip_fn skip)
{
    int escaped, odd;
    memset(f, 0, 3 * sizeof(Field));
    const char *after = pi_prefix(p, pe, f);
    if (after != NULL) {
        p = after;
        goto next; /* as if the general loop had read those three pairs */
    }
    memset(f, 0, 3 * sizeof(Field));
    p = skip_ws(p, pe);
    if (p >= pe || *p != '{')
        return 0;
    p++;
    p = skip_ws(p, pe);
    if (p < pe && *p == '}') {
        p++;
        goto done;
    }
    for (;;) {
        p = skip_ws(p, pe);
        if (p >= pe || *p != '"')
            return 0;
        const char *key = ++p;
        escaped = odd = 0;
        p = scan_string(p, pe, &escaped, &odd);
        if (p == NULL || escaped)
            return 0;
        size_t keylen = (size_t)(p - key);
        p++;
        int which = which_key(key, keylen);
        p = skip_ws(p, pe);
        if (p >= pe || *p != ':')
            return 0;
        p = skip_ws(p + 1, pe);
        if (p >= pe)
            return 0;
        if (which >= 0) {
            /* a repeated key (the last one wins in JSON.parse: Python decides), or a number,
             * object, ... as type, id or parentId */
            p = read_field(p, pe, which, &f[which]);
            if (p == NULL)
                return 0;
        } else if (*p == '"') {
            escaped = odd = 0;
            p = scan_string(p + 1, pe, &escaped, &odd);
            if (p == NULL)
                return 0;
            p++;
        } else if (*p == '{' || *p == '[') {
            p = skip(p + 1, pe);
            if (p == NULL)
                return 0;
        } else {
            while (p < pe && *p != ',' && *p != '}' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
                p++;
        }
    next:
        p = skip_ws(p, pe);
        if (p >= pe)
            return 0;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == '}') {
            p++;
            break;
        }
        return 0;
    }
done:
    if (skip_ws(p, pe) != pe)
        return 0;
    if (!f[F_TYPE].present || !f[F_ID].present || !f[F_PARENT].present)
        return 0;
    if (f[F_TYPE].n == 7 && memcmp(f[F_TYPE].p, "session", 7) == 0)
        return 0;
    return 1;
}

/* The best skipper this processor runs: set once by skim_setup(). */
static skip_fn skip_best = skip_nested_scalar;

static void skim_setup(void)
{
#if defined(SKIP_SIMD)
    skip_best = skip_nested_sse2;
#if defined(SKIP_AVX2)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        skip_best = skip_nested_avx2;
#endif
#endif
}

static int skim(const char *p, const char *pe, Field f[3]) { return skim_with(p, pe, f, skip_best); }

#endif /* KURAHI_NATIVE_JSON_H */
