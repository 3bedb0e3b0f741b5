/*
 * SHA-256 (FIPS 180-4) for kurahi.pi.read._native: many short messages in one call.
 *
 * Why not hashlib: a stitch report carries the digest of every copied line, and for a
 * 20,000-line session creating 20,000 hashlib objects costs more than hashing the bytes.
 * Here the lines are hashed without the GIL and only the hex strings are built in Python.
 *
 * Two compress functions: the portable one, and one with the x86 SHA extensions (SHA-NI)
 * chosen at run time when the processor has them. tests/store/test_native_sha256.py
 * compares both with hashlib on random and boundary lengths.
 *
 * Only static functions: _native.c includes this file once.
 */
#ifndef KURAHI_NATIVE_SHA256_H
#define KURAHI_NATIVE_SHA256_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static const uint32_t SHA256_INIT[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

typedef void (*sha256_blocks_fn)(uint32_t st[8], const unsigned char *p, size_t nblocks);

static inline uint32_t ror32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static inline uint32_t load_be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void sha256_blocks_portable(uint32_t st[8], const unsigned char *p, size_t nblocks)
{
    uint32_t w[64];
    for (; nblocks > 0; nblocks--, p += 64) {
        for (int t = 0; t < 16; t++)
            w[t] = load_be32(p + 4 * t);
        for (int t = 16; t < 64; t++) {
            uint32_t s0 = ror32(w[t - 15], 7) ^ ror32(w[t - 15], 18) ^ (w[t - 15] >> 3);
            uint32_t s1 = ror32(w[t - 2], 17) ^ ror32(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
        for (int t = 0; t < 64; t++) {
            uint32_t t1 = h + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) + K256[t] + w[t];
            uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        st[0] += a;
        st[1] += b;
        st[2] += c;
        st[3] += d;
        st[4] += e;
        st[5] += f;
        st[6] += g;
        st[7] += h;
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KURAHI_HAVE_SHANI 1
#include <cpuid.h>
#include <immintrin.h>

/* The SHA-NI instructions keep the state as two vectors, (A,B,E,F) and (C,D,G,H), and
 * do two rounds per sha256rnds2; sha256msg1/msg2 extend the message schedule four words
 * at a time. Group g of four words is made from groups g-4..g-1, which rotate through
 * m0..m3 (written out, so that they stay in registers). */
#define SHANI_ROUNDS(m, g)                                                                           \
    do {                                                                                            \
        __m128i wk_ = _mm_add_epi32((m), _mm_loadu_si128((const __m128i *)(const void *)&K256[4 * (g)])); \
        cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk_);                                              \
        abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk_, 0x0E));                     \
    } while (0)
/* cur (group g-4) becomes group g: W[t-16] + s0(W[t-15]) + W[t-7] + s1(W[t-2]). */
#define SHANI_SCHEDULE(cur, g3, g2, g1) \
    cur = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(cur, g3), _mm_alignr_epi8(g1, g2, 4)), g1)

__attribute__((target("sha,sse4.1,ssse3"))) static void sha256_blocks_shani(uint32_t st[8], const unsigned char *p,
                                                                            size_t nblocks)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i dcba = _mm_loadu_si128((const __m128i *)(const void *)&st[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)(const void *)&st[4]);
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);

    for (; nblocks > 0; nblocks--, p += 64) {
        __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)p), bswap);
        __m128i m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16)), bswap);
        __m128i m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 32)), bswap);
        __m128i m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 48)), bswap);
        SHANI_ROUNDS(m0, 0);
        SHANI_ROUNDS(m1, 1);
        SHANI_ROUNDS(m2, 2);
        SHANI_ROUNDS(m3, 3);
        for (int g = 4; g < 16; g += 4) {
            SHANI_SCHEDULE(m0, m1, m2, m3);
            SHANI_ROUNDS(m0, g);
            SHANI_SCHEDULE(m1, m2, m3, m0);
            SHANI_ROUNDS(m1, g + 1);
            SHANI_SCHEDULE(m2, m3, m0, m1);
            SHANI_ROUNDS(m2, g + 2);
            SHANI_SCHEDULE(m3, m0, m1, m2);
            SHANI_ROUNDS(m3, g + 3);
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }

    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)(void *)&st[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)(void *)&st[4], _mm_alignr_epi8(dchg, feba, 8));
}

static int cpu_has_shani(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 19)) || !(c & (1u << 9)))
        return 0; /* SSE4.1 and SSSE3 */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return 0;
    return (b & (1u << 29)) != 0;
}
#else
static int cpu_has_shani(void) { return 0; }
#endif

/* The fastest compress function this processor runs (NULL asks for the portable one). */
static sha256_blocks_fn sha256_best(void)
{
#ifdef KURAHI_HAVE_SHANI
    if (cpu_has_shani())
        return sha256_blocks_shani;
#endif
    return sha256_blocks_portable;
}

/* Streaming: whole blocks go straight to the compress function, a partial one waits in buf. */
typedef struct {
    uint32_t st[8];
    unsigned char buf[64];
    size_t nbuf;
    uint64_t total;
    sha256_blocks_fn blocks;
} Sha256;

static void sha256_init(Sha256 *c, sha256_blocks_fn blocks)
{
    memcpy(c->st, SHA256_INIT, sizeof c->st);
    c->nbuf = 0;
    c->total = 0;
    c->blocks = blocks;
}

static void sha256_update(Sha256 *c, const unsigned char *p, size_t n)
{
    c->total += n;
    if (c->nbuf) {
        size_t take = 64 - c->nbuf < n ? 64 - c->nbuf : n;
        memcpy(c->buf + c->nbuf, p, take);
        c->nbuf += take;
        p += take;
        n -= take;
        if (c->nbuf < 64)
            return;
        c->blocks(c->st, c->buf, 1);
        c->nbuf = 0;
    }
    if (n >= 64) {
        c->blocks(c->st, p, n / 64);
        p += n / 64 * 64;
        n %= 64;
    }
    memcpy(c->buf, p, n);
    c->nbuf = n;
}

static void sha256_final(Sha256 *c, unsigned char out[32])
{
    unsigned char tail[128];
    size_t rest = c->nbuf;
    memcpy(tail, c->buf, rest);
    tail[rest] = 0x80;
    size_t tlen = rest < 56 ? 64 : 128;
    memset(tail + rest + 1, 0, tlen - rest - 1);
    uint64_t bits = c->total * 8;
    for (int i = 0; i < 8; i++)
        tail[tlen - 1 - i] = (unsigned char)(bits >> (8 * i));
    c->blocks(c->st, tail, tlen / 64);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(c->st[i] >> 24);
        out[4 * i + 1] = (unsigned char)(c->st[i] >> 16);
        out[4 * i + 2] = (unsigned char)(c->st[i] >> 8);
        out[4 * i + 3] = (unsigned char)c->st[i];
    }
}

static void sha256_digest(sha256_blocks_fn blocks, const unsigned char *p, size_t n, unsigned char out[32])
{
    Sha256 c;
    sha256_init(&c, blocks);
    sha256_update(&c, p, n);
    sha256_final(&c, out);
}

#endif
