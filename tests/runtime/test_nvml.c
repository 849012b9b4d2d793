/* test_nvml.c -- a GPU's energy counter from NVML loaded at run time: a machine without NVML is
 * told so (the run goes on without energy), and a stand-in NVML built by the tests
 * (fake_nvml.c, FAKE_NVML) is read: the counter in joules, the clocks, the power limit */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_runtime.h"

/* test_nvml_absent -- no library there: ATM_E_UNSUPPORTED saying so, nothing read */
static void test_nvml_absent(void **state)
{
	(void)state;
	atm_gpu_energy e = {.joules = 5};
	assert_int_equal(atm_nvml_read("/nonexistent/libnvidia-ml.so.1", NULL, 0, true, &e),
	                 ATM_E_UNSUPPORTED);
	assert_non_null(strstr(atm_errmsg(), "no NVML"));
	assert_non_null(strstr(atm_errmsg(), "energy is not measured"));
	assert_true(e.joules == 0 && e.sm_mhz == 0);
}

/* test_nvml_reads_the_counter -- joules from the counter's millijoules, by index and by bus
 * id; clocks and the power limit beside */
static void test_nvml_reads_the_counter(void **state)
{
	(void)state;
	atm_gpu_energy a, b;
	assert_int_equal(atm_nvml_read(FAKE_NVML, NULL, 0, false, &a), ATM_OK);
	assert_int_equal(a.sm_mhz, 0); /* no clocks asked */
	assert_int_equal(atm_nvml_read(FAKE_NVML, "00000000:19:00.0", 7, true, &b), ATM_OK);
	assert_true(b.joules - a.joules > 1.4999 && b.joules - a.joules < 1.5001);
	assert_int_equal(b.sm_mhz, 1980);
	assert_int_equal(b.mem_mhz, 2619);
	assert_true(b.power_limit_w == 700);
	/* another GPU, or one without the counter: said, with NVML's words */
	assert_int_equal(atm_nvml_read(FAKE_NVML, NULL, 1, true, &a), ATM_E_UNSUPPORTED);
	assert_non_null(strstr(atm_errmsg(), "Invalid Argument"));
	assert_int_equal(atm_nvml_read(FAKE_NVML, "00000000:3b:00.0", 0, true, &a), ATM_E_UNSUPPORTED);
	assert_non_null(strstr(atm_errmsg(), "00000000:3b:00.0"));
	setenv("FAKE_NVML_NO_ENERGY", "1", 1);
	assert_int_equal(atm_nvml_read(FAKE_NVML, NULL, 0, true, &a), ATM_E_UNSUPPORTED);
	assert_non_null(strstr(atm_errmsg(), "no energy counter"));
	assert_non_null(strstr(atm_errmsg(), "Not Supported"));
	unsetenv("FAKE_NVML_NO_ENERGY");
	/* a library of another name after it is opened in its place */
	assert_int_equal(atm_nvml_read("/nonexistent/other.so", NULL, 0, true, &a), ATM_E_UNSUPPORTED);
	assert_int_equal(atm_nvml_read(FAKE_NVML, NULL, 0, true, &a), ATM_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nvml_absent),
		cmocka_unit_test(test_nvml_reads_the_counter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
