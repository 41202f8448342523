/* test_sampler.c - the payload's libm-free sampling maths against libm: log, the sample weight 1/p, the mean countdown. */
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "../../payload/sampler.c"

/* Defined by the payload's hook.c, which this test does not link. */
__thread struct hsp_tls hsp_tls __attribute__((tls_model("initial-exec")));

static void test_log(void)
{
	double worst = 0;
	for (double x = 1e-300; x < 1e300; x *= 1.37) {
		double e = fabs(sampler_log(x) - log(x)) / fmax(fabs(log(x)), 1e-3);
		worst = fmax(worst, e);
	}
	for (double x = 0.5; x < 2; x += 1e-4) {
		double e = fabs(sampler_log(x) - log(x));
		worst = fmax(worst, e);
	}
	if (worst >= 1e-13)
		fprintf(stderr, "sampler_log off by %g\n", worst);
	CHECK(worst < 1e-13);
}

static void test_weight(void)
{
	static const uint64_t rates[] = { 2, 7, 4096, 524288, 1u << 30 };
	double worst = 0;
	for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++) {
		for (uint64_t n = 1; n < ((uint64_t)1 << 40); n = n * 3 / 2 + 1) {
			double want = 1 / -expm1(-(double)n / (double)rates[r]);
			double e = fabs(sampler_weight(n, rates[r]) - want) / want;
			worst = fmax(worst, e);
		}
	}
	if (worst >= 1e-12)
		fprintf(stderr, "sampler_weight off by %g\n", worst);
	CHECK(worst < 1e-12);
	/* rate 1 and size 0 count once */
	CHECK(sampler_weight(100, 1) == 1 && sampler_weight(0, 524288) == 1);
}

static void test_draw_mean(void)
{
	/* The mean of Exp(rate) draws, rounded up: rate + ~0.5.  1e6 draws
	 * have a standard error of rate / 1000; 1% is 10 of them. */
	const uint64_t rate = 4096;
	const int n = 1000000;
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += (double)sampler_draw(rate);
	double mean = sum / n;
	fprintf(stderr, "# mean countdown %.1f for rate %llu\n", mean, (unsigned long long)rate);
	CHECK(fabs(mean - (rate + 0.5)) < rate * 0.01);
	CHECK(sampler_draw(1) == 0); /* rate 1 samples everything */
}

int main(void)
{
	test_log();
	test_weight();
	test_draw_mean();
	return failures != 0;
}
