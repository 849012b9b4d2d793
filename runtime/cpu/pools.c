/* pools.c -- a fixed fast arena with caller-given offsets, per-tensor slow heaps, accounting, copies
 *
 * A heap keeps the blocks its tensors gave back and hands them out again to tensors of the same
 * footprint, as the original's pre-allocated pools did: every training step allocates the same
 * tensors, so from the second step on no block comes from the tier and no page is faulted in
 * again (memkind returns freed extents of a PMEM kind to the file, and their pages fault on
 * the next touch: about 13,000 faults a step for an all-slow VGG19). The spare blocks go back
 * to the tier when the pool is destroyed, or when the tier is full. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "memory.h"

/* Offsets in the arena are multiples of this: every tensor starts on a cache
 * line and a full AVX-512 vector, as the kernels expect. */

/* One live allocation; the table is kept sorted by address so frees, range
 * checks and the first-fit search in an fsdax mapping are binary searches or
 * single passes. */
typedef struct {
	char *ptr;
	int64_t bytes;     /* what the caller asked for */
	int64_t footprint; /* bytes taken from the tier (rounded to the alignment) */
} rec;

struct atm_pool {
	pthread_mutex_t lock;  /* the table: the executor allocates while its mover thread copies */
	atm_tier *tier;
	bool arena;
	bool mapping;          /* a heap inside an fsdax mapping: we place tensors ourselves */
	char *base;            /* arena block or mapping */
	int64_t size;          /* arena: block bytes; mapping: mapping bytes */
	int64_t limit_bytes;   /* arena: size; heap: cap (0 none) */
	rec *recs;
	size_t n_recs, cap_recs;
	rec *spare;            /* heap from a kind: blocks given back, kept for reuse */
	size_t n_spare, cap_spare;
	int64_t spare_bytes;
	int64_t in_use_bytes, high_water_bytes, extent_bytes, n_allocs, n_reused;
};

/* round_up -- x up to a multiple of a (a power of two); x is far below INT64_MAX */
static int64_t round_up(int64_t x, int64_t a)
{
	return (x + a - 1) / a * a;
}

/* fmt -- human byte size for messages */
static const char *fmt(int64_t bytes, char *buf, size_t len)
{
	return atm_format_bytes(bytes, buf, len);
}

/* pool_new -- the common part of both pool kinds */
static atm_pool *pool_new(atm_tier *t)
{
	atm_pool *p = calloc(1, sizeof *p);
	if (p) {
		p->tier = t;
		pthread_mutex_init(&p->lock, NULL);
	}
	return p;
}

/* atm_pool_arena_new -- one block of limit_bytes from t */
atm_status atm_pool_arena_new(atm_pool **out, atm_tier *t, int64_t limit_bytes)
{
	atm_status rc = ATM_OK;
	atm_pool *p = NULL;
	char a[32];
	*out = NULL;
	if (limit_bytes <= 0 || limit_bytes > ATM_MAX_BYTES)
		return atm_err(ATM_E_USAGE, "fast arena on %s: limit of %lld bytes is out of range",
		               atm_tier_describe(t)->name, (long long)limit_bytes);
	p = pool_new(t);
	if (!p)
		return atm_err(ATM_E_NOMEM, "out of memory making a pool");
	p->arena = true;
	p->limit_bytes = limit_bytes;
	p->size = limit_bytes;
	if (atm_tier_is_mapping(t)) {
		void *base;
		int64_t bytes;
		if ((rc = atm_tier_map_acquire(t, &base, &bytes)) < 0)
			goto fail;
		p->mapping = true;
		p->base = base;
		if (bytes < limit_bytes) {
			rc = atm_err(ATM_E_NOSPACE, "fast arena of %s (%lld bytes) does not fit %s (%lld bytes)",
			             fmt(limit_bytes, a, sizeof a), (long long)limit_bytes,
			             atm_tier_describe(t)->name, (long long)bytes);
			goto fail;
		}
	} else {
		void *base;
		if ((rc = atm_tier_alloc(t, limit_bytes, &base)) < 0) {
			atm_err_prefix(rc, "fast arena of %s: ", fmt(limit_bytes, a, sizeof a));
			goto fail;
		}
		p->base = base;
	}
	*out = p;
	return ATM_OK;
fail:
	atm_pool_destroy(p);
	return rc;
}

/* atm_pool_heap_new -- per-tensor allocations from t */
atm_status atm_pool_heap_new(atm_pool **out, atm_tier *t, int64_t limit_bytes)
{
	atm_status rc = ATM_OK;
	atm_pool *p = NULL;
	*out = NULL;
	if (limit_bytes < 0)
		return atm_err(ATM_E_USAGE, "heap on %s: negative limit %lld", atm_tier_describe(t)->name,
		               (long long)limit_bytes);
	p = pool_new(t);
	if (!p)
		return atm_err(ATM_E_NOMEM, "out of memory making a pool");
	p->limit_bytes = limit_bytes;
	if (atm_tier_is_mapping(t)) {
		void *base;
		if ((rc = atm_tier_map_acquire(t, &base, &p->size)) < 0)
			goto fail;
		p->mapping = true;
		p->base = base;
	}
	*out = p;
	return ATM_OK;
fail:
	atm_pool_destroy(p);
	return rc;
}

/* release_spare -- every spare block back to the tier */
static void release_spare(atm_pool *p)
{
	for (size_t i = 0; i < p->n_spare; i++)
		atm_tier_free(p->tier, p->spare[i].ptr, p->spare[i].footprint);
	p->n_spare = 0;
	p->spare_bytes = 0;
}

/* take_spare -- a spare block of exactly footprint bytes, removed from the spares; NULL when none */
static char *take_spare(atm_pool *p, int64_t footprint)
{
	for (size_t i = p->n_spare; i-- > 0;)
		if (p->spare[i].footprint == footprint) {
			char *at = p->spare[i].ptr;
			p->spare[i] = p->spare[--p->n_spare];
			p->spare_bytes -= footprint;
			return at;
		}
	return NULL;
}

/* keep_spare -- keep a freed block for reuse; back to the tier when it cannot be tracked */
static void keep_spare(atm_pool *p, char *ptr, int64_t footprint)
{
	if (p->n_spare == p->cap_spare) {
		size_t cap = p->cap_spare ? p->cap_spare * 2 : 64;
		rec *r = realloc(p->spare, cap * sizeof *r);
		if (!r) {
			atm_tier_free(p->tier, ptr, footprint);
			return;
		}
		p->spare = r;
		p->cap_spare = cap;
	}
	p->spare[p->n_spare++] = (rec){ptr, footprint, footprint};
	p->spare_bytes += footprint;
}

/* atm_pool_destroy -- give every live allocation, the spare blocks and the block back to the tier */
void atm_pool_destroy(atm_pool *p)
{
	if (!p)
		return;
	if (!p->arena && !p->mapping) {
		for (size_t i = 0; i < p->n_recs; i++)
			atm_tier_free(p->tier, p->recs[i].ptr, p->recs[i].footprint);
		release_spare(p);
	}
	if (p->mapping)
		atm_tier_map_release(p->tier);
	else if (p->arena && p->base)
		atm_tier_free(p->tier, p->base, p->size);
	free(p->recs);
	free(p->spare);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* lower_bound -- first record whose address is >= ptr */
static size_t lower_bound(const atm_pool *p, const char *ptr)
{
	size_t lo = 0, hi = p->n_recs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((uintptr_t)p->recs[mid].ptr < (uintptr_t)ptr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* reserve -- room for one more record; done before touching the tier so a
 * failure here leaves nothing to undo */
static atm_status reserve(atm_pool *p)
{
	if (p->n_recs < p->cap_recs)
		return ATM_OK;
	size_t cap = p->cap_recs ? p->cap_recs * 2 : 64;
	rec *r = realloc(p->recs, cap * sizeof *r);
	if (!r)
		return atm_err(ATM_E_NOMEM, "out of memory tracking allocations of %s",
		               atm_tier_describe(p->tier)->name);
	p->recs = r;
	p->cap_recs = cap;
	return ATM_OK;
}

/* insert -- record a new allocation at position i and update the counters */
static void insert(atm_pool *p, size_t i, char *ptr, int64_t bytes, int64_t footprint)
{
	memmove(p->recs + i + 1, p->recs + i, (p->n_recs - i) * sizeof *p->recs);
	p->recs[i] = (rec){ptr, bytes, footprint};
	p->n_recs++;
	p->n_allocs++;
	p->in_use_bytes += footprint;
	if (p->in_use_bytes > p->high_water_bytes)
		p->high_water_bytes = p->in_use_bytes;
	if (!p->arena && p->in_use_bytes > p->extent_bytes)
		p->extent_bytes = p->in_use_bytes;
}

/* alloc_at -- atm_pool_alloc_at under the lock */
static atm_status alloc_at(atm_pool *p, int64_t offset, int64_t bytes, void **ptr)
{
	char a[32], b[32];
	atm_status rc;
	*ptr = NULL;
	if (!p->arena)
		return atm_err(ATM_E_USAGE, "alloc_at on the heap of %s: only arenas take offsets",
		               atm_tier_describe(p->tier)->name);
	if (bytes <= 0)
		return atm_err(ATM_E_USAGE, "fast arena: cannot place %lld bytes", (long long)bytes);
	if (offset < 0 || offset % ATM_ARENA_ALIGN)
		return atm_err(ATM_E_USAGE, "fast arena: offset %lld is not a non-negative multiple of %d",
		               (long long)offset, ATM_ARENA_ALIGN);
	/* written as a subtraction so a huge request cannot overflow the check */
	if (offset >= p->limit_bytes || bytes > p->limit_bytes - offset)
		return atm_err(ATM_E_NOSPACE,
		               "fast arena: %lld bytes (%s) at offset %lld end past its limit of %lld bytes "
		               "(%s)",
		               (long long)bytes, fmt(bytes, a, sizeof a), (long long)offset,
		               (long long)p->limit_bytes, fmt(p->limit_bytes, b, sizeof b));
	if ((rc = reserve(p)) < 0)
		return rc;
	char *at = p->base + offset;
	/* after any equal address, so a free takes the newest of two tensors placed alike */
	size_t i = lower_bound(p, at + 1);
	insert(p, i, at, bytes, bytes);
	if (offset + bytes > p->extent_bytes)
		p->extent_bytes = offset + bytes;
	*ptr = at;
	return ATM_OK;
}

/* first_fit -- the lowest aligned gap of the mapping that holds need bytes;
 * returns the record index to insert before, or SIZE_MAX and the largest gap */
static size_t first_fit(const atm_pool *p, int64_t need, int64_t align, char **at, int64_t *largest)
{
	int64_t start = 0;
	*largest = 0;
	for (size_t i = 0; i <= p->n_recs; i++) {
		int64_t end = i < p->n_recs ? p->recs[i].ptr - p->base : p->size;
		int64_t s = round_up(start, align);
		int64_t gap = end > s ? end - s : 0;
		if (gap >= need) {
			*at = p->base + s;
			return i;
		}
		if (gap > *largest)
			*largest = gap;
		if (i < p->n_recs)
			start = (p->recs[i].ptr - p->base) + p->recs[i].footprint;
	}
	return SIZE_MAX;
}

/* alloc -- atm_pool_alloc under the lock */
static atm_status alloc(atm_pool *p, int64_t bytes, void **ptr)
{
	const atm_tier_desc *d = atm_tier_describe(p->tier);
	int64_t align = atm_tier_alignment(p->tier);
	char a[32], b[32], c[32];
	atm_status rc;
	*ptr = NULL;
	if (p->arena)
		return atm_err(ATM_E_USAGE, "alloc on the fast arena: arenas place tensors at offsets");
	if (bytes <= 0 || bytes > ATM_MAX_BYTES)
		return atm_err(ATM_E_USAGE, "%s: cannot allocate %lld bytes", d->name, (long long)bytes);
	int64_t footprint = round_up(bytes, align);
	if (p->limit_bytes && footprint > p->limit_bytes - p->in_use_bytes)
		return atm_err(ATM_E_NOSPACE, "%s: no space for %lld bytes (%s): %s in use of the pool's %s",
		               d->name, (long long)bytes, fmt(bytes, a, sizeof a),
		               fmt(p->in_use_bytes, b, sizeof b), fmt(p->limit_bytes, c, sizeof c));
	if ((rc = reserve(p)) < 0)
		return rc;
	char *at = NULL;
	size_t i;
	if (p->mapping) {
		int64_t largest;
		i = first_fit(p, footprint, align, &at, &largest);
		if (i == SIZE_MAX)
			return atm_err(ATM_E_NOSPACE,
			               "%s: no space for %lld bytes (%s): %s in use, largest free gap %s",
			               d->name, (long long)bytes, fmt(bytes, a, sizeof a),
			               fmt(p->in_use_bytes, b, sizeof b), fmt(largest, c, sizeof c));
	} else if ((at = take_spare(p, footprint))) {
		p->n_reused++;
		i = lower_bound(p, at);
	} else {
		void *q;
		rc = atm_tier_alloc(p->tier, footprint, &q);
		if (rc == ATM_E_NOSPACE && p->n_spare) {
			/* the spares of other sizes hold what the tier lacks */
			release_spare(p);
			rc = atm_tier_alloc(p->tier, footprint, &q);
		}
		if (rc < 0) {
			if (rc == ATM_E_NOSPACE)
				return atm_err(ATM_E_NOSPACE, "%s: no space for %lld bytes (%s): %s in use",
				               d->name, (long long)bytes, fmt(bytes, a, sizeof a),
				               fmt(p->in_use_bytes, b, sizeof b));
			return rc;
		}
		at = q;
		i = lower_bound(p, at);
	}
	insert(p, i, at, bytes, footprint);
	*ptr = at;
	return ATM_OK;
}

/* find_exact -- index of the newest record at ptr, SIZE_MAX when none */
static size_t find_exact(const atm_pool *p, const char *ptr)
{
	size_t i = lower_bound(p, ptr + 1);
	if (i > 0 && p->recs[i - 1].ptr == ptr)
		return i - 1;
	return SIZE_MAX;
}

/* pool_free -- atm_pool_free under the lock */
static atm_status pool_free(atm_pool *p, void *ptr)
{
	if (!ptr)
		return ATM_OK;
	size_t i = find_exact(p, ptr);
	if (i == SIZE_MAX)
		return atm_err(ATM_E_USAGE, "%p was not allocated from the %s pool on %s", ptr,
		               p->arena ? "arena" : "heap", atm_tier_describe(p->tier)->name);
	rec r = p->recs[i];
	memmove(p->recs + i, p->recs + i + 1, (p->n_recs - i - 1) * sizeof *p->recs);
	p->n_recs--;
	p->in_use_bytes -= r.footprint;
	if (!p->arena && !p->mapping)
		keep_spare(p, r.ptr, r.footprint);
	return ATM_OK;
}

/* atm_pool_alloc_at -- arena: bytes at offset, bounds-checked */
atm_status atm_pool_alloc_at(atm_pool *p, int64_t offset, int64_t bytes, void **ptr)
{
	pthread_mutex_lock(&p->lock);
	atm_status rc = alloc_at(p, offset, bytes, ptr);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* atm_pool_alloc -- heap: one tensor from the tier, or a gap of the mapping */
atm_status atm_pool_alloc(atm_pool *p, int64_t bytes, void **ptr)
{
	pthread_mutex_lock(&p->lock);
	atm_status rc = alloc(p, bytes, ptr);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* atm_pool_free -- forget ptr, returning heap memory to the tier */
atm_status atm_pool_free(atm_pool *p, void *ptr)
{
	if (!ptr)
		return ATM_OK; /* as free(NULL), whatever p is */
	pthread_mutex_lock(&p->lock);
	atm_status rc = pool_free(p, ptr);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* inside -- [dst, dst + n) lies in one allocation of p (anywhere in an arena); under the lock */
static bool inside(const atm_pool *p, const char *dst, int64_t n)
{
	if (p->arena)
		return (uintptr_t)dst >= (uintptr_t)p->base &&
		       (uintptr_t)dst - (uintptr_t)p->base <= (uint64_t)p->size &&
		       (uint64_t)n <= (uint64_t)p->size - ((uintptr_t)dst - (uintptr_t)p->base);
	size_t i = lower_bound(p, dst + 1);
	if (i == 0)
		return false;
	const rec *r = &p->recs[i - 1];
	uint64_t off = (uintptr_t)dst - (uintptr_t)r->ptr;
	return off <= (uint64_t)r->bytes && (uint64_t)n <= (uint64_t)r->bytes - off;
}

/* atm_pool_copy -- copy into dst_pool's memory with its tier's routine */
atm_status atm_pool_copy(atm_pool *dst_pool, void *dst, const void *src, int64_t n)
{
	if (n < 0)
		return atm_err(ATM_E_USAGE, "copy of %lld bytes", (long long)n);
	if (n == 0)
		return ATM_OK;
	pthread_mutex_lock(&dst_pool->lock);
	bool ok = dst && src && inside(dst_pool, dst, n);
	pthread_mutex_unlock(&dst_pool->lock);
	/* the copy itself runs unlocked: the caller owns [dst, dst + n) until it frees it */
	if (!ok)
		return atm_err(ATM_E_USAGE, "copy of %lld bytes to %p: not inside an allocation of the %s "
		                            "pool on %s",
		               (long long)n, dst, dst_pool->arena ? "arena" : "heap",
		               atm_tier_describe(dst_pool->tier)->name);
	atm_tier_copy(dst_pool->tier, dst, src, (size_t)n);
	return ATM_OK;
}

/* atm_pool_get_stats -- the counters */
void atm_pool_get_stats(const atm_pool *p, atm_pool_stats *out)
{
	pthread_mutex_lock((pthread_mutex_t *)&p->lock);
	out->limit_bytes = p->limit_bytes;
	out->in_use_bytes = p->in_use_bytes;
	out->high_water_bytes = p->high_water_bytes;
	out->extent_bytes = p->extent_bytes;
	out->n_live = (int64_t)p->n_recs;
	out->n_allocs = p->n_allocs;
	out->n_reused = p->n_reused;
	out->spare_bytes = p->spare_bytes;
	pthread_mutex_unlock((pthread_mutex_t *)&p->lock);
}

/* atm_pool_reset_high_water -- measure from now on (one training step, say) */
void atm_pool_reset_high_water(atm_pool *p)
{
	pthread_mutex_lock(&p->lock);
	p->high_water_bytes = p->in_use_bytes;
	if (p->arena) {
		int64_t end = 0;
		for (size_t i = 0; i < p->n_recs; i++) {
			int64_t e = (p->recs[i].ptr - p->base) + p->recs[i].bytes;
			if (e > end)
				end = e;
		}
		p->extent_bytes = end;
	} else {
		p->extent_bytes = p->in_use_bytes;
	}
	pthread_mutex_unlock(&p->lock);
}

/* atm_pool_tier -- the tier p allocates from */
const atm_tier *atm_pool_tier(const atm_pool *p)
{
	return p->tier;
}

/* atm_pool_base -- the arena's offset 0 */
void *atm_pool_base(const atm_pool *p)
{
	return p->arena ? p->base : NULL;
}
