/* mods.c - the target's loaded ELF objects (from its maps), classified: libc, loader, allocator, executable. */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static enum mod_kind classify(const char *path, const char *exe)
{
	const char *b = base_name(path);

	if (exe[0] && !strcmp(path, exe))
		return MOD_EXE;
	/* musl's libc is also its loader: it answers dlopen, so call it libc. */
	if (!fnmatch("ld-musl-*.so*", b, 0) || !fnmatch("libc.musl-*.so*", b, 0))
		return MOD_LIBC;
	if (!fnmatch("ld-linux*.so*", b, 0) || !fnmatch("ld-[0-9]*.so", b, 0) || !strcmp(b, "ld.so.1"))
		return MOD_LDSO;
	if (!strcmp(b, "libc.so.6") || !fnmatch("libc-[0-9]*.so", b, 0))
		return MOD_LIBC;
	if (!strncmp(b, "libjemalloc", 11) || !strncmp(b, "libtcmalloc", 11) ||
	    !strncmp(b, "libmimalloc", 11) || !strncmp(b, "libhoard", 8) ||
	    !strncmp(b, "libtbbmalloc", 12) || !strncmp(b, "libsnmalloc", 11))
		return MOD_ALLOCATOR;
	return MOD_OTHER;
}

int mods_build(pid_t pid, const struct proc_maps *m, struct mods *mods)
{
	char exe[PATH_MAX + 1] = "", link[64];
	int cap = 0;

	memset(mods, 0, sizeof(*mods));
	mods->pid = pid;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;

	for (int i = 0; i < m->n; i++) {
		const struct proc_map *mp = &m->v[i];
		struct mod *md = NULL;

		if (mp->path[0] != '/' || !mp->ino)
			continue;
		for (int k = 0; k < mods->n; k++)
			if (mods->v[k].dev == mp->dev && mods->v[k].ino == mp->ino &&
			    !strcmp(mods->v[k].path, mp->path)) {
				md = &mods->v[k];
				break;
			}
		if (!md) {
			if (mods->n == cap) {
				int nc = cap ? cap * 2 : 32;
				struct mod *nv = realloc(mods->v, nc * sizeof(*nv));
				if (!nv) {
					mods_free(mods);
					return -ENOMEM;
				}
				mods->v = nv;
				cap = nc;
			}
			md = &mods->v[mods->n++];
			memset(md, 0, sizeof(*md));
			md->path = strdup(mp->path);
			if (!md->path) {
				mods->n--;
				mods_free(mods);
				return -ENOMEM;
			}
			md->dev = mp->dev;
			md->ino = mp->ino;
			md->lo = mp->start;
			md->hi = mp->end;
			md->kind = classify(mp->path, exe);
			/* First mapping of the file: its start minus the file
			 * offset is the load address of file offset 0. */
			md->bias = mp->start - mp->offset;
			md->m0_start = mp->start;
			md->m0_end = mp->end;
			md->m0_off = mp->offset;
		}
		if (mp->start < md->lo)
			md->lo = mp->start;
		if (mp->end > md->hi)
			md->hi = mp->end;
	}
	return 0;
}

void mods_free(struct mods *mods)
{
	for (int i = 0; i < mods->n; i++) {
		free(mods->v[i].path);
		elfsym_free(&mods->v[i].syms);
	}
	free(mods->v);
	mods->v = NULL;
	mods->n = 0;
}

struct mod *mods_find(struct mods *mods, uint64_t addr)
{
	for (int i = 0; i < mods->n; i++)
		if (addr >= mods->v[i].lo && addr < mods->v[i].hi)
			return &mods->v[i];
	return NULL;
}

struct mod *mods_by_kind(struct mods *mods, enum mod_kind kind)
{
	for (int i = 0; i < mods->n; i++)
		if (mods->v[i].kind == kind)
			return &mods->v[i];
	return NULL;
}

int mods_syms(struct mods *mods, struct mod *md)
{
	struct proc_map mp;
	uint64_t vaddr = 0;
	int fd, r;

	if (md->syms_tried)
		return md->syms.v || md->syms.n ? 0 : -ENOENT;
	md->syms_tried = true;
	memset(&mp, 0, sizeof(mp));
	mp.start = md->m0_start;
	mp.end = md->m0_end;
	mp.offset = md->m0_off;
	mp.path = md->path;
	mp.dev = md->dev;
	mp.ino = md->ino;
	fd = proc_open_mapped(mods->pid, &mp);
	if (fd < 0)
		return fd;
	/* bias: where the file's first PT_LOAD landed minus its p_vaddr. */
	r = elfsym_first_vaddr(fd, &vaddr);
	if (!r)
		md->bias = (mp.start - mp.offset) - vaddr;
	if (!r)
		r = elfsym_load(fd, md->bias, &md->syms);
	close(fd);
	return r;
}

int mods_refresh(pid_t pid, const struct proc_maps *m, struct mods *mods)
{
	struct mods nm;
	int r = mods_build(pid, m, &nm);

	if (r)
		return r;
	/* Keep the symbol tables already read: same file at the same place. */
	for (int i = 0; i < nm.n; i++)
		for (int k = 0; k < mods->n; k++) {
			struct mod *o = &mods->v[k];
			if (o->syms_tried && o->dev == nm.v[i].dev && o->ino == nm.v[i].ino &&
			    o->m0_start == nm.v[i].m0_start) {
				nm.v[i].syms = o->syms;
				nm.v[i].bias = o->bias;
				nm.v[i].syms_tried = true;
				memset(&o->syms, 0, sizeof(o->syms));
				o->syms_tried = false;
				break;
			}
		}
	mods_free(mods);
	*mods = nm;
	return 0;
}
