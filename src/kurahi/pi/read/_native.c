/*
 * kurahi.pi.read._native: the line scanner of kurahi.pi.read.scan, in C (optional).
 *
 * Opening a transcript means reading the id, parentId and type of every line (Pi's rule
 * that a parent id means the *last* line with that id needs all of them), and deciding
 * for every line whether JSON.parse would accept it (Pi drops the lines it refuses). In
 * Python that decode is most of the cost of opening a large file; here it is a single
 * pass at memory speed, on two threads for large files.
 *
 * The scanner is deliberately narrow. A line is "plain" when it is one JSON object that
 * JSON.parse accepts (RFC 8259 grammar; bytes that are not valid UTF-8 are fine inside
 * strings because Node reads them as U+FFFD; lone surrogate escapes are fine) whose
 * top-level "type", "id" and "parentId" each occur once, hold printable ASCII strings
 * without escapes (parentId may be null), and whose type is not "session". Every other
 * line (a header, a blank or damaged line, an escaped or non-string id, a duplicate
 * top-level key we read, deep nesting) is *flagged*, and kurahi.pi.read.native hands it to
 * the careful Python path, which knows every rule. Being wrong in the direction of
 * flagging costs only time; being wrong the other way would change what a file means,
 * so when in doubt this code flags.
 *
 * scan(source, start, end, max_line, threads, skim=False) -> (table, runs, lines) or None
 *   skim:    read each line with skim() (_native_json.h): the top level only, so a line counts
 *            as plain without being checked as JSON.parse would; Table.verify(rows, fd) then
 *            checks the rows that matter (kurahi.pi.read.quick).
 *   source:  a file descriptor (read with pread) or a bytes-like object.
 *   table:   a Table of the plain lines in file order: row(k) -> (type, id, parent), and
 *            get(id) -> the position of the last plain line with that id (Pi's byId),
 *            span(k) -> where line k lies in the file, and stored(rows, fd) -> Stored
 *            references to the rows' message values that JSON output may copy as they are
 *            (see classify in _native_json.h).
 *   runs:    (offset, nbytes, nlines, flagged) in file order: a run of plain lines
 *            (nbytes counts their newlines) or one flagged line (nbytes without newline).
 *   lines:   how many lines there were.
 *   None:    a line is longer than max_line; the caller scans in Python.
 *
 * join_json(items, prefix, suffix, fd=-1): JSON output made of Stored references (copied
 *   from the file) and bytes, returned or written to a descriptor.
 *
 * canonical_sha256(items) -> the hex SHA-256 of json.dumps(values, ensure_ascii=False, sort_keys=True,
 *   separators=(",", ":")) in UTF-8 (surrogatepass), where an item is a Python value, or JSON text
 *   (a Stored reference, read from its file, or a bytes-like object) standing for json.loads of it;
 *   None when one of them is not taken (see _native_canon.h): the caller hashes in Python.
 * canonical_json(value, text=False) -> those bytes for one item, or None (for tests).
 *
 * Also SHA-256 (_native_sha256.h), for stitch reports, without the GIL:
 *   sha256_split(data, portable=False) -> the hex digest of each piece of data.split(b"\n")
 *   sha256_fd(fd, size, portable=False) -> the hex digest of the first size bytes of fd
 *   sha256_accelerated() -> whether the processor's SHA instructions are used
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "_native_json.h"
#include "_native_sha256.h"
#include "_native_canon.h"
#include "_native_estimate.h"

#define READ_BYTES (1u << 20)       /* pread size; a line longer than the buffer grows it */
#define MAX_BUFFERED (16u << 20)    /* longer lines are flagged unread and read by Python */
#define RUN_BYTES (64u * 1024u)     /* plain lines per run: the unit Transcript.raw_line reads */

typedef struct {
    uint64_t off;     /* byte offset of the line */
    uint64_t len;     /* its bytes, newline excluded */
    uint64_t arena;   /* where its type, id and parent bytes start in the arena */
    uint32_t tlen;
    uint32_t ilen;
    int32_t plen;     /* -1: parentId is null */
    Span msg;         /* the message value, when it may be copied as stored */
    uint8_t flagged;
    uint8_t newline;  /* the line ends with a newline (all but possibly the last) */
} Rec;

/* A plain line in the table (see below). A segment's Recs become its Ents in place, once it
 * is read: an Ent is no larger than a Rec. */
typedef struct {
    const char *fields; /* type bytes, then id bytes, then parent bytes, in its segment's arena */
    uint32_t tlen;
    uint32_t ilen;
    int32_t plen;   /* -1: null */
    uint32_t mlen;  /* the message value's length, 0 when it is not to be copied as stored */
    uint64_t moff;  /* and its file offset */
    uint64_t loff;  /* the line's file offset */
    uint64_t llen;  /* and its length, newline excluded */
} Ent;

typedef char ent_fits_in_rec[sizeof(Ent) <= sizeof(Rec) ? 1 : -1];

/* The ids of one segment's Ents, which start at table position lo: slots hold
 * (hash >> 32) << 32 | (position in the segment + 1), 0 is empty. */
typedef struct {
    uint64_t *slots;
    uint64_t mask;
    const Ent *ents;
    Py_ssize_t lo, n;
} Part;


/* What kurahi.pi.read.native reads of every line, in file order: a run of plain lines (nbytes
 * with their newlines) or one flagged line (nbytes without its newline). */
typedef struct {
    uint64_t off, nbytes;
    Py_ssize_t nlines;
    int flagged;
} Run;

typedef struct {
    int fd;                 /* -1 when scanning memory */
    const char *mem;
    uint64_t start, end;    /* line-aligned range */
    uint64_t max_line;
    Rec *recs;
    size_t nrecs, caprecs;
    char *arena;
    size_t narena, caparena;
    int err;                /* errno of a failed read, or ENOMEM */
    int too_long;           /* a line is longer than max_line */
    int skim;               /* read lines with skim() instead of classify() */
    Ent *ents;              /* once read: the plain lines, in the memory of recs */
    size_t nents;
    Run *runs;
    size_t nruns, capruns;
    Part part;              /* the index of ents (slots NULL until built) */
} Seg;

/* -- one thread's share of the file --------------------------------------------------- */

static int grow(void **ptr, size_t *cap, size_t need, size_t item)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 1024;
    while (ncap < need)
        ncap *= 2;
    void *np = realloc(*ptr, ncap * item);
    if (np == NULL)
        return -1;
    *ptr = np;
    *cap = ncap;
    return 0;
}

static int add_line(Seg *s, const char *p, uint64_t off, uint64_t len, int newline, int readable)
{
    if (grow((void **)&s->recs, &s->caprecs, s->nrecs + 1, sizeof(Rec)) < 0)
        return -1;
    Rec *r = &s->recs[s->nrecs++];
    Field f[3];
    r->msg.off = r->msg.len = 0;
    r->off = off;
    r->len = len;
    r->newline = (uint8_t)newline;
    r->flagged = 1;
    if (!readable || !(s->skim ? skim(p, p + len, f) : classify(p, p + len, f, &r->msg)))
        return 0;
    size_t need = f[F_TYPE].n + f[F_ID].n + f[F_PARENT].n;
    if (grow((void **)&s->arena, &s->caparena, s->narena + need, 1) < 0)
        return -1;
    r->arena = s->narena;
    memcpy(s->arena + s->narena, f[F_TYPE].p, f[F_TYPE].n);
    s->narena += f[F_TYPE].n;
    memcpy(s->arena + s->narena, f[F_ID].p, f[F_ID].n);
    s->narena += f[F_ID].n;
    r->tlen = (uint32_t)f[F_TYPE].n;
    r->ilen = (uint32_t)f[F_ID].n;
    if (f[F_PARENT].null) {
        r->plen = -1;
    } else {
        memcpy(s->arena + s->narena, f[F_PARENT].p, f[F_PARENT].n);
        s->narena += f[F_PARENT].n;
        r->plen = (int32_t)f[F_PARENT].n;
    }
    r->flagged = 0;
    return 0;
}

/* Whole lines of [data, data + n) that start at file offset base; returns bytes consumed. */
static size_t take_lines(Seg *s, const char *data, size_t n, uint64_t base, int at_end)
{
    size_t pos = 0;
    while (pos < n) {
        const char *nl = memchr(data + pos, '\n', n - pos);
        size_t len;
        if (nl == NULL) {
            if (!at_end)
                break;
            len = n - pos;
        } else {
            len = (size_t)(nl - (data + pos));
        }
        if (len > s->max_line) {
            s->too_long = 1;
            return n;
        }
        if (add_line(s, data + pos, base + pos, len, nl != NULL, 1) < 0) {
            s->err = ENOMEM;
            return n;
        }
        pos += len + (nl != NULL);
    }
    return pos;
}

static int read_full(int fd, char *dst, size_t n, uint64_t off, size_t *got)
{
    *got = 0;
    while (*got < n) {
        ssize_t r = pread(fd, dst + *got, n - *got, (off_t)(off + *got));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (r == 0)
            break; /* the file got shorter: scan what is there */
        *got += (size_t)r;
    }
    return 0;
}

/* A line too long to buffer: find where it ends without keeping it (Python reads it). */
static void skip_long_line(Seg *s, char *buf, size_t cap, uint64_t off, uint64_t *next)
{
    uint64_t pos = off;
    while (pos < s->end) {
        size_t want = (size_t)((s->end - pos) < cap ? (s->end - pos) : cap), got;
        int e = read_full(s->fd, buf, want, pos, &got);
        if (e) {
            s->err = e;
            return;
        }
        if (got == 0)
            break;
        const char *nl = memchr(buf, '\n', got);
        if (nl != NULL) {
            pos += (uint64_t)(nl - buf);
            if (pos - off > s->max_line) {
                s->too_long = 1;
                return;
            }
            if (add_line(s, NULL, off, pos - off, 1, 0) < 0)
                s->err = ENOMEM;
            *next = pos + 1;
            return;
        }
        pos += got;
    }
    if (pos - off > s->max_line) {
        s->too_long = 1;
        return;
    }
    if (add_line(s, NULL, off, pos - off, 0, 0) < 0)
        s->err = ENOMEM;
    *next = s->end;
}

/* -- the id index: one hash table per segment, built on the segment's thread ------------- */

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n, w;
    while (n >= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    return h;
}

static inline const char *ent_id(const Ent *e) { return e->fields + e->tlen; }

/* Position in q of its last Ent whose id is p[0:n] (h its hash), or -1. With insert set,
 * position `insert` becomes the answer for that id (a later line replaces an earlier one). */
static Py_ssize_t probe_part(Part *q, const char *p, size_t n, Py_ssize_t insert, uint64_t h)
{
    uint64_t tag = h >> 32;
    for (uint64_t i = h & q->mask;; i = (i + 1) & q->mask) {
        uint64_t slot = q->slots[i];
        if (slot == 0) {
            if (insert >= 0)
                q->slots[i] = (tag << 32) | (uint64_t)(insert + 1);
            return -1;
        }
        if ((slot >> 32) == tag) {
            Py_ssize_t pos = (Py_ssize_t)(slot & 0xffffffffu) - 1;
            const Ent *e = &q->ents[pos];
            if (e->ilen == n && memcmp(ent_id(e), p, n) == 0) {
                if (insert >= 0)
                    q->slots[i] = (tag << 32) | (uint64_t)(insert + 1);
                return pos;
            }
        }
    }
}

#define PREFETCH_AHEAD 16 /* entries whose slots are fetched while earlier ones are inserted */

/* Fill q (slots allocated here) with its n Ents; -1 when out of memory. */
static int fill_part(Part *q, const Ent *ents, Py_ssize_t n)
{
    uint64_t cap = 16;
    while (cap < (uint64_t)n * 2)
        cap *= 2;
    q->slots = calloc(cap, sizeof(uint64_t));
    if (q->slots == NULL)
        return -1;
    q->mask = cap - 1;
    q->ents = ents;
    q->n = n;
    /* The slots are spread over megabytes: each insert would wait for memory. Hash a few
     * entries ahead and ask for their slots early, so the waits overlap. */
    uint64_t ahead[PREFETCH_AHEAD];
    for (Py_ssize_t k = 0; k < n && k < PREFETCH_AHEAD; k++) {
        ahead[k] = hash_bytes(ent_id(&ents[k]), ents[k].ilen);
#if defined(__GNUC__) || defined(__clang__)
        __builtin_prefetch(&q->slots[ahead[k] & q->mask], 1);
#endif
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        uint64_t h = ahead[k % PREFETCH_AHEAD];
        Py_ssize_t next = k + PREFETCH_AHEAD;
        if (next < n) {
            uint64_t hn = hash_bytes(ent_id(&ents[next]), ents[next].ilen);
            ahead[next % PREFETCH_AHEAD] = hn;
#if defined(__GNUC__) || defined(__clang__)
            __builtin_prefetch(&q->slots[hn & q->mask], 1);
#endif
        }
        probe_part(q, ent_id(&ents[k]), ents[k].ilen, k, h);
    }
    return 0;
}

static int push_run(Seg *s, uint64_t off, uint64_t nbytes, Py_ssize_t nlines, int flagged)
{
    if (grow((void **)&s->runs, &s->capruns, s->nruns + 1, sizeof(Run)) < 0)
        return -1;
    Run *r = &s->runs[s->nruns++];
    r->off = off;
    r->nbytes = nbytes;
    r->nlines = nlines;
    r->flagged = flagged;
    return 0;
}

/* Once a segment is read (on its own thread): its plain lines become Ents in place, in the
 * memory of its Recs, and every line is described by runs of at most RUN_BYTES. The table
 * then takes the segments as they are: no copy, no fresh memory to fault in. */
static void settle_segment(Seg *s)
{
    Ent *ents = (Ent *)(void *)s->recs;
    size_t m = 0;
    uint64_t run_off = 0, run_end = 0;
    Py_ssize_t run_lines = 0;
    for (size_t k = 0; k < s->nrecs; k++) {
        /* Both copies go through memcpy: ents[m] (m <= k) shares memory with recs[k], and a
         * byte copy is never reordered against the other type's accesses. */
        Rec r;
        memcpy(&r, &s->recs[k], sizeof r);
        if (r.flagged) {
            if ((run_lines && push_run(s, run_off, run_end - run_off, run_lines, 0) < 0) ||
                push_run(s, r.off, r.len, 1, 1) < 0) {
                s->err = ENOMEM;
                return;
            }
            run_lines = 0;
            continue;
        }
        Ent e;
        e.fields = s->arena + r.arena;
        e.tlen = r.tlen;
        e.ilen = r.ilen;
        e.plen = r.plen;
        e.mlen = r.msg.len;
        e.moff = r.off + r.msg.off;
        e.loff = r.off;
        e.llen = r.len;
        memcpy(&ents[m++], &e, sizeof e);
        if (run_lines == 0)
            run_off = r.off;
        run_end = r.off + r.len + r.newline;
        run_lines++;
        if (run_end - run_off >= RUN_BYTES) {
            if (push_run(s, run_off, run_end - run_off, run_lines, 0) < 0) {
                s->err = ENOMEM;
                return;
            }
            run_lines = 0;
        }
    }
    if (run_lines && push_run(s, run_off, run_end - run_off, run_lines, 0) < 0) {
        s->err = ENOMEM;
        return;
    }
    s->ents = ents;
    s->nents = m;
}

static void read_segment(Seg *s);

static void *scan_segment(void *arg)
{
    Seg *s = (Seg *)arg;
    read_segment(s);
    if (!s->err && !s->too_long)
        settle_segment(s);
    if (!s->err && !s->too_long && fill_part(&s->part, s->ents, (Py_ssize_t)s->nents) < 0)
        s->err = ENOMEM;
    return NULL;
}

static void read_segment(Seg *s)
{
    if (s->fd < 0) {
        take_lines(s, s->mem + s->start, (size_t)(s->end - s->start), s->start, 1);
        return;
    }
    size_t cap = READ_BYTES;
    char *buf = malloc(cap);
    if (buf == NULL) {
        s->err = ENOMEM;
        return;
    }
    uint64_t pos = s->start; /* file offset of buf[0] */
    size_t have = 0;
    uint64_t read_at = s->start;
    while (!s->err && !s->too_long) {
        size_t want = cap - have, got;
        if ((uint64_t)want > s->end - read_at)
            want = (size_t)(s->end - read_at);
        int e = read_full(s->fd, buf + have, want, read_at, &got);
        if (e) {
            s->err = e;
            break;
        }
        read_at += got;
        have += got;
        int at_end = read_at >= s->end || got < want;
        size_t used = take_lines(s, buf, have, pos, at_end);
        if (at_end || s->err || s->too_long)
            break;
        memmove(buf, buf + used, have - used);
        have -= used;
        pos += used;
        if (have == cap) { /* one line fills the buffer */
            if (cap < MAX_BUFFERED) {
                char *nb = realloc(buf, cap * 2);
                if (nb == NULL) {
                    s->err = ENOMEM;
                    break;
                }
                buf = nb;
                cap *= 2;
            } else {
                uint64_t next = s->end;
                skip_long_line(s, buf, cap, pos, &next);
                pos = read_at = next;
                have = 0;
                if (pos >= s->end)
                    break;
            }
        }
    }
    free(buf);
}


/* -- the table: what the plain lines hold, kept compact ---------------------------------- */

/* Python objects for 200k lines cost more than scanning them (every fresh object is fresh
 * memory), so the plain lines stay here as bytes and become str only when asked for: the
 * few hundred entries of a path, or every one for a whole-tree view. */


#define TYPE_CACHE 16
typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    Ent *seg_ents[2];   /* the plain lines of each segment read (see settle_segment) */
    Py_ssize_t seg_n[2];
    char *seg_arena[2]; /* owned: where the Ents' fields point */
    int nsegs;
    Part parts[2];      /* the id index: one hash table per segment (see index_segment) */
    int nparts;
    PyObject *types[TYPE_CACHE]; /* the few entry types, one object each */
    int ntypes;
} Table;

static PyTypeObject TableType;

static inline Ent *ent_at(const Table *t, Py_ssize_t k)
{
    return k < t->seg_n[0] ? &t->seg_ents[0][k] : &t->seg_ents[1][k - t->seg_n[0]];
}


/* Position of the last plain line whose id is p[0:n], or -1: the later segment answers first. */
static Py_ssize_t probe(Table *t, const char *p, size_t n)
{
    uint64_t h = hash_bytes(p, n);
    for (int i = t->nparts - 1; i >= 0; i--) {
        Part *q = &t->parts[i];
        Py_ssize_t pos = probe_part(q, p, n, -1, h);
        if (pos >= 0)
            return q->lo + pos;
    }
    return -1;
}

static PyObject *type_str(Table *t, const char *p, size_t n)
{
    for (int i = 0; i < t->ntypes; i++) {
        PyObject *c = t->types[i];
        if ((size_t)PyUnicode_GET_LENGTH(c) == n && memcmp(PyUnicode_DATA(c), p, n) == 0) {
            Py_INCREF(c);
            return c;
        }
    }
    PyObject *s = PyUnicode_New((Py_ssize_t)n, 127);
    if (s == NULL)
        return NULL;
    memcpy(PyUnicode_DATA(s), p, n);
    if (t->ntypes < TYPE_CACHE) {
        Py_INCREF(s);
        t->types[t->ntypes++] = s;
    }
    return s;
}

static PyObject *ascii_str(const char *p, size_t n)
{
    PyObject *s = PyUnicode_New((Py_ssize_t)n, 127);
    if (s != NULL)
        memcpy(PyUnicode_DATA(s), p, n);
    return s;
}

/* Column c (0 type, 1 id, 2 parent) of entry k, as a new reference. */
static PyObject *cell(Table *t, Py_ssize_t k, int c)
{
    const Ent *e = ent_at(t, k);
    const char *a = e->fields;
    if (c == 0)
        return type_str(t, a, e->tlen);
    if (c == 1)
        return ascii_str(a + e->tlen, e->ilen);
    if (e->plen < 0)
        Py_RETURN_NONE;
    return ascii_str(a + e->tlen + e->ilen, (size_t)e->plen);
}

static Py_ssize_t table_len(PyObject *self) { return ((Table *)self)->n; }

static PyObject *table_row(PyObject *self, PyObject *arg)
{
    Table *t = (Table *)self;
    Py_ssize_t k = PyNumber_AsSsize_t(arg, PyExc_IndexError);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    if (k < 0 || k >= t->n) {
        PyErr_SetString(PyExc_IndexError, "table index out of range");
        return NULL;
    }
    PyObject *a = cell(t, k, 0), *b = a ? cell(t, k, 1) : NULL, *c = b ? cell(t, k, 2) : NULL;
    if (c == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    return Py_BuildValue("(NNN)", a, b, c);
}

static PyObject *table_get(PyObject *self, PyObject *arg)
{
    Table *t = (Table *)self;
    /* Every id in the table is a string, and a JavaScript Map never matches a string key to
     * anything else: any other value (a number, null, undefined) is simply not there. */
    if (!PyUnicode_Check(arg) || !PyUnicode_IS_ASCII(arg))
        return PyLong_FromLong(-1); /* plain ids are ASCII */
    return PyLong_FromSsize_t(probe(t, PyUnicode_DATA(arg), (size_t)PyUnicode_GET_LENGTH(arg)));
}

/* Positions from entry k up its parent chain (k first), as Transcript._walk follows it:
 * a null or empty parentId, or a parent that is not there, ends the chain. None when the
 * chain loops: the Python walk then names the cycle in its error. */
static PyObject *table_walk(PyObject *self, PyObject *arg)
{
    Table *t = (Table *)self;
    Py_ssize_t k = PyNumber_AsSsize_t(arg, PyExc_IndexError);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    if (k < 0 || k >= t->n) {
        PyErr_SetString(PyExc_IndexError, "table index out of range");
        return NULL;
    }
    unsigned char *seen = calloc((size_t)t->n / 8 + 1, 1);
    PyObject *out = PyList_New(0);
    if (seen == NULL || out == NULL) {
        free(seen);
        Py_XDECREF(out);
        return PyErr_NoMemory();
    }
    for (;;) {
        if (seen[k >> 3] & (1u << (k & 7))) {
            Py_DECREF(out);
            out = Py_None;
            Py_INCREF(out);
            break;
        }
        seen[k >> 3] |= (unsigned char)(1u << (k & 7));
        PyObject *pos = PyLong_FromSsize_t(k);
        if (pos == NULL || PyList_Append(out, pos) < 0) {
            Py_XDECREF(pos);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(pos);
        const Ent *e = ent_at(t, k);
        if (e->plen <= 0)
            break; /* null, or "" (falsy in JavaScript) */
        const char *p = e->fields + e->tlen + e->ilen;
        Py_ssize_t next = probe(t, p, (size_t)e->plen);
        if (next < 0)
            break;
        k = next;
    }
    free(seen);
    return out;
}

static PyObject *column(Table *t, int c)
{
    PyObject *list = PyList_New(t->n);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < t->n; k++) {
        PyObject *v = cell(t, k, c);
        if (v == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, k, v);
    }
    return list;
}

static PyObject *table_types(PyObject *self, PyObject *unused)
{
    (void)unused;
    return column((Table *)self, 0);
}

static PyObject *table_ids(PyObject *self, PyObject *unused)
{
    (void)unused;
    return column((Table *)self, 1);
}

static PyObject *table_parents(PyObject *self, PyObject *unused)
{
    (void)unused;
    return column((Table *)self, 2);
}

static int row_of(Table *t, PyObject *item, Py_ssize_t *k)
{
    *k = PyNumber_AsSsize_t(item, PyExc_IndexError);
    if (*k == -1 && PyErr_Occurred())
        return -1;
    if (*k < 0 || *k >= t->n) {
        PyErr_SetString(PyExc_IndexError, "table index out of range");
        return -1;
    }
    return 0;
}

/* span(k) -> (offset, length) of entry k's line in the file, newline excluded. */
static PyObject *table_span(PyObject *self, PyObject *arg)
{
    Table *t = (Table *)self;
    Py_ssize_t k;
    if (row_of(t, arg, &k) < 0)
        return NULL;
    const Ent *e = ent_at(t, k);
    return Py_BuildValue("(KK)", (unsigned long long)e->loff, (unsigned long long)e->llen);
}

/* -- stored messages: bytes of the file copied into JSON output without being decoded ------ */

/* Printing a live context of 200k messages as JSON means copying ~100 MB of message values
 * that are already the bytes JSON.stringify would write (see classify). Making a Python
 * bytes object of each costs more than the copy itself, so the projection carries a small
 * Stored reference per message (file offset and length), and join_json copies them from the
 * file straight into the output: one read per few MB, no object per message. */

typedef struct {
    PyObject_HEAD
    int fd; /* a duplicate of the transcript's descriptor, closed with the last Stored */
} Source;

typedef struct {
    PyObject_HEAD
    Source *src;
    uint64_t off;
    uint32_t len;
} Stored;

static void source_dealloc(PyObject *self)
{
    Source *s = (Source *)self;
    if (s->fd >= 0)
        close(s->fd);
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject SourceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kurahi.pi.read._native.Source",
    .tp_doc = "A transcript's descriptor kept open for the Stored messages that point into it.",
    .tp_basicsize = sizeof(Source),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = source_dealloc,
};

static void stored_dealloc(PyObject *self)
{
    Py_XDECREF(((Stored *)self)->src);
    Py_TYPE(self)->tp_free(self);
}

/* The stored bytes, read now; OSError when they are no longer all there. */
static int stored_read(const Stored *m, char *dst)
{
    size_t got;
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = read_full(m->src->fd, dst, m->len, m->off, &got);
    Py_END_ALLOW_THREADS
    if (!err && got < m->len)
        err = EIO; /* the file got shorter since it was scanned */
    if (err) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}

static PyObject *stored_bytes(PyObject *self, PyObject *unused)
{
    (void)unused;
    const Stored *m = (const Stored *)self;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)m->len);
    if (out != NULL && stored_read(m, PyBytes_AS_STRING(out)) < 0)
        Py_CLEAR(out);
    return out;
}

static Py_ssize_t stored_len(PyObject *self) { return (Py_ssize_t)((Stored *)self)->len; }

static PyObject *stored_repr(PyObject *self)
{
    const Stored *m = (const Stored *)self;
    return PyUnicode_FromFormat("Stored(offset=%llu, length=%u)", (unsigned long long)m->off, (unsigned)m->len);
}

static PyMethodDef stored_methods[] = {
    {"__bytes__", stored_bytes, METH_NOARGS, "The stored bytes, read from the file now."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods stored_as_sequence = {.sq_length = stored_len};

static PyTypeObject StoredType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kurahi.pi.read._native.Stored",
    .tp_doc = "A message value stored in a transcript, fit to copy into JSON output as it is.",
    .tp_basicsize = sizeof(Stored),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = stored_dealloc,
    .tp_repr = stored_repr,
    .tp_methods = stored_methods,
    .tp_as_sequence = &stored_as_sequence,
};

/* -- entry objects for a path, made here ----------------------------------------------------
 *
 * A 200k-entry path as Python objects cost 0.3 s when Python set each attribute; here an
 * object costs an allocation and six stores. The objects are instances of the Python class
 * kurahi.pi.transcript.Entry, whose __slots__ are written through the offsets of their
 * member descriptors (checked to be writable object slots first, so a changed class gives
 * a TypeError, never a bad store). */

static const char *const ENTRY_SLOTS[] = {"_t", "index", "type", "id", "parent_id", "raw_message"};
#define N_ENTRY_SLOTS 6

static int slot_offsets(PyTypeObject *cls, Py_ssize_t off[N_ENTRY_SLOTS])
{
    for (int i = 0; i < N_ENTRY_SLOTS; i++) {
        PyObject *d = PyObject_GetAttrString((PyObject *)cls, ENTRY_SLOTS[i]);
        if (d == NULL)
            PyErr_Clear();
        int ok = d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type) &&
                 ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX &&
                 !(((PyMemberDescrObject *)d)->d_member->flags & READONLY) &&
                 PyType_IsSubtype(cls, PyDescr_TYPE(d));
        if (ok)
            off[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_XDECREF(d);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a writable object slot", cls->tp_name, ENTRY_SLOTS[i]);
            return -1;
        }
    }
    return 0;
}

static PyObject *new_stored(Source **src, int fd, const Ent *e)
{
    if (*src == NULL) {
        *src = PyObject_New(Source, &SourceType);
        if (*src == NULL)
            return NULL;
        (*src)->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if ((*src)->fd < 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            Py_CLEAR(*src);
            return NULL;
        }
    }
    Stored *m = PyObject_New(Stored, &StoredType);
    if (m == NULL)
        return NULL;
    Py_INCREF(*src);
    m->src = *src;
    m->off = e->moff;
    m->len = e->mlen;
    return (PyObject *)m;
}

/* entries(cls, rows, owner, fd) -> [cls instance per row] with _t = owner, index = the row,
 * type, id and parent_id from the table, and raw_message a Stored reference (fd >= 0, and
 * the row's message may be copied as stored) or None. */
static PyObject *table_entries(PyObject *self, PyObject *args)
{
    Table *t = (Table *)self;
    PyTypeObject *cls;
    PyObject *rows, *owner;
    int fd;
    if (!PyArg_ParseTuple(args, "O!OOi", &PyType_Type, &cls, &rows, &owner, &fd))
        return NULL;
    Py_ssize_t off[N_ENTRY_SLOTS];
    if (slot_offsets(cls, off) < 0)
        return NULL;
    PyObject *seq = PySequence_Fast(rows, "rows must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Source *src = NULL;
    /* No collection while the objects are made: each of the collections that so many new
     * objects would set off walks every object made so far, and none of them is garbage. */
    int gc_was_on = PyGC_Disable();
    PyObject *out = PyList_New(n);
    if (out == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t k;
        if (row_of(t, items[i], &k) < 0)
            goto fail;
        const Ent *e = ent_at(t, k);
        PyObject *v[N_ENTRY_SLOTS];
        v[0] = owner;
        Py_INCREF(owner);
        v[1] = PyLong_FromSsize_t(k); /* an int, whatever integer-like object the caller passed */
        v[2] = v[1] ? cell(t, k, 0) : NULL;
        v[3] = v[2] ? cell(t, k, 1) : NULL;
        v[4] = v[3] ? cell(t, k, 2) : NULL;
        if (v[4] != NULL && fd >= 0 && e->mlen != 0) {
            v[5] = new_stored(&src, fd, e);
        } else {
            v[5] = Py_None;
            Py_INCREF(Py_None);
        }
        PyObject *obj = v[4] && v[5] ? cls->tp_alloc(cls, 0) : NULL;
        if (obj == NULL) {
            for (int j = 0; j < N_ENTRY_SLOTS; j++)
                Py_XDECREF(v[j]);
            goto fail;
        }
        for (int j = 0; j < N_ENTRY_SLOTS; j++)
            *(PyObject **)((char *)obj + off[j]) = v[j];
        PyList_SET_ITEM(out, i, obj);
    }
    if (gc_was_on)
        PyGC_Enable();
    Py_XDECREF(src);
    Py_DECREF(seq);
    return out;
fail:
    if (gc_was_on)
        PyGC_Enable();
    Py_XDECREF(src);
    Py_XDECREF(out);
    Py_DECREF(seq);
    return NULL;
}

/* -- a path, kept in C ----------------------------------------------------------------------
 *
 * Table.path(k) walks from entry k up its parents as walk() does, but keeps the rows here: a
 * path of 200k entries as a list of Python ints cost more than the walk. A projection asks it
 * what it needs (which types are on it, where the nearest of a type is) and, for a context
 * printed as JSON, the messages root first (Path.items): Stored references for the stored
 * messages that may be copied as they are, and the row of each other entry that contributes,
 * for Python to read. */

typedef struct {
    PyObject_HEAD
    PyObject *table; /* the Table the rows are in */
    Py_ssize_t *rows; /* leaf first */
    Py_ssize_t n;
    int cut; /* the walk stopped at a parent id no line has (not at a null or empty one) */
} Path;

static PyTypeObject PathType;

static void path_dealloc(PyObject *self)
{
    Path *p = (Path *)self;
    free(p->rows);
    Py_XDECREF(p->table);
    Py_TYPE(self)->tp_free(self);
}

static Py_ssize_t path_len(PyObject *self) { return ((Path *)self)->n; }

static inline int ent_type_is(const Ent *e, const char *t, size_t n)
{
    return e->tlen == n && memcmp(e->fields, t, n) == 0;
}

static Py_ssize_t probe_hashed(Table *t, const char *p, size_t n, uint64_t h)
{
    for (int i = t->nparts - 1; i >= 0; i--) {
        Part *q = &t->parts[i];
        Py_ssize_t pos = probe_part(q, p, n, -1, h);
        if (pos >= 0)
            return q->lo + pos;
    }
    return -1;
}

static inline const char *ent_parent(const Ent *e) { return e->fields + e->tlen + e->ilen; }

/* The walk of table_walk into rows (leaf first). With guess, a parent that is the entry just
 * before is taken without a lookup and marked in guessed (a bitmap of link positions): Pi's
 * writer appends each entry after its parent, so on a long path nearly every link is such, and
 * the lookups that check them (can a later line have that id?) then run side by side, their
 * memory fetched ahead, instead of one after another. -1 when out of memory. */
static int walk_rows(Table *t, Py_ssize_t k, int guess, Py_ssize_t **rows_out, Py_ssize_t *n_out, int *cut,
                     int *loop, unsigned char **guessed_out)
{
    unsigned char *seen = calloc((size_t)t->n / 8 + 1, 1);
    size_t cap = 1024;
    Py_ssize_t *rows = malloc(cap * sizeof(Py_ssize_t));
    unsigned char *guessed = guess ? calloc(cap / 8, 1) : NULL;
    if (seen == NULL || rows == NULL || (guess && guessed == NULL))
        goto oom;
    Py_ssize_t n = 0;
    *cut = *loop = 0;
    for (;;) {
        if (seen[k >> 3] & (1u << (k & 7))) {
            *loop = 1;
            break;
        }
        seen[k >> 3] |= (unsigned char)(1u << (k & 7));
        if ((size_t)n == cap) {
            Py_ssize_t *nr = realloc(rows, 2 * cap * sizeof(Py_ssize_t));
            if (nr == NULL)
                goto oom;
            rows = nr;
            if (guess) {
                unsigned char *ng = realloc(guessed, 2 * cap / 8);
                if (ng == NULL)
                    goto oom;
                memset(ng + cap / 8, 0, cap / 8);
                guessed = ng;
            }
            cap *= 2;
        }
        rows[n++] = k;
        const Ent *e = ent_at(t, k);
        if (e->plen <= 0)
            break; /* null, or "" (falsy in JavaScript) */
        if (guess && k > 0) {
            const Ent *prev = ent_at(t, k - 1);
            if (prev->ilen == (uint32_t)e->plen && memcmp(ent_id(prev), ent_parent(e), prev->ilen) == 0) {
                guessed[(n - 1) >> 3] |= (unsigned char)(1u << ((n - 1) & 7));
                k = k - 1;
                continue;
            }
        }
        Py_ssize_t next = probe(t, ent_parent(e), (size_t)e->plen);
        if (next < 0) {
            *cut = 1;
            break;
        }
        k = next;
    }
    free(seen);
    *rows_out = rows;
    *n_out = n;
    *guessed_out = guessed;
    return 0;
oom:
    free(seen);
    free(rows);
    free(guessed);
    PyErr_NoMemory();
    return -1;
}

/* Whether every guessed link of rows is what a lookup gives (the entry before is the last line
 * with that id), the lookups a batch at a time with their slots fetched ahead. */
static int guesses_hold(Table *t, const Py_ssize_t *rows, Py_ssize_t n, const unsigned char *guessed)
{
    enum { AHEAD = 16 };
    Py_ssize_t links[AHEAD];
    uint64_t hashes[AHEAD];
    Py_ssize_t i = 0;
    while (i < n) {
        int m = 0;
        for (; i < n && m < AHEAD; i++) {
            if (!(guessed[i >> 3] & (1u << (i & 7))))
                continue;
            const Ent *e = ent_at(t, rows[i]);
            uint64_t h = hash_bytes(ent_parent(e), (size_t)e->plen);
            for (int j = 0; j < t->nparts; j++)
                __builtin_prefetch(&t->parts[j].slots[h & t->parts[j].mask]);
            links[m] = i;
            hashes[m++] = h;
        }
        for (int j = 0; j < m; j++) {
            const Ent *e = ent_at(t, rows[links[j]]);
            if (probe_hashed(t, ent_parent(e), (size_t)e->plen, hashes[j]) != rows[links[j] + 1])
                return 0;
        }
    }
    return 1;
}

/* path(k) -> a Path from k up its parents (k first), None when the chain loops. */
static PyObject *table_path(PyObject *self, PyObject *arg)
{
    Table *t = (Table *)self;
    Py_ssize_t k;
    if (row_of(t, arg, &k) < 0)
        return NULL;
    Py_ssize_t *rows, n;
    int cut, loop;
    unsigned char *guessed;
    if (walk_rows(t, k, 1, &rows, &n, &cut, &loop, &guessed) < 0)
        return NULL;
    if (!loop && !guesses_hold(t, rows, n, guessed)) {
        /* A later line has the id of an entry the guess took (or a guess hid a loop): walk again,
         * every link looked up. */
        free(rows);
        free(guessed);
        if (walk_rows(t, k, 0, &rows, &n, &cut, &loop, &guessed) < 0)
            return NULL;
    }
    free(guessed);
    if (loop) {
        free(rows);
        Py_RETURN_NONE;
    }
    Path *p = PyObject_New(Path, &PathType);
    if (p == NULL) {
        free(rows);
        return NULL;
    }
    Py_INCREF(self);
    p->table = self;
    p->rows = rows;
    p->n = n;
    p->cut = cut;
    return (PyObject *)p;
}

static PyObject *path_rows(PyObject *self, PyObject *unused)
{
    (void)unused;
    Path *p = (Path *)self;
    PyObject *out = PyList_New(p->n);
    for (Py_ssize_t i = 0; out != NULL && i < p->n; i++) {
        PyObject *v = PyLong_FromSsize_t(p->rows[i]);
        if (v == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, v);
    }
    return out;
}

static PyObject *path_counts(PyObject *self, PyObject *unused)
{
    (void)unused;
    Path *p = (Path *)self;
    Table *t = (Table *)p->table;
    enum { MAXK = 64 };
    const Ent *kinds[MAXK];
    Py_ssize_t counts[MAXK];
    int nk = 0;
    PyObject *out = PyDict_New();
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < p->n; i++) {
        const Ent *e = ent_at(t, p->rows[i]);
        int j = 0;
        while (j < nk && !ent_type_is(kinds[j], e->fields, e->tlen))
            j++;
        if (j == nk) {
            if (nk == MAXK) { /* many types: count the rest in Python's dict directly */
                PyObject *key = type_str(t, e->fields, e->tlen), *old = NULL, *val = NULL;
                if (key != NULL) {
                    old = PyDict_GetItemWithError(out, key);
                    if (old != NULL || !PyErr_Occurred())
                        val = PyLong_FromSsize_t(old != NULL ? PyLong_AsSsize_t(old) + 1 : 1);
                }
                if (val == NULL || PyDict_SetItem(out, key, val) < 0) {
                    Py_XDECREF(key);
                    Py_XDECREF(val);
                    Py_DECREF(out);
                    return NULL;
                }
                Py_DECREF(key);
                Py_DECREF(val);
                continue;
            }
            kinds[nk] = e;
            counts[nk++] = 0;
        }
        counts[j]++;
    }
    for (int j = 0; j < nk; j++) {
        PyObject *key = type_str(t, kinds[j]->fields, kinds[j]->tlen), *old = NULL, *val = NULL;
        if (key != NULL) {
            old = PyDict_GetItemWithError(out, key);
            if (old != NULL || !PyErr_Occurred())
                val = PyLong_FromSsize_t(counts[j] + (old != NULL ? PyLong_AsSsize_t(old) : 0));
        }
        if (val == NULL || PyDict_SetItem(out, key, val) < 0) {
            Py_XDECREF(key);
            Py_XDECREF(val);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(key);
        Py_DECREF(val);
    }
    return out;
}

/* find(type, start) -> (position, row) of the first entry from position start on (0 is the leaf)
 * whose type is `type`, or None. */
static PyObject *path_find(PyObject *self, PyObject *args)
{
    Path *p = (Path *)self;
    Table *t = (Table *)p->table;
    const char *type;
    Py_ssize_t tn, start;
    if (!PyArg_ParseTuple(args, "s#n", &type, &tn, &start))
        return NULL;
    for (Py_ssize_t i = start < 0 ? 0 : start; i < p->n; i++) {
        if (ent_type_is(ent_at(t, p->rows[i]), type, (size_t)tn))
            return Py_BuildValue("(nn)", i, p->rows[i]);
    }
    Py_RETURN_NONE;
}

static PyObject *path_cut(PyObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(((Path *)self)->cut);
}

static inline int contributes(const Ent *e, int *stored)
{
    *stored = 0;
    if (ent_type_is(e, "message", 7)) {
        *stored = e->mlen != 0;
        return 1;
    }
    return ent_type_is(e, "custom_message", 14) || ent_type_is(e, "branch_summary", 14);
}

/* hole_rows() -> root first, the row of each entry that contributes to a context printed as JSON
 * (when the path holds no compaction and no context_edit) and whose message is not a stored one
 * that may be copied as it is: every other message, custom_message and branch_summary entry. */
static PyObject *path_hole_rows(PyObject *self, PyObject *unused)
{
    (void)unused;
    Path *p = (Path *)self;
    Table *t = (Table *)p->table;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = p->n - 1; out != NULL && i >= 0; i--) {
        int stored;
        if (!contributes(ent_at(t, p->rows[i]), &stored) || stored)
            continue;
        PyObject *v = PyLong_FromSsize_t(p->rows[i]);
        if (v == NULL || PyList_Append(out, v) < 0)
            Py_CLEAR(out);
        Py_XDECREF(v);
    }
    return out;
}

/* messages(fd, values, skip) -> root first, each contributing entry's message: a Stored reference
 * where the stored bytes may be copied, else the next of values (in hole_rows' order), left out
 * where that value is skip (an entry Pi skips). */
static PyObject *path_messages(PyObject *self, PyObject *args)
{
    Path *p = (Path *)self;
    Table *t = (Table *)p->table;
    int fd;
    PyObject *values, *skip;
    if (!PyArg_ParseTuple(args, "iO!O", &fd, &PyList_Type, &values, &skip))
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Source *src = NULL;
    Py_ssize_t next = 0, nvalues = PyList_GET_SIZE(values);
    for (Py_ssize_t i = p->n - 1; i >= 0; i--) {
        const Ent *e = ent_at(t, p->rows[i]);
        int stored;
        if (!contributes(e, &stored))
            continue;
        PyObject *v;
        if (stored) {
            v = new_stored(&src, fd, e);
        } else if (next < nvalues) {
            v = PyList_GET_ITEM(values, next++);
            if (v == skip)
                continue;
            Py_INCREF(v);
        } else {
            PyErr_SetString(PyExc_ValueError, "messages: fewer values than hole_rows");
            goto fail;
        }
        if (v == NULL || PyList_Append(out, v) < 0) {
            Py_XDECREF(v);
            goto fail;
        }
        Py_DECREF(v);
    }
    if (next != nvalues) {
        PyErr_SetString(PyExc_ValueError, "messages: more values than hole_rows");
        goto fail;
    }
    Py_XDECREF(src);
    return out;
fail:
    Py_XDECREF(src);
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef path_methods[] = {
    {"rows", path_rows, METH_NOARGS, "rows() -> the rows, leaf first (what Table.walk gives)"},
    {"counts", path_counts, METH_NOARGS, "counts() -> {type: entries of that type on the path}"},
    {"find", path_find, METH_VARARGS, "find(type, start) -> (position, row) of the first such entry from start (0: the leaf), or None"},
    {"cut", path_cut, METH_NOARGS, "cut() -> whether the walk stopped at a parent id no line has"},
    {"hole_rows", path_hole_rows, METH_NOARGS,
     "hole_rows() -> root first, the rows of the contributing entries whose message is not copied as stored"},
    {"messages", path_messages, METH_VARARGS,
     "messages(fd, values, skip) -> root first: a Stored per copyable message, values for the hole_rows"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods path_as_sequence = {.sq_length = path_len};

static PyTypeObject PathType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kurahi.pi.read._native.Path",
    .tp_doc = "A path of a Table's entries, from an entry up its parents, kept in C.",
    .tp_basicsize = sizeof(Path),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = path_dealloc,
    .tp_methods = path_methods,
    .tp_as_sequence = &path_as_sequence,
};

/* stored(rows, fd) -> per row a Stored reference to its message value when it may be copied
 * into JSON output as stored (see classify), else None. fd is duplicated once: the Stored
 * objects keep the file readable after the caller closes its descriptor. */
static PyObject *table_stored(PyObject *self, PyObject *args)
{
    Table *t = (Table *)self;
    PyObject *rows;
    int fd;
    if (!PyArg_ParseTuple(args, "Oi", &rows, &fd))
        return NULL;
    PyObject *seq = PySequence_Fast(rows, "rows must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Source *src = NULL;
    PyObject *out = PyList_New(n);
    if (out == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t k;
        if (row_of(t, items[i], &k) < 0)
            goto fail;
        const Ent *e = ent_at(t, k);
        PyObject *v = Py_None;
        if (e->mlen != 0) {
            v = new_stored(&src, fd, e);
            if (v == NULL)
                goto fail;
        } else {
            Py_INCREF(v);
        }
        PyList_SET_ITEM(out, i, v);
    }
    Py_XDECREF(src);
    Py_DECREF(seq);
    return out;
fail:
    Py_XDECREF(src);
    Py_XDECREF(out);
    Py_DECREF(seq);
    return NULL;
}

#define WINDOW_BYTES (4u << 20) /* file bytes read at once for the Stored items */
#define SINK_BYTES (1u << 20)   /* output written at once to a descriptor */

typedef struct {
    char *buf;
    size_t len, cap;
    int fd; /* -1: buf is the result, sized exactly */
} Sink;

static int sink_flush(Sink *k)
{
    size_t done = 0;
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    while (done < k->len) {
        ssize_t w = write(k->fd, k->buf + done, k->len - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            err = errno;
            break;
        }
        done += (size_t)w;
    }
    Py_END_ALLOW_THREADS
    k->len = 0;
    if (err) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}

static int sink_put(Sink *k, const char *p, size_t n)
{
    while (n > 0) {
        if (k->len == k->cap && sink_flush(k) < 0)
            return -1;
        size_t take = k->cap - k->len < n ? k->cap - k->len : n;
        memcpy(k->buf + k->len, p, take);
        k->len += take;
        p += take;
        n -= take;
    }
    return 0;
}

typedef struct {
    char *buf;
    const Source *src;
    uint64_t off, len; /* the file bytes buf holds */
} Window;

/* Put a Stored item's bytes into the sink, reading its file a window at a time. */
static int put_stored(Sink *k, Window *w, const Stored *m)
{
    if (m->len > WINDOW_BYTES) { /* one very large message: read it alone */
        char *tmp = malloc(m->len);
        if (tmp == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        int rc = stored_read(m, tmp) < 0 ? -1 : sink_put(k, tmp, m->len);
        free(tmp);
        return rc;
    }
    if (w->src != m->src || m->off < w->off || m->off + m->len > w->off + w->len) {
        size_t got;
        int err;
        Py_BEGIN_ALLOW_THREADS
        err = read_full(m->src->fd, w->buf, WINDOW_BYTES, m->off, &got);
        Py_END_ALLOW_THREADS
        if (err) {
            errno = err;
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        w->src = m->src;
        w->off = m->off;
        w->len = got;
        if (got < m->len) {
            errno = EIO; /* the file got shorter since it was scanned */
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
    }
    return sink_put(k, w->buf + (m->off - w->off), m->len);
}

/* join_json(items, prefix, suffix, fd=-1, encode=None) -> prefix + b",".join(items) + suffix, as
 * bytes, or written to fd (None returned). An item is a Stored reference or a bytes-like object;
 * with encode, any other item is written as encode(item) (bytes). */
static PyObject *native_join_json(PyObject *self, PyObject *args)
{
    PyObject *items_arg, *encode = Py_None, *encoded = NULL;
    Py_buffer prefix, suffix;
    int fd = -1;
    (void)self;
    if (!PyArg_ParseTuple(args, "Oy*y*|iO", &items_arg, &prefix, &suffix, &fd, &encode))
        return NULL;
    PyObject *result = NULL;
    Window w = {NULL, NULL, 0, 0};
    Sink k = {NULL, 0, 0, fd};
    PyObject *seq = PySequence_Fast(items_arg, "items must be a sequence");
    if (seq == NULL)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    if (encode != Py_None) {
        /* The items that are neither Stored nor bytes-like, encoded first: the same list, in which
         * such an item is replaced by encode(item). */
        for (Py_ssize_t i = 0; i < n && encoded == NULL; i++)
            if (Py_TYPE(items[i]) != &StoredType && !PyObject_CheckBuffer(items[i]))
                encoded = PyList_New(n);
        if (encoded != NULL) {
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *v = items[i];
                if (Py_TYPE(v) != &StoredType && !PyObject_CheckBuffer(v)) {
                    v = PyObject_CallOneArg(encode, v);
                    if (v == NULL)
                        goto done;
                } else {
                    Py_INCREF(v);
                }
                PyList_SET_ITEM(encoded, i, v);
            }
            Py_DECREF(seq);
            seq = encoded;
            encoded = NULL;
            items = PySequence_Fast_ITEMS(seq);
        }
    }
    size_t total = (size_t)prefix.len + (size_t)suffix.len + (n > 0 ? (size_t)n - 1 : 0);
    int any_stored = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (Py_TYPE(items[i]) == &StoredType) {
            total += ((Stored *)items[i])->len;
            any_stored = 1;
        } else {
            Py_buffer b;
            if (PyObject_GetBuffer(items[i], &b, PyBUF_SIMPLE) < 0)
                goto done;
            total += (size_t)b.len;
            PyBuffer_Release(&b);
        }
    }
    if (fd < 0) {
        result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
        if (result == NULL)
            goto done;
        k.buf = PyBytes_AS_STRING(result);
        k.cap = total;
    } else {
        k.cap = SINK_BYTES;
        k.buf = malloc(k.cap);
        if (k.buf == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    if (any_stored && (w.buf = malloc(WINDOW_BYTES)) == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    if (sink_put(&k, prefix.buf, (size_t)prefix.len) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i > 0 && sink_put(&k, ",", 1) < 0)
            goto fail;
        if (Py_TYPE(items[i]) == &StoredType) {
            if (put_stored(&k, &w, (const Stored *)items[i]) < 0)
                goto fail;
            continue;
        }
        Py_buffer b;
        if (PyObject_GetBuffer(items[i], &b, PyBUF_SIMPLE) < 0)
            goto fail;
        int rc = sink_put(&k, b.buf, (size_t)b.len);
        PyBuffer_Release(&b);
        if (rc < 0)
            goto fail;
    }
    if (sink_put(&k, suffix.buf, (size_t)suffix.len) < 0)
        goto fail;
    if (fd >= 0) {
        if (sink_flush(&k) < 0)
            goto fail;
        result = Py_None;
        Py_INCREF(result);
    } else if (k.len != total) { /* an item changed size while being joined */
        PyErr_SetString(PyExc_RuntimeError, "join_json: an item changed while being joined");
        goto fail;
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    if (fd >= 0)
        free(k.buf);
    free(w.buf);
    Py_XDECREF(seq);
    Py_XDECREF(encoded);
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&suffix);
    return result;
}

static sha256_blocks_fn sha256_fast; /* chosen once, at import */

/* A digest as the lowercase hex str hashlib's hexdigest() gives. */
static PyObject *hex_digest(const unsigned char digest[32])
{
    static const char hexdigits[] = "0123456789abcdef";
    PyObject *hex = PyUnicode_New(64, 127);
    if (hex == NULL)
        return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(hex);
    for (int i = 0; i < 32; i++) {
        out[2 * i] = (Py_UCS1)hexdigits[digest[i] >> 4];
        out[2 * i + 1] = (Py_UCS1)hexdigits[digest[i] & 15];
    }
    return hex;
}

/* -- the content hash: canonical JSON of stored messages and values (_native_canon.h) ------- */

/* The bytes of a Stored item: in the window (read when it does not hold them) or, for one
 * larger than a window, in *owned (to free). NULL with an exception set when reading fails. */
static const char *stored_text(Window *w, const Stored *m, char **owned)
{
    *owned = NULL;
    if (m->len > WINDOW_BYTES) {
        char *tmp = malloc(m->len ? m->len : 1);
        if (tmp == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        if (stored_read(m, tmp) < 0) {
            free(tmp);
            return NULL;
        }
        *owned = tmp;
        return tmp;
    }
    if (w->src != m->src || m->off < w->off || m->off + m->len > w->off + w->len) {
        size_t got;
        int err;
        Py_BEGIN_ALLOW_THREADS
        err = read_full(m->src->fd, w->buf, WINDOW_BYTES, m->off, &got);
        Py_END_ALLOW_THREADS
        if (!err && got < m->len)
            err = EIO; /* the file got shorter since it was scanned */
        if (err) {
            errno = err;
            PyErr_SetFromErrno(PyExc_OSError);
            return NULL;
        }
        w->src = m->src;
        w->off = m->off;
        w->len = got;
    }
    return w->buf + (m->off - w->off);
}

/* One item's canonical bytes appended to c->out: CANON_OK, CANON_NO or CANON_ERR. */
static int canon_item(Canon *c, Window *w, PyObject *item, int text)
{
    if (Py_TYPE(item) == &StoredType) {
        if (w->buf == NULL && (w->buf = malloc(WINDOW_BYTES)) == NULL) {
            PyErr_NoMemory();
            return CANON_ERR;
        }
        char *owned;
        const char *p = stored_text(w, (const Stored *)item, &owned);
        if (p == NULL)
            return CANON_ERR;
        int rc = canon_text(c, p, ((const Stored *)item)->len);
        free(owned);
        return rc;
    }
    if (text) {
        Py_buffer b;
        if (PyObject_GetBuffer(item, &b, PyBUF_SIMPLE) < 0)
            return CANON_ERR;
        int rc = canon_text(c, (const char *)b.buf, (size_t)b.len);
        PyBuffer_Release(&b);
        return rc;
    }
    return value_canon(c, item, 0);
}

static PyObject *native_canonical_sha256(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "items must be a sequence");
    if (seq == NULL)
        return NULL;
    Canon c;
    memset(&c, 0, sizeof c);
    Window w = {NULL, NULL, 0, 0};
    Sha256 h;
    sha256_init(&h, sha256_fast);
    int rc = CANON_OK;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    sha256_update(&h, (const unsigned char *)"[", 1);
    for (Py_ssize_t i = 0; i < n && rc == CANON_OK; i++) {
        if (i)
            sha256_update(&h, (const unsigned char *)",", 1);
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        /* Buffers (bytes, msgspec.Raw) stand for JSON text; json.dumps would refuse them as values. */
        Py_INCREF(item);
        rc = canon_item(&c, &w, item, PyObject_CheckBuffer(item));
        Py_DECREF(item);
        if (rc == CANON_OK)
            sha256_update(&h, (const unsigned char *)c.out.p, c.out.len);
        c.out.len = 0;
        c.nm = 0;
        c.keys.len = 0;
    }
    sha256_update(&h, (const unsigned char *)"]", 1);
    free(w.buf);
    canon_free(&c);
    Py_DECREF(seq);
    if (rc == CANON_ERR)
        return NULL;
    if (rc == CANON_NO)
        Py_RETURN_NONE;
    unsigned char digest[32];
    sha256_final(&h, digest);
    return hex_digest(digest);
}

static PyObject *native_canonical_json(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"value", "text", NULL};
    PyObject *value;
    int text = 0;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p:canonical_json", kwlist, &value, &text))
        return NULL;
    Canon c;
    memset(&c, 0, sizeof c);
    Window w = {NULL, NULL, 0, 0};
    int rc = canon_item(&c, &w, value, text);
    PyObject *out = NULL;
    if (rc == CANON_OK) {
        out = PyBytes_FromStringAndSize(c.out.p ? c.out.p : "", (Py_ssize_t)c.out.len);
    } else if (rc == CANON_NO) {
        out = Py_None;
        Py_INCREF(out);
    }
    free(w.buf);
    canon_free(&c);
    return out;
}

static void table_dealloc(PyObject *self)
{
    Table *t = (Table *)self;
    for (int i = 0; i < t->nsegs; i++) {
        free(t->seg_ents[i]);
        free(t->seg_arena[i]);
    }
    for (int i = 0; i < t->nparts; i++)
        free(t->parts[i].slots);
    for (int i = 0; i < t->ntypes; i++)
        Py_DECREF(t->types[i]);
    Py_TYPE(self)->tp_free(self);
}

/* verify(rows, fd) -> whether classify() finds each row's line (read from fd) plain, with the
 * type, id and parent the table holds: a table made by skim() is then exact for those rows.
 * Each verified row also gets its message span (see classify), as a classify() scan gives it. */
static PyObject *table_verify(PyObject *self, PyObject *args)
{
    Table *t = (Table *)self;
    PyObject *rows;
    int fd;
    if (!PyArg_ParseTuple(args, "Oi", &rows, &fd))
        return NULL;
    PyObject *seq = PySequence_Fast(rows, "rows must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    char *buf = NULL;
    size_t cap = 0;
    int ok = 1, err = 0;
    for (Py_ssize_t i = 0; i < n && ok; i++) {
        Py_ssize_t k;
        if (row_of(t, items[i], &k) < 0) {
            err = -1;
            break;
        }
        Ent *e = ent_at(t, k);
        if (e->llen > cap) {
            char *nb = realloc(buf, (size_t)e->llen);
            if (nb == NULL) {
                PyErr_NoMemory();
                err = -1;
                break;
            }
            buf = nb;
            cap = (size_t)e->llen;
        }
        size_t got;
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = read_full(fd, buf, (size_t)e->llen, e->loff, &got);
        Py_END_ALLOW_THREADS
        if (rc) {
            errno = rc;
            PyErr_SetFromErrno(PyExc_OSError);
            err = -1;
            break;
        }
        Field f[3];
        Span m;
        const char *a = e->fields;
        ok = got == e->llen && classify(buf, buf + got, f, &m) && f[F_TYPE].n == e->tlen &&
             memcmp(f[F_TYPE].p, a, e->tlen) == 0 && f[F_ID].n == e->ilen &&
             memcmp(f[F_ID].p, a + e->tlen, e->ilen) == 0 &&
             (f[F_PARENT].null ? e->plen == -1
                               : e->plen >= 0 && f[F_PARENT].n == (size_t)e->plen &&
                                     memcmp(f[F_PARENT].p, a + e->tlen + e->ilen, (size_t)e->plen) == 0);
        if (ok) {
            e->mlen = m.len;
            e->moff = e->loff + m.off;
        }
    }
    free(buf);
    Py_DECREF(seq);
    if (err)
        return NULL;
    return PyBool_FromLong(ok);
}

static PyMethodDef table_methods[] = {
    {"row", table_row, METH_O, "row(k) -> (type, id, parent): entry k (parent None for null)"},
    {"get", table_get, METH_O, "get(id) -> position of the last entry with that id, or -1 (also for an id that is not a str)"},
    {"walk", table_walk, METH_O, "walk(k) -> positions from k up its parents (k first), None on a loop"},
    {"path", table_path, METH_O, "path(k) -> a Path from k up its parents (k first), kept in C; None on a loop"},
    {"types", table_types, METH_NOARGS, "types() -> list of every entry's type"},
    {"ids", table_ids, METH_NOARGS, "ids() -> list of every entry's id"},
    {"parents", table_parents, METH_NOARGS, "parents() -> list of every entry's parent (None for null)"},
    {"span", table_span, METH_O, "span(k) -> (offset, length) of entry k's line, newline excluded"},
    {"verify", table_verify, METH_VARARGS,
     "verify(rows, fd) -> whether each row's line is plain to classify(), with the fields the table holds"},
    {"entries", table_entries, METH_VARARGS,
     "entries(cls, rows, owner, fd) -> an Entry per row (raw_message a Stored reference when fd >= 0)"},
    {"stored", table_stored, METH_VARARGS,
     "stored(rows, fd) -> per row a Stored reference to its message value when it may be copied as stored, or None"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods table_as_sequence = {.sq_length = table_len};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kurahi.pi.read._native.Table",
    .tp_doc = "The plain lines of a scan: type, id and parent per entry, and an id index.",
    .tp_basicsize = sizeof(Table),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = table_dealloc,
    .tp_methods = table_methods,
    .tp_as_sequence = &table_as_sequence,
};

/* -- the module function ------------------------------------------------------------------ */

/* The table takes the segments' Ents and arenas as they are; runs become Python tuples. */
static PyObject *assemble(Table *t, Seg *segs, int nseg)
{
    Py_ssize_t nruns = 0;
    for (int i = 0; i < nseg; i++)
        nruns += (Py_ssize_t)segs[i].nruns;
    PyObject *runs = PyList_New(nruns);
    if (runs == NULL)
        return NULL;
    Py_ssize_t at = 0;
    for (int i = 0; i < nseg; i++) {
        for (size_t k = 0; k < segs[i].nruns; k++) {
            const Run *r = &segs[i].runs[k];
            PyObject *item = Py_BuildValue("(KKni)", (unsigned long long)r->off, (unsigned long long)r->nbytes,
                                           r->nlines, r->flagged);
            if (item == NULL) {
                Py_DECREF(runs);
                return NULL;
            }
            PyList_SET_ITEM(runs, at++, item);
        }
    }
    for (int i = 0; i < nseg; i++) {
        t->seg_ents[i] = segs[i].ents;
        t->seg_n[i] = (Py_ssize_t)segs[i].nents;
        t->seg_arena[i] = segs[i].arena;
        t->parts[i] = segs[i].part;
        t->parts[i].lo = t->n;
        t->n += (Py_ssize_t)segs[i].nents;
        segs[i].recs = NULL; /* now the table's (its Ents are in that memory) */
        segs[i].arena = NULL;
        segs[i].part.slots = NULL;
    }
    t->nsegs = nseg;
    t->nparts = nseg;
    return runs;
}

static uint64_t split_point(const Seg *whole, uint64_t mid)
{
    /* The first line start at or after mid (the end when there is none). */
    char buf[65536];
    uint64_t pos = mid;
    while (pos < whole->end) {
        size_t want = (size_t)((whole->end - pos) < sizeof buf ? (whole->end - pos) : sizeof buf), got;
        const char *p;
        if (whole->fd < 0) {
            p = whole->mem + pos;
            got = want;
        } else {
            if (read_full(whole->fd, buf, want, pos, &got) != 0 || got == 0)
                return whole->end;
            p = buf;
        }
        const char *nl = memchr(p, '\n', got);
        if (nl != NULL)
            return pos + (uint64_t)(nl - p) + 1;
        pos += got;
    }
    return whole->end;
}

static PyObject *native_scan(PyObject *self, PyObject *args)
{
    PyObject *source;
    unsigned long long start, end, max_line;
    int threads, skimming = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "OKKKi|p", &source, &start, &end, &max_line, &threads, &skimming))
        return NULL;
    Py_buffer view = {0};
    int fd = -1;
    if (PyLong_Check(source)) {
        fd = (int)PyLong_AsLong(source);
        if (fd < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a negative file descriptor");
            return NULL;
        }
    } else {
        if (PyObject_GetBuffer(source, &view, PyBUF_SIMPLE) < 0)
            return NULL;
        if ((unsigned long long)view.len < end)
            end = (unsigned long long)view.len;
    }
    if (start > end)
        start = end;

    Seg segs[2];
    memset(segs, 0, sizeof segs);
    for (int i = 0; i < 2; i++) {
        segs[i].fd = fd;
        segs[i].mem = (const char *)view.buf;
        segs[i].max_line = max_line;
        segs[i].skim = skimming;
    }
    segs[0].start = start;
    segs[0].end = end;
    int nseg = 1;
    PyObject *result = NULL;

    Py_BEGIN_ALLOW_THREADS
    if (threads >= 2) {
        uint64_t cut = split_point(&segs[0], start + (end - start) / 2);
        if (cut > start && cut < end) {
            segs[0].end = cut;
            segs[1].start = cut;
            segs[1].end = end;
            nseg = 2;
        }
    }
    pthread_t tid;
    int threaded = nseg == 2 && pthread_create(&tid, NULL, scan_segment, &segs[1]) == 0;
    if (nseg == 2 && !threaded)
        scan_segment(&segs[1]); /* no thread to be had: both halves here */
    scan_segment(&segs[0]);
    if (threaded)
        pthread_join(tid, NULL);
    Py_END_ALLOW_THREADS

    for (int i = 0; i < nseg && result == NULL; i++) {
        if (segs[i].err == ENOMEM) {
            PyErr_NoMemory();
            goto out;
        }
        if (segs[i].err) {
            errno = segs[i].err;
            PyErr_SetFromErrno(PyExc_OSError);
            goto out;
        }
        if (segs[i].too_long) {
            result = Py_None;
            Py_INCREF(result);
        }
    }
    if (result == NULL) {
        Table *t = PyObject_New(Table, &TableType);
        PyObject *runs = NULL;
        if (t != NULL) {
            t->n = 0;
            t->seg_ents[0] = t->seg_ents[1] = NULL;
            t->seg_n[0] = t->seg_n[1] = 0;
            t->seg_arena[0] = t->seg_arena[1] = NULL;
            t->nsegs = 0;
            t->nparts = 0;
            t->ntypes = 0;
            Py_ssize_t lines = (Py_ssize_t)(segs[0].nrecs + (nseg == 2 ? segs[1].nrecs : 0));
            runs = assemble(t, segs, nseg);
            if (runs != NULL)
                result = Py_BuildValue("(OOn)", (PyObject *)t, runs, lines);
        }
        Py_XDECREF(t);
        Py_XDECREF(runs);
    }
out:
    for (int i = 0; i < 2; i++) {
        free(segs[i].recs);
        free(segs[i].arena);
        free(segs[i].runs);
        free(segs[i].part.slots);
    }
    if (view.obj != NULL)
        PyBuffer_Release(&view);
    return result;
}

/* classify() on a bytes-like test line; -1 on error (set), else whether the line is plain. */
static int classify_arg(PyObject *arg, Field f[3], Span *m)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return -1;
    const char *p = (const char *)view.buf;
    int plain = memchr(p, '\n', (size_t)view.len) == NULL && classify(p, p + view.len, f, m);
    PyBuffer_Release(&view);
    return plain;
}

static PyObject *native_classify(PyObject *self, PyObject *arg)
{
    /* One line's verdict, for tests: (type, id, parent) when plain, else None. The fields
     * point into arg's buffer, which arg keeps alive while they are copied out. */
    Field f[3];
    Span m;
    (void)self;
    int plain = classify_arg(arg, f, &m);
    if (plain < 0)
        return NULL;
    if (!plain)
        Py_RETURN_NONE;
    if (f[F_PARENT].null)
        return Py_BuildValue("(s#s#O)", f[F_TYPE].p, (Py_ssize_t)f[F_TYPE].n, f[F_ID].p, (Py_ssize_t)f[F_ID].n,
                             Py_None);
    return Py_BuildValue("(s#s#s#)", f[F_TYPE].p, (Py_ssize_t)f[F_TYPE].n, f[F_ID].p, (Py_ssize_t)f[F_ID].n,
                         f[F_PARENT].p, (Py_ssize_t)f[F_PARENT].n);
}

static PyObject *native_skim(PyObject *self, PyObject *args, PyObject *kwargs)
{
    /* skim()'s verdict on one line, for tests: (type, id, parent) when plain, else None.
     * impl picks the skipper of nested values: 0 the one skim() uses, 1 a byte at a time (what
     * builds without SSE2 do), 2 SSE2, 3 AVX2 (2 and 3 fall back to 0 where not built). */
    static char *kwlist[] = {"line", "impl", NULL};
    Field f[3];
    Py_buffer view;
    int impl = 0;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|i:skim", kwlist, &view, &impl))
        return NULL;
    skip_fn skip = impl == 1 ? skip_nested_scalar : skip_best;
#if defined(SKIP_SIMD)
    if (impl == 2)
        skip = skip_nested_sse2;
#if defined(SKIP_AVX2)
    if (impl == 3 && __builtin_cpu_supports("avx2"))
        skip = skip_nested_avx2;
#endif
#endif
    const char *p = (const char *)view.buf;
    PyObject *out;
    if (memchr(p, '\n', (size_t)view.len) != NULL ||
        !skim_with(p, p + view.len, f, skip)) {
        out = Py_None;
        Py_INCREF(out);
    } else if (f[F_PARENT].null) {
        out = Py_BuildValue("(s#s#O)", f[F_TYPE].p, (Py_ssize_t)f[F_TYPE].n, f[F_ID].p, (Py_ssize_t)f[F_ID].n,
                            Py_None);
    } else {
        out = Py_BuildValue("(s#s#s#)", f[F_TYPE].p, (Py_ssize_t)f[F_TYPE].n, f[F_ID].p, (Py_ssize_t)f[F_ID].n,
                            f[F_PARENT].p, (Py_ssize_t)f[F_PARENT].n);
    }
    PyBuffer_Release(&view);
    return out;
}

static PyObject *native_message_span(PyObject *self, PyObject *arg)
{
    /* For tests: (offset, length) of a plain line's message value when it may be copied as
     * stored, else None. */
    Field f[3];
    Span m;
    (void)self;
    int plain = classify_arg(arg, f, &m);
    if (plain < 0)
        return NULL;
    if (!plain || m.len == 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(II)", (unsigned int)m.off, (unsigned int)m.len);
}

static PyObject *native_sha256_split(PyObject *self, PyObject *args, PyObject *kwargs)
{
    /* The hex SHA-256 of each piece of data.split(b"\n"), hashed without the GIL. */
    static char *kwlist[] = {"data", "portable", NULL};
    Py_buffer view;
    int portable = 0;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|p:sha256_split", kwlist, &view, &portable))
        return NULL;
    const unsigned char *p = (const unsigned char *)view.buf, *end = p + view.len;
    size_t pieces = 1;
    for (const unsigned char *q = p; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++)
        pieces++;
    unsigned char *digests = malloc(pieces * 32);
    if (digests == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    sha256_blocks_fn blocks = portable ? sha256_blocks_portable : sha256_fast;
    Py_BEGIN_ALLOW_THREADS
    const unsigned char *start = p;
    for (size_t k = 0; k < pieces; k++) {
        const unsigned char *nl = memchr(start, '\n', (size_t)(end - start));
        const unsigned char *stop = nl != NULL ? nl : end;
        sha256_digest(blocks, start, (size_t)(stop - start), digests + 32 * k);
        start = stop + 1;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);

    PyObject *list = PyList_New((Py_ssize_t)pieces);
    for (size_t k = 0; list != NULL && k < pieces; k++) {
        PyObject *hex = hex_digest(digests + 32 * k);
        if (hex == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)k, hex);
    }
    free(digests);
    return list;
}

static PyObject *native_sha256_fd(PyObject *self, PyObject *args, PyObject *kwargs)
{
    /* The hex SHA-256 of size bytes of fd from offset 0, read with pread without the GIL. */
    static char *kwlist[] = {"fd", "size", "portable", NULL};
    int fd, portable = 0;
    long long size;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iL|p:sha256_fd", kwlist, &fd, &size, &portable))
        return NULL;
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "size must be >= 0");
        return NULL;
    }
    enum { BLOCK = 1 << 20 }; /* stays in the cache between the read and the hash */
    unsigned char *buf = malloc(BLOCK);
    if (buf == NULL)
        return PyErr_NoMemory();
    Sha256 c;
    sha256_init(&c, portable ? sha256_blocks_portable : sha256_fast);
    int err = 0;
    uint64_t off = 0;
    Py_BEGIN_ALLOW_THREADS
    while (off < (uint64_t)size) {
        uint64_t want = (uint64_t)size - off < BLOCK ? (uint64_t)size - off : BLOCK;
        ssize_t got = pread(fd, buf, (size_t)want, (off_t)off);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            err = errno;
            break;
        }
        if (got == 0) {
            err = -1; /* shorter than size */
            break;
        }
        sha256_update(&c, buf, (size_t)got);
        off += (uint64_t)got;
    }
    Py_END_ALLOW_THREADS
    free(buf);
    if (err > 0) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (err < 0) {
        PyErr_Format(PyExc_EOFError, "the file ended after %llu of %lld bytes", (unsigned long long)off, size);
        return NULL;
    }
    unsigned char digest[32];
    sha256_final(&c, digest);
    return hex_digest(digest);
}

static PyObject *native_sha256_accelerated(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyBool_FromLong(sha256_fast != sha256_blocks_portable);
}

static PyMethodDef methods[] = {
    {"scan", native_scan, METH_VARARGS,
     "scan(source, start, end, max_line, threads, skim=False) -> (table, runs, lines) | None"},
    {"classify", native_classify, METH_O, "classify(line) -> (type, id, parent) | None"},
    {"skim", (PyCFunction)(void (*)(void))native_skim, METH_VARARGS | METH_KEYWORDS,
     "skim(line, impl=0) -> (type, id, parent) | None, the top level only (see skim)"},
    {"message_span", native_message_span, METH_O, "message_span(line) -> (offset, length) | None"},
    {"join_json", native_join_json, METH_VARARGS,
     "join_json(items, prefix, suffix, fd=-1, encode=None) -> prefix + b','.join(items) + suffix (bytes, or written to fd)"},
    {"canonical_sha256", native_canonical_sha256, METH_O,
     "canonical_sha256(items) -> hex SHA-256 of the items' sorted canonical JSON (as json.dumps), or None"},
    {"canonical_json", (PyCFunction)(void (*)(void))native_canonical_json, METH_VARARGS | METH_KEYWORDS,
     "canonical_json(value, text=False) -> json.dumps(value or json.loads(text), sort_keys=True, ...) bytes, or None"},
    {"plain_estimates", native_plain_estimates, METH_VARARGS,
     "plain_estimates(messages, stringified_length) -> Pi's token estimate of each plain message, None for the others"},
    {"sha256_split", (PyCFunction)(void (*)(void))native_sha256_split, METH_VARARGS | METH_KEYWORDS,
     "sha256_split(data, portable=False) -> hex SHA-256 of each piece of data.split(b'\\n')"},
    {"sha256_fd", (PyCFunction)(void (*)(void))native_sha256_fd, METH_VARARGS | METH_KEYWORDS,
     "sha256_fd(fd, size, portable=False) -> hex SHA-256 of the first size bytes of fd"},
    {"sha256_accelerated", native_sha256_accelerated, METH_NOARGS,
     "sha256_accelerated() -> whether sha256_split uses the processor's SHA instructions"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kurahi.pi.read._native", "The line scanner of kurahi.pi.read.scan, in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void)
{
    if (PyType_Ready(&TableType) < 0 || PyType_Ready(&SourceType) < 0 || PyType_Ready(&StoredType) < 0 ||
        PyType_Ready(&PathType) < 0)
        return NULL;
    sha256_fast = sha256_best();
    skim_setup();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&StoredType);
    if (PyModule_AddObject(m, "Stored", (PyObject *)&StoredType) < 0) {
        Py_DECREF(&StoredType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
