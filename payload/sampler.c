/* sampler.c - byte-sampling countdowns: exponential draws with a private log(), no libm. */
#include <string.h>
#include <time.h>

#include "hsp.h"

static uint64_t rng_ctr;

/* splitmix64 over a per-thread counter, seeded from a shared one on the
 * thread's first draw (no shared cache line per draw). */
static uint64_t rng_next(void)
{
	uint64_t *s = &hsp_tls.rng;

	if (unlikely(!*s)) {
		uint64_t z = __atomic_add_fetch(&rng_ctr, 0x632be59bd9b4e019ull, __ATOMIC_RELAXED);
		if (z == 0x632be59bd9b4e019ull) {
			/* First thread in this process: mix in the clock so two
			 * runs differ. */
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			z ^= (uint64_t)ts.tv_nsec * 0xbf58476d1ce4e5b9ull ^ (uint64_t)ts.tv_sec;
			__atomic_add_fetch(&rng_ctr, z & ~0xffull, __ATOMIC_RELAXED);
		}
		*s = (z * 0xd6e8feb86659fd93ull) | 1;
	}
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* 1/k: the series below multiply by these rather than divide (a divide
 * costs 15-20 cycles, and every sample runs both series). */
static const double inv_k[24] = {
	0, 1.0, 1.0 / 2, 1.0 / 3, 1.0 / 4, 1.0 / 5, 1.0 / 6, 1.0 / 7, 1.0 / 8, 1.0 / 9, 1.0 / 10,
	1.0 / 11, 1.0 / 12, 1.0 / 13, 1.0 / 14, 1.0 / 15, 1.0 / 16, 1.0 / 17, 1.0 / 18, 1.0 / 19,
	1.0 / 20, 1.0 / 21, 1.0 / 22, 1.0 / 23,
};

double sampler_log(double x)
{
	uint64_t bits;
	int e;

	if (!(x > 0))
		return -1e300;
	memcpy(&bits, &x, sizeof(bits));
	e = (int)((bits >> 52) & 0x7ff);
	if (e == 0) {
		/* Subnormal: scale into the normal range first. */
		x *= 4503599627370496.0; /* 2^52 */
		memcpy(&bits, &x, sizeof(bits));
		e = (int)((bits >> 52) & 0x7ff) - 52;
	}
	e -= 1023;
	/* m in [1, 2); fold to [sqrt(1/2), sqrt(2)) so the series converges fast. */
	bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
	double m;
	memcpy(&m, &bits, sizeof(m));
	if (m > 1.4142135623730951) {
		m *= 0.5;
		e++;
	}
	/* ln m = 2 atanh(t), t = (m-1)/(m+1), |t| < 0.1716. */
	double t = (m - 1) / (m + 1), t2 = t * t, term = t, sum = 0;
	/* |t| < 0.1716: t^23 / 23 < 1e-19. */
	for (int k = 1; k < 24; k += 2) {
		sum += term * inv_k[k];
		term *= t2;
	}
	return 2 * sum + e * 0.6931471805599453;
}

int64_t sampler_draw(uint64_t rate)
{
	if (rate <= 1)
		return 0;
	/* u in (0, 1): 53 random bits, never 0. */
	double u = ((double)(rng_next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
	double x = -sampler_log(u) * (double)rate;
	/* Allocation of n bytes is sampled iff n >= X, i.e. n >= ceil(X): the
	 * integer countdown ceil(X) keeps p(n) = 1 - exp(-n/rate) exact. */
	if (x >= 4e18)
		return (int64_t)4e18;
	int64_t c = (int64_t)x;
	if ((double)c < x)
		c++;
	return c < 1 ? 1 : c;
}

/* 1 - exp(-x) for x >= 0, without libm: halve x below 1/2, sum e^-x's
 * series, square back (relative error ~1e-14 for x < 40). */
static double one_minus_exp_neg(double x)
{
	int m = 0;

	if (x < 1e-4)
		return x * (1 - x / 2 * (1 - x / 3 * (1 - x / 4)));
	if (x > 40)
		return 1;
	while (x > 0.5) {
		x *= 0.5;
		m++;
	}
	/* x <= 1/2: x^17 / 17! < 1e-19. */
	double term = 1, e = 1;
	for (int k = 1; k < 18; k++) {
		term *= -x * inv_k[k];
		e += term;
	}
	while (m--)
		e *= e;
	return 1 - e;
}

double sampler_weight(uint64_t size, uint64_t rate)
{
	if (rate <= 1 || size == 0)
		return 1;
	return 1 / one_minus_exp_neg((double)size / (double)rate);
}
