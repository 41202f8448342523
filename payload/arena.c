/* arena.c - the payload's own memory: counted anonymous mappings and a bump arena, never the hooked allocator. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "hsp.h"

#define CHUNK (1u << 20)

struct chunk {
	struct chunk *next;
	size_t len, used;
};

static uint64_t mapped;                 /* bytes currently mapped by us */
uint64_t mem_cap = (uint64_t)1 << 30;   /* beyond this, samples are dropped */
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static struct chunk *chunks;

void *mem_map(size_t len)
{
	if (!len)
		return NULL;
	len = (len + 4095) & ~(size_t)4095;
	if (ADD(&mapped, len) > mem_cap) {
		ADD(&mapped, -(uint64_t)len);
		return NULL;
	}
	/* MAP_NORESERVE: big sparse tables cost only the pages touched. */
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		ADD(&mapped, -(uint64_t)len);
		return NULL;
	}
	return p;
}

void mem_unmap(void *p, size_t len)
{
	if (!p || !len)
		return;
	len = (len + 4095) & ~(size_t)4095;
	if (munmap(p, len) == 0)
		ADD(&mapped, -(uint64_t)len);
}

uint64_t mem_total(void)
{
	return LOAD_RELAXED(&mapped);
}

void *arena_alloc(size_t len)
{
	void *r = NULL;

	len = (len + 15) & ~(size_t)15;
	pthread_mutex_lock(&arena_lock);
	struct chunk *c = chunks;
	if (!c || c->len - c->used < len) {
		size_t clen = len + sizeof(struct chunk) + 16 > CHUNK ?
			len + sizeof(struct chunk) + 16 : CHUNK;
		struct chunk *n = mem_map(clen);
		if (!n)
			goto out;
		n->len = (clen + 4095) & ~(size_t)4095;
		n->used = (sizeof(struct chunk) + 15) & ~(size_t)15;
		n->next = chunks;
		chunks = n;
		c = n;
	}
	r = (char *)c + c->used;
	c->used += len;
out:
	pthread_mutex_unlock(&arena_lock);
	return r;
}

void arena_free_all(void)
{
	pthread_mutex_lock(&arena_lock);
	struct chunk *c = chunks;
	chunks = NULL;
	while (c) {
		struct chunk *next = c->next;
		mem_unmap(c, c->len);
		c = next;
	}
	pthread_mutex_unlock(&arena_lock);
}

void arena_after_fork(void)
{
	pthread_mutex_init(&arena_lock, NULL);
}
