/* fmt_svg.c - self-contained SVG flame graph writer (root at the bottom, widths by value, a tooltip per frame). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fmt_collapsed.h"

#define SVG_WIDTH   1200
#define SVG_XPAD    10
#define SVG_ROW     16          /* frame height plus a 1 px gap */
#define SVG_TOP     48          /* title and subtitle */
#define SVG_BOTTOM  10
#define SVG_MINPX   0.1         /* narrower frames (and their children) are left out */
#define SVG_CHARPX  7.0         /* average glyph width at 12 px */

struct node {
	uint32_t name;              /* index into the name map */
	uint32_t parent;
	uint32_t first_child, next_sibling;   /* UINT32_MAX: none */
	int64_t value;
	int64_t x;                  /* offset from the left, in value units */
	uint32_t depth;
	bool shown;
};

struct tree {
	struct node *v;
	size_t n, cap;
	uint32_t *slots;            /* (parent, name) -> node index + 1 */
	size_t nslots;
	struct collapsed_strmap names;
};

static uint64_t key_hash(uint32_t parent, uint32_t name)
{
	uint64_t h = ((uint64_t)parent << 32 | name) * 0x9e3779b97f4a7c15ULL;

	return h ^ (h >> 29);
}

static int tree_rehash(struct tree *t, size_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 1; i < t->n; i++) {
		size_t h = key_hash(t->v[i].parent, t->v[i].name) & (nslots - 1);

		while (slots[h])
			h = (h + 1) & (nslots - 1);
		slots[h] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 0;
}

static int64_t tree_add(struct tree *t, uint32_t parent, uint32_t name)
{
	size_t h;

	if (t->n >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((t->n + 1) * 2 > t->nslots && tree_rehash(t, t->nslots ? t->nslots * 2 : 1024))
		return -ENOMEM;
	h = key_hash(parent, name) & (t->nslots - 1);
	for (; t->slots[h]; h = (h + 1) & (t->nslots - 1)) {
		struct node *n = &t->v[t->slots[h] - 1];

		if (n->parent == parent && n->name == name)
			return t->slots[h] - 1;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct node *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	memset(&t->v[t->n], 0, sizeof(t->v[0]));
	t->v[t->n].name = name;
	t->v[t->n].parent = parent;
	t->v[t->n].first_child = UINT32_MAX;
	t->v[t->n].next_sibling = t->v[parent].first_child;
	t->v[parent].first_child = (uint32_t)t->n;
	t->slots[h] = (uint32_t)t->n + 1;
	return (int64_t)t->n++;
}

static const char *node_name(const struct tree *t, uint32_t i)
{
	return t->names.strs[t->v[i].name] + sizeof(size_t);
}

static int child_cmp(const void *a, const void *b, void *ctx)
{
	const struct tree *t = ctx;

	return strcmp(node_name(t, *(const uint32_t *)a), node_name(t, *(const uint32_t *)b));
}

/* Places every node: children left to right by name (as flamegraph.pl
 * does, so equal profiles give equal pictures).  Iterative: stacks can be
 * deeper than the C stack should recurse.  Returns the deepest shown depth,
 * or -ENOMEM. */
static int64_t tree_layout(struct tree *t, double px_per_unit)
{
	uint32_t *todo = NULL, *kids = NULL;
	size_t ntodo = 0;
	int64_t maxdepth = 0;

	todo = malloc(t->n * sizeof(*todo));
	kids = malloc(t->n * sizeof(*kids));
	if (!todo || !kids) {
		free(todo);
		free(kids);
		return -ENOMEM;
	}
	t->v[0].x = 0;
	t->v[0].depth = 0;
	todo[ntodo++] = 0;
	while (ntodo) {
		struct node *n = &t->v[todo[--ntodo]];
		size_t nk = 0;
		int64_t x = n->x;

		if ((double)n->value * px_per_unit < SVG_MINPX)
			continue;
		n->shown = true;
		if (n->depth > maxdepth)
			maxdepth = n->depth;
		for (uint32_t c = n->first_child; c != UINT32_MAX; c = t->v[c].next_sibling)
			kids[nk++] = c;
		qsort_r(kids, nk, sizeof(*kids), child_cmp, t);
		/* Every node is pushed once, so todo never holds more than t->n. */
		for (size_t k = 0; k < nk; k++) {
			struct node *c = &t->v[kids[k]];

			c->x = x;
			c->depth = n->depth + 1;
			x += c->value;
			todo[ntodo++] = kids[k];
		}
	}
	free(todo);
	free(kids);
	return maxdepth;
}

/* Writes up to maxchars characters of s as XML text: markup characters as
 * entities, bytes XML cannot carry (invalid UTF-8, control characters) as
 * '?'.  Returns the number of characters of s left unwritten. */
static size_t put_xml(FILE *out, const char *s, size_t maxchars)
{
	const unsigned char *q = (const unsigned char *)s;
	size_t n = strlen(s), chars = 0;

	for (size_t i = 0; i < n;) {
		size_t len = collapsed_utf8_len(q + i, n - i);

		if (chars == maxchars)
			return n - i;
		chars++;
		if (len == 0 || (q[i] < 0x20 && q[i] != '\t') || q[i] == 0x7f ||
		    (len == 3 && q[i] == 0xef && q[i + 1] == 0xbf && q[i + 2] >= 0xbe)) {
			fputc('?', out);
			i += len ? len : 1;
			continue;
		}
		switch (q[i]) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default: fwrite(q + i, 1, len, out);
		}
		i += len;
	}
	return 0;
}

static size_t utf8_chars(const char *s)
{
	const unsigned char *q = (const unsigned char *)s;
	size_t n = strlen(s), chars = 0;

	for (size_t i = 0; i < n; chars++) {
		size_t len = collapsed_utf8_len(q + i, n - i);

		i += len ? len : 1;
	}
	return chars;
}

/* flamegraph.pl's "hot" palette, picked by a hash of the name. */
static void colour(const char *name, int rgb[3])
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const unsigned char *q = (const unsigned char *)name; *q; q++)
		h = (h ^ *q) * 0x100000001b3ULL;
	double v1 = (double)(h & 0xffff) / 65536.0;
	double v2 = (double)((h >> 16) & 0xffff) / 65536.0;
	double v3 = (double)((h >> 32) & 0xffff) / 65536.0;
	rgb[0] = 205 + (int)(50 * v3);
	rgb[1] = (int)(230 * v1);
	rgb[2] = (int)(55 * v2);
}

static void put_node(FILE *out, const struct tree *t, uint32_t i, double px, int height,
		     const char *unit, int64_t total)
{
	const struct node *n = &t->v[i];
	const char *name = node_name(t, i);
	double x = SVG_XPAD + (double)n->x * px, w = (double)n->value * px;
	int y = height - SVG_BOTTOM - (int)(n->depth + 1) * SVG_ROW;
	int rgb[3] = { 200, 200, 200 };
	size_t fit;

	if (i != 0)
		colour(name, rgb);
	fputs("<g><title>", out);
	put_xml(out, name, SIZE_MAX);
	fprintf(out, " (%" PRId64 " %s, %.2f%%)</title>", n->value, unit,
		total ? 100.0 * (double)n->value / (double)total : 0.0);
	fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\" ry=\"2\"/>",
		x, y, w, SVG_ROW - 1, rgb[0], rgb[1], rgb[2]);
	fit = (size_t)((w - 6) / SVG_CHARPX);
	if (w > 6 && fit >= 3) {
		fprintf(out, "<text x=\"%.2f\" y=\"%d\">", x + 3, y + SVG_ROW - 5);
		if (utf8_chars(name) <= fit) {
			put_xml(out, name, SIZE_MAX);
		} else {
			put_xml(out, name, fit - 2);
			fputs("..", out);
		}
		fputs("</text>", out);
	}
	fputs("</g>\n", out);
}

int svg_write(const struct profile *p, FILE *out, enum prof_type type, char err[FMT_ERRLEN])
{
	struct tree t = { 0 };
	struct collapsed_stack st;
	const char *unit;
	int64_t maxdepth, total = 0;
	double px;
	int height, rc;

	rc = collapsed_check(p, type, "an svg flame graph", err);
	if (rc)
		return rc;
	unit = strcmp(prof_type_unit(type), "bytes") == 0 ? "bytes" : "objects";
	collapsed_stack_init(&st, p);
	if (collapsed_strmap_add(&t.names, "all", 3) != 0)
		goto nomem;
	if (!(t.v = calloc(1, sizeof(*t.v))))
		goto nomem;
	t.cap = t.n = 1;
	t.v[0].first_child = t.v[0].parent = UINT32_MAX;
	for (size_t i = 0; i < p->nsamples; i++) {
		int64_t v = p->samples[i].v[type], cur = 0;
		char buf[COLLAPSED_NAMELEN];

		if (v == 0)
			continue;
		if (__builtin_add_overflow(total, v, &total)) {
			snprintf(err, FMT_ERRLEN, "values too large to sum");
			rc = -ERANGE;
			goto out;
		}
		t.v[0].value = total;
		if (collapsed_stack_fill(&st, p, i))
			goto nomem;
		for (size_t k = 0; k <= st.n; k++) {
			const char *name;
			int64_t nm;

			if (k == st.n && st.n)
				break;
			name = st.n ? collapsed_frame_name(p, st.v[k], buf) : "[unknown]";
			nm = collapsed_strmap_add(&t.names, name, strlen(name));
			if (nm < 0 || (cur = tree_add(&t, (uint32_t)cur, (uint32_t)nm)) < 0)
				goto nomem;
			t.v[cur].value += v;
		}
	}

	px = total ? (double)(SVG_WIDTH - 2 * SVG_XPAD) / (double)total : 0;
	maxdepth = tree_layout(&t, px);
	if (maxdepth < 0)
		goto nomem;
	height = SVG_TOP + (int)(maxdepth + 1) * SVG_ROW + SVG_BOTTOM;

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n"
		"<style>text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; pointer-events: none; }\n"
		"rect:hover { stroke: #000; stroke-width: 1; } .title { font-size: 17px; }</style>\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f8\"/>\n"
		"<text class=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">Flame graph: %s</text>\n"
		"<text x=\"%d\" y=\"42\">total %" PRId64 " %s; hover over a frame for its value</text>\n",
		SVG_WIDTH, height, SVG_WIDTH, height, SVG_WIDTH / 2, prof_type_name(type),
		SVG_XPAD, total, unit);
	for (size_t i = 0; i < t.n; i++)
		if (t.v[i].shown)
			put_node(out, &t, (uint32_t)i, px, height, unit, total);
	fputs("</svg>\n", out);
	if (ferror(out)) {
		snprintf(err, FMT_ERRLEN, "write error");
		rc = -EIO;
	}
	goto out;
nomem:
	snprintf(err, FMT_ERRLEN, "out of memory");
	rc = -ENOMEM;
out:
	collapsed_stack_free(&st);
	collapsed_strmap_free(&t.names);
	free(t.v);
	free(t.slots);
	return rc;
}
