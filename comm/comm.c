/* comm.c -- the communicators' shared part: which launcher started us, argument checks, the messages of disagreement */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"

/* how many differing ranks a message names before "and K more" */
#define COMM_NAMED_MAX 8

/* env_int -- the variable as an int >= lo, or -1 when it is not set or not such a number */
static int env_int(const char *name, int lo)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return -1;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > INT_MAX)
		return -1;
	return (int)v;
}

void comm_launch_detect(comm_launch *l)
{
	/* by launcher, each one's size and rank; a batch script's SLURM_NTASKS is left out on
	 * purpose: autotm run straight from an sbatch script is one process, not a step of N */
	static const struct {
		const char *size, *rank;
	} vars[] = {
		{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
		{"MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"},
		{"PMI_SIZE", "PMI_RANK"},
		{"SLURM_STEP_NUM_TASKS", "SLURM_PROCID"},
		{NULL, "PMIX_RANK"},
	};
	*l = (comm_launch){.launched = false, .size = -1, .rank = -1, .by = NULL};
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
		int size = vars[i].size ? env_int(vars[i].size, 1) : -1;
		int rank = env_int(vars[i].rank, 0);
		if (size < 0 && (vars[i].size || rank < 0))
			continue;
		l->launched = true;
		l->size = size;
		l->rank = rank;
		l->by = vars[i].size ? vars[i].size : vars[i].rank;
		return;
	}
}

atm_status comm_check_bucket(float *const *bufs, const int64_t *counts, int n, int64_t *total)
{
	*total = 0;
	if (n < 0)
		return atm_err(ATM_E_USAGE, "atm_comm_allreduce_mean: a bucket of %d buffers", n);
	if (n > 0 && (!bufs || !counts))
		return atm_err(ATM_E_USAGE, "atm_comm_allreduce_mean: a bucket of %d buffers without "
		               "its %s", n, !bufs ? "buffers" : "counts");
	int64_t sum = 0;
	for (int i = 0; i < n; i++) {
		if (counts[i] < 0)
			return atm_err(ATM_E_USAGE, "atm_comm_allreduce_mean: buffer %d of %d has %" PRId64
			               " floats", i, n, counts[i]);
		if (counts[i] > 0 && !bufs[i])
			return atm_err(ATM_E_USAGE, "atm_comm_allreduce_mean: buffer %d of %d is NULL "
			               "with %" PRId64 " floats", i, n, counts[i]);
		if (counts[i] > INT64_MAX / (int64_t)sizeof(float) - sum)
			return atm_err(ATM_E_USAGE, "atm_comm_allreduce_mean: a bucket of more than "
			               "%" PRId64 " floats", INT64_MAX / (int64_t)sizeof(float));
		sum += counts[i];
	}
	*total = sum;
	return ATM_OK;
}

atm_status comm_check_round(int64_t n_floats)
{
	if (n_floats < 1 || n_floats > COMM_ROUND_MAX)
		return atm_err(ATM_E_USAGE, "atm_comm_set_round: %" PRId64 " floats; 1 .. %" PRId64,
		               n_floats, COMM_ROUND_MAX);
	return ATM_OK;
}

atm_status comm_gather_alone(const void *v, void *all, size_t size, const char *who)
{
	if (!all)
		return atm_err(ATM_E_USAGE, "%s: no array to gather into", who);
	memcpy(all, v, size);
	return ATM_OK;
}

atm_status comm_check_root(int root, int size, const char *who)
{
	if (root < 0 || root >= size)
		return atm_err(ATM_E_USAGE, "%s: root %d is no rank: the job has %d (0 .. %d)", who, root,
		               size, size - 1);
	return ATM_OK;
}

atm_status comm_check_bcast(const void *buf, int64_t bytes, int root, int size)
{
	if (bytes < 0 || (bytes > 0 && !buf))
		return atm_err(ATM_E_USAGE, "atm_comm_bcast: %" PRId64 " bytes at %s", bytes,
		               buf ? "a buffer" : "NULL");
	return comm_check_root(root, size, "atm_comm_bcast");
}

/* put -- append to out at *at, never past out_size (the text is cut, still terminated) */
static void put(char *out, size_t out_size, size_t *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void put(char *out, size_t out_size, size_t *at, const char *fmt, ...)
{
	if (*at >= out_size)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out + *at, out_size - *at, fmt, ap);
	va_end(ap);
	if (n > 0)
		*at += (size_t)n < out_size - *at ? (size_t)n : out_size - *at - 1;
}

/* value -- v written as comm_differ's messages write it */
static void value(char *out, size_t out_size, size_t *at, uint64_t v, bool hex)
{
	if (hex)
		put(out, out_size, at, "%016" PRIx64, v);
	else
		put(out, out_size, at, "%" PRIu64, v);
}

int comm_differ(const uint64_t *v, int stride, int n_ranks, bool hex, char *out, size_t out_size)
{
	size_t at = 0;
	int n_differ = 0;
	if (out_size)
		out[0] = '\0';
	for (int r = 1; r < n_ranks; r++) {
		if (v[(size_t)r * stride] == v[0])
			continue;
		if (++n_differ > COMM_NAMED_MAX)
			continue;
		put(out, out_size, &at, "rank %d has ", r);
		value(out, out_size, &at, v[(size_t)r * stride], hex);
		put(out, out_size, &at, ", ");
	}
	if (!n_differ)
		return 0;
	if (n_differ > COMM_NAMED_MAX)
		put(out, out_size, &at, "and %d more, ", n_differ - COMM_NAMED_MAX);
	put(out, out_size, &at, "rank 0 has ");
	value(out, out_size, &at, v[0], hex);
	return n_differ;
}

atm_status comm_agree_check(const char *what, const uint64_t *table, int stride, int n_ranks)
{
	char list[1024];
	if (!comm_differ(table, stride, n_ranks, true, list, sizeof list))
		return ATM_OK;
	return atm_err(ATM_E_INPUT, "ranks disagree on the %s: %s", what ? what : "job", list);
}
