/* test_none.c -- the communicator of a build without MPI (comm_none.c, built in every build): one rank, refusing to be one of several */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define ALLOC_FAIL_WRAP
#include "common/alloc_fail.h"

#include "comm/alone.h"

static void test_none_has_no_mpi(void **state)
{
	(void)state;
	assert_false(atm_comm_has_mpi());
}

/* a launcher that started several ranks: refused, exit code 5, as a missing GPU is */
static void test_none_refuses_several_ranks(void **state)
{
	(void)state;
	static const char *const launches[][4] = {
		{"OMPI_COMM_WORLD_SIZE", "2", "OMPI_COMM_WORLD_SIZE says this is one of 2 ranks", NULL},
		{"PMI_SIZE", "3", "PMI_SIZE says this is one of 3 ranks", NULL},
		{"MV2_COMM_WORLD_SIZE", "4", "MV2_COMM_WORLD_SIZE says this is one of 4 ranks", NULL},
		{"SLURM_STEP_NUM_TASKS", "2", "SLURM_STEP_NUM_TASKS says this is one of 2 ranks", NULL},
		{"PMIX_RANK", "1", "PMIX_RANK says this is rank 1", NULL},
	};
	for (size_t i = 0; i < sizeof launches / sizeof *launches; i++) {
		alone_forget_launchers();
		setenv(launches[i][0], launches[i][1], 1);
		atm_comm *c = (atm_comm *)&c;
		atm_status st = atm_comm_new(&c, NULL, NULL);
		assert_int_equal(st, ATM_E_UNSUPPORTED);
		assert_int_equal(atm_exit_code(st), 5);
		assert_null(c);
		assert_non_null(strstr(atm_errmsg(), "autotm was built without MPI: install "
		                       "libopenmpi-dev and openmpi-bin and rebuild"));
		assert_non_null(strstr(atm_errmsg(), launches[i][2]));
	}
	alone_forget_launchers();
}

/* a launch of one rank, a batch script's own variables, and what does not parse: one rank */
static void test_none_single_launches_run(void **state)
{
	(void)state;
	static const char *const launches[][4] = {
		{"OMPI_COMM_WORLD_SIZE", "1", "OMPI_COMM_WORLD_RANK", "0"},
		{"SLURM_NTASKS", "4", "SLURM_PROCID", "0"},
		{"PMIX_RANK", "0", NULL, NULL},
		{"OMPI_COMM_WORLD_SIZE", "two", "OMPI_COMM_WORLD_RANK", "1"},
		{"PMI_SIZE", "0", "PMI_RANK", "0"},
	};
	for (size_t i = 0; i < sizeof launches / sizeof *launches; i++) {
		alone_forget_launchers();
		setenv(launches[i][0], launches[i][1], 1);
		if (launches[i][2])
			setenv(launches[i][2], launches[i][3], 1);
		atm_comm *c = NULL;
		assert_int_equal(atm_comm_new(&c, NULL, NULL), ATM_OK);
		assert_int_equal(atm_comm_size(c), 1);
		atm_comm_destroy(c);
	}
	alone_forget_launchers();
}

/* what the environment says, launcher by launcher */
static void test_none_launch_detected(void **state)
{
	(void)state;
	comm_launch l;
	alone_forget_launchers();
	comm_launch_detect(&l);
	assert_false(l.launched);
	setenv("SLURM_STEP_NUM_TASKS", "8", 1);
	setenv("SLURM_PROCID", "5", 1);
	comm_launch_detect(&l);
	assert_true(l.launched);
	assert_int_equal(l.size, 8);
	assert_int_equal(l.rank, 5);
	assert_string_equal(l.by, "SLURM_STEP_NUM_TASKS");
	/* Open MPI's own before Slurm's: mpirun inside an allocation */
	setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
	setenv("OMPI_COMM_WORLD_RANK", "1", 1);
	comm_launch_detect(&l);
	assert_int_equal(l.size, 2);
	assert_int_equal(l.rank, 1);
	assert_string_equal(l.by, "OMPI_COMM_WORLD_SIZE");
	alone_forget_launchers();
	setenv("PMIX_RANK", "3", 1);
	comm_launch_detect(&l);
	assert_true(l.launched);
	assert_int_equal(l.size, -1);
	assert_int_equal(l.rank, 3);
	alone_forget_launchers();
}

int main(void)
{
	alone_forget_launchers();
	const struct CMUnitTest tests[] = {
		ALONE_TESTS,
		cmocka_unit_test(test_none_has_no_mpi),
		cmocka_unit_test(test_none_refuses_several_ranks),
		cmocka_unit_test(test_none_single_launches_run),
		cmocka_unit_test(test_none_launch_detected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
