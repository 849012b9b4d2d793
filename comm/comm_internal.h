/* comm_internal.h -- what comm_mpi.c and comm_none.c share (comm.c): the launcher's environment, argument checks, messages */
#ifndef ATM_COMM_INTERNAL_H
#define ATM_COMM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "atm_comm.h"

/* atm_comm_allreduce_mean's default round and the most atm_comm_set_round takes: with N - 1
 * more floats of scratch, offsets up to 2^30 + N stay ints */
#define COMM_ROUND_DEFAULT ((int64_t)1 << 24)
#define COMM_ROUND_MAX ((int64_t)1 << 30)

/* what a launcher left in the environment */
typedef struct {
	bool launched;   /* some launcher's variable is there */
	int size;        /* the ranks it started; -1: it does not say (PMIX_RANK alone) */
	int rank;        /* this one; -1: it does not say */
	const char *by;  /* the variable that told ("OMPI_COMM_WORLD_SIZE") */
} comm_launch;

/* comm_launch_detect -- read the environment (variables that do not parse as counts are ignored) */
void comm_launch_detect(comm_launch *l);

/* comm_check_bucket -- atm_comm_allreduce_mean's arguments: ATM_E_USAGE with a message for a
 * bad one, else ATM_OK and the bucket's floats in *total */
atm_status comm_check_bucket(float *const *bufs, const int64_t *counts, int n, int64_t *total);

/* comm_check_round -- atm_comm_set_round's argument: ATM_E_USAGE outside 1 .. COMM_ROUND_MAX */
atm_status comm_check_round(int64_t n_floats);
/* comm_gather_alone -- an allgather of one rank: the size bytes at v into all; ATM_E_USAGE when
 * all is NULL (who names the call) */
atm_status comm_gather_alone(const void *v, void *all, size_t size, const char *who);

/* comm_check_root -- ATM_E_USAGE unless 0 <= root < size; who names the call */
atm_status comm_check_root(int root, int size, const char *who);
/* comm_check_bcast -- atm_comm_bcast's arguments: ATM_E_USAGE for bytes < 0, a NULL buf of
 * bytes > 0, or a root that is no rank of size */
atm_status comm_check_bcast(const void *buf, int64_t bytes, int root, int size);

/* comm_differ -- v[r * stride] for rank r of n_ranks against rank 0's: writes "rank 1 has X,
 * rank 2 has Y, rank 0 has Z" (hex: 16 hex digits; else decimal; after 8 ranks "and K more")
 * into out and returns how many ranks differ (0: out is "") */
int comm_differ(const uint64_t *v, int stride, int n_ranks, bool hex, char *out, size_t out_size);

/* comm_agree_check -- atm_comm_agree's verdict on every rank's digest (n_ranks of them, in
 * table[r * stride]): ATM_OK or ATM_E_INPUT with the message */
atm_status comm_agree_check(const char *what, const uint64_t *table, int stride, int n_ranks);

/* comm_chunk -- floats and offset of chunk j when len floats are cut into n nearly equal
 * chunks, the first len % n one float longer */
static inline void comm_chunk(int64_t len, int n, int j, int64_t *count, int64_t *offset)
{
	int64_t base = len / n, extra = len % n;
	*count = base + (j < extra);
	*offset = base * j + (j < extra ? j : extra);
}

#endif /* ATM_COMM_INTERNAL_H */
