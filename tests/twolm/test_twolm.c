/* test_twolm.c -- the 2LM cache model: address-indexed sets, conflicts, write-backs of dead
 * data, reuse of freed addresses, write-miss fills, partial lines, bad sizes, no memory */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "atm_core.h"
#include "atm_twolm.h"

/* every allocation of the model (the test links with --wrap=malloc and the others) */
#define ALLOC_FAIL_WRAP
#include "common/alloc_fail.h"

#define LINE ATM_CACHE_LINE_BYTES

/* cache -- a new model of capacity bytes in 64-byte lines */
static atm_twolm *cache(int64_t capacity)
{
	atm_twolm *c = NULL;
	assert_int_equal(atm_twolm_new(&c, capacity, LINE), ATM_OK);
	assert_non_null(c);
	assert_int_equal(atm_twolm_line_bytes(c), LINE);
	return c;
}

/* test_twolm_read_misses_then_hits -- the first read fills every line it touches, the
 * second finds them */
static void test_twolm_read_misses_then_hits(void **state)
{
	(void)state;
	atm_twolm *c = cache(1024);
	atm_twolm_traffic t = {0};
	atm_twolm_access(c, 0, 400, false, &t); /* lines 0..6 */
	assert_int_equal(t.read_bytes, 7 * LINE);
	assert_int_equal(t.n_misses, 7);
	atm_twolm_access(c, 0, 400, false, &t);
	assert_int_equal(t.read_bytes, 7 * LINE);
	assert_int_equal(t.written_bytes, 0);
	atm_twolm_access(c, 0, 0, true, &t); /* nothing touched */
	assert_int_equal(t.n_misses, 7);
	atm_twolm_destroy(c);
	atm_twolm_destroy(NULL);
}

/* test_twolm_conflict_evicts_with_room -- two small tensors one cache size apart share
 * sets: each evicts the other though together they fill a sixteenth of the cache */
static void test_twolm_conflict_evicts_with_room(void **state)
{
	(void)state;
	atm_twolm *c = cache(4096);
	atm_twolm_traffic t = {0};
	atm_twolm_access(c, 0, 128, false, &t);    /* a: sets 0 and 1 */
	atm_twolm_access(c, 4096, 128, false, &t); /* b: the same sets */
	assert_int_equal(t.read_bytes, 256);
	atm_twolm_access(c, 0, 128, false, &t);    /* a was evicted by b */
	assert_int_equal(t.read_bytes, 384);
	atm_twolm_access(c, 4096, 128, false, &t);
	assert_int_equal(t.read_bytes, 512);
	assert_int_equal(t.written_bytes, 0); /* clean lines leave silently */
	/* placed elsewhere, b keeps to sets of its own and both stay */
	atm_twolm_access(c, 4096 + 256, 128, false, &t);
	atm_twolm_access(c, 4096, 128, false, &t);
	atm_twolm_access(c, 4096 + 256, 128, false, &t);
	assert_int_equal(t.read_bytes, 640);
	atm_twolm_destroy(c);
}

/* test_twolm_dead_dirty_written_back -- a tensor written and then freed (the model is never
 * told) leaves dirty lines that are written back when a later tensor evicts them */
static void test_twolm_dead_dirty_written_back(void **state)
{
	(void)state;
	atm_twolm *c = cache(4096);
	atm_twolm_traffic t = {0};
	atm_twolm_access(c, 1024, 256, true, &t); /* a: written, then it dies */
	assert_int_equal(t.written_bytes, 0);
	atm_twolm_access(c, 4096 + 1024, 128, false, &t); /* b: evicts half of a's lines */
	assert_int_equal(t.written_bytes, 128);
	atm_twolm_flush(c, &t); /* the other half is still dirty */
	assert_int_equal(t.written_bytes, 256);
	atm_twolm_flush(c, &t); /* clean now */
	assert_int_equal(t.written_bytes, 256);
	atm_twolm_destroy(c);
}

/* test_twolm_freed_address_reused -- a tensor given a dead one's address hits the lines it
 * left: no miss, no write-back, though a different tensor */
static void test_twolm_freed_address_reused(void **state)
{
	(void)state;
	atm_twolm *c = cache(4096);
	atm_twolm_traffic t = {0};
	atm_twolm_access(c, 512, 256, true, &t); /* a: written, then freed */
	assert_int_equal(t.read_bytes, 256);     /* its write misses filled four lines */
	atm_twolm_access(c, 512, 192, false, &t); /* b, smaller, at a's address */
	assert_int_equal(t.read_bytes, 256);
	assert_int_equal(t.n_misses, 4);
	atm_twolm_access(c, 512, 192, true, &t);
	assert_int_equal(t.written_bytes, 0);
	atm_twolm_destroy(c);
}

/* test_twolm_write_miss_fills -- a write miss reads its line from slow memory and leaves it
 * dirty: a slow read now and a write-back later, as Memory Mode does */
static void test_twolm_write_miss_fills(void **state)
{
	(void)state;
	atm_twolm *c = cache(1024);
	atm_twolm_traffic t = {0};
	atm_twolm_access(c, 0, LINE, true, &t);
	assert_int_equal(t.read_bytes, LINE);
	assert_int_equal(t.fill_bytes, LINE);
	assert_int_equal(t.written_bytes, 0);
	assert_int_equal(t.n_misses, 1);
	atm_twolm_access(c, 0, LINE, true, &t); /* a write hit costs nothing more */
	assert_int_equal(t.read_bytes, LINE);
	atm_twolm_access(c, 1024, LINE, true, &t); /* evicts the dirty line, fills its own */
	assert_int_equal(t.read_bytes, 2 * LINE);
	assert_int_equal(t.fill_bytes, 2 * LINE);
	assert_int_equal(t.written_bytes, LINE);
	atm_twolm_access(c, 2048, LINE, false, &t); /* a read miss is no fill */
	assert_int_equal(t.read_bytes, 3 * LINE);
	assert_int_equal(t.fill_bytes, 2 * LINE);
	assert_int_equal(t.written_bytes, 2 * LINE);
	atm_twolm_flush(c, &t);
	assert_int_equal(t.written_bytes, 2 * LINE);
	atm_twolm_destroy(c);
}

/* test_twolm_wait -- a read miss costs its slow time less the fast time the kernel spent
 * on the same read; a fill and a write-back, traffic the kernel never made, cost all of it */
static void test_twolm_wait(void **state)
{
	(void)state;
	/* 1 GB read and written at 2 and 1 GB/s, 10 GB/s fast */
	atm_twolm_traffic demand = {.read_bytes = 1000000000};
	assert_float_equal(atm_twolm_wait_s(&demand, 2, 1, 10), 0.5 - 0.1, 1e-12);
	atm_twolm_traffic fill = {.read_bytes = 1000000000, .fill_bytes = 1000000000};
	assert_float_equal(atm_twolm_wait_s(&fill, 2, 1, 10), 0.5, 1e-12);
	atm_twolm_traffic back = {.written_bytes = 1000000000};
	assert_float_equal(atm_twolm_wait_s(&back, 2, 1, 10), 1.0, 1e-12);
	atm_twolm_traffic all = {.read_bytes = 3000000000, .fill_bytes = 1000000000,
	                         .written_bytes = 1000000000};
	assert_float_equal(atm_twolm_wait_s(&all, 2, 1, 10), 2 * 0.4 + 0.5 + 1.0, 1e-12);
	/* fast bandwidth unknown: every miss whole; a slow tier as fast as fast memory: fills and
	 * write-backs still cost */
	assert_float_equal(atm_twolm_wait_s(&all, 2, 1, 0), 1.0 + 0.5 + 1.0, 1e-12);
	assert_float_equal(atm_twolm_wait_s(&all, 10, 10, 10), 0.1 + 0.1, 1e-12);
	assert_float_equal(atm_twolm_wait_s(&all, 0, 1, 10), 0, 0);
}

/* test_twolm_partial_lines -- a tensor off the line boundary touches every line it
 * overlaps; its neighbour sharing a line hits it */
static void test_twolm_partial_lines(void **state)
{
	(void)state;
	atm_twolm *c = cache(1024);
	atm_twolm_traffic t = {0};
	atm_twolm_access(c, 32, LINE, false, &t); /* half of line 0, half of line 1 */
	assert_int_equal(t.read_bytes, 2 * LINE);
	assert_int_equal(t.n_misses, 2);
	atm_twolm_access(c, 96, 32, true, &t); /* the rest of line 1: a hit, now dirty */
	assert_int_equal(t.read_bytes, 2 * LINE);
	atm_twolm_access(c, 1024 + 64, 1, false, &t); /* one byte evicts the whole dirty line */
	assert_int_equal(t.written_bytes, LINE);
	assert_int_equal(t.read_bytes, 3 * LINE);
	atm_twolm_destroy(c);
}

/* test_twolm_larger_than_cache -- a tensor twice the cache evicts its own first half: it
 * misses whole every time, and written, half of it goes back on the way */
static void test_twolm_larger_than_cache(void **state)
{
	(void)state;
	atm_twolm *c = cache(256);
	atm_twolm_traffic t = {0};
	atm_twolm_access(c, 0, 512, false, &t);
	atm_twolm_access(c, 0, 512, false, &t);
	assert_int_equal(t.read_bytes, 1024);
	assert_int_equal(t.written_bytes, 0);
	atm_twolm_access(c, 0, 512, true, &t);
	assert_int_equal(t.read_bytes, 1536);
	assert_int_equal(t.written_bytes, 256);
	atm_twolm_flush(c, &t);
	assert_int_equal(t.written_bytes, 512);
	atm_twolm_destroy(c);
}

/* test_twolm_negative_addresses -- addresses below the caller's base wrap to the last sets */
static void test_twolm_negative_addresses(void **state)
{
	(void)state;
	atm_twolm *c = cache(1024);
	atm_twolm_traffic t = {0};
	atm_twolm_access(c, -LINE, LINE, true, &t);          /* line -1: the last set */
	atm_twolm_access(c, 1024 - LINE, LINE, false, &t);   /* line 15: the same set */
	assert_int_equal(t.n_misses, 2);
	assert_int_equal(t.written_bytes, LINE);
	atm_twolm_access(c, -2 * LINE - 1, 2, false, &t);    /* lines -3 and -2 */
	assert_int_equal(t.n_misses, 4);
	atm_twolm_access(c, -LINE - 1, 1, false, &t);        /* line -2 again: a hit */
	assert_int_equal(t.n_misses, 4);
	atm_twolm_destroy(c);
}

/* test_twolm_refuses_bad_sizes -- no line, or a line that is no power of two, is a usage
 * error naming the value */
static void test_twolm_refuses_bad_sizes(void **state)
{
	(void)state;
	atm_twolm *c = (atm_twolm *)1;
	assert_int_equal(atm_twolm_new(&c, 0, LINE), ATM_E_USAGE);
	assert_null(c);
	assert_string_equal(atm_errmsg(), "a 2LM cache of 0 bytes holds no 64-byte line: give a cache "
	                    "of at least 64 bytes (the fast memory caching the slow memory)");
	assert_int_equal(atm_twolm_new(&c, 63, LINE), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "a 2LM cache of 63 bytes holds no 64-byte line"));
	assert_int_equal(atm_twolm_new(&c, -1, LINE), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "a 2LM cache of -1 bytes"));
	assert_int_equal(atm_twolm_new(&c, 4096, 48), ATM_E_USAGE);
	assert_string_equal(atm_errmsg(), "a 2LM cache line of 48 bytes: a line is a power of two "
	                    "bytes long (64 in Memory Mode)");
	assert_int_equal(atm_twolm_new(&c, 4096, 0), ATM_E_USAGE);
	assert_null(c);
	/* a capacity off the line keeps its whole lines: 100 bytes is one line */
	assert_int_equal(atm_twolm_new(&c, 100, LINE), ATM_OK);
	atm_twolm_traffic t = {0};
	atm_twolm_access(c, 0, LINE, false, &t);
	atm_twolm_access(c, LINE, LINE, false, &t);
	atm_twolm_access(c, 0, LINE, false, &t);
	assert_int_equal(t.n_misses, 3);
	atm_twolm_destroy(c);
}

/* new_once -- one cache made and destroyed; a failed one leaves nothing */
static atm_status new_once(void *arg)
{
	(void)arg;
	atm_twolm *c = NULL;
	atm_status rc = atm_twolm_new(&c, 4096, LINE);
	if (rc < 0)
		assert_null(c);
	atm_twolm_destroy(c);
	return rc;
}

/* test_twolm_out_of_memory -- either of its two allocations failing is ATM_E_NOMEM */
static void test_twolm_out_of_memory(void **state)
{
	(void)state;
	assert_int_equal(alloc_fail_sweep("atm_twolm_new", new_once, NULL), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_twolm_read_misses_then_hits),
		cmocka_unit_test(test_twolm_conflict_evicts_with_room),
		cmocka_unit_test(test_twolm_dead_dirty_written_back),
		cmocka_unit_test(test_twolm_freed_address_reused),
		cmocka_unit_test(test_twolm_write_miss_fills),
		cmocka_unit_test(test_twolm_wait),
		cmocka_unit_test(test_twolm_partial_lines),
		cmocka_unit_test(test_twolm_larger_than_cache),
		cmocka_unit_test(test_twolm_negative_addresses),
		cmocka_unit_test(test_twolm_refuses_bad_sizes),
		cmocka_unit_test(test_twolm_out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
