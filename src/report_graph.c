/* report_graph.c - pprof's call graph over the prepared stacks: flat and cum per node, edges, node and edge cutoffs, sorting, rows. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "report_int.h"

#define NONE UINT32_MAX

static uint64_t edge_hash(uint32_t a, uint32_t b)
{
	uint64_t h = ((uint64_t)a << 32) | b;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static int ehash_grow(struct rep_view *v)
{
	size_t cap = v->ehcap ? v->ehcap * 2 : 1024;
	uint32_t *t = malloc(cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t, 0xff, cap * sizeof(*t));
	for (size_t i = 0; i < v->nedges; i++) {
		size_t j = edge_hash(v->edges[i].src, v->edges[i].dst) & (cap - 1);
		while (t[j] != NONE)
			j = (j + 1) & (cap - 1);
		t[j] = (uint32_t)i;
	}
	free(v->ehash);
	v->ehash = t;
	v->ehcap = cap;
	return 0;
}

static int add_edge(struct rep_view *v, uint32_t src, uint32_t dst, int64_t w, bool residual, bool inl)
{
	if ((v->nedges + 1) * 2 > v->ehcap && ehash_grow(v))
		return -ENOMEM;
	size_t j = edge_hash(src, dst) & (v->ehcap - 1);
	while (v->ehash[j] != NONE) {
		struct redge *e = &v->edges[v->ehash[j]];
		if (e->src == src && e->dst == dst) {
			/* once per sample, like cum */
			if (e->stamp == v->stamp)
				return 0;
			e->stamp = v->stamp;
			e->w += w;
			if (residual)
				e->residual = true;
			if (!inl)
				e->inl = false;
			return 0;
		}
		j = (j + 1) & (v->ehcap - 1);
	}
	if (rep_grow(&v->edges, &v->cedges, v->nedges + 1, sizeof(*v->edges)))
		return -ENOMEM;
	v->edges[v->nedges] = (struct redge){ .src = src, .dst = dst, .w = w, .stamp = v->stamp,
					      .inl = inl, .residual = residual };
	v->ehash[j] = (uint32_t)v->nedges++;
	return 0;
}

/* pprof's newGraph: kept == NULL keeps every node. */
int rep_graph_build(struct rep_view *v, const bool *kept)
{
	for (size_t i = 0; i < v->nnodes; i++) {
		v->nodes[i].flat = v->nodes[i].cum = 0;
		v->nodes[i].stamp = 0;
		v->nodes[i].in_graph = false;
	}
	v->nedges = 0;
	if (v->ehash)
		memset(v->ehash, 0xff, v->ehcap * sizeof(*v->ehash));
	v->stamp = 0;

	for (size_t s = 0; s < v->nsamples; s++) {
		const struct rsample *smp = &v->samples[s];
		uint32_t parent = NONE;
		bool residual = false;

		v->stamp++;
		for (uint32_t i = 0; i < smp->n; i++) {
			uint32_t n = v->frames[smp->off + i].node;
			if (kept && !kept[n]) {
				residual = true;
				continue;
			}
			struct rnode *nd = &v->nodes[n];
			if (nd->stamp != v->stamp) {
				nd->stamp = v->stamp;
				nd->cum += smp->w;
			}
			if (parent != NONE && n != parent) {
				int rc = add_edge(v, parent, n, smp->w, residual, v->frames[smp->off + i].inl);
				if (rc)
					return rc;
			}
			parent = n;
			residual = false;
		}
		if (parent != NONE && !residual)
			v->nodes[parent].flat += smp->w;
	}
	for (size_t i = 0; i < v->nnodes; i++) {
		struct rnode *nd = &v->nodes[i];
		nd->in_graph = (!kept || kept[i]) && (nd->flat != 0 || nd->cum != 0);
	}
	return 0;
}

static int64_t iabs(int64_t x)
{
	return x < 0 ? -x : x;
}

static int key_cmp(const struct rnode *a, const struct rnode *b)
{
	int c;
	if (a->name != b->name) {
		c = strcmp(a->name ? a->name : "", b->name ? b->name : "");
		if (c)
			return c;
	}
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->file != b->file) {
		c = strcmp(a->file ? a->file : "", b->file ? b->file : "");
		if (c)
			return c;
	}
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	if (a->obj != b->obj) {
		c = strcmp(a->obj ? a->obj : "", b->obj ? b->obj : "");
		if (c)
			return c;
	}
	return 0;
}

/* FlatNameOrder / CumNameOrder of pprof's graph package. */
static int cmp_nodes(const void *pa, const void *pb, void *ctx)
{
	const struct rep_view *v = ctx;
	const struct rnode *a = &v->nodes[*(const uint32_t *)pa];
	const struct rnode *b = &v->nodes[*(const uint32_t *)pb];
	int64_t x, y;
	int c;

	if (v->o.cum_sort) {
		x = iabs(a->cum), y = iabs(b->cum);
		if (x != y)
			return x > y ? -1 : 1;
		if ((c = strcmp(a->pname, b->pname)))
			return c;
		x = iabs(a->flat), y = iabs(b->flat);
		if (x != y)
			return x > y ? -1 : 1;
	} else {
		x = iabs(a->flat), y = iabs(b->flat);
		if (x != y)
			return x > y ? -1 : 1;
		if ((c = strcmp(a->pname, b->pname)))
			return c;
		x = iabs(a->cum), y = iabs(b->cum);
		if (x != y)
			return x > y ? -1 : 1;
	}
	return key_cmp(a, b);
}

/* Collects the nodes of the current graph into v->order, sorted. */
int rep_graph_sort(struct rep_view *v)
{
	size_t n = 0;
	free(v->order);
	v->order = malloc((v->nnodes + 1) * sizeof(*v->order));
	if (!v->order)
		return -ENOMEM;
	for (size_t i = 0; i < v->nnodes; i++)
		if (v->nodes[i].in_graph)
			v->order[n++] = (uint32_t)i;
	v->norder = n;
	qsort_r(v->order, n, sizeof(*v->order), cmp_nodes, v);
	return 0;
}

/* pprof's newTrimmedGraph (non-visual): node cutoff, sort, nodecount cut,
 * edge cutoff. */
int rep_graph_trim(struct rep_view *v)
{
	int rc = rep_graph_build(v, NULL);
	if (rc)
		return rc;

	int64_t flat_sum = 0;
	size_t ingraph = 0;
	for (size_t i = 0; i < v->nnodes; i++)
		if (v->nodes[i].in_graph) {
			flat_sum += v->nodes[i].flat;
			ingraph++;
		}
	int64_t node_cut = iabs((int64_t)((double)flat_sum * v->o.nodefraction));
	int64_t edge_cut = iabs((int64_t)((double)flat_sum * v->o.edgefraction));

	bool *kept = calloc(v->nnodes + 1, sizeof(*kept));
	if (!kept)
		return -ENOMEM;
	if (node_cut > 0) {
		size_t nk = 0;
		for (size_t i = 0; i < v->nnodes; i++) {
			kept[i] = v->nodes[i].in_graph && iabs(v->nodes[i].cum) >= node_cut;
			nk += kept[i];
		}
		if (nk != ingraph) {
			v->dropped_nodes = ingraph - nk;
			if ((rc = rep_graph_build(v, kept)))
				goto out;
		}
	}
	if ((rc = rep_graph_sort(v)))
		goto out;
	v->orig_count = v->norder;
	if (v->o.nodecount > 0 && (size_t)v->o.nodecount < v->norder) {
		memset(kept, 0, (v->nnodes + 1) * sizeof(*kept));
		for (size_t i = 0; i < (size_t)v->o.nodecount; i++)
			kept[v->order[i]] = true;
		if ((rc = rep_graph_build(v, kept)) || (rc = rep_graph_sort(v)))
			goto out;
	}
	for (size_t i = 0; i < v->nedges; i++)
		if (iabs(v->edges[i].w) < edge_cut)
			v->edges[i].trimmed = true;
out:
	free(kept);
	return rc;
}

void rep_pick_unit(struct rep_view *v)
{
	int64_t min = 0;

	v->count_unit = !strcmp(v->unit, "count");
	if (v->o.unit != REP_UNIT_MINIMUM) {
		v->out_unit = v->o.unit;
		return;
	}
	if (v->o.kind == REP_LIST) {
		/* pprof's list never resolves "minimum": each value scales alone */
		v->out_unit = REP_UNIT_AUTO;
		return;
	}
	for (size_t i = 0; i < v->norder; i++) {
		const struct rnode *n = &v->nodes[v->order[i]];
		int64_t m = iabs(n->flat);
		if (m == 0)
			m = iabs(n->cum);
		if (m > 0 && (min == 0 || m < min))
			min = m;
	}
	if (v->norder == 0) {
		v->out_unit = REP_UNIT_AUTO;
		return;
	}
	v->out_unit = rep_minimum_unit(min, v->total);
}

/* ---- edges of shown nodes (tree, peek) -------------------------------- */

static int cmp_edges(const void *pa, const void *pb, void *ctx)
{
	const struct rep_view *v = ctx;
	const struct redge *a = &v->edges[*(const uint32_t *)pa];
	const struct redge *b = &v->edges[*(const uint32_t *)pb];
	int c;

	if (a->w != b->w && iabs(a->w) != iabs(b->w))
		return iabs(a->w) > iabs(b->w) ? -1 : 1;
	if ((c = strcmp(v->nodes[a->src].pname, v->nodes[b->src].pname)))
		return c;
	return strcmp(v->nodes[a->dst].pname, v->nodes[b->dst].pname);
}

int rep_graph_links(struct rep_view *v)
{
	uint32_t *pos = malloc((v->nnodes + 1) * sizeof(*pos));
	if (!pos)
		return -ENOMEM;
	memset(pos, 0xff, (v->nnodes + 1) * sizeof(*pos));
	v->links = calloc(v->norder + 1, sizeof(*v->links));
	if (!v->links) {
		free(pos);
		return -ENOMEM;
	}
	for (size_t i = 0; i < v->norder; i++)
		pos[v->order[i]] = (uint32_t)i;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t e = 0; e < v->nedges; e++) {
			const struct redge *ed = &v->edges[e];
			if (ed->trimmed)
				continue;
			uint32_t a = pos[ed->dst], b = pos[ed->src];
			if (a != NONE) {
				if (pass)
					v->links[a].in[v->links[a].nin] = (uint32_t)e;
				v->links[a].nin++;
			}
			if (b != NONE) {
				if (pass)
					v->links[b].out[v->links[b].nout] = (uint32_t)e;
				v->links[b].nout++;
			}
		}
		if (pass)
			break;
		for (size_t i = 0; i < v->norder; i++) {
			struct rlinks *l = &v->links[i];
			l->in = malloc((l->nin + 1) * sizeof(*l->in));
			l->out = malloc((l->nout + 1) * sizeof(*l->out));
			if (!l->in || !l->out) {
				free(pos);
				return -ENOMEM;
			}
			l->nin = l->nout = 0;
		}
	}
	for (size_t i = 0; i < v->norder; i++) {
		qsort_r(v->links[i].in, v->links[i].nin, sizeof(uint32_t), cmp_edges, v);
		qsort_r(v->links[i].out, v->links[i].nout, sizeof(uint32_t), cmp_edges, v);
	}
	free(pos);
	return 0;
}

int rep_graph_rows(struct rep_view *v)
{
	v->rows = calloc(v->norder + 1, sizeof(*v->rows));
	if (!v->rows)
		return -ENOMEM;
	for (size_t i = 0; i < v->norder; i++) {
		const struct rnode *n = &v->nodes[v->order[i]];
		v->rows[i].name = n->pname;
		v->rows[i].flat = n->flat;
		v->rows[i].cum = n->cum;
		v->rows[i].inline_label = "";
	}
	/* pprof marks a node "(inline)" when every call into it that is
	 * still in the graph was inlined, "(partial-inline)" when some were. */
	uint8_t *seen = calloc(v->nnodes + 1, 1);
	uint32_t *pos = malloc((v->nnodes + 1) * sizeof(*pos));
	if (!seen || !pos) {
		free(seen);
		free(pos);
		return -ENOMEM;
	}
	memset(pos, 0xff, (v->nnodes + 1) * sizeof(*pos));
	for (size_t i = 0; i < v->norder; i++)
		pos[v->order[i]] = (uint32_t)i;
	for (size_t e = 0; e < v->nedges; e++) {
		const struct redge *ed = &v->edges[e];
		if (ed->trimmed || pos[ed->dst] == NONE)
			continue;
		seen[ed->dst] |= ed->inl ? 1 : 2;
	}
	for (size_t i = 0; i < v->norder; i++) {
		uint8_t s = seen[v->order[i]];
		if (s == 1)
			v->rows[i].inline_label = "(inline)";
		else if (s == 3)
			v->rows[i].inline_label = "(partial-inline)";
	}
	free(seen);
	free(pos);
	return 0;
}

