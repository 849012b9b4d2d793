/* test_cache_model.c -- the 2LM cache model: hits, misses, write-backs, streaming and drops */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "atm_core.h"

static void test_cache_model_read_misses_then_hits(void **state)
{
	(void)state;
	atm_cache_model *c = NULL;
	atm_cache_traffic t = {0};
	assert_int_equal(atm_cache_model_new(&c, 1000, 4), ATM_OK);
	atm_cache_access(c, 0, 400, false, &t);
	assert_int_equal(t.read_bytes, 400);
	atm_cache_access(c, 0, 400, false, &t);
	assert_int_equal(t.read_bytes, 400); /* a hit costs nothing */
	assert_int_equal(t.written_bytes, 0);
	atm_cache_model_destroy(c);
	atm_cache_model_destroy(NULL);
}

static void test_cache_model_lru_eviction_writes_back_dirty(void **state)
{
	(void)state;
	atm_cache_model *c = NULL;
	atm_cache_traffic t = {0};
	assert_int_equal(atm_cache_model_new(&c, 1000, 4), ATM_OK);
	atm_cache_access(c, 0, 400, true, &t);  /* written: allocated dirty, nothing read */
	atm_cache_access(c, 1, 400, false, &t); /* read miss */
	assert_int_equal(t.read_bytes, 400);
	atm_cache_access(c, 1, 400, false, &t); /* 1 is now most recent */
	atm_cache_access(c, 2, 400, false, &t); /* evicts 0, the least recent, dirty */
	assert_int_equal(t.read_bytes, 800);
	assert_int_equal(t.written_bytes, 400);
	atm_cache_access(c, 1, 400, false, &t); /* still cached */
	assert_int_equal(t.read_bytes, 800);
	atm_cache_access(c, 0, 400, false, &t); /* gone: a miss again, evicting clean 2 */
	assert_int_equal(t.read_bytes, 1200);
	assert_int_equal(t.written_bytes, 400);
	atm_cache_model_destroy(c);
}

static void test_cache_model_large_tensors_stream(void **state)
{
	(void)state;
	atm_cache_model *c = NULL;
	atm_cache_traffic t = {0};
	assert_int_equal(atm_cache_model_new(&c, 1000, 4), ATM_OK);
	atm_cache_access(c, 0, 600, false, &t);
	atm_cache_access(c, 3, 5000, false, &t);
	atm_cache_access(c, 3, 5000, true, &t);
	assert_int_equal(t.read_bytes, 5600);
	assert_int_equal(t.written_bytes, 5000);
	atm_cache_access(c, 0, 600, false, &t); /* the big one did not evict it */
	assert_int_equal(t.read_bytes, 5600);
	atm_cache_model_destroy(c);
}

static void test_cache_model_drop_and_flush(void **state)
{
	(void)state;
	atm_cache_model *c = NULL;
	atm_cache_traffic t = {0};
	assert_int_equal(atm_cache_model_new(&c, 1000, 4), ATM_OK);
	atm_cache_access(c, 0, 300, true, &t);
	atm_cache_access(c, 1, 300, true, &t);
	atm_cache_drop(c, 0); /* dead: no write-back */
	atm_cache_flush(c, &t);
	assert_int_equal(t.written_bytes, 300);
	atm_cache_flush(c, &t); /* clean now */
	assert_int_equal(t.written_bytes, 300);
	atm_cache_access(c, 9, 10, false, &t); /* out of range: ignored */
	assert_int_equal(t.read_bytes, 0);
	atm_cache_model_destroy(c);
	assert_int_equal(atm_cache_model_new(&c, -1, 4), ATM_E_USAGE);
	assert_null(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cache_model_read_misses_then_hits),
		cmocka_unit_test(test_cache_model_lru_eviction_writes_back_dirty),
		cmocka_unit_test(test_cache_model_large_tensors_stream),
		cmocka_unit_test(test_cache_model_drop_and_flush),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
