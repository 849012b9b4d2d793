/* data.h -- the fixed stream of data a run trains on and the kernel timer times with (private to runtime/: exec.c, kbench.c)
 *
 * The data the executor trains on and the kernel timer times come from one fixed stream,
 * the same on every machine (unlike rand()): a step's result and a kernel's timing do not
 * depend on where they ran.
 */
#ifndef ATM_RUNTIME_DATA_H
#define ATM_RUNTIME_DATA_H

#include <stdint.h>

/* atm_bk_mix -- splitmix64: the next value of stream s */
static inline uint64_t atm_bk_mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* atm_bk_tensor_seed -- the stream of tensor t's data under seed (the FNV-1a prime spreads
 * neighbouring seeds apart) */
static inline uint64_t atm_bk_tensor_seed(uint64_t seed, int32_t t)
{
	return seed * 0x100000001b3ull + (uint64_t)t;
}

/* atm_bk_fill_positive_from -- n values in [0.125, 1), going on from stream *s (a buffer filled
 * in pieces gets what one filled at once would): positive so that a variance input stays a
 * variance, small so that nothing overflows, never NaN or denormal (either could send a kernel
 * down a slow path the real run never takes) */
static inline void atm_bk_fill_positive_from(float *p, int64_t n, uint64_t *s)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = 0.125f + 0.875f * (float)((double)(atm_bk_mix(s) >> 40) * 0x1p-24);
}

/* atm_bk_fill_positive -- the same from the start of stream seed */
static inline void atm_bk_fill_positive(float *p, int64_t n, uint64_t seed)
{
	atm_bk_fill_positive_from(p, n, &seed);
}


#endif /* ATM_RUNTIME_DATA_H */
