/* comm_none.c -- the communicator of a build without MPI: one rank, every collective a no-op, refusing to be one of several */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"

struct atm_comm {
	int64_t round; /* atm_comm_set_round's, checked and kept for nothing to use */
};

atm_status atm_comm_new(atm_comm **out, int *argc, char ***argv)
{
	assert(out);
	*out = NULL;
	comm_launch l;
	comm_launch_detect(&l);
	if (l.launched && (l.size > 1 || l.rank > 0)) {
		if (l.size > 1)
			return atm_err(ATM_E_UNSUPPORTED, "autotm was built without MPI: install "
			               "libopenmpi-dev and openmpi-bin and rebuild (%s says this is one of "
			               "%d ranks)", l.by, l.size);
		return atm_err(ATM_E_UNSUPPORTED, "autotm was built without MPI: install "
		               "libopenmpi-dev and openmpi-bin and rebuild (%s says this is rank %d)",
		               l.by, l.rank);
	}
	atm_comm *c = calloc(1, sizeof *c);
	if (!c)
		return atm_err(ATM_E_NOMEM, "out of memory for a communicator");
	c->round = COMM_ROUND_DEFAULT;
	*out = c;
	return ATM_OK;
}

void atm_comm_destroy(atm_comm *c)
{
	free(c);
}

int atm_comm_rank(const atm_comm *c)
{
	assert(c);
	return 0;
}

int atm_comm_size(const atm_comm *c)
{
	assert(c);
	return 1;
}

bool atm_comm_active(const atm_comm *c)
{
	assert(c);
	return false;
}

bool atm_comm_has_mpi(void)
{
	return false;
}

atm_status atm_comm_allreduce_mean(atm_comm *c, float *const *bufs, const int64_t *counts, int n)
{
	assert(c);
	int64_t total;
	return comm_check_bucket(bufs, counts, n, &total);
}

double atm_comm_waited_s(const atm_comm *c)
{
	(void)c;
	return 0; /* alone, nobody to wait for */
}

atm_status atm_comm_set_round(atm_comm *c, int64_t n_floats)
{
	assert(c);
	atm_status st = comm_check_round(n_floats);
	if (st == ATM_OK)
		c->round = n_floats;
	return st;
}

atm_status atm_comm_bcast(atm_comm *c, void *buf, int64_t bytes, int root)
{
	assert(c);
	return comm_check_bcast(buf, bytes, root, 1);
}

atm_status atm_comm_bcast_text(atm_comm *c, char **text, int root)
{
	assert(c && text);
	return comm_check_root(root, 1, "atm_comm_bcast_text");
}

atm_status atm_comm_allgather_f64(atm_comm *c, double v, double *all)
{
	assert(c);
	return comm_gather_alone(&v, all, sizeof v, "atm_comm_allgather_f64");
}

atm_status atm_comm_allgather_u64(atm_comm *c, uint64_t v, uint64_t *all)
{
	assert(c);
	return comm_gather_alone(&v, all, sizeof v, "atm_comm_allgather_u64");
}

atm_status atm_comm_agree(atm_comm *c, const char *what, uint64_t digest)
{
	assert(c);
	return comm_agree_check(what, &digest, 1, 1);
}

atm_status atm_comm_barrier(atm_comm *c)
{
	assert(c);
	return ATM_OK;
}

void atm_comm_abort(atm_comm *c, int exit_code)
{
	fflush(NULL);
	exit(exit_code);
}
