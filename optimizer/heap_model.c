/* heap_model.c -- where the runtime's slow heap places each tensor, for the 2LM prediction
 *
 * The 2LM cache is indexed by address, so predicting it needs the addresses the executor's slow
 * heap (runtime/cpu/pools.c) gives. That heap rounds each tensor up to the slow tier's alignment
 * (256 bytes for a PMEM directory, the tier an emulated run uses), keeps the blocks freed tensors
 * give back and hands the most recently kept block of exactly the same rounded size to the next
 * tensor that needs it; only when none fits does it take a new block from the tier. This model
 * does the same, and takes new blocks one after the other from an address space that never gets
 * any back (the heap keeps its blocks while it lives). Where it may differ: memkind's allocator
 * (jemalloc) lays new blocks out its own way (size classes, separate extents for large blocks,
 * gaps), so conflicts between blocks taken in the first step can differ; an fsdax mapping's heap
 * places by first fit with no spare blocks; and Memory Mode indexes by physical address, which
 * the operating system scatters page by page. Once the first step is done the executor's heap
 * reuses its blocks as this one does. */
#include <stdlib.h>

#include "opt_internal.h"

/* The slow tier's alignment as runtime/cpu/tiers.c gives it to PMEM directories and fsdax. */
#define HEAP_ALIGN 256

struct block {
	int64_t addr, footprint;
};

struct opt_heap {
	int64_t *addr;        /* per tensor: its block while it has one */
	struct block *spare;  /* blocks given back, the newest last */
	int32_t n_spare, cap_spare;
	int64_t top;          /* the next new block's address */
};

atm_status opt_heap_new(struct opt_heap **out, int32_t n_tensors)
{
	*out = NULL;
	struct opt_heap *h = calloc(1, sizeof *h);
	if (!h || !(h->addr = calloc((size_t)n_tensors + 1, sizeof *h->addr))) {
		free(h);
		return atm_err(ATM_E_NOMEM, "out of memory modelling the slow heap");
	}
	*out = h;
	return ATM_OK;
}

void opt_heap_destroy(struct opt_heap *h)
{
	if (!h)
		return;
	free(h->addr);
	free(h->spare);
	free(h);
}

/* footprint -- bytes rounded up to the heap's alignment */
static int64_t footprint(int64_t bytes)
{
	return (bytes + HEAP_ALIGN - 1) / HEAP_ALIGN * HEAP_ALIGN;
}

void opt_heap_alloc(struct opt_heap *h, int32_t tensor, int64_t bytes)
{
	int64_t need = footprint(bytes);
	/* as pools.c's take_spare: the newest spare of exactly this size, the last moved into
	 * its place */
	for (int32_t i = h->n_spare; i-- > 0;)
		if (h->spare[i].footprint == need) {
			h->addr[tensor] = h->spare[i].addr;
			h->spare[i] = h->spare[--h->n_spare];
			return;
		}
	h->addr[tensor] = h->top;
	h->top += need;
}

atm_status opt_heap_free(struct opt_heap *h, int32_t tensor, int64_t bytes)
{
	if (h->n_spare == h->cap_spare) {
		int32_t cap = h->cap_spare ? h->cap_spare * 2 : 64;
		struct block *b = realloc(h->spare, (size_t)cap * sizeof *b);
		if (!b)
			return atm_err(ATM_E_NOMEM, "out of memory modelling the slow heap");
		h->spare = b;
		h->cap_spare = cap;
	}
	h->spare[h->n_spare++] = (struct block){h->addr[tensor], footprint(bytes)};
	return ATM_OK;
}

int64_t opt_heap_addr(const struct opt_heap *h, int32_t tensor)
{
	return h->addr[tensor];
}
