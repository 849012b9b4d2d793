/* test_job.c -- the job library's calls that the command line does not reach */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_job.h"
#include "atm_zoo.h"

/* test_job_execute_again -- a planned and executed job runs its plan once more in a fresh
 * executor and gives that step time, leaving the job's own result as it was; before the
 * first execution it is refused */
static void test_job_execute_again(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	atm_zoo_opts zo = {.batch = 2};
	assert_int_equal(atm_zoo_build(&g, "tiny_mlp", &zo), ATM_OK);
	atm_job_opts o;
	atm_job_opts_default(&o);
	o.placement = "all-slow";
	o.iters = 2;
	o.quiet = true;
	atm_job *j = NULL;
	double t = 0;
	assert_int_equal(atm_job_new(&j, g, &o), ATM_OK);
	assert_int_equal(atm_job_plan(j), ATM_OK);
	assert_int_equal(atm_job_execute_again(j, &t), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "execute the job first"));
	assert_true(t < 0);
	assert_int_equal(atm_job_execute(j), ATM_OK);
	const atm_exec_result *r = atm_job_exec_result(j);
	double first = r->actual_runtime_s;
	char checksum[sizeof r->weights_checksum];
	memcpy(checksum, r->weights_checksum, sizeof checksum);
	assert_true(first > 0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(atm_job_execute_again(j, &t), ATM_OK);
		assert_true(t > 0);
	}
	assert_ptr_equal(atm_job_exec_result(j), r);
	assert_true(atm_job_exec_result(j)->actual_runtime_s == first);
	assert_memory_equal(atm_job_exec_result(j)->weights_checksum, checksum, sizeof checksum);
	/* the job itself still runs once */
	assert_int_equal(atm_job_execute(j), ATM_E_USAGE);
	atm_job_destroy(j);
	atm_graph_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_execute_again),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
