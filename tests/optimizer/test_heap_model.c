/* test_heap_model.c -- the slow heap as the 2LM prediction places tensors: rounding, reuse of
 * freed blocks newest first by exact size, new blocks one after another, no memory */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "atm_optimizer.h"
#include "../optimizer/opt_internal.h"

/* every allocation of the optimizer (the test links with --wrap=malloc and the others) */
#define ALLOC_FAIL_WRAP
#include "common/alloc_fail.h"

/* heap -- a new model of n tensors */
static struct opt_heap *heap(int32_t n)
{
	struct opt_heap *h = NULL;
	assert_int_equal(opt_heap_new(&h, n), ATM_OK);
	assert_non_null(h);
	return h;
}

/* test_heap_model_new_blocks_rounded -- new blocks follow each other, each rounded up to 256 */
static void test_heap_model_new_blocks_rounded(void **state)
{
	(void)state;
	struct opt_heap *h = heap(4);
	opt_heap_alloc(h, 0, 100);
	opt_heap_alloc(h, 1, 300);
	opt_heap_alloc(h, 2, 256);
	opt_heap_alloc(h, 3, 1);
	assert_int_equal(opt_heap_addr(h, 0), 0);
	assert_int_equal(opt_heap_addr(h, 1), 256);
	assert_int_equal(opt_heap_addr(h, 2), 768);
	assert_int_equal(opt_heap_addr(h, 3), 1024);
	opt_heap_destroy(h);
	opt_heap_destroy(NULL);
}

/* test_heap_model_reuses_newest_same_size -- a freed block goes to the next tensor of the same
 * rounded size, the newest freed first; another size takes a new block */
static void test_heap_model_reuses_newest_same_size(void **state)
{
	(void)state;
	struct opt_heap *h = heap(8);
	opt_heap_alloc(h, 0, 200);  /* 0 */
	opt_heap_alloc(h, 1, 256);  /* 256 */
	opt_heap_alloc(h, 2, 600);  /* 512, 768 bytes */
	opt_heap_alloc(h, 3, 10);   /* 1280 */
	assert_int_equal(opt_heap_free(h, 0, 200), ATM_OK);
	assert_int_equal(opt_heap_free(h, 3, 10), ATM_OK);
	assert_int_equal(opt_heap_free(h, 2, 600), ATM_OK);
	opt_heap_alloc(h, 4, 64);   /* the newest 256-byte block: 3's */
	assert_int_equal(opt_heap_addr(h, 4), 1280);
	opt_heap_alloc(h, 5, 256);  /* then 0's */
	assert_int_equal(opt_heap_addr(h, 5), 0);
	opt_heap_alloc(h, 6, 512);  /* no 512-byte block: 2's 768 do not fit it exactly */
	assert_int_equal(opt_heap_addr(h, 6), 1536);
	opt_heap_alloc(h, 7, 700);  /* 2's */
	assert_int_equal(opt_heap_addr(h, 7), 512);
	opt_heap_destroy(h);
}

/* frees_once -- a heap whose spare list grows twice; a failed run leaves nothing */
static atm_status frees_once(void *arg)
{
	(void)arg;
	struct opt_heap *h = (struct opt_heap *)1;
	atm_status rc = opt_heap_new(&h, 200);
	if (rc < 0)
		assert_null(h);
	for (int32_t t = 0; rc == ATM_OK && t < 200; t++)
		opt_heap_alloc(h, t, 256);
	for (int32_t t = 0; rc == ATM_OK && t < 200; t++)
		rc = opt_heap_free(h, t, 256);
	opt_heap_destroy(h);
	return rc;
}

/* test_heap_model_out_of_memory -- every allocation failing is ATM_E_NOMEM */
static void test_heap_model_out_of_memory(void **state)
{
	(void)state;
	assert_int_equal(alloc_fail_sweep("the slow heap model", frees_once, NULL), 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_heap_model_new_blocks_rounded),
		cmocka_unit_test(test_heap_model_reuses_newest_same_size),
		cmocka_unit_test(test_heap_model_out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
