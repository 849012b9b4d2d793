/* test_pools.c -- fast arena bounds, slow heaps on pmem dirs and fsdax files, accounting, copies, full tiers */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atm_core.h"
#include "memory.h"

#define MIB ((int64_t)1 << 20)

/* Every test gets a machine, its fast tier, and a fresh directory. */
typedef struct {
	char dir[128];
	atm_tier_topo *topo;
	atm_tier *fast;
} fixture;

/* ---------------------------------------------------------------- helpers */

/* rm_one -- nftw callback removing one entry */
static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* setup -- topology, fast tier, temporary directory */
static int setup(void **state)
{
	fixture *f = calloc(1, sizeof *f);
	if (!f)
		return -1;
	snprintf(f->dir, sizeof f->dir, "/tmp/atm-test-pools-XXXXXX");
	if (!mkdtemp(f->dir) || atm_tier_topo_new(&f->topo) < 0 ||
	    atm_tier_open_fast(&f->fast, f->topo, NULL) < 0)
		return -1;
	*state = f;
	return 0;
}

/* teardown -- undo setup */
static int teardown(void **state)
{
	fixture *f = *state;
	atm_tier_destroy(f->fast);
	atm_tier_topo_destroy(f->topo);
	int rc = nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return rc;
}

/* has -- the current error message contains s */
static void has(const char *s)
{
	if (!strstr(atm_errmsg(), s))
		fail_msg("message \"%s\" lacks \"%s\"", atm_errmsg(), s);
}

/* open_pmem -- a pmem-dir slow tier in the fixture's directory */
static atm_tier *open_pmem(fixture *f, int64_t limit)
{
	atm_tier *t = NULL;
	atm_tier_opts o = {.slow = "pmem-dir", .pmem_dir = f->dir, .slow_bytes = limit};
	assert_int_equal(atm_tier_open_slow(&t, f->topo, &o), ATM_OK);
	return t;
}

/* open_fsdax -- an fsdax tier on a file of the fixture's directory; NULL when
 * libpmem2 will not map a plain file here (then the caller skips) */
static atm_tier *open_fsdax(fixture *f, const char *name, int64_t bytes, char *path, size_t len)
{
	atm_tier *t = NULL;
	snprintf(path, len, "%s/%s", f->dir, name);
	atm_tier_opts o = {.slow = "fsdax", .fsdax_path = path, .slow_bytes = bytes};
	atm_status rc = atm_tier_open_slow(&t, f->topo, &o);
	if (rc == ATM_E_UNSUPPORTED) {
		print_message("libpmem2 refuses %s: %s\n", path, atm_errmsg());
		return NULL;
	}
	assert_int_equal(rc, ATM_OK);
	return t;
}

/* fill -- a recognizable pattern */
static void fill(unsigned char *p, int64_t n, unsigned seed)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

/* check -- the pattern is there */
static void check(const unsigned char *p, int64_t n, unsigned seed)
{
	for (int64_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 31 + seed))
			fail_msg("byte %lld is %u", (long long)i, p[i]);
}

/* n_entries -- files in dir besides . and .. */
static int n_entries(const char *dir)
{
	int n = 0;
	DIR *d = opendir(dir);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* ---------------------------------------------------------------- arena */

static void test_pools_arena_alloc_at_bounds(void **state)
{
	fixture *f = *state;
	atm_pool *a = NULL;
	void *p = (void *)&p;
	assert_int_equal(atm_pool_arena_new(&a, f->fast, MIB), ATM_OK);
	char *base = atm_pool_base(a);
	assert_non_null(base);
	assert_int_equal((uintptr_t)base % 64, 0);

	assert_int_equal(atm_pool_alloc_at(a, 0, MIB, &p), ATM_OK);
	assert_ptr_equal(p, base);
	memset(p, 7, MIB); /* the whole block is really there */
	assert_int_equal(atm_pool_alloc_at(a, MIB - 64, 64, &p), ATM_OK);
	assert_ptr_equal(p, base + MIB - 64);

	/* past the limit: an error naming the request and the limit, never malloc */
	assert_int_equal(atm_pool_alloc_at(a, 512 * 1024, MIB, &p), ATM_E_NOSPACE);
	assert_null(p);
	has("1048576 bytes (1.00 MiB) at offset 524288");
	has("limit of 1048576 bytes");
	assert_int_equal(atm_pool_alloc_at(a, MIB, 64, &p), ATM_E_NOSPACE);
	assert_int_equal(atm_pool_alloc_at(a, MIB - 64, 65, &p), ATM_E_NOSPACE);
	/* sizes near INT64_MAX must not wrap around the check */
	assert_int_equal(atm_pool_alloc_at(a, 64, INT64_MAX, &p), ATM_E_NOSPACE);
	assert_int_equal(atm_pool_alloc_at(a, INT64_MAX - 64, 64, &p), ATM_E_USAGE);
	assert_int_equal(atm_pool_alloc_at(a, (INT64_MAX / 64) * 64, 64, &p), ATM_E_NOSPACE);

	/* out of range or misaligned offsets and empty sizes are caller mistakes */
	assert_int_equal(atm_pool_alloc_at(a, -64, 64, &p), ATM_E_USAGE);
	has("offset -64");
	assert_int_equal(atm_pool_alloc_at(a, 3, 64, &p), ATM_E_USAGE);
	has("multiple of 64");
	assert_int_equal(atm_pool_alloc_at(a, 0, 0, &p), ATM_E_USAGE);
	assert_int_equal(atm_pool_alloc_at(a, 0, -1, &p), ATM_E_USAGE);
	assert_null(p);

	atm_pool_stats s;
	atm_pool_get_stats(a, &s);
	assert_int_equal(s.n_live, 2);
	assert_int_equal(s.limit_bytes, MIB);
	atm_pool_destroy(a);
	atm_pool_destroy(NULL);
}

static void test_pools_arena_limits_and_kinds(void **state)
{
	fixture *f = *state;
	atm_pool *a = (atm_pool *)&a;
	void *p = NULL;
	assert_int_equal(atm_pool_arena_new(&a, f->fast, 0), ATM_E_USAGE);
	assert_null(a);
	assert_int_equal(atm_pool_arena_new(&a, f->fast, -1), ATM_E_USAGE);
	/* more than the machine has: the tier says no, nothing falls back */
	assert_int_equal(atm_pool_arena_new(&a, f->fast, ATM_MAX_BYTES), ATM_E_NOSPACE);
	assert_null(a);
	has("fast arena of");
	assert_int_equal(atm_pool_arena_new(&a, f->fast, 4096), ATM_OK);
	assert_int_equal(atm_pool_alloc(a, 64, &p), ATM_E_USAGE);
	has("arenas place tensors at offsets");
	atm_pool_destroy(a);

	atm_pool *h = NULL;
	assert_int_equal(atm_pool_heap_new(&h, f->fast, 0), ATM_OK);
	assert_null(atm_pool_base(h));
	assert_int_equal(atm_pool_alloc_at(h, 0, 64, &p), ATM_E_USAGE);
	has("only arenas take offsets");
	assert_ptr_equal(atm_pool_tier(h), f->fast);
	atm_pool_destroy(h);
	assert_int_equal(atm_pool_heap_new(&h, f->fast, -1), ATM_E_USAGE);
	assert_null(h);
}

static void test_pools_arena_overlap_is_callers_business(void **state)
{
	fixture *f = *state;
	atm_pool *a = NULL;
	void *x, *y, *z;
	assert_int_equal(atm_pool_arena_new(&a, f->fast, 8192), ATM_OK);
	assert_int_equal(atm_pool_alloc_at(a, 0, 4096, &x), ATM_OK);
	assert_int_equal(atm_pool_alloc_at(a, 1024, 4096, &y), ATM_OK);
	assert_int_equal(atm_pool_alloc_at(a, 0, 128, &z), ATM_OK);
	assert_ptr_equal(x, z);
	assert_ptr_equal((char *)y - (char *)x, 1024);
	atm_pool_stats s;
	atm_pool_get_stats(a, &s);
	assert_int_equal(s.in_use_bytes, 4096 + 4096 + 128);
	/* two tensors at one address: a free takes the newer (128 bytes) */
	assert_int_equal(atm_pool_free(a, z), ATM_OK);
	atm_pool_get_stats(a, &s);
	assert_int_equal(s.in_use_bytes, 8192);
	assert_int_equal(atm_pool_free(a, x), ATM_OK);
	assert_int_equal(atm_pool_free(a, x), ATM_E_USAGE);
	atm_pool_destroy(a);
}

static void test_pools_arena_high_water_and_extent(void **state)
{
	fixture *f = *state;
	atm_pool *a = NULL;
	void *p[3];
	atm_pool_stats s;
	assert_int_equal(atm_pool_arena_new(&a, f->fast, 1 << 16), ATM_OK);
	assert_int_equal(atm_pool_alloc_at(a, 0, 1000, &p[0]), ATM_OK);
	assert_int_equal(atm_pool_alloc_at(a, 1024, 3000, &p[1]), ATM_OK);
	assert_int_equal(atm_pool_alloc_at(a, 8192, 500, &p[2]), ATM_OK);
	atm_pool_get_stats(a, &s);
	assert_int_equal(s.in_use_bytes, 4500);
	assert_int_equal(s.high_water_bytes, 4500);
	assert_int_equal(s.extent_bytes, 8192 + 500);
	assert_int_equal(s.n_allocs, 3);
	assert_int_equal(atm_pool_free(a, p[1]), ATM_OK);
	assert_int_equal(atm_pool_free(a, p[2]), ATM_OK);
	assert_int_equal(atm_pool_alloc_at(a, 64, 100, &p[1]), ATM_OK);
	atm_pool_get_stats(a, &s);
	assert_int_equal(s.in_use_bytes, 1100);
	assert_int_equal(s.high_water_bytes, 4500);
	assert_int_equal(s.extent_bytes, 8692);
	assert_int_equal(s.n_live, 2);
	assert_int_equal(s.n_allocs, 4);
	atm_pool_reset_high_water(a);
	atm_pool_get_stats(a, &s);
	assert_int_equal(s.high_water_bytes, 1100);
	assert_int_equal(s.extent_bytes, 1000);
	atm_pool_destroy(a);
}

/* ---------------------------------------------------------------- heaps */

static void test_pools_heap_pmem_dir_write_read(void **state)
{
	fixture *f = *state;
	atm_tier *slow = open_pmem(f, 0);
	atm_pool *h = NULL;
	unsigned char *p[5];
	atm_pool_stats s;
	assert_int_equal(atm_pool_heap_new(&h, slow, 0), ATM_OK);
	const int64_t sizes[5] = {1, 100, 4096, 3 * MIB + 5, 256};
	int64_t footprint = 0;
	for (int i = 0; i < 5; i++) {
		assert_int_equal(atm_pool_alloc(h, sizes[i], (void **)&p[i]), ATM_OK);
		/* 256: Optane's internal line; more than the 64 every tier gives */
		assert_int_equal((uintptr_t)p[i] % 256, 0);
		fill(p[i], sizes[i], (unsigned)i);
		footprint += (sizes[i] + 255) / 256 * 256;
	}
	for (int i = 0; i < 5; i++)
		check(p[i], sizes[i], (unsigned)i);
	atm_pool_get_stats(h, &s);
	assert_int_equal(s.in_use_bytes, footprint);
	assert_int_equal(s.high_water_bytes, footprint);
	assert_int_equal(s.n_live, 5);
	assert_int_equal(atm_pool_free(h, p[3]), ATM_OK);
	atm_pool_get_stats(h, &s);
	assert_int_equal(s.in_use_bytes, footprint - (3 * MIB + 256));
	assert_int_equal(s.high_water_bytes, footprint);
	atm_pool_destroy(h); /* frees the four still live */
	atm_tier_destroy(slow);
	/* memkind unlinks its file at once and the space goes with the kind */
	assert_int_equal(n_entries(f->dir), 0);
}

static void test_pools_heap_cap_is_nospace(void **state)
{
	fixture *f = *state;
	atm_tier *slow = open_pmem(f, 0);
	atm_pool *h = NULL;
	void *p = NULL, *q = (void *)&q;
	assert_int_equal(atm_pool_heap_new(&h, slow, MIB), ATM_OK);
	assert_int_equal(atm_pool_alloc(h, 768 * 1024, &p), ATM_OK);
	assert_int_equal(atm_pool_alloc(h, 512 * 1024, &q), ATM_E_NOSPACE);
	assert_null(q);
	has(atm_tier_describe(slow)->name);
	has("no space for 524288 bytes (512.00 KiB)");
	has("768.00 KiB in use of the pool's 1.00 MiB");
	assert_int_equal(atm_pool_alloc(h, 256 * 1024, &q), ATM_OK);
	assert_int_equal(atm_pool_alloc(h, 0, &q), ATM_E_USAGE);
	atm_pool_destroy(h);
	atm_tier_destroy(slow);
}

static void test_pools_pmem_kind_full_is_nospace(void **state)
{
	fixture *f = *state;
	atm_tier *slow = open_pmem(f, 16 * MIB);
	atm_pool *h = NULL;
	void *p = (void *)&p;
	assert_int_equal(atm_pool_heap_new(&h, slow, 0), ATM_OK);
	/* memkind's ENOMEM from a full PMEM kind, reported as the tier being full */
	assert_int_equal(atm_pool_alloc(h, 32 * MIB, &p), ATM_E_NOSPACE);
	assert_null(p);
	has("pmem dir");
	has(f->dir);
	has("no space for 33554432 bytes (32.00 MiB)");
	/* and the tier still works for what fits */
	assert_int_equal(atm_pool_alloc(h, MIB, &p), ATM_OK);
	memset(p, 1, MIB);
	atm_pool_destroy(h);
	atm_tier_destroy(slow);
}

/* a heap hands a freed block out again to a tensor of the same footprint (a later step's), and
 * keeps it for that size while other sizes come from the tier */
static void test_pools_heap_reuses_freed_blocks(void **state)
{
	fixture *f = *state;
	atm_tier *slow = open_pmem(f, 16 * MIB);
	atm_pool *h = NULL;
	void *a = NULL, *b = NULL, *c = NULL, *big = NULL;
	atm_pool_stats s;
	assert_int_equal(atm_pool_heap_new(&h, slow, 0), ATM_OK);
	assert_int_equal(atm_pool_alloc(h, 3 * MIB, &a), ATM_OK);
	assert_int_equal(atm_pool_alloc(h, 2 * MIB, &b), ATM_OK);
	assert_int_equal(atm_pool_free(h, a), ATM_OK);
	assert_int_equal(atm_pool_free(h, b), ATM_OK);
	atm_pool_get_stats(h, &s);
	assert_int_equal(s.in_use_bytes, 0);
	assert_int_equal(s.spare_bytes, 5 * MIB);
	/* the same sizes again: the same blocks, nothing from the tier */
	assert_int_equal(atm_pool_alloc(h, 2 * MIB - 100, &c), ATM_OK); /* rounds up to 2 MiB */
	assert_ptr_equal(c, b);
	assert_int_equal(atm_pool_alloc(h, 3 * MIB, &a), ATM_OK);
	atm_pool_get_stats(h, &s);
	assert_int_equal(s.n_reused, 2);
	assert_int_equal(s.spare_bytes, 0);
	assert_int_equal(s.in_use_bytes, 5 * MIB);
	fill(a, 3 * MIB, 7);
	check(a, 3 * MIB, 7);
	/* a size no spare has comes from the tier; the spares stay for their sizes */
	assert_int_equal(atm_pool_free(h, a), ATM_OK);
	assert_int_equal(atm_pool_alloc(h, MIB, &big), ATM_OK);
	assert_ptr_not_equal(big, a);
	atm_pool_get_stats(h, &s);
	assert_int_equal(s.spare_bytes, 3 * MIB);
	assert_int_equal(s.in_use_bytes, 3 * MIB);
	atm_pool_destroy(h);
	atm_tier_destroy(slow);
	assert_int_equal(n_entries(f->dir), 0);
}

static void test_pools_free_errors(void **state)
{
	fixture *f = *state;
	atm_pool *h = NULL;
	int local;
	void *p;
	assert_int_equal(atm_pool_heap_new(&h, f->fast, 0), ATM_OK);
	assert_int_equal(atm_pool_free(h, NULL), ATM_OK);
	assert_int_equal(atm_pool_free(h, &local), ATM_E_USAGE);
	has("was not allocated from the heap pool");
	assert_int_equal(atm_pool_alloc(h, 64, &p), ATM_OK);
	assert_int_equal(atm_pool_free(h, (char *)p + 64), ATM_E_USAGE);
	assert_int_equal(atm_pool_free(h, p), ATM_OK);
	assert_int_equal(atm_pool_free(h, p), ATM_E_USAGE);
	atm_pool_destroy(h);
}

/* A copier thread: copies into one allocation of a heap while another thread churns it. */
struct copier {
	atm_pool *heap;
	void *dst;
	char src[4096];
	int n_failed;
	_Atomic int stop;
};

static void *copier_main(void *arg)
{
	struct copier *c = arg;
	while (!c->stop)
		if (atm_pool_copy(c->heap, c->dst, c->src, sizeof c->src) < 0)
			c->n_failed++;
	return NULL;
}

/* test_pools_copy_while_another_thread_allocates -- the executor's mover thread copies into a
 * heap while the schedule allocates and frees in it: every copy into a live allocation holds,
 * however the pool's table grows and shifts meanwhile */
static void test_pools_copy_while_another_thread_allocates(void **state)
{
	fixture *f = *state;
	struct copier c = {0};
	void *blocks[512];
	assert_int_equal(atm_pool_heap_new(&c.heap, f->fast, 0), ATM_OK);
	assert_int_equal(atm_pool_alloc(c.heap, sizeof c.src, &c.dst), ATM_OK);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, copier_main, &c), 0);
	for (int round = 0; round < 40; round++) {
		for (int i = 0; i < 512; i++)
			assert_int_equal(atm_pool_alloc(c.heap, 64 + 64 * (i % 7), &blocks[i]), ATM_OK);
		for (int i = 0; i < 512; i++)
			assert_int_equal(atm_pool_free(c.heap, blocks[(i * 37) % 512]), ATM_OK);
	}
	c.stop = 1;
	pthread_join(th, NULL);
	assert_int_equal(c.n_failed, 0);
	atm_pool_destroy(c.heap);
}

/* ---------------------------------------------------------------- fsdax files */

static void test_pools_fsdax_file_heap(void **state)
{
	fixture *f = *state;
	char path[256];
	atm_tier *slow = open_fsdax(f, "pool", 4 * MIB, path, sizeof path);
	if (!slow)
		skip();
	const atm_tier_desc *d = atm_tier_describe(slow);
	assert_int_equal(d->kind, ATM_TIER_FSDAX_FILE);
	assert_int_equal(d->capacity_bytes, 4 * MIB);
	assert_non_null(strstr(d->name, path));
	assert_true(atm_tier_is_mapping(slow));

	atm_pool *h = NULL, *again = (atm_pool *)&again;
	void *a, *b, *c, *x = (void *)&x;
	assert_int_equal(atm_pool_heap_new(&h, slow, 0), ATM_OK);
	/* one pool per mapping: a second one would place tensors on the first's */
	assert_int_equal(atm_pool_heap_new(&again, slow, 0), ATM_E_USAGE);
	assert_null(again);
	has("already used by another pool");

	assert_int_equal(atm_pool_alloc(h, MIB, &a), ATM_OK);
	assert_int_equal(atm_pool_alloc(h, MIB + 1, &b), ATM_OK);
	assert_int_equal(atm_pool_alloc(h, MIB, &c), ATM_OK);
	assert_int_equal((uintptr_t)b % 256, 0);
	assert_ptr_equal((char *)b, (char *)a + MIB);
	assert_ptr_equal((char *)c, (char *)b + MIB + 256);
	/* 4 MiB - 3 MiB - 256 left: a whole MiB does not fit */
	assert_int_equal(atm_pool_alloc(h, MIB, &x), ATM_E_NOSPACE);
	assert_null(x);
	has(path);
	has("largest free gap 1023.75 KiB");
	/* freeing b opens a gap first-fit reuses */
	assert_int_equal(atm_pool_free(h, b), ATM_OK);
	assert_int_equal(atm_pool_alloc(h, MIB, &x), ATM_OK);
	assert_ptr_equal(x, b);

	/* a non-temporal copy lands in the file itself */
	unsigned char pattern[4096];
	fill(pattern, sizeof pattern, 9);
	assert_int_equal(atm_pool_copy(h, c, pattern, sizeof pattern), ATM_OK);
	check(c, sizeof pattern, 9);
	int64_t off = (char *)c - (char *)a;
	atm_pool_destroy(h);
	atm_tier_destroy(slow);

	/* the file is the user's: it stays, with what was written */
	unsigned char back[4096];
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, back, sizeof back, off), (ssize_t)sizeof back);
	close(fd);
	check(back, sizeof back, 9);
}

static void test_pools_fsdax_errors(void **state)
{
	fixture *f = *state;
	char path[256];
	atm_tier *t = (atm_tier *)&t;
	snprintf(path, sizeof path, "%s/none", f->dir);
	atm_tier_opts o = {.slow = "fsdax", .fsdax_path = path};
	assert_int_equal(atm_tier_open_slow(&t, f->topo, &o), ATM_E_IO);
	assert_null(t);
	has(path);
	has("does not exist (give a size to create it)");

	int fd = open(path, O_CREAT | O_RDWR, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(atm_tier_open_slow(&t, f->topo, &o), ATM_E_USAGE);
	has("is empty");

	o.fsdax_path = f->dir;
	assert_int_equal(atm_tier_open_slow(&t, f->topo, &o), ATM_E_IO);
	has("Is a directory");
	o.fsdax_path = path;
	o.slow_bytes = -1;
	assert_int_equal(atm_tier_open_slow(&t, f->topo, &o), ATM_E_USAGE);
	assert_null(t);
}

static void test_pools_fsdax_no_space_for_the_file(void **state)
{
	fixture *f = *state;
	char path[256];
	atm_tier *t = (atm_tier *)&t;
	struct rlimit old, small = {8 * MIB, 8 * MIB};
	/* a file size limit stands in for a full file system: growing the file
	 * fails the same way (and SIGXFSZ must not kill the test) */
	snprintf(path, sizeof path, "%s/big", f->dir);
	atm_tier_opts o = {.slow = "fsdax", .fsdax_path = path, .slow_bytes = 64 * MIB};
	void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	small.rlim_max = old.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	atm_status rc = atm_tier_open_slow(&t, f->topo, &o);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, old_handler);
	assert_int_equal(rc, ATM_E_NOSPACE);
	assert_null(t);
	has(path);
	has("no space for 67108864 bytes");
}

/* ---------------------------------------------------------------- copies */

static void test_pools_copy_between_pools(void **state)
{
	fixture *f = *state;
	char path[256];
	atm_tier *slow = open_pmem(f, 0);
	atm_tier *dax = open_fsdax(f, "copies", 2 * MIB, path, sizeof path);
	atm_pool *arena = NULL, *heap = NULL, *file = NULL;
	const int64_t n = 300000;
	unsigned char *a, *b, *h, *x = NULL;
	assert_int_equal(atm_pool_arena_new(&arena, f->fast, 2 * MIB), ATM_OK);
	assert_int_equal(atm_pool_heap_new(&heap, slow, 0), ATM_OK);
	assert_int_equal(atm_pool_alloc_at(arena, 0, n, (void **)&a), ATM_OK);
	assert_int_equal(atm_pool_alloc_at(arena, MIB, n, (void **)&b), ATM_OK);
	assert_int_equal(atm_pool_alloc(heap, n, (void **)&h), ATM_OK);
	fill(a, n, 42);
	/* fast -> slow -> (fsdax ->) fast: the bytes survive every routine */
	assert_int_equal(atm_pool_copy(heap, h, a, n), ATM_OK);
	check(h, n, 42);
	if (dax) {
		assert_int_equal(atm_pool_heap_new(&file, dax, 0), ATM_OK);
		assert_int_equal(atm_pool_alloc(file, n, (void **)&x), ATM_OK);
		assert_int_equal(atm_pool_copy(file, x, h, n), ATM_OK);
		check(x, n, 42);
		assert_int_equal(atm_pool_copy(arena, b, x, n), ATM_OK);
	} else {
		assert_int_equal(atm_pool_copy(arena, b, h, n), ATM_OK);
	}
	check(b, n, 42);

	/* a destination outside the pool's allocations is refused, not written */
	assert_int_equal(atm_pool_copy(heap, h + 1, a, n), ATM_E_USAGE);
	has("not inside an allocation of the heap pool");
	assert_int_equal(atm_pool_copy(heap, a, h, 16), ATM_E_USAGE);
	assert_int_equal(atm_pool_copy(arena, b, h, 2 * MIB), ATM_E_USAGE);
	has("arena");
	assert_int_equal(atm_pool_copy(arena, b, h, -1), ATM_E_USAGE);
	assert_int_equal(atm_pool_copy(arena, b, h, 0), ATM_OK);
	/* inside an allocation, at an offset, is fine */
	assert_int_equal(atm_pool_copy(heap, h + 100, a, n - 100), ATM_OK);
	check(h + 100, n - 100, 42);

	atm_pool_destroy(file);
	atm_pool_destroy(heap);
	atm_pool_destroy(arena);
	atm_tier_destroy(dax);
	atm_tier_destroy(slow);
}

/* ---------------------------------------------------------------- real hardware */

static void test_pools_hw_fsdax_on_dax_mount(void **state)
{
	fixture *f = *state;
	const char *dir = getenv("ATM_FSDAX_DIR");
	char path[512];
	atm_tier *t = NULL;
	snprintf(path, sizeof path, "%s/autotm-test-pool", dir);
	atm_tier_opts o = {.slow = "fsdax", .fsdax_path = path, .slow_bytes = 16 * MIB};
	assert_int_equal(atm_tier_open_slow(&t, f->topo, &o), ATM_OK);
	/* on a real fsdax mount MAP_SYNC works and stores are byte- or line-grained */
	assert_true(atm_tier_describe(t)->dax);
	assert_non_null(strstr(atm_tier_describe(t)->name, "(DAX)"));
	atm_tier_destroy(t);
	unlink(path);
}

/* main -- the portable suite; with --hardware, the test that needs an fsdax
 * mount of real PMM (ATM_FSDAX_DIR), exiting 77 (skipped) without one */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pools_arena_alloc_at_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pools_copy_while_another_thread_allocates, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_pools_arena_limits_and_kinds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pools_arena_overlap_is_callers_business, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_pools_arena_high_water_and_extent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pools_heap_pmem_dir_write_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pools_heap_cap_is_nospace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pools_pmem_kind_full_is_nospace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pools_heap_reuses_freed_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pools_free_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pools_fsdax_file_heap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pools_fsdax_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pools_fsdax_no_space_for_the_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pools_copy_between_pools, setup, teardown),
	};
	const struct CMUnitTest hardware[] = {
		cmocka_unit_test_setup_teardown(test_pools_hw_fsdax_on_dax_mount, setup, teardown),
	};
	if (argc > 1 && strcmp(argv[1], "--hardware") == 0) {
		if (!getenv("ATM_FSDAX_DIR")) {
			printf("ATM_FSDAX_DIR (a directory on an fsdax mount of PMM) is not set: skipped\n");
			return 77;
		}
		return cmocka_run_group_tests(hardware, NULL, NULL);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
