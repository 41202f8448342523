/* report_drop.c - which frames belong to the allocator or to heapsnap, so reports drop them and flat lands on malloc's caller. */
#include <pthread.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_int.h"

/*
 * The one list of allocator frames.  Each entry is a regex for a whole
 * function name with its argument list removed ("operator new(unsigned
 * long)" is matched as "operator new").  Written in the subset POSIX ERE and
 * RE2 share, because the `entry` ones also go into pprof files' drop_frames.
 *
 * entry: public entry points and names that cannot be user code; pprof
 *        drops from the first such frame seen from the root, so only these
 *        are safe to export.
 * internal: allocator internals whose names a program could also use
 *        (prof_*, arena_*); dropped only inside the leaf-side run and only
 *        leafward of an entry frame (a user's prof_record() calling malloc
 *        keeps its frame).
 */
static const struct {
	const char *re;
	bool entry;
} alloc_frames[] = {
	/* C and POSIX entry points (glibc, jemalloc, tcmalloc, mimalloc all
	 * export these names). */
	{ "malloc", true },
	{ "calloc", true },
	{ "realloc", true },
	{ "reallocarray", true },
	{ "free", true },
	{ "cfree", true },
	{ "(__)?posix_memalign", true },
	{ "aligned_alloc", true },
	{ "memalign", true },
	{ "valloc", true },
	{ "pvalloc", true },
	/* C++ operators, demangled and mangled (_Znwm, _ZnamRKSt9nothrow_t,
	 * _ZnwmSt11align_val_t, _ZdlPvm, ...). */
	{ "operator new.*", true },
	{ "operator delete.*", true },
	{ "_Zn[wa][jmy].*", true },
	{ "_Zd[la]P.*", true },
	/* glibc malloc internals (not __libc_.*: __libc_start_main is at the
	 * root of every stack) */
	{ "(__GI_)?__libc_(malloc|calloc|realloc|free|memalign|valloc|pvalloc|reallocarray)", true },
	{ "_int_.*", true },
	{ "_mid_memalign", false },
	{ "sysmalloc", false },
	{ "tcache_.*", false },
	{ "malloc_hook_ini", false },
	{ "ptmalloc_init.*", false },
	{ "arena_get2.*", false },
	/* jemalloc: je_-prefixed symbols, non-prefixed API extensions, and
	 * the static helpers that survive inlining */
	{ "je_.*", true },
	{ "[mrx]allocx", true },
	{ "s?dallocx", true },
	{ "imalloc.*", false },
	{ "ialloc.*", false },
	{ "iralloc.*", false },
	{ "ipalloc.*", false },
	{ "arena_.*", false },
	{ "prof_.*", false },
	{ "malloc_default", false },
	{ "do_rallocx", false },
	{ "fallback_impl", false },
	/* tcmalloc / gperftools */
	{ "tc_.*", true },
	{ "tcmalloc::.*", true },
	{ "do_malloc.*", false },
	{ "do_calloc", false },
	{ "do_memalign.*", false },
	{ "MallocHook::.*", false },
	{ "MallocHook_.*", false },
	/* mimalloc */
	{ "mi_.*", true },
	{ "_mi_.*", true },
	/* heapsnap's own payload */
	{ "hsp_.*", true },
	/* Frames of stripped allocator libraries, as the symbolizer names
	 * them ("libjemalloc.so.2+0xa2630"), so pprof drops them too. */
	{ "(libjemalloc|libtcmalloc[a-z_]*|libmimalloc[a-z_-]*|libheapsnap-payload)\\.so[.0-9]*\\+0x[0-9a-f]+", true },
};

/* Allocator libraries: any frame in them at the leaf end is dropped, which
 * also covers static functions the table cannot name. */
static const char alloc_modules[] =
	"^(libjemalloc|libtcmalloc[a-z_]*|libmimalloc[a-z_-]*|libheapsnap-payload)\\.so([.0-9]*)$";

static regex_t rx_entry, rx_internal, rx_module;
static char *drop_regex;
static bool rx_ok;
static pthread_once_t rx_once = PTHREAD_ONCE_INIT;

static char *join(bool entries)
{
	size_t len = 16;
	for (size_t i = 0; i < sizeof(alloc_frames) / sizeof(alloc_frames[0]); i++)
		len += strlen(alloc_frames[i].re) + 1;
	char *s = malloc(len);
	if (!s)
		return NULL;
	s[0] = 0;
	for (size_t i = 0; i < sizeof(alloc_frames) / sizeof(alloc_frames[0]); i++) {
		if (alloc_frames[i].entry != entries)
			continue;
		if (s[0])
			strcat(s, "|");
		strcat(s, alloc_frames[i].re);
	}
	return s;
}

static bool compile_anchored(regex_t *rx, const char *alt)
{
	size_t n = strlen(alt) + 8;
	char *s = malloc(n);
	if (!s)
		return false;
	snprintf(s, n, "^(%s)$", alt);
	int rc = regcomp(rx, s, REG_EXTENDED | REG_NOSUB);
	free(s);
	return rc == 0;
}

static void rx_init(void)
{
	char *internal = join(false);
	drop_regex = join(true);
	if (!internal || !drop_regex) {
		free(internal);
		return;
	}
	rx_ok = compile_anchored(&rx_entry, drop_regex) &&
		compile_anchored(&rx_internal, internal) &&
		regcomp(&rx_module, alloc_modules, REG_EXTENDED | REG_NOSUB) == 0;
	free(internal);
}

size_t rep_simplify_name(const char *name, char *buf, size_t len)
{
	/* Like pprof's simplifyFunc: drop the argument list from the first
	 * '(' that is not part of "(anonymous namespace)" or "operator()". */
	static const char *const reserved[] = { "(anonymous namespace)", "operator()" };
	const char *s = name;
	size_t n;

	if (*s == '.')
		s++;
	n = strlen(s);
	for (size_t i = 0; s[i]; i++) {
		bool skipped = false;
		for (size_t r = 0; r < 2; r++) {
			size_t rl = strlen(reserved[r]);
			if (!strncmp(s + i, reserved[r], rl)) {
				i += rl - 1;
				skipped = true;
				break;
			}
		}
		if (!skipped && s[i] == '(') {
			n = i;
			break;
		}
	}
	if (len) {
		size_t c = n < len - 1 ? n : len - 1;
		memcpy(buf, s, c);
		buf[c] = 0;
	}
	return n;
}

static bool match_simplified(const regex_t *rx, const char *name)
{
	char stack[256];
	size_t n = rep_simplify_name(name, stack, sizeof(stack));
	bool m;

	if (n < sizeof(stack))
		return regexec(rx, stack, 0, NULL, 0) == 0;
	char *buf = malloc(n + 1);
	if (!buf)
		return false;
	rep_simplify_name(name, buf, n + 1);
	m = regexec(rx, buf, 0, NULL, 0) == 0;
	free(buf);
	return m;
}

int rep_alloc_class(const char *name)
{
	pthread_once(&rx_once, rx_init);
	if (!rx_ok || !name || !*name)
		return REP_ALLOC_NONE;
	if (match_simplified(&rx_entry, name))
		return REP_ALLOC_ENTRY;
	if (match_simplified(&rx_internal, name))
		return REP_ALLOC_INTERNAL;
	return REP_ALLOC_NONE;
}

bool rep_is_alloc_frame(const char *name)
{
	return rep_alloc_class(name) != REP_ALLOC_NONE;
}

bool rep_is_alloc_module(const char *path)
{
	pthread_once(&rx_once, rx_init);
	if (!rx_ok || !path || !*path)
		return false;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return regexec(&rx_module, base, 0, NULL, 0) == 0;
}

const char *rep_drop_frames_regex(void)
{
	pthread_once(&rx_once, rx_init);
	return rx_ok ? drop_regex : NULL;
}

bool rep_match_simplified(const regex_t *rx, const char *name)
{
	if (!name || !*name)
		return false;
	return match_simplified(rx, name);
}

bool rep_compile_drop_frames(const char *drop_frames, regex_t *rx)
{
	char *re;
	bool ok;

	if (!drop_frames || !*drop_frames || strlen(drop_frames) > 65536 ||
	    strchr(drop_frames, '{'))
		return false;
	for (const char *q = drop_frames; (q = strchr(q, '\\')) && q[1]; q += 2)
		if (q[1] >= '1' && q[1] <= '9')
			return false;
	if (asprintf(&re, "^(%s)$", drop_frames) < 0)
		return false;
	ok = regcomp(rx, re, REG_EXTENDED | REG_NOSUB) == 0;
	free(re);
	return ok;
}
