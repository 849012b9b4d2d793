/* kbench.c -- time one kernel with its operands in chosen tiers, the way the executor runs it, on any backend */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "data.h"

/* Bytes of each move-bandwidth copy: past the last-level cache of the
 * machines this runs on, so that the copy meets memory, small enough to take
 * milliseconds. */
#define MOVE_BYTES ((int64_t)32 << 20)

struct atm_kbench {
	const atm_graph *g;
	atm_kbench_opts o;
	atm_backend *b;
	atm_backend_desc desc;
	/* fast copies live at offsets of one arena, made at the first timing for
	 * the largest node of the graph (or a move's bytes) and kept, like the
	 * executor's: memkind 1.14 (Debian 12) corrupts its heap when
	 * allocations of its default kind and of a PMEM kind are made and freed
	 * interleaved, thousands of times, which a profile would otherwise do */
	bool arena;
	int64_t *offset;     /* per operand of k_node: where its fast copy goes */
	atm_bk_kernel *k;    /* the kernel of node k_node, kept while its configurations are timed */
	int32_t k_node;
	void *scratch;       /* kernels' scratch, in fast memory like the executor's; it only grows */
	int64_t scratch_bytes;
	/* k_node's operands: each tensor's copy in fast [0] and slow [1] memory,
	 * made when a configuration first needs it and kept for the others, at
	 * the index of the tensor's first operand (NULL until then) */
	void **copy[2];
	void *host;          /* host staging for operand bytes */
	int64_t host_bytes;
	double *times;       /* one per timed run */
	void **in, **out;    /* operand pointers, sized for the widest node */
	int max_args;
};

static int64_t most_bytes(const atm_graph *g);

/* atm_kbench_new -- open the backend of a run, nothing of g yet */
atm_status atm_kbench_new(atm_kbench **out, const atm_graph *g, const atm_kbench_opts *o)
{
	atm_kbench *kb = NULL;
	atm_status rc;
	*out = NULL;
	if ((rc = atm_graph_validate(g)) < 0)
		return rc;
	kb = calloc(1, sizeof *kb);
	if (!kb)
		return atm_err(ATM_E_NOMEM, "out of memory making a kernel bench");
	kb->g = g;
	kb->k_node = -1;
	if (o)
		kb->o = *o;
	if (kb->o.reps <= 0)
		kb->o.reps = 5;
	kb->max_args = 1;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		const atm_node *n = atm_graph_node(g, k);
		if (n->n_in > kb->max_args)
			kb->max_args = n->n_in;
		if (n->n_out > kb->max_args)
			kb->max_args = n->n_out;
	}
	kb->times = calloc((size_t)kb->o.reps, sizeof *kb->times);
	kb->in = calloc((size_t)kb->max_args, sizeof *kb->in);
	kb->out = calloc((size_t)kb->max_args, sizeof *kb->out);
	kb->copy[0] = calloc(2 * (size_t)kb->max_args, sizeof *kb->copy[0]);
	kb->copy[1] = calloc(2 * (size_t)kb->max_args, sizeof *kb->copy[1]);
	kb->offset = calloc(2 * (size_t)kb->max_args, sizeof *kb->offset);
	if (!kb->times || !kb->in || !kb->out || !kb->copy[0] || !kb->copy[1] || !kb->offset) {
		rc = atm_err(ATM_E_NOMEM, "out of memory making a kernel bench");
		goto fail;
	}
	/* the same backend, memories and emulation as the executor's */
	atm_backend_opts bo = {.tiers = kb->o.tiers, .emulate = kb->o.emulate, .gpu = kb->o.gpu,
	                       .stop = kb->o.stop};
	/* what it holds at most, for the default pmem folder's room check: one node's operands,
	 * and beside them two copies that time the overlap of moves */
	if (!bo.tiers.slow_need_bytes)
		bo.tiers.slow_need_bytes = most_bytes(g) + 2 * MOVE_BYTES;
	if (!bo.tiers.fast_need_bytes)
		bo.tiers.fast_need_bytes = most_bytes(g);
	if ((rc = atm_backend_open(&kb->b, &bo)) < 0 || (rc = kb->b->iface->reserve(kb->b, 0, 2)) < 0)
		goto fail;
	kb->b->iface->describe(kb->b, &kb->desc);
	*out = kb;
	return ATM_OK;
fail:
	atm_kbench_destroy(kb);
	return rc;
}

/* drop_kernel -- release the kernel kept for the last node, and its operands' copies */
static void drop_kernel(atm_kbench *kb)
{
	if (!kb->b)
		return;
	for (int tier = 0; tier < 2 && kb->copy[tier]; tier++)
		for (int i = 0; i < 2 * kb->max_args; i++) {
			if (kb->copy[tier][i])
				kb->b->iface->free(kb->b, tier ? ATM_LOC_SLOW : ATM_LOC_FAST, kb->copy[tier][i]);
			kb->copy[tier][i] = NULL;
		}
	if (kb->k)
		kb->b->iface->kernel_destroy(kb->b, kb->k);
	kb->k = NULL;
	kb->k_node = -1;
}

/* atm_kbench_destroy -- release the kernel and the backend; NULL is fine */
void atm_kbench_destroy(atm_kbench *kb)
{
	if (!kb)
		return;
	drop_kernel(kb);
	atm_backend_destroy(kb->b);
	free(kb->host);
	free(kb->times);
	free(kb->in);
	free(kb->out);
	free(kb->copy[0]);
	free(kb->copy[1]);
	free(kb->offset);
	free(kb);
}

/* atm_kbench_machine -- the machine key of these timings */
void atm_kbench_machine(const atm_kbench *kb, atm_profile_machine *m)
{
	kb->b->iface->machine(kb->b, m);
}

/* operand_tensor -- tensor of operand i: inputs, then outputs */
static int32_t operand_tensor(const atm_node *n, int i)
{
	return i < n->n_in ? n->in[i] : n->out[i - n->n_in];
}

/* first_use -- the first operand of n that is operand i's tensor */
static int first_use(const atm_node *n, int i)
{
	for (int j = 0; j < i; j++)
		if (operand_tensor(n, j) == operand_tensor(n, i))
			return j;
	return i;
}

/* fast_bytes -- n's distinct operands laid out one after another in the
 * arena, each at a multiple of 64 bytes; offsets (may be NULL) gets each
 * first operand's place */
static int64_t fast_bytes(const atm_graph *g, const atm_node *n, int64_t *offsets)
{
	int64_t at = 0;
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		if (first_use(n, i) != i)
			continue;
		if (offsets)
			offsets[i] = at;
		at += (atm_graph_tensor(g, operand_tensor(n, i))->bytes + 63) / 64 * 64;
	}
	return at;
}

/* most_bytes -- the operand bytes of g's node with the most, or a move's if more */
static int64_t most_bytes(const atm_graph *g)
{
	int64_t most = MOVE_BYTES;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		int64_t b = fast_bytes(g, atm_graph_node(g, k), NULL);
		most = b > most ? b : most;
	}
	return most;
}

/* copy_offset -- where in the arena the copies that time an overlap put their fast end:
 * past every kernel's operands */
static int64_t copy_offset(const atm_graph *g)
{
	return (most_bytes(g) + 63) / 64 * 64;
}

/* make_arena -- the fast arena, sized for the node with the most operand
 * bytes and for the copies that time moves, and past them the overlap's copies */
static atm_status make_arena(atm_kbench *kb)
{
	atm_status rc = kb->b->iface->arena_new(kb->b, copy_offset(kb->g) + MOVE_BYTES);
	if (rc < 0)
		return atm_err_prefix(rc, "kernel timing: ");
	kb->arena = true;
	return ATM_OK;
}

/* grow_scratch -- the kernels' scratch at least bytes long */
static atm_status grow_scratch(atm_kbench *kb, int64_t bytes)
{
	if (bytes <= kb->scratch_bytes)
		return ATM_OK;
	kb->scratch_bytes = 0;
	atm_status rc = kb->b->iface->scratch(kb->b, bytes, &kb->scratch);
	if (rc < 0)
		return rc;
	kb->scratch_bytes = bytes;
	return ATM_OK;
}

/* use_kernel -- the kernel of node, built once for all its configurations,
 * and scratch enough for it */
static atm_status use_kernel(atm_kbench *kb, int32_t node)
{
	atm_status rc;
	if (kb->k_node == node)
		return ATM_OK;
	drop_kernel(kb);
	if (!kb->arena && (rc = make_arena(kb)) < 0)
		return rc;
	if ((rc = kb->b->iface->kernel_new(kb->b, kb->g, node, &kb->k)) < 0)
		return rc;
	if ((rc = grow_scratch(kb, kb->b->iface->kernel_scratch_bytes(kb->b, kb->k))) < 0) {
		drop_kernel(kb);
		return rc;
	}
	fast_bytes(kb->g, atm_graph_node(kb->g, node), kb->offset);
	kb->k_node = node;
	return ATM_OK;
}

/* staging -- the host buffer, at least bytes long */
static atm_status staging(atm_kbench *kb, int64_t bytes)
{
	if (bytes <= kb->host_bytes)
		return ATM_OK;
	void *h = realloc(kb->host, (size_t)bytes);
	if (!h)
		return atm_err(ATM_E_NOMEM, "out of memory staging %lld bytes", (long long)bytes);
	kb->host = h;
	kb->host_bytes = bytes;
	return ATM_OK;
}

/* A tensor is filled and copied to its backend in pieces of this many bytes, with the stop
 * flag checked between them: the calibration's streaming operands are hundreds of MB, a
 * second or more to fill. */
#define FILL_PIECE_BYTES ((int64_t)8 << 20)

/* fill_bf16 -- n bf16 values in [1, 2) from stream seed */
static void fill_bf16(uint16_t *h, int64_t n, uint64_t *seed)
{
	for (int64_t i = 0; i < n; i++) {
		*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
		h[i] = (uint16_t)(0x3f80u | (*seed >> 57));
	}
}

/* fill_set -- buf (bytes long, on the backend) zeroed, or filled with positive values of dtype
 * dt from stream seed, through the host buffer a piece at a time; ATM_E_INTERRUPTED once the
 * stop flag is set */
static atm_status fill_set(atm_kbench *kb, void *buf, int64_t bytes, bool zero, atm_dtype dt,
                           uint64_t seed)
{
	int64_t piece = bytes < FILL_PIECE_BYTES ? bytes : FILL_PIECE_BYTES;
	atm_status rc = staging(kb, piece);
	if (rc < 0)
		return rc;
	if (zero)
		memset(kb->host, 0, (size_t)piece);
	for (int64_t off = 0; off < bytes; off += piece) {
		int64_t n = bytes - off < piece ? bytes - off : piece;
		if (kb->o.stop && *kb->o.stop)
			return atm_err(ATM_E_INTERRUPTED, "interrupted");
		if (!zero && dt == ATM_BF16)
			fill_bf16(kb->host, n / 2, &seed);
		else if (!zero)
			atm_bk_fill_positive_from(kb->host, n / (int64_t)sizeof(float), &seed);
		if ((rc = kb->b->iface->set(kb->b, (char *)buf + off, kb->host, n)) < 0)
			return rc;
	}
	return ATM_OK;
}

/* fill_argmax -- the argmax input of a max-pooling backward, made by its
 * forward kernel on this backend: the backward follows those indices when
 * it scatters the gradient, so made-up ones could send it outside the
 * window. The forward kernel's own operands are untimed scratch work in slow
 * memory, which keeps the fast arena as it is. */
static atm_status fill_argmax(atm_kbench *kb, int32_t t, void *buf, uint64_t seed)
{
	const atm_tensor *x = atm_graph_tensor(kb->g, t);
	const atm_backend_i *bi = kb->b->iface;
	int32_t pk = atm_graph_producer(kb->g, t);
	const atm_node *p = pk >= 0 ? atm_graph_node(kb->g, pk) : NULL;
	atm_bk_kernel *k = NULL;
	void *xin = NULL, *y = NULL;
	atm_status rc;
	if (!p || p->op != ATM_OP_MAXPOOL_FWD)
		return fill_set(kb, buf, x->bytes, true, x->dtype, 0);
	const atm_tensor *px = atm_graph_tensor(kb->g, p->in[0]);
	const atm_tensor *py = atm_graph_tensor(kb->g, p->out[0]);
	if ((rc = bi->kernel_new(kb->b, kb->g, pk, &k)) < 0 ||
	    (rc = grow_scratch(kb, bi->kernel_scratch_bytes(kb->b, k))) < 0 ||
	    (rc = bi->alloc(kb->b, ATM_LOC_SLOW, 0, px->bytes, &xin)) < 0 ||
	    (rc = bi->alloc(kb->b, ATM_LOC_SLOW, 0, py->bytes, &y)) < 0 ||
	    (rc = fill_set(kb, xin, px->bytes, false, px->dtype, seed)) < 0)
		goto done;
	void *in[1] = {xin}, *out[2] = {y, buf};
	if ((rc = bi->kernel_run(kb->b, k, in, out, kb->scratch)) < 0)
		goto done;
	rc = bi->sync(kb->b);
done:
	if (y)
		bi->free(kb->b, ATM_LOC_SLOW, y);
	if (xin)
		bi->free(kb->b, ATM_LOC_SLOW, xin);
	if (k)
		bi->kernel_destroy(kb->b, k);
	return rc < 0 ? atm_err_prefix(rc, "making the argmax of '%s': ", x->name) : ATM_OK;
}

/* operand_copy -- operand i's copy in slow or fast memory, made and filled the
 * first time a configuration asks for it: one copy per tensor (a tensor used
 * twice is one buffer, as in the executor), inputs filled, outputs zeroed so
 * that no page fault lands inside a timed run */
static atm_status operand_copy(atm_kbench *kb, const atm_node *n, int i, bool slow, void **ptr)
{
	int first = first_use(n, i);
	int32_t t = operand_tensor(n, first);
	void **slot = &kb->copy[slow][first];
	const atm_backend_i *bi = kb->b->iface;
	atm_status rc;
	*ptr = NULL;
	if (!*slot) {
		const atm_tensor *x = atm_graph_tensor(kb->g, t);
		rc = bi->alloc(kb->b, slow ? ATM_LOC_SLOW : ATM_LOC_FAST, kb->offset[first], x->bytes, slot);
		if (rc < 0)
			return atm_err_prefix(rc, "timing node '%s', tensor '%s': ", n->name, x->name);
		uint64_t seed = atm_bk_tensor_seed(kb->o.seed, t);
		if (first < n->n_in && x->dtype == ATM_I32) {
			if ((rc = fill_argmax(kb, t, *slot, seed)) < 0)
				return rc;
		} else if ((rc = fill_set(kb, *slot, x->bytes, first >= n->n_in, x->dtype, seed)) < 0) {
			return rc;
		}
	}
	*ptr = *slot;
	return ATM_OK;
}

/* run_once -- one kernel run and the emulation wait after it, as exec.c's
 * do_kernel accounts them: slow inputs are read, slow outputs written, and
 * an in-place op (SGD) writes its slow input 0 as well; an allreduce's wait
 * for the other ranks to arrive is left out, as the executor leaves it out */
static atm_status run_once(atm_kbench *kb, int64_t slow_read, int64_t slow_written, double *dt)
{
	const atm_backend_i *bi = kb->b->iface;
	double waited, ranks_waited = atm_bk_allreduce_waited_s();
	atm_status rc;
	if ((rc = bi->mark(kb->b, 0)) < 0 ||
	    (rc = bi->kernel_run(kb->b, kb->k, kb->in, kb->out, kb->scratch)) < 0)
		return rc;
	if (bi->emulate && (slow_read || slow_written) &&
	    (rc = bi->emulate(kb->b, slow_read, slow_written, NULL, &waited)) < 0)
		return rc;
	if ((rc = bi->mark(kb->b, 1)) < 0 || (rc = bi->sync(kb->b)) < 0)
		return rc;
	*dt = bi->elapsed(kb->b, 0, 1) - (atm_bk_allreduce_waited_s() - ranks_waited);
	*dt = *dt > 0 ? *dt : 0;
	return ATM_OK;
}

/* atm_kbench_algos -- node's implementations on this backend (its kernel is built and kept) */
atm_status atm_kbench_algos(atm_kbench *kb, int32_t node, int *n)
{
	*n = 0;
	if (!atm_graph_node(kb->g, node))
		return atm_err(ATM_E_USAGE, "atm_kbench_algos: node %d is out of range", node);
	atm_status rc = use_kernel(kb, node);
	if (rc < 0)
		return rc;
	*n = kb->b->iface->kernel_n_algos(kb->b, kb->k);
	return ATM_OK;
}

/* atm_kbench_algo_workspace -- the workspace algorithm algo of node would take */
atm_status atm_kbench_algo_workspace(atm_kbench *kb, int32_t node, int algo, int64_t *bytes)
{
	int n = 0;
	*bytes = 0;
	atm_status rc = atm_kbench_algos(kb, node, &n);
	if (rc < 0 || (rc = kb->b->iface->kernel_set_algo(kb->b, kb->k, algo)) < 0)
		return rc;
	*bytes = kb->b->iface->kernel_scratch_bytes(kb->b, kb->k);
	return kb->b->iface->kernel_set_algo(kb->b, kb->k, 0);
}

/* atm_kbench_time -- warm-up and timed runs of node with its operands where config puts them */
atm_status atm_kbench_time(atm_kbench *kb, int32_t node, uint32_t config, atm_profile_entry *e)
{
	return atm_kbench_time_algo(kb, node, config, 0, e);
}

/* atm_kbench_time_algo -- the same with one of node's algorithms */
atm_status atm_kbench_time_algo(atm_kbench *kb, int32_t node, uint32_t config, int algo,
                                atm_profile_entry *e)
{
	const atm_node *n = atm_graph_node(kb->g, node);
	atm_status rc = ATM_OK;
	memset(e, 0, sizeof *e);
	if (!n)
		return atm_err(ATM_E_USAGE, "atm_kbench_time: node %d is out of range (graph '%s' has %d "
		               "nodes)", node, atm_graph_name(kb->g), atm_graph_n_nodes(kb->g));
	int n_ops = n->n_in + n->n_out;
	unsigned locs[2 * ATM_CONFIG_MAX_OPERANDS];
	unsigned *lp = n_ops <= 2 * ATM_CONFIG_MAX_OPERANDS ? locs : calloc((size_t)n_ops, sizeof *lp);
	if (!lp)
		return atm_err(ATM_E_NOMEM, "out of memory timing node '%s'", n->name);
	for (int i = 0; i < n_ops; i++)
		lp[i] = atm_node_config_loc(kb->g, node, config, i);
	uint32_t check;
	if (atm_node_config_of(kb->g, node, lp, &check) < 0) {
		rc = atm_err_prefix(ATM_E_USAGE, "atm_kbench_time: ");
		goto done;
	}
	if (check != config) {
		rc = atm_err(ATM_E_USAGE, "atm_kbench_time: 0x%x is not a configuration of node '%s'",
		             (unsigned)config, n->name);
		goto done;
	}
	if ((rc = use_kernel(kb, node)) < 0 ||
	    (rc = kb->b->iface->kernel_set_algo(kb->b, kb->k, algo)) < 0 ||
	    (rc = grow_scratch(kb, kb->b->iface->kernel_scratch_bytes(kb->b, kb->k))) < 0)
		goto done;
	int64_t slow_read = 0, slow_written = 0;
	for (int i = 0; i < n_ops; i++) {
		bool slow = lp[i] == ATM_LOC_SLOW;
		void *ptr;
		if ((rc = operand_copy(kb, n, i, slow, &ptr)) < 0)
			goto done;
		int64_t bytes = atm_graph_tensor(kb->g, operand_tensor(n, i))->bytes;
		if (slow && i < n->n_in)
			slow_read += bytes;
		if (slow && (i >= n->n_in || atm_op_writes_input(n->op, i)))
			slow_written += bytes;
		if (i < n->n_in)
			kb->in[i] = ptr;
		else
			kb->out[i - n->n_in] = ptr;
	}
	double dt;
	if ((rc = run_once(kb, slow_read, slow_written, &dt)) < 0) /* warm-up */
		goto done;
	for (int r = 0; r < kb->o.reps; r++) {
		/* a large kernel's repetitions take seconds: Ctrl-C ends them between runs */
		if (kb->o.stop && *kb->o.stop) {
			rc = atm_err(ATM_E_INTERRUPTED, "interrupted");
			goto done;
		}
		if ((rc = run_once(kb, slow_read, slow_written, &kb->times[r])) < 0)
			goto done;
	}
	e->median_s = atm_sort_median(kb->times, kb->o.reps);
	e->min_s = kb->times[0];
	e->count = kb->o.reps;
	e->scratch_bytes = kb->b->iface->kernel_scratch_bytes(kb->b, kb->k);
done:
	if (lp != locs)
		free(lp);
	if (rc < 0)
		memset(e, 0, sizeof *e);
	return rc;
}

/* copy_s -- one synchronous move of MOVE_BYTES, with the wait the executor's copies add */
static atm_status copy_s(atm_kbench *kb, unsigned to, void *dst, const void *src, double *dt)
{
	const atm_backend_i *bi = kb->b->iface;
	atm_status rc;
	if ((rc = bi->mark(kb->b, 0)) < 0 || (rc = bi->copy(kb->b, to, dst, src, MOVE_BYTES)) < 0 ||
	    (rc = bi->mark(kb->b, 1)) < 0 || (rc = bi->sync(kb->b)) < 0)
		return rc;
	*dt = bi->elapsed(kb->b, 0, 1);
	return ATM_OK;
}

void atm_kbench_tier_rates(const atm_kbench *kb, atm_profile_moves *m)
{
	const atm_tier_desc *fast = &kb->desc.fast, *slow = &kb->desc.slow;
	m->slow_read_gbps = slow->read_gbps > 0 ? slow->read_gbps : 0;
	m->slow_write_gbps = slow->write_gbps > 0 ? slow->write_gbps : 0;
	m->fast_gbps = slow->emulated         ? slow->emulation_fast_gbps
	               : fast->read_gbps > 0 ? fast->read_gbps
	                                     : 0;
}

/* atm_kbench_moves -- best of three synchronous copies each way after a warm-up */
atm_status atm_kbench_moves(atm_kbench *kb, atm_profile_moves *m)
{
	const atm_backend_i *bi = kb->b->iface;
	void *f = NULL, *s = NULL;
	double best_to_slow = INFINITY, best_to_fast = INFINITY, dt;
	atm_status rc;
	memset(m, 0, sizeof *m);
	drop_kernel(kb); /* the copy's fast end takes the arena's start */
	if ((!kb->arena && (rc = make_arena(kb)) < 0) ||
	    (rc = bi->alloc(kb->b, ATM_LOC_FAST, 0, MOVE_BYTES, &f)) < 0 ||
	    (rc = bi->alloc(kb->b, ATM_LOC_SLOW, 0, MOVE_BYTES, &s)) < 0 ||
	    (rc = staging(kb, MOVE_BYTES)) < 0) {
		atm_err_prefix(rc, "timing moves: ");
		goto done;
	}
	atm_bk_fill_positive(kb->host, MOVE_BYTES / 4, kb->o.seed);
	if ((rc = bi->set(kb->b, f, kb->host, MOVE_BYTES)) < 0)
		goto done;
	memset(kb->host, 0, (size_t)MOVE_BYTES);
	if ((rc = bi->set(kb->b, s, kb->host, MOVE_BYTES)) < 0)
		goto done;
	/* the first round is a warm-up; the best of the rest is the bandwidth */
	for (int r = 0; r < 4; r++) {
		if ((rc = copy_s(kb, ATM_LOC_SLOW, s, f, &dt)) < 0)
			goto done;
		if (r && dt < best_to_slow)
			best_to_slow = dt;
		if ((rc = copy_s(kb, ATM_LOC_FAST, f, s, &dt)) < 0)
			goto done;
		if (r && dt < best_to_fast)
			best_to_fast = dt;
	}
	m->to_slow_gbps = (double)MOVE_BYTES / best_to_slow / 1e9;
	m->to_fast_gbps = (double)MOVE_BYTES / best_to_fast / 1e9;
	atm_kbench_tier_rates(kb, m);
done:
	if (s)
		bi->free(kb->b, ATM_LOC_SLOW, s);
	if (f)
		bi->free(kb->b, ATM_LOC_FAST, f);
	return rc;
}

/* copies_s -- n asynchronous copies of MOVE_BYTES to loc between slow and fast started at once,
 * then kernel (when run) and the copies waited for; *wall_s is from the first copy's start to
 * the last one's end as the caller sees it, *kernel_s the kernel's time beside them (kernel) */
static atm_status copies_s(atm_kbench *kb, int n, unsigned loc, void *slow, void *fast,
                           bool kernel, double *wall_s, double *kernel_s)
{
	const atm_backend_i *bi = kb->b->iface;
	atm_status rc = ATM_OK, wrc;
	double t0 = atm_now_s();
	for (int i = 0; i < n && rc >= 0; i++)
		rc = loc == ATM_LOC_FAST ? bi->copy_start(kb->b, i, loc, fast, slow, MOVE_BYTES)
		                         : bi->copy_start(kb->b, i, loc, slow, fast, MOVE_BYTES);
	if (rc >= 0 && kernel)
		rc = run_once(kb, 0, 0, kernel_s);
	for (int i = 0; i < n; i++)
		if ((wrc = bi->copy_wait(kb->b, i)) < 0 && rc >= 0)
			rc = wrc;
	*wall_s = atm_now_s() - t0;
	return rc;
}

/* overlap_dir -- what copies to loc and node's kernel (built, all fast) cost each other: *loss,
 * the kernel's extra time over the copies' time alone that ran beside it; *stretch, the
 * copies' time beside the kernel over alone. The copies outlast the kernel (about twice its
 * time), so that their rate beside it shows: done at 1/stretch while it runs and at 1 after,
 * c alone = k' / stretch + (wall - k'). Each turn times the copies alone, the kernel alone
 * and the two together, so that a sample compares times of one moment; the medians of the
 * turns' samples keep a busy moment from deciding. */
static atm_status overlap_dir(atm_kbench *kb, unsigned loc, void *slow, void *fast, double kernel_s,
                              double *loss, double *stretch)
{
	double one, c, alone, wall, k, ls[64], ss[64];
	int n_samples = 0;
	atm_status rc;
	if ((rc = copies_s(kb, 2, loc, slow, fast, false, &one, &k)) < 0 || /* warm-up */
	    (rc = copies_s(kb, 2, loc, slow, fast, false, &one, &k)) < 0)
		return rc;
	one /= 2;
	int n = one > 0 ? (int)(2 * kernel_s / one + 0.5) : 2;
	n = n < 1 ? 1 : n > 16 ? 16 : n;
	int turns = 2 * kb->o.reps + 1;
	for (int r = 0; r < turns && r < 64; r++) {
		if ((rc = copies_s(kb, n, loc, slow, fast, false, &c, &k)) < 0 ||
		    (rc = run_once(kb, 0, 0, &alone)) < 0 ||
		    (rc = copies_s(kb, n, loc, slow, fast, true, &wall, &k)) < 0)
			return rc;
		double done_beside = c - (wall - k); /* of the copies' time alone, what ran beside */
		if (!(c > 0) || !(k > 0))
			continue;
		done_beside = done_beside < 1e-9 ? 1e-9 : done_beside > k ? k : done_beside;
		ss[n_samples] = k / done_beside;
		ls[n_samples++] = (k - alone) / done_beside;
	}
	*loss = 0;
	*stretch = 1;
	if (n_samples) {
		double l = atm_sort_median(ls, n_samples), s = atm_sort_median(ss, n_samples);
		*loss = l < 0 ? 0 : l > 1 ? 1 : l;
		*stretch = s < 1 ? 1 : s > ATM_PROFILE_MAX_STRETCH ? ATM_PROFILE_MAX_STRETCH : s;
	}
	return ATM_OK;
}

/* atm_kbench_overlap -- node's all-fast kernel alone and beside asynchronous copies, fetches
 * and evictions apart (between slow memory and a part of the arena past the kernel's
 * operands, which stay as they are; each costs the mover what a plan's does: the copy and
 * its emulated wait), on the threads and with the wait policy the runtime's kernels have */
atm_status atm_kbench_overlap(atm_kbench *kb, int32_t node, atm_profile_moves *mv)
{
	const atm_backend_i *bi = kb->b->iface;
	void *a = NULL, *z = NULL;
	atm_profile_entry e;
	atm_profile_machine m;
	atm_status rc = atm_kbench_time(kb, node, 0, &e);
	if (rc < 0 || (rc = bi->alloc(kb->b, ATM_LOC_SLOW, 0, MOVE_BYTES, &a)) < 0 ||
	    (rc = bi->alloc(kb->b, ATM_LOC_FAST, copy_offset(kb->g), MOVE_BYTES, &z)) < 0 ||
	    (rc = staging(kb, MOVE_BYTES)) < 0 || (rc = bi->reserve(kb->b, 16, 2)) < 0)
		goto done;
	atm_bk_fill_positive(kb->host, MOVE_BYTES / 4, kb->o.seed);
	if ((rc = bi->set(kb->b, a, kb->host, MOVE_BYTES)) < 0 ||
	    (rc = bi->set(kb->b, z, kb->host, MOVE_BYTES)) < 0 ||
	    (rc = overlap_dir(kb, ATM_LOC_FAST, a, z, e.min_s, &mv->kernel_loss[0],
	                      &mv->copy_stretch[0])) < 0 ||
	    (rc = overlap_dir(kb, ATM_LOC_SLOW, a, z, e.min_s, &mv->kernel_loss[1],
	                      &mv->copy_stretch[1])) < 0)
		goto done;
	/* older readers price both directions with one loss: their mean */
	mv->overlap_loss = (mv->kernel_loss[0] + mv->kernel_loss[1]) / 2;
	mv->overlap_measured = mv->by_direction = true;
	bi->machine(kb->b, &m);
	mv->overlap_threads = m.n_threads;
	const char *policy = getenv("OMP_WAIT_POLICY");
	snprintf(mv->overlap_wait_policy, sizeof mv->overlap_wait_policy, "%s",
	         policy && strlen(policy) < sizeof mv->overlap_wait_policy ? policy : "");
done:
	if (rc < 0)
		atm_err_prefix(rc, "timing copies beside a kernel: ");
	if (z)
		bi->free(kb->b, ATM_LOC_FAST, z);
	if (a)
		bi->free(kb->b, ATM_LOC_SLOW, a);
	return rc;
}

/* atm_kbench_tiers -- descriptions of the tiers in use */
void atm_kbench_tiers(const atm_kbench *kb, atm_tier_desc *fast, atm_tier_desc *slow)
{
	*fast = kb->desc.fast;
	*slow = kb->desc.slow;
}
