/* check.h - the assertion macros every unit test uses: count failures, keep going. */
#ifndef HEAPSNAP_TEST_CHECK_H
#define HEAPSNAP_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

/* One test program is one translation unit: main returns failures != 0. */
static int failures;

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		failures++; \
	} \
} while (0)

#define CHECK_EQ(a, b) do { \
	long long _a = (long long)(a), _b = (long long)(b); \
	if (_a != _b) { \
		fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
			__FILE__, __LINE__, #a, _a, #b, _b); \
		failures++; \
	} \
} while (0)

#define CHECK_STR(a, b) do { \
	const char *_a = (a), *_b = (b); \
	if (!_a || !_b || strcmp(_a, _b) != 0) { \
		fprintf(stderr, "%s:%d: %s is \"%s\", expected \"%s\"\n", \
			__FILE__, __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)"); \
		failures++; \
	} \
} while (0)

/* needle must occur in hay. */
#define CHECK_HAS(hay, needle) do { \
	const char *_h = (hay), *_n = (needle); \
	if (!_h || !strstr(_h, _n)) { \
		fprintf(stderr, "%s:%d: \"%s\" not found in:\n%s\n", __FILE__, __LINE__, \
			_n, _h ? _h : "(null)"); \
		failures++; \
	} \
} while (0)

#endif
