/* alone.h -- the cases of a communicator of one rank, which both builds' communicators are outside a launcher (test_comm.c and test_none.c include it)
 *
 * The including file includes cmocka.h and, with ALLOC_FAIL_WRAP defined and the test linked
 * with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc, common/alloc_fail.h first.
 */
#ifndef ATM_TEST_COMM_ALONE_H
#define ATM_TEST_COMM_ALONE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "atm_comm.h"
#include "comm_internal.h"

/* alone_forget_launchers -- these cases are one process whoever runs the suite: no variable of
 * a launcher (mpirun or srun running ctest) may make them a rank of something larger */
static inline void alone_forget_launchers(void)
{
	static const char *const vars[] = {
		"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE",
		"MV2_COMM_WORLD_RANK", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "SLURM_STEP_NUM_TASKS",
		"SLURM_PROCID", "SLURM_NTASKS",
	};
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
		unsetenv(vars[i]);
}

static void test_comm_alone_is_one_rank(void **state)
{
	(void)state;
	atm_comm *c = NULL;
	assert_int_equal(atm_comm_new(&c, NULL, NULL), ATM_OK);
	assert_non_null(c);
	assert_int_equal(atm_comm_rank(c), 0);
	assert_int_equal(atm_comm_size(c), 1);
	assert_false(atm_comm_active(c));
	assert_int_equal(atm_comm_barrier(c), ATM_OK);
	atm_comm_destroy(c);
	atm_comm_destroy(NULL);
}

static void test_comm_alone_collectives_keep_values(void **state)
{
	(void)state;
	atm_comm *c = NULL;
	assert_int_equal(atm_comm_new(&c, NULL, NULL), ATM_OK);
	/* the mean of one is the value, bit for bit: a NaN, -0 and a denormal too */
	uint32_t bits[5] = {0x7fc00123u, 0x80000000u, 0x00000001u, 0x3eaaaaabu, 0xc2f6e979u};
	float a[5], b[3] = {1.0f / 3.0f, 1e30f, -7.0f}, before_b[3];
	memcpy(a, bits, sizeof a);
	memcpy(before_b, b, sizeof b);
	float *bufs[] = {a, NULL, b};
	int64_t counts[] = {5, 0, 3};
	assert_int_equal(atm_comm_allreduce_mean(c, bufs, counts, 3), ATM_OK);
	assert_memory_equal(a, bits, sizeof a);
	assert_memory_equal(b, before_b, sizeof b);
	assert_int_equal(atm_comm_allreduce_mean(c, NULL, NULL, 0), ATM_OK);
	assert_true(atm_comm_waited_s(c) == 0); /* alone: nobody to wait for */
	assert_true(atm_comm_waited_s(NULL) == 0);

	char raw[4] = "abc";
	assert_int_equal(atm_comm_bcast(c, raw, sizeof raw, 0), ATM_OK);
	assert_string_equal(raw, "abc");
	assert_int_equal(atm_comm_bcast(c, NULL, 0, 0), ATM_OK);
	char *text = strdup("plan"), *mine = text;
	assert_int_equal(atm_comm_bcast_text(c, &text, 0), ATM_OK);
	assert_ptr_equal(text, mine);
	assert_string_equal(text, "plan");
	free(text);
	text = NULL;
	assert_int_equal(atm_comm_bcast_text(c, &text, 0), ATM_OK);
	assert_null(text);

	double f[1] = {0};
	uint64_t u[1] = {0};
	assert_int_equal(atm_comm_allgather_f64(c, 2.5, f), ATM_OK);
	assert_true(f[0] == 2.5);
	assert_int_equal(atm_comm_allgather_u64(c, UINT64_MAX, u), ATM_OK);
	assert_true(u[0] == UINT64_MAX);
	assert_int_equal(atm_comm_agree(c, "graph", 0x9f3a), ATM_OK);
	atm_comm_destroy(c);
}

static void test_comm_alone_bad_arguments(void **state)
{
	(void)state;
	atm_comm *c = NULL;
	assert_int_equal(atm_comm_new(&c, NULL, NULL), ATM_OK);
	float x[2] = {1, 2};
	float *bufs[] = {x, NULL};
	int64_t counts[] = {2, 3};
	assert_int_equal(atm_comm_allreduce_mean(c, bufs, counts, -1), ATM_E_USAGE);
	assert_string_equal(atm_errmsg(), "atm_comm_allreduce_mean: a bucket of -1 buffers");
	assert_int_equal(atm_comm_allreduce_mean(c, bufs, counts, 2), ATM_E_USAGE);
	assert_string_equal(atm_errmsg(), "atm_comm_allreduce_mean: buffer 1 of 2 is NULL with 3 floats");
	counts[1] = -4;
	assert_int_equal(atm_comm_allreduce_mean(c, bufs, counts, 2), ATM_E_USAGE);
	assert_string_equal(atm_errmsg(), "atm_comm_allreduce_mean: buffer 1 of 2 has -4 floats");
	assert_int_equal(atm_comm_allreduce_mean(c, NULL, counts, 2), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "without its buffers"));
	int64_t huge[] = {INT64_MAX / 4, 1};
	float *twice[] = {x, x};
	assert_int_equal(atm_comm_allreduce_mean(c, twice, huge, 2), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "a bucket of more than"));
	assert_true(x[0] == 1 && x[1] == 2);

	assert_int_equal(atm_comm_bcast(c, x, sizeof x, 1), ATM_E_USAGE);
	assert_string_equal(atm_errmsg(), "atm_comm_bcast: root 1 is no rank: the job has 1 (0 .. 0)");
	assert_int_equal(atm_comm_bcast(c, x, -1, 0), ATM_E_USAGE);
	assert_string_equal(atm_errmsg(), "atm_comm_bcast: -1 bytes at a buffer");
	assert_int_equal(atm_comm_bcast(c, NULL, 8, 0), ATM_E_USAGE);
	char *text = NULL;
	assert_int_equal(atm_comm_bcast_text(c, &text, -1), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "atm_comm_bcast_text: root -1 is no rank"));
	assert_int_equal(atm_comm_allgather_f64(c, 1, NULL), ATM_E_USAGE);
	assert_int_equal(atm_comm_allgather_u64(c, 1, NULL), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "no array to gather into"));

	assert_int_equal(atm_comm_set_round(c, 0), ATM_E_USAGE);
	assert_string_equal(atm_errmsg(), "atm_comm_set_round: 0 floats; 1 .. 1073741824");
	assert_int_equal(atm_comm_set_round(c, ((int64_t)1 << 30) + 1), ATM_E_USAGE);
	assert_int_equal(atm_comm_set_round(c, (int64_t)1 << 30), ATM_OK);
	assert_int_equal(atm_comm_set_round(c, 1), ATM_OK);
	atm_comm_destroy(c);
}

static void test_comm_alone_abort_exits(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		atm_comm *c = NULL;
		if (atm_comm_new(&c, NULL, NULL) < 0)
			_exit(99);
		atm_comm_abort(c, 5);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 5);
}

static atm_status alone_new_once(void *arg)
{
	(void)arg;
	atm_comm *c = NULL;
	atm_status st = atm_comm_new(&c, NULL, NULL);
	if (st < 0 && c)
		return ATM_E_INTERNAL;
	atm_comm_destroy(c);
	return st;
}

static void test_comm_alone_new_out_of_memory(void **state)
{
	(void)state;
	assert_true(alloc_fail_sweep_own("atm_comm_new", alone_new_once, NULL) >= 1);
}

/* the chunks of a round: contiguous, covering it, the first len % n one float longer */
static void test_comm_alone_chunks(void **state)
{
	(void)state;
	for (int n = 1; n <= 7; n++)
		for (int64_t len = 0; len <= 30; len++) {
			int64_t at = 0;
			for (int j = 0; j < n; j++) {
				int64_t count, offset;
				comm_chunk(len, n, j, &count, &offset);
				assert_int_equal(offset, at);
				assert_int_equal(count, len / n + (j < len % n));
				at += count;
			}
			assert_int_equal(at, len);
		}
	int64_t count, offset;
	comm_chunk((int64_t)1 << 30, 3, 2, &count, &offset);
	assert_int_equal(count, 357913941);
	assert_int_equal(offset, 715827883);
}

/* the message of disagreement: each rank that differs, then rank 0; eight named at most */
static void test_comm_alone_disagreement_message(void **state)
{
	(void)state;
	uint64_t d[12] = {0x12bc};
	for (int r = 1; r < 12; r++)
		d[r] = r == 4 ? 0x12bc : (uint64_t)r;
	assert_int_equal(comm_agree_check("graph", d, 1, 1), ATM_OK);
	assert_int_equal(comm_agree_check("graph", (uint64_t[]){7, 7, 7}, 1, 3), ATM_OK);
	assert_int_equal(comm_agree_check("plan", (uint64_t[]){0x12bc, 0x12bc, 0x9f3a}, 1, 3), ATM_E_INPUT);
	assert_string_equal(atm_errmsg(), "ranks disagree on the plan: rank 2 has 0000000000009f3a, "
	                    "rank 0 has 00000000000012bc");
	assert_int_equal(comm_agree_check(NULL, d, 1, 12), ATM_E_INPUT);
	assert_string_equal(atm_errmsg(), "ranks disagree on the job: rank 1 has 0000000000000001, "
	                    "rank 2 has 0000000000000002, rank 3 has 0000000000000003, rank 5 has "
	                    "0000000000000005, rank 6 has 0000000000000006, rank 7 has "
	                    "0000000000000007, rank 8 has 0000000000000008, rank 9 has "
	                    "0000000000000009, and 2 more, rank 0 has 00000000000012bc");
	/* a stride: the second word of each rank's pair, in decimal */
	char list[64];
	uint64_t pairs[] = {1, 10, 2, 10, 3, 11};
	assert_int_equal(comm_differ(pairs + 1, 2, 3, false, list, sizeof list), 1);
	assert_string_equal(list, "rank 2 has 11, rank 0 has 10");
	/* cut short, still a string */
	assert_int_equal(comm_differ(pairs + 1, 2, 3, false, list, 8), 1);
	assert_string_equal(list, "rank 2 ");
}

#define ALONE_TESTS                                                 \
	cmocka_unit_test(test_comm_alone_is_one_rank),              \
	cmocka_unit_test(test_comm_alone_collectives_keep_values),  \
	cmocka_unit_test(test_comm_alone_bad_arguments),            \
	cmocka_unit_test(test_comm_alone_abort_exits),              \
	cmocka_unit_test(test_comm_alone_new_out_of_memory),        \
	cmocka_unit_test(test_comm_alone_chunks),                   \
	cmocka_unit_test(test_comm_alone_disagreement_message)

#endif /* ATM_TEST_COMM_ALONE_H */
