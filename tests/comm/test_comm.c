/* test_comm.c -- this build's communicator: one rank; with --ranks N (under mpirun -np N) the job's N ranks: the mean and its bits, uneven chunks, broadcasts, agreement
 *
 * Run alone it takes the cases of one rank (alone.h). Under mpirun, "--ranks N" runs the cases
 * below on every rank (each rank reports its own; mpirun fails when any rank does), after
 * checking that MPI's world is the N ranks asked for; a build without MPI exits 77 (skipped).
 * The cases call the collectives in the same order on every rank and check after them, so that
 * a rank that fails a check has called what the others wait for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#define ALLOC_FAIL_WRAP
#include "common/alloc_fail.h"

#include "comm/alone.h"

static atm_comm *comm; /* the job's, in --ranks */

/* splitmix -- a well-mixed 64-bit hash */
static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* value -- rank's gradient element i of buffer b: any sign, 23 random mantissa bits, exponents
 * from 2^-8 to 2^8, so that sums round and their order shows in the bits */
static float value(int rank, int b, int64_t i)
{
	uint64_t h = splitmix(((uint64_t)rank << 48) ^ ((uint64_t)b << 40) ^ (uint64_t)i);
	uint32_t bits = (uint32_t)(h >> 63) << 31 | (uint32_t)(127 - 8 + (h >> 23) % 17) << 23 |
	                (uint32_t)(h & 0x7fffff);
	float v;
	memcpy(&v, &bits, sizeof v);
	return v;
}

/* the documented mean: summed in float in rank order, divided by N */
static float reference_mean(int n_ranks, int b, int64_t i)
{
	float sum = value(0, b, i);
	for (int r = 1; r < n_ranks; r++)
		sum += value(r, b, i);
	return sum / (float)n_ranks;
}

/* fnv -- the bytes' FNV-1a, to compare ranks' results */
static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

/* a bucket of buffers of odd sizes: one of none (NULL), one of one float, none a multiple of
 * the ranks (2 or 3), the last long */
#define N_BUFS 6
static const int64_t bucket_counts[N_BUFS] = {7, 0, 13, 1, 5, 100003};

typedef struct {
	float *bufs[N_BUFS];
	int64_t counts[N_BUFS];
} bucket;

/* bucket_fill -- this rank's values into b, allocated on first use */
static void bucket_fill(bucket *b)
{
	int me = atm_comm_rank(comm);
	for (int k = 0; k < N_BUFS; k++) {
		b->counts[k] = bucket_counts[k];
		if (!b->counts[k]) {
			b->bufs[k] = NULL;
			continue;
		}
		if (!b->bufs[k])
			b->bufs[k] = malloc((size_t)b->counts[k] * sizeof(float));
		assert_non_null(b->bufs[k]);
		for (int64_t i = 0; i < b->counts[k]; i++)
			b->bufs[k][i] = value(me, k, i);
	}
}

static uint64_t bucket_digest(const bucket *b)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int k = 0; k < N_BUFS; k++)
		h = fnv(b->bufs[k], (size_t)b->counts[k] * sizeof(float), h);
	return h;
}

static void bucket_free(bucket *b)
{
	for (int k = 0; k < N_BUFS; k++)
		free(b->bufs[k]);
}

/* every_rank_same -- every rank's v is rank 0's */
static void every_rank_same(uint64_t v)
{
	uint64_t *all = calloc((size_t)atm_comm_size(comm), sizeof *all);
	assert_non_null(all);
	assert_int_equal(atm_comm_allgather_u64(comm, v, all), ATM_OK);
	for (int r = 1; r < atm_comm_size(comm); r++)
		assert_true(all[r] == all[0]);
	free(all);
}

static void test_comm_ranks_are_the_job(void **state)
{
	(void)state;
	int n = atm_comm_size(comm), me = atm_comm_rank(comm);
	assert_true(atm_comm_active(comm));
	assert_true(me >= 0 && me < n);
	uint64_t *ranks = calloc((size_t)n, sizeof *ranks);
	double *halves = calloc((size_t)n, sizeof *halves);
	assert_non_null(ranks);
	assert_non_null(halves);
	assert_int_equal(atm_comm_allgather_u64(comm, (uint64_t)me * 1000000007ull, ranks), ATM_OK);
	assert_int_equal(atm_comm_allgather_f64(comm, me + 0.5, halves), ATM_OK);
	assert_int_equal(atm_comm_barrier(comm), ATM_OK);
	for (int r = 0; r < n; r++) {
		assert_true(ranks[r] == (uint64_t)r * 1000000007ull);
		assert_true(halves[r] == r + 0.5);
	}
	free(ranks);
	free(halves);
}

/* the mean bit for bit as documented, close to the exact mean, and alike on every rank */
static void test_comm_ranks_mean_is_the_reference(void **state)
{
	(void)state;
	int n = atm_comm_size(comm);
	bucket b = {0};
	bucket_fill(&b);
	assert_int_equal(atm_comm_allreduce_mean(comm, b.bufs, b.counts, N_BUFS), ATM_OK);
	every_rank_same(bucket_digest(&b));
	int64_t n_off = 0;
	for (int k = 0; k < N_BUFS; k++)
		for (int64_t i = 0; i < b.counts[k]; i++) {
			float want = reference_mean(n, k, i);
			if (memcmp(&b.bufs[k][i], &want, sizeof want)) {
				n_off++;
				continue;
			}
			double exact = 0, magnitude = 0;
			for (int r = 0; r < n; r++) {
				exact += value(r, k, i);
				magnitude += value(r, k, i) < 0 ? -value(r, k, i) : value(r, k, i);
			}
			exact /= n;
			double err = b.bufs[k][i] - exact;
			assert_true((err < 0 ? -err : err) <= 1e-6 * magnitude);
		}
	assert_int_equal(n_off, 0);
	bucket_free(&b);
}

/* again, in rounds of a few floats and of many, a part of the bucket alone, and the bucket as
 * one buffer: bitwise the same (each float's mean is its own, however the bucket is cut) */
static void test_comm_ranks_mean_repeats_bitwise(void **state)
{
	(void)state;
	bucket b = {0}, first = {0};
	bucket_fill(&b);
	bucket_fill(&first);
	assert_int_equal(atm_comm_allreduce_mean(comm, first.bufs, first.counts, N_BUFS), ATM_OK);
	uint64_t digest = bucket_digest(&first);
	int64_t rounds[] = {997, (int64_t)1 << 20, (int64_t)1 << 24};
	for (size_t i = 0; i < sizeof rounds / sizeof *rounds; i++) {
		assert_int_equal(atm_comm_set_round(comm, rounds[i]), ATM_OK);
		bucket_fill(&b);
		assert_int_equal(atm_comm_allreduce_mean(comm, b.bufs, b.counts, N_BUFS), ATM_OK);
		assert_true(bucket_digest(&b) == digest);
	}
	/* the small buffers before the long one alone, in rounds of 1, 2, 3, 7 floats: rounds
	 * shorter than the ranks, chunks of none */
	for (int64_t round = 1; round <= 7; round += round < 3 ? 1 : 4) {
		assert_int_equal(atm_comm_set_round(comm, round), ATM_OK);
		bucket_fill(&b);
		assert_int_equal(atm_comm_allreduce_mean(comm, b.bufs, b.counts, N_BUFS - 1), ATM_OK);
		for (int k = 0; k < N_BUFS - 1; k++)
			if (b.counts[k])
				assert_memory_equal(b.bufs[k], first.bufs[k], (size_t)b.counts[k] * sizeof(float));
	}
	assert_int_equal(atm_comm_set_round(comm, (int64_t)1 << 24), ATM_OK);
	/* the same floats cut as one buffer */
	int64_t total = 0;
	for (int k = 0; k < N_BUFS; k++)
		total += b.counts[k];
	float *flat = malloc((size_t)total * sizeof *flat);
	assert_non_null(flat);
	bucket_fill(&b);
	int64_t at = 0;
	for (int k = 0; k < N_BUFS; k++) {
		if (b.counts[k])
			memcpy(flat + at, b.bufs[k], (size_t)b.counts[k] * sizeof *flat);
		at += b.counts[k];
	}
	assert_int_equal(atm_comm_allreduce_mean(comm, &flat, &total, 1), ATM_OK);
	assert_true(fnv(flat, (size_t)total * sizeof *flat, 0xcbf29ce484222325ull) == digest);
	every_rank_same(digest);
	free(flat);
	bucket_free(&b);
	bucket_free(&first);
}

/* fewer floats than ranks (most chunks empty), a bucket of nothing, a bucket of no buffers */
static void test_comm_ranks_mean_of_few_floats(void **state)
{
	(void)state;
	int n = atm_comm_size(comm), me = atm_comm_rank(comm);
	float one = (float)me + 0.25f;
	float *bufs[] = {NULL, &one, NULL};
	int64_t counts[] = {0, 1, 0};
	assert_int_equal(atm_comm_allreduce_mean(comm, bufs, counts, 3), ATM_OK);
	float sum = 0.25f;
	for (int r = 1; r < n; r++)
		sum += (float)r + 0.25f;
	assert_true(one == sum / (float)n);
	int64_t none[] = {0, 0};
	float *nulls[] = {NULL, NULL};
	assert_int_equal(atm_comm_allreduce_mean(comm, nulls, none, 2), ATM_OK);
	assert_int_equal(atm_comm_allreduce_mean(comm, NULL, NULL, 0), ATM_OK);
	/* n + 1 floats: one chunk of two */
	float few[8];
	for (int i = 0; i <= n; i++)
		few[i] = (float)(me * 10 + i);
	float *fb[] = {few};
	int64_t fc[] = {n + 1};
	assert_int_equal(atm_comm_allreduce_mean(comm, fb, fc, 1), ATM_OK);
	for (int i = 0; i <= n; i++) {
		float s = (float)i;
		for (int r = 1; r < n; r++)
			s += (float)(r * 10 + i);
		assert_true(few[i] == s / (float)n);
	}
}

/* a bucket of another size, a bad one on one rank, another round: every rank refuses, none waits */
static void test_comm_ranks_mean_refused_everywhere(void **state)
{
	(void)state;
	int n = atm_comm_size(comm), me = atm_comm_rank(comm), last = n - 1;
	float x[4] = {1, 2, 3, 4};
	float *bufs[] = {x};
	char want[256];

	int64_t counts[] = {me == 1 ? 4 : 3};
	assert_int_equal(atm_comm_allreduce_mean(comm, bufs, counts, 1), ATM_E_USAGE);
	snprintf(want, sizeof want, "atm_comm_allreduce_mean: the ranks' buckets differ in floats: "
	         "rank 1 has 4, rank 0 has 3");
	assert_string_equal(atm_errmsg(), want);
	assert_true(x[0] == 1 && x[3] == 4);

	counts[0] = me == last ? -1 : 4;
	assert_int_equal(atm_comm_allreduce_mean(comm, bufs, counts, 1), ATM_E_USAGE);
	if (me == last)
		snprintf(want, sizeof want, "atm_comm_allreduce_mean: buffer 0 of 1 has -1 floats");
	else
		snprintf(want, sizeof want, "atm_comm_allreduce_mean: rank %d of %d passed a bad bucket "
		         "(its own message says how)", last, n);
	assert_string_equal(atm_errmsg(), want);

	counts[0] = 4;
	assert_int_equal(atm_comm_set_round(comm, me == 0 ? 2 : 3), ATM_OK);
	assert_int_equal(atm_comm_allreduce_mean(comm, bufs, counts, 1), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "atm_comm_allreduce_mean: the ranks' rounds "
	                       "(atm_comm_set_round) differ: rank 1 has 3, "));
	assert_non_null(strstr(atm_errmsg(), "rank 0 has 2"));
	assert_int_equal(atm_comm_set_round(comm, (int64_t)1 << 24), ATM_OK);
	assert_true(x[0] == 1 && x[3] == 4);
	assert_int_equal(atm_comm_allreduce_mean(comm, bufs, counts, 1), ATM_OK);
}

/* ranks_alloc_sweep -- attempt with the last rank's k-th allocation failing, k = 1, 2, ...,
 * until it makes none fail: each time every rank must return ATM_E_NOMEM naming the last
 * rank, then ATM_OK everywhere */
static long ranks_alloc_sweep(atm_status (*attempt)(void *), void *arg)
{
	int n = atm_comm_size(comm), last = n - 1, me = atm_comm_rank(comm);
	uint64_t *hit = calloc((size_t)n, sizeof *hit);
	assert_non_null(hit);
	char want[64];
	snprintf(want, sizeof want, "rank %d of %d could not allocate", last, n);
	for (long k = 1;; k++) {
		alloc_fail_after = me == last ? k : 0;
		atm_status st = attempt(arg);
		bool mine = me == last && alloc_fail_after == 0;
		alloc_fail_after = 0;
		assert_int_equal(atm_comm_allgather_u64(comm, mine, hit), ATM_OK);
		if (!hit[last]) {
			assert_int_equal(st, ATM_OK);
			free(hit);
			return k - 1;
		}
		assert_int_equal(st, ATM_E_NOMEM);
		assert_non_null(strstr(atm_errmsg(), want));
	}
}

/* a mean larger than any before: the scratch must grow */
static atm_status grow_once(void *arg)
{
	static float x[300000];
	float *bufs[] = {x};
	int64_t counts[] = {(int64_t)(sizeof x / sizeof *x)};
	(void)arg;
	return atm_comm_allreduce_mean(comm, bufs, counts, 1);
}

static atm_status text_once(void *arg)
{
	char *text = atm_comm_rank(comm) == 0 ? arg : NULL;
	atm_status st = atm_comm_bcast_text(comm, &text, 0);
	if (atm_comm_rank(comm) != 0) {
		if ((st < 0) != (text == NULL))
			return ATM_E_INTERNAL;
		if (text && strcmp(text, arg))
			return ATM_E_INTERNAL;
		free(text);
	}
	return st;
}

static void test_comm_ranks_out_of_memory_everywhere(void **state)
{
	(void)state;
	long n_allocs = ranks_alloc_sweep(grow_once, NULL);
	if (atm_comm_rank(comm) == atm_comm_size(comm) - 1)
		assert_int_equal(n_allocs, 1);
	char text[] = "the plan";
	n_allocs = ranks_alloc_sweep(text_once, text);
	if (atm_comm_rank(comm) == atm_comm_size(comm) - 1)
		assert_int_equal(n_allocs, 1);
}

static void test_comm_ranks_bcast(void **state)
{
	(void)state;
	int n = atm_comm_size(comm), me = atm_comm_rank(comm), last = n - 1;
	uint64_t raw[3] = {0};
	if (me == last)
		raw[0] = 1, raw[1] = 2, raw[2] = UINT64_MAX;
	assert_int_equal(atm_comm_bcast(comm, raw, sizeof raw, last), ATM_OK);
	assert_true(raw[0] == 1 && raw[1] == 2 && raw[2] == UINT64_MAX);
	assert_int_equal(atm_comm_bcast(comm, NULL, 0, 0), ATM_OK);

	/* from rank 0, from the last, long, empty, none */
	size_t long_bytes = 3 << 20;
	char *big = malloc(long_bytes + 1);
	assert_non_null(big);
	for (size_t i = 0; i < long_bytes; i++)
		big[i] = (char)('a' + i % 26);
	big[long_bytes] = '\0';
	const char *sent[] = {"{\"plan\": 1}", big, "", NULL};
	for (int root = 0; root < n; root += last)
		for (size_t i = 0; i < sizeof sent / sizeof *sent; i++) {
			char *mine = me == root && sent[i] ? strdup(sent[i]) : NULL;
			char *text = me == root ? mine : (char *)&text; /* not freed, overwritten */
			assert_int_equal(atm_comm_bcast_text(comm, &text, root), ATM_OK);
			if (me == root)
				assert_ptr_equal(text, mine);
			if (!sent[i])
				assert_null(text);
			else
				assert_string_equal(text, sent[i]);
			free(text);
		}
	free(big);
	char *text = NULL;
	assert_int_equal(atm_comm_bcast_text(comm, &text, n), ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "is no rank"));
}

static void test_comm_ranks_agree(void **state)
{
	(void)state;
	int n = atm_comm_size(comm), me = atm_comm_rank(comm);
	char want[512];
	assert_int_equal(atm_comm_agree(comm, "graph", 0x12bc), ATM_OK);
	assert_int_equal(atm_comm_agree(comm, "graph", me == 1 ? 0x9f3a : 0x12bc), ATM_E_INPUT);
	assert_string_equal(atm_errmsg(), "ranks disagree on the graph: rank 1 has 0000000000009f3a, "
	                    "rank 0 has 00000000000012bc");
	/* every rank but 0 differs */
	assert_int_equal(atm_comm_agree(comm, "plan", (uint64_t)me), n > 1 ? ATM_E_INPUT : ATM_OK);
	size_t at = (size_t)snprintf(want, sizeof want, "ranks disagree on the plan: ");
	for (int r = 1; r < n && r <= 8; r++)
		at += (size_t)snprintf(want + at, sizeof want - at, "rank %d has %016x, ", r, r);
	snprintf(want + at, sizeof want - at, "rank 0 has 0000000000000000");
	assert_string_equal(atm_errmsg(), want);
	assert_int_equal(atm_comm_agree(comm, "plan", 42), ATM_OK);
}

/* a rank that arrives late: the others wait for it in the mean's first collective, and the
 * wait is what atm_comm_waited_s adds (the late rank itself hardly waits) */
static void test_comm_ranks_wait_for_a_late_rank(void **state)
{
	(void)state;
	float x[1000] = {0};
	float *bufs[] = {x};
	int64_t counts[] = {1000};
	int me = atm_comm_rank(comm);
	assert_int_equal(atm_comm_barrier(comm), ATM_OK);
	double w0 = atm_comm_waited_s(comm);
	if (me == 1)
		nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
	assert_int_equal(atm_comm_allreduce_mean(comm, bufs, counts, 1), ATM_OK);
	double waited = atm_comm_waited_s(comm) - w0;
	if (me == 1)
		assert_true(waited < 0.15); /* the others were there */
	else
		assert_true(waited > 0.2 && waited < 5);
}

/* group_name -- "comm, rank R of N" for cmocka's report */
static char group_name[64];

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--ranks")) {
		alone_forget_launchers();
		const struct CMUnitTest tests[] = {ALONE_TESTS};
		return cmocka_run_group_tests(tests, NULL, NULL);
	}
	if (!atm_comm_has_mpi()) {
		printf("autotm was built without MPI: the cases of several ranks are skipped\n");
		return 77;
	}
	int want = argc > 2 ? atoi(argv[2]) : 2;
	/* mpirun reads our stdout through a pipe: a line at a time, so that a rank mpirun kills
	 * has said which case it was in */
	setvbuf(stdout, NULL, _IOLBF, 0);
	atm_status st = atm_comm_new(&comm, &argc, &argv);
	if (st < 0) {
		fprintf(stderr, "test_comm: %s\n", atm_errmsg());
		return 1;
	}
	if (atm_comm_size(comm) != want) {
		fprintf(stderr, "test_comm: --ranks %d but MPI's world has %d: run it under mpirun -np %d\n",
		        want, atm_comm_size(comm), want);
		atm_comm_abort(comm, 1);
	}
	snprintf(group_name, sizeof group_name, "comm, rank %d of %d", atm_comm_rank(comm),
	         atm_comm_size(comm));
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_comm_ranks_are_the_job),
		cmocka_unit_test(test_comm_ranks_mean_is_the_reference),
		cmocka_unit_test(test_comm_ranks_mean_repeats_bitwise),
		cmocka_unit_test(test_comm_ranks_mean_of_few_floats),
		cmocka_unit_test(test_comm_ranks_mean_refused_everywhere),
		cmocka_unit_test(test_comm_ranks_out_of_memory_everywhere),
		cmocka_unit_test(test_comm_ranks_bcast),
		cmocka_unit_test(test_comm_ranks_agree),
		cmocka_unit_test(test_comm_ranks_wait_for_a_late_rank),
	};
	int failed = cmocka_run_group_tests_name(group_name, tests, NULL, NULL);
	/* a rank that failed a case may have left the others waiting in a collective, and
	 * MPI_Finalize would wait for them: end the job now */
	if (failed)
		atm_comm_abort(comm, 1);
	atm_comm_destroy(comm);
	return 0;
}
