/* comm_mpi.c -- the communicator over MPI: MPI_COMM_WORLD's duplicate, a gradient mean reduced in rank order, agreement before failure */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "comm_internal.h"

/* the most bytes one MPI_Bcast of atm_comm_bcast moves (its count is an int) */
#define COMM_BCAST_ROUND_BYTES ((int64_t)1 << 30)

/* the words each rank gives allreduce_mean's check, in c->table */
enum { CHECK_BAD, CHECK_TOTAL, CHECK_ROUND, CHECK_ALLOC, CHECK_WORDS };

struct atm_comm {
	MPI_Comm comm;      /* MPI_COMM_WORLD's duplicate, MPI_ERRORS_RETURN; MPI_COMM_NULL alone */
	bool initialised;   /* atm_comm_new called MPI_Init_thread: destroy finalises */
	int rank, size;
	int64_t round;      /* atm_comm_set_round's floats */
	uint64_t *table;    /* CHECK_WORDS per rank: what the ranks tell each other, never allocated
	                     * in a collective (a rank that could not would leave the others waiting) */
	int *counts, *offsets, *recv_counts, *recv_offsets; /* size each: the chunks of a round */
	float *scratch;     /* allreduce_mean's packed round and what the ranks send it */
	size_t n_scratch;   /* floats in scratch */
	double waited_s;    /* allreduce_mean's first collective, summed: atm_comm_waited_s */
};

/* mpi_fail -- the message of MPI's error rc from call */
static atm_status mpi_fail(const atm_comm *c, int rc, const char *call)
{
	char text[MPI_MAX_ERROR_STRING];
	int len = 0, cls = MPI_ERR_OTHER;
	if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof text, "MPI error %d", rc);
	MPI_Error_class(rc, &cls);
	return atm_err(cls == MPI_ERR_NO_MEM ? ATM_E_NOMEM : ATM_E_IO, "%s failed on rank %d of %d: %s",
	               call, c->rank, c->size, text);
}

/* arrays -- the bookkeeping for size ranks (size is known once MPI is) */
static atm_status arrays(atm_comm *c)
{
	size_t n = (size_t)c->size;
	c->table = calloc(n * CHECK_WORDS, sizeof *c->table);
	c->counts = calloc(n * 4, sizeof *c->counts);
	if (!c->table || !c->counts)
		return atm_err(ATM_E_NOMEM, "out of memory for a communicator of %d ranks", c->size);
	c->offsets = c->counts + n;
	c->recv_counts = c->offsets + n;
	c->recv_offsets = c->recv_counts + n;
	return ATM_OK;
}

atm_status atm_comm_new(atm_comm **out, int *argc, char ***argv)
{
	assert(out);
	*out = NULL;
	atm_status st;
	int rc, inited = 0, finalized = 0, provided = MPI_THREAD_SINGLE;
	comm_launch l;
	comm_launch_detect(&l);
	atm_comm *c = calloc(1, sizeof *c);
	if (!c)
		return atm_err(ATM_E_NOMEM, "out of memory for a communicator");
	c->comm = MPI_COMM_NULL;
	c->rank = 0, c->size = 1;
	c->round = COMM_ROUND_DEFAULT;
	if (!l.launched)
		goto alone;
	/* the launcher's word until MPI's, for the messages of a failure before it */
	c->rank = l.rank > 0 ? l.rank : 0;
	c->size = l.size > 0 ? l.size : 1;
	MPI_Initialized(&inited);
	MPI_Finalized(&finalized);
	if (finalized) {
		st = atm_err(ATM_E_IO, "MPI was finalised already in this process (%s says it was "
		             "launched), and it initialises once: one communicator per process", l.by);
		goto fail;
	}
	if (!inited) {
		/* with MPI 3 an error here is fatal: the handler set below is not there yet */
		rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
		if (rc != MPI_SUCCESS) {
			st = mpi_fail(c, rc, "MPI_Init_thread");
			goto fail;
		}
		c->initialised = true;
		rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		if (rc != MPI_SUCCESS) {
			st = mpi_fail(c, rc, "MPI_Comm_set_errhandler");
			goto fail;
		}
	} else if ((rc = MPI_Query_thread(&provided)) != MPI_SUCCESS) {
		st = mpi_fail(c, rc, "MPI_Query_thread");
		goto fail;
	}
	if (provided < MPI_THREAD_FUNNELED) {
		st = atm_err(ATM_E_UNSUPPORTED, "this MPI gives thread level %d, below "
		             "MPI_THREAD_FUNNELED (%d) that autotm's kernel threads need", provided,
		             MPI_THREAD_FUNNELED);
		goto fail;
	}
	/* a duplicate: our traffic never matches the program's, and its handler is ours to set */
	if ((rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->comm)) != MPI_SUCCESS) {
		st = mpi_fail(c, rc, "MPI_Comm_dup");
		goto fail;
	}
	if ((rc = MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN)) != MPI_SUCCESS ||
	    (rc = MPI_Comm_rank(c->comm, &c->rank)) != MPI_SUCCESS ||
	    (rc = MPI_Comm_size(c->comm, &c->size)) != MPI_SUCCESS) {
		st = mpi_fail(c, rc, "MPI_Comm_set_errhandler, _rank or _size");
		goto fail;
	}
	if (l.size > 0 && l.size != c->size) {
		st = atm_err(ATM_E_IO, "the launcher started %d ranks (%s) but MPI's world has %d: "
		             "this MPI is not the launcher's (under srun, try srun --mpi=pmix)", l.size,
		             l.by, c->size);
		goto fail;
	}
alone:
	if ((st = arrays(c)) < 0)
		goto fail;
	*out = c;
	return ATM_OK;
fail:
	/* MPI stays initialised: MPI_Finalize waits for every rank, and a rank that fails alone
	 * would wait forever; the process is to exit */
	if (c->comm != MPI_COMM_NULL)
		MPI_Comm_free(&c->comm);
	free(c->counts);
	free(c->table);
	free(c);
	return st;
}

void atm_comm_destroy(atm_comm *c)
{
	if (!c)
		return;
	if (c->comm != MPI_COMM_NULL)
		MPI_Comm_free(&c->comm);
	if (c->initialised)
		MPI_Finalize();
	free(c->scratch);
	free(c->counts);
	free(c->table);
	free(c);
}

int atm_comm_rank(const atm_comm *c)
{
	assert(c);
	return c->rank;
}

int atm_comm_size(const atm_comm *c)
{
	assert(c);
	return c->size;
}

bool atm_comm_active(const atm_comm *c)
{
	assert(c);
	return c->size > 1;
}

bool atm_comm_has_mpi(void)
{
	return true;
}

atm_status atm_comm_set_round(atm_comm *c, int64_t n_floats)
{
	assert(c);
	atm_status st = comm_check_round(n_floats);
	if (st == ATM_OK)
		c->round = n_floats;
	return st;
}

/* scratch_grow -- at least n floats of scratch; false when they cannot be had */
static bool scratch_grow(atm_comm *c, size_t n)
{
	if (n <= c->n_scratch)
		return true;
	free(c->scratch);
	c->scratch = malloc(n * sizeof *c->scratch);
	c->n_scratch = c->scratch ? n : 0;
	return c->scratch != NULL;
}

/* where packing or unpacking a bucket has got to */
typedef struct {
	int buf;    /* the buffer */
	int64_t at; /* floats into it */
} cursor;

/* move_floats -- the next len floats of the bucket from cur on into flat (pack), or back from
 * flat into the bucket (!pack) */
static void move_floats(float *const *bufs, const int64_t *counts, cursor *cur, float *flat,
                        int64_t len, bool pack)
{
	while (len > 0) {
		int64_t left = counts[cur->buf] - cur->at;
		if (left == 0) {
			cur->buf++, cur->at = 0;
			continue;
		}
		int64_t take = left < len ? left : len;
		float *mine = bufs[cur->buf] + cur->at;
		if (pack)
			memcpy(flat, mine, (size_t)take * sizeof *flat);
		else
			memcpy(mine, flat, (size_t)take * sizeof *flat);
		flat += take, len -= take, cur->at += take;
	}
}

/* bucket_check -- every rank's verdict on the bucket (see atm_comm_allreduce_mean), the same
 * on all: own is this rank's comm_check_bucket, need the scratch it wants */
static atm_status bucket_check(atm_comm *c, atm_status own, int64_t total, size_t need)
{
	bool ok = own < 0 || scratch_grow(c, need);
	uint64_t mine[CHECK_WORDS] = {
		[CHECK_BAD] = own < 0,
		[CHECK_TOTAL] = (uint64_t)total,
		[CHECK_ROUND] = (uint64_t)c->round,
		[CHECK_ALLOC] = ok,
	};
	double t0 = atm_now_s();
	int rc = MPI_Allgather(mine, CHECK_WORDS, MPI_UINT64_T, c->table, CHECK_WORDS, MPI_UINT64_T,
	                       c->comm);
	c->waited_s += atm_now_s() - t0;
	if (rc != MPI_SUCCESS)
		return mpi_fail(c, rc, "MPI_Allgather");
	if (own < 0)
		return own;
	for (int r = 0; r < c->size; r++)
		if (c->table[(size_t)r * CHECK_WORDS + CHECK_BAD])
			return atm_err(ATM_E_USAGE, "atm_comm_allreduce_mean: rank %d of %d passed a bad "
			               "bucket (its own message says how)", r, c->size);
	char list[1024];
	if (comm_differ(c->table + CHECK_TOTAL, CHECK_WORDS, c->size, false, list, sizeof list))
		return atm_err(ATM_E_USAGE, "atm_comm_allreduce_mean: the ranks' buckets differ in "
		               "floats: %s", list);
	if (comm_differ(c->table + CHECK_ROUND, CHECK_WORDS, c->size, false, list, sizeof list))
		return atm_err(ATM_E_USAGE, "atm_comm_allreduce_mean: the ranks' rounds "
		               "(atm_comm_set_round) differ: %s", list);
	for (int r = 0; r < c->size; r++)
		if (!c->table[(size_t)r * CHECK_WORDS + CHECK_ALLOC])
			return atm_err(ATM_E_NOMEM, "atm_comm_allreduce_mean: rank %d of %d could not "
			               "allocate %zu bytes of scratch", r, c->size, need * sizeof(float));
	return ATM_OK;
}

atm_status atm_comm_allreduce_mean(atm_comm *c, float *const *bufs, const int64_t *counts, int n)
{
	assert(c);
	int64_t total;
	atm_status st = comm_check_bucket(bufs, counts, n, &total);
	if (c->size == 1)
		return st;
	const int size = c->size, me = c->rank;
	const int64_t len = total < c->round ? total : c->round;
	/* a round, packed, then what comes to this rank: size chunks of at most len / size + 1 */
	const size_t need = (size_t)(2 * len + size);
	if ((st = bucket_check(c, st, total, st < 0 ? 0 : need)) < 0)
		return st;
	const float n_ranks = (float)size;
	cursor in = {0, 0}, out = {0, 0};
	for (int64_t done = 0; done < total;) {
		const int64_t len_r = total - done < len ? total - done : len;
		float *flat = c->scratch, *came = c->scratch + len_r;
		int64_t mine, my_offset;
		comm_chunk(len_r, size, me, &mine, &my_offset);
		for (int j = 0; j < size; j++) {
			int64_t count, offset;
			comm_chunk(len_r, size, j, &count, &offset);
			c->counts[j] = (int)count;
			c->offsets[j] = (int)offset;
			c->recv_counts[j] = (int)mine;
			c->recv_offsets[j] = (int)(mine * j);
		}
		move_floats(bufs, counts, &in, flat, len_r, true);
		int rc = MPI_Alltoallv(flat, c->counts, c->offsets, MPI_FLOAT, came, c->recv_counts,
		                       c->recv_offsets, MPI_FLOAT, c->comm);
		if (rc != MPI_SUCCESS)
			return mpi_fail(c, rc, "MPI_Alltoallv");
		/* rank order, in float: ((x0 + x1) + x2) + ..., then divided by N. The sum is written
		 * over this rank's own chunk of flat, which MPI_Allgatherv then sends from in place. */
		float *sum = flat + my_offset;
		memcpy(sum, came, (size_t)mine * sizeof *sum);
		for (int r = 1; r < size; r++) {
			const float *x = came + mine * r;
			for (int64_t k = 0; k < mine; k++)
				sum[k] += x[k];
		}
		for (int64_t k = 0; k < mine; k++)
			sum[k] /= n_ranks;
		rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, flat, c->counts, c->offsets,
		                    MPI_FLOAT, c->comm);
		if (rc != MPI_SUCCESS)
			return mpi_fail(c, rc, "MPI_Allgatherv");
		move_floats(bufs, counts, &out, flat, len_r, false);
		done += len_r;
	}
	return ATM_OK;
}

double atm_comm_waited_s(const atm_comm *c)
{
	return c ? c->waited_s : 0;
}

atm_status atm_comm_bcast(atm_comm *c, void *buf, int64_t bytes, int root)
{
	assert(c);
	atm_status st = comm_check_bcast(buf, bytes, root, c->size);
	if (st < 0 || c->size == 1)
		return st;
	for (int64_t done = 0; done < bytes;) {
		int64_t len = bytes - done < COMM_BCAST_ROUND_BYTES ? bytes - done : COMM_BCAST_ROUND_BYTES;
		int rc = MPI_Bcast((char *)buf + done, (int)len, MPI_BYTE, root, c->comm);
		if (rc != MPI_SUCCESS)
			return mpi_fail(c, rc, "MPI_Bcast");
		done += len;
	}
	return ATM_OK;
}

atm_status atm_comm_bcast_text(atm_comm *c, char **text, int root)
{
	assert(c && text);
	atm_status st = comm_check_root(root, c->size, "atm_comm_bcast_text");
	if (st < 0 || c->size == 1)
		return st;
	const bool is_root = c->rank == root;
	char *copy = NULL;
	/* the length first (-1: root has no text), then whether every rank could allocate its
	 * copy, then the text */
	int64_t len = is_root ? (*text ? (int64_t)strlen(*text) : -1) : 0;
	if (!is_root)
		*text = NULL;
	if ((st = atm_comm_bcast(c, &len, sizeof len, root)) < 0)
		return st;
	if (len < 0)
		return ATM_OK;
	if (!is_root)
		copy = malloc((size_t)len + 1);
	if ((st = atm_comm_allgather_u64(c, is_root || copy, c->table)) < 0)
		goto fail;
	for (int r = 0; r < c->size; r++)
		if (!c->table[r]) {
			st = atm_err(ATM_E_NOMEM, "atm_comm_bcast_text: rank %d of %d could not allocate "
			             "%" PRId64 " bytes for the text", r, c->size, len + 1);
			goto fail;
		}
	if ((st = atm_comm_bcast(c, is_root ? *text : copy, len, root)) < 0)
		goto fail;
	if (!is_root) {
		copy[len] = '\0';
		*text = copy;
	}
	return ATM_OK;
fail:
	free(copy);
	return st;
}

/* allgather -- every rank's one value of type (size bytes) at v, in rank order, into all */
static atm_status allgather(atm_comm *c, const void *v, void *all, size_t size, MPI_Datatype type,
                            const char *who)
{
	assert(c);
	if (c->size == 1 || !all) /* the same on every rank: the arguments are alike */
		return comm_gather_alone(v, all, size, who);
	int rc = MPI_Allgather(v, 1, type, all, 1, type, c->comm);
	return rc == MPI_SUCCESS ? ATM_OK : mpi_fail(c, rc, "MPI_Allgather");
}

atm_status atm_comm_allgather_f64(atm_comm *c, double v, double *all)
{
	return allgather(c, &v, all, sizeof v, MPI_DOUBLE, "atm_comm_allgather_f64");
}

atm_status atm_comm_allgather_u64(atm_comm *c, uint64_t v, uint64_t *all)
{
	return allgather(c, &v, all, sizeof v, MPI_UINT64_T, "atm_comm_allgather_u64");
}

atm_status atm_comm_agree(atm_comm *c, const char *what, uint64_t digest)
{
	assert(c);
	atm_status st = atm_comm_allgather_u64(c, digest, c->table);
	if (st < 0)
		return st;
	return comm_agree_check(what, c->table, 1, c->size);
}

atm_status atm_comm_barrier(atm_comm *c)
{
	assert(c);
	if (c->size == 1)
		return ATM_OK;
	int rc = MPI_Barrier(c->comm);
	return rc == MPI_SUCCESS ? ATM_OK : mpi_fail(c, rc, "MPI_Barrier");
}

void atm_comm_abort(atm_comm *c, int exit_code)
{
	fflush(NULL);
	int finalized = 1;
	MPI_Finalized(&finalized);
	if (c && c->comm != MPI_COMM_NULL && !finalized)
		MPI_Abort(MPI_COMM_WORLD, exit_code);
	exit(exit_code);
}
