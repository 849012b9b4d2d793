/* cache_model.c -- a tensor-granularity LRU model of fast memory as a hardware cache (2LM) */
#include <stdlib.h>

#include "atm_core.h"

/* Cached tensors form a doubly linked list, most recently used first. */
struct line {
	int32_t prev, next; /* tensor ids, -1 at the ends */
	int64_t bytes;
	bool cached, dirty;
};

struct atm_cache_model {
	int64_t capacity, used;
	int32_t n;
	int32_t head, tail;
	struct line *lines;
};

atm_status atm_cache_model_new(atm_cache_model **out, int64_t capacity_bytes, int32_t n_tensors)
{
	*out = NULL;
	if (capacity_bytes < 0 || n_tensors < 0)
		return atm_err(ATM_E_USAGE, "a cache model needs a capacity and a tensor count >= 0");
	atm_cache_model *c = calloc(1, sizeof *c);
	if (!c || !(c->lines = calloc((size_t)n_tensors + 1, sizeof *c->lines))) {
		free(c);
		return atm_err(ATM_E_NOMEM, "out of memory creating the 2LM cache model");
	}
	c->capacity = capacity_bytes;
	c->n = n_tensors;
	c->head = c->tail = -1;
	*out = c;
	return ATM_OK;
}

void atm_cache_model_destroy(atm_cache_model *c)
{
	if (!c)
		return;
	free(c->lines);
	free(c);
}

static void unlink_line(atm_cache_model *c, int32_t t)
{
	struct line *l = &c->lines[t];
	if (l->prev >= 0)
		c->lines[l->prev].next = l->next;
	else
		c->head = l->next;
	if (l->next >= 0)
		c->lines[l->next].prev = l->prev;
	else
		c->tail = l->prev;
	l->cached = false;
	c->used -= l->bytes;
}

static void push_front(atm_cache_model *c, int32_t t)
{
	struct line *l = &c->lines[t];
	l->prev = -1;
	l->next = c->head;
	if (c->head >= 0)
		c->lines[c->head].prev = t;
	c->head = t;
	if (c->tail < 0)
		c->tail = t;
	l->cached = true;
	c->used += l->bytes;
}

/* evict_for -- make room for bytes, writing back dirty victims */
static void evict_for(atm_cache_model *c, int64_t bytes, atm_cache_traffic *t)
{
	while (c->used + bytes > c->capacity && c->tail >= 0) {
		int32_t victim = c->tail;
		if (c->lines[victim].dirty)
			t->written_bytes += c->lines[victim].bytes;
		c->lines[victim].dirty = false;
		unlink_line(c, victim);
	}
}

void atm_cache_access(atm_cache_model *c, int32_t tensor, int64_t bytes, bool write,
                      atm_cache_traffic *t)
{
	if (tensor < 0 || tensor >= c->n)
		return;
	struct line *l = &c->lines[tensor];
	if (l->cached) {
		unlink_line(c, tensor);
		push_front(c, tensor);
		l->dirty |= write;
		return;
	}
	if (bytes > c->capacity) {
		/* too large to cache: it streams from and to slow memory */
		if (write)
			t->written_bytes += bytes;
		else
			t->read_bytes += bytes;
		return;
	}
	/* a write allocates without reading: the whole tensor is overwritten */
	if (!write)
		t->read_bytes += bytes;
	evict_for(c, bytes, t);
	l->bytes = bytes;
	l->dirty = write;
	push_front(c, tensor);
}

void atm_cache_drop(atm_cache_model *c, int32_t tensor)
{
	if (tensor < 0 || tensor >= c->n || !c->lines[tensor].cached)
		return;
	c->lines[tensor].dirty = false;
	unlink_line(c, tensor);
}

void atm_cache_flush(atm_cache_model *c, atm_cache_traffic *t)
{
	for (int32_t x = c->head; x >= 0; x = c->lines[x].next)
		if (c->lines[x].dirty) {
			t->written_bytes += c->lines[x].bytes;
			c->lines[x].dirty = false;
		}
}
