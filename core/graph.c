/* graph.c -- the graph arena: tensors and nodes in schedule order, names, validation of the schedule, the ops' shape and work rules run on a node's operands */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"

/* Strings and id arrays live in chunks that are freed together with the graph. */
struct chunk {
	struct chunk *next;
	size_t used, cap;
	_Alignas(max_align_t) unsigned char data[];
};

/* An open-addressing set of names -> ids, so building a 100k-tensor graph stays linear. */
struct name_index {
	int32_t *slots; /* -1 empty */
	size_t cap;     /* power of two */
	size_t n;
};

struct atm_graph {
	char *name;
	atm_tensor *tensors;
	int32_t n_tensors, cap_tensors;
	atm_node *nodes;
	int32_t n_nodes, cap_nodes;
	struct chunk *chunks;
	struct name_index tensor_names;
	struct name_index node_names;
	int64_t total_bytes; /* every tensor's and workspace's, at most ATM_MAX_GRAPH_BYTES */
};

#define CHUNK_BYTES ((size_t)64 * 1024)

/* arena_alloc -- bytes from the graph's chunks, aligned for int64_t */
static void *arena_alloc(atm_graph *g, size_t bytes)
{
	bytes = (bytes + 7u) & ~(size_t)7u;
	if (!g->chunks || g->chunks->cap - g->chunks->used < bytes) {
		size_t cap = bytes > CHUNK_BYTES ? bytes : CHUNK_BYTES;
		struct chunk *c = malloc(sizeof *c + cap);
		if (!c)
			return NULL;
		c->next = g->chunks;
		c->used = 0;
		c->cap = cap;
		g->chunks = c;
	}
	void *p = g->chunks->data + g->chunks->used;
	g->chunks->used += bytes;
	return p;
}

/* arena_strdup -- copy of s in the arena */
static char *arena_strdup(atm_graph *g, const char *s)
{
	size_t len = strlen(s) + 1;
	char *p = arena_alloc(g, len);
	if (p)
		memcpy(p, s, len);
	return p;
}

/* hash_name -- the slot a name starts looking from */
static uint64_t hash_name(const char *s)
{
	return atm_fnv1a(ATM_FNV1A_INIT, s, strlen(s));
}

/* index_find -- id stored under name, or -1; names come from name_of(g, id) */
static int32_t index_find(const struct name_index *ix, const char *name,
                          const char *(*name_of)(const atm_graph *, int32_t), const atm_graph *g)
{
	if (!ix->cap)
		return -1;
	for (size_t i = hash_name(name) & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
		int32_t id = ix->slots[i];
		if (id < 0)
			return -1;
		if (strcmp(name_of(g, id), name) == 0)
			return id;
	}
}

/* index_insert -- remember id under name (the caller checked it is new) */
static atm_status index_insert(struct name_index *ix, const char *name, int32_t id,
                               const char *(*name_of)(const atm_graph *, int32_t),
                               const atm_graph *g)
{
	if ((ix->n + 1) * 2 > ix->cap) {
		size_t cap = ix->cap ? ix->cap * 2 : 64;
		int32_t *slots = malloc(cap * sizeof *slots);
		if (!slots)
			return atm_err(ATM_E_NOMEM, "out of memory indexing names");
		memset(slots, 0xff, cap * sizeof *slots);
		for (size_t i = 0; i < ix->cap; i++) {
			int32_t old = ix->slots[i];
			if (old < 0)
				continue;
			size_t j = hash_name(name_of(g, old)) & (cap - 1);
			while (slots[j] >= 0)
				j = (j + 1) & (cap - 1);
			slots[j] = old;
		}
		free(ix->slots);
		ix->slots = slots;
		ix->cap = cap;
	}
	size_t j = hash_name(name) & (ix->cap - 1);
	while (ix->slots[j] >= 0)
		j = (j + 1) & (ix->cap - 1);
	ix->slots[j] = id;
	ix->n++;
	return ATM_OK;
}

static const char *tensor_name_of(const atm_graph *g, int32_t id)
{
	return g->tensors[id].name;
}

static const char *node_name_of(const atm_graph *g, int32_t id)
{
	return g->nodes[id].name;
}

atm_status atm_graph_new(atm_graph **out, const char *name)
{
	*out = NULL;
	if (!name || !*name)
		return atm_err(ATM_E_USAGE, "a graph needs a non-empty name");
	atm_graph *g = calloc(1, sizeof *g);
	if (!g)
		return atm_err(ATM_E_NOMEM, "out of memory creating graph '%s'", name);
	g->name = strdup(name);
	if (!g->name) {
		free(g);
		return atm_err(ATM_E_NOMEM, "out of memory creating graph '%s'", name);
	}
	*out = g;
	return ATM_OK;
}

void atm_graph_destroy(atm_graph *g)
{
	if (!g)
		return;
	for (struct chunk *c = g->chunks, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	free(g->tensor_names.slots);
	free(g->node_names.slots);
	free(g->tensors);
	free(g->nodes);
	free(g->name);
	free(g);
}


/* too_large -- the input error of a tensor or a node's workspace that would take the graph's
 * sizes past ATM_MAX_GRAPH_BYTES */
static atm_status too_large(const atm_graph *g, const char *what, const char *name, int64_t bytes)
{
	char a[32], b[32], c[32];
	return atm_err(ATM_E_INPUT, "%s '%s': its %s would take the graph's tensors and workspaces "
	               "past %s (%s so far): no machine holds a step of that size", what, name,
	               atm_format_bytes(bytes, a, sizeof a),
	               atm_format_bytes(ATM_MAX_GRAPH_BYTES, b, sizeof b),
	               atm_format_bytes(g->total_bytes, c, sizeof c));
}
/* grow -- make room for one more element in a realloc'd array */
static int grow(void **arr, int32_t *cap, int32_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	if (n >= INT32_MAX / 2)
		return -1;
	int32_t ncap = *cap ? *cap * 2 : 64;
	void *p = realloc(*arr, (size_t)ncap * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

atm_status atm_shape_elems(int ndim, const int64_t *dims, int64_t *elems)
{
	int64_t n = 1;
	if (ndim < 1 || ndim > ATM_MAX_DIMS)
		return atm_err(ATM_E_INPUT, "a shape has 1 to %d dimensions, got %d", ATM_MAX_DIMS, ndim);
	for (int i = 0; i < ndim; i++) {
		if (dims[i] < 1)
			return atm_err(ATM_E_INPUT, "dimension %d is %lld; dimensions must be >= 1", i,
			               (long long)dims[i]);
		if (dims[i] > ATM_MAX_DIM)
			return atm_err(ATM_E_INPUT, "dimension %d is %lld; the largest allowed is %lld", i,
			               (long long)dims[i], (long long)ATM_MAX_DIM);
		if (n > ATM_MAX_BYTES / dims[i])
			return atm_err(ATM_E_INPUT, "the shape's element count overflows (more than %lld)",
			               (long long)ATM_MAX_BYTES);
		n *= dims[i];
	}
	*elems = n;
	return ATM_OK;
}

atm_status atm_graph_add_tensor(atm_graph *g, const char *name, atm_dtype dtype, int ndim,
                                const int64_t *dims, atm_tensor_kind kind, unsigned locations,
                                int32_t *id)
{
	int64_t elems = 0;
	atm_status rc;
	*id = -1;
	if (!name || !*name)
		return atm_err(ATM_E_INPUT, "tensor %d: a tensor needs a non-empty name", g->n_tensors);
	if ((unsigned)dtype >= ATM_N_DTYPES)
		return atm_err(ATM_E_INPUT, "tensor '%s': unknown dtype %d", name, (int)dtype);
	if ((unsigned)kind >= ATM_N_KINDS)
		return atm_err(ATM_E_INPUT, "tensor '%s': unknown kind %d", name, (int)kind);
	/* what the step starts from is filled and saved as f32; bf16 is what it computes between */
	if (dtype == ATM_BF16 && kind != ATM_KIND_ACTIVATION && kind != ATM_KIND_GRAD)
		return atm_err(ATM_E_INPUT, "tensor '%s' is a bf16 %s; what the step starts from and "
		               "ends in is f32 (parameters are the master copy, cast to bf16 where "
		               "used) (valid bf16 kinds: activation, grad)", name, atm_kind_name(kind));
	if (!(locations & ATM_LOC_ANY) || (locations & ~ATM_LOC_ANY))
		return atm_err(ATM_E_INPUT,
		               "tensor '%s': locations must be a non-empty subset of {fast, slow}", name);
	rc = atm_shape_elems(ndim, dims, &elems);
	if (rc < 0)
		return atm_err_prefix(rc, "tensor '%s': ", name);
	if (elems > ATM_MAX_BYTES / atm_dtype_bytes(dtype))
		return atm_err(ATM_E_INPUT, "tensor '%s': byte size overflows (more than %lld bytes)",
		               name, (long long)ATM_MAX_BYTES);
	if (elems * atm_dtype_bytes(dtype) > ATM_MAX_GRAPH_BYTES - g->total_bytes)
		return too_large(g, "tensor", name, elems * atm_dtype_bytes(dtype));
	if (index_find(&g->tensor_names, name, tensor_name_of, g) >= 0)
		return atm_err(ATM_E_INPUT, "tensor '%s': the name is used by tensor %d already", name,
		               index_find(&g->tensor_names, name, tensor_name_of, g));
	if (grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors, sizeof *g->tensors) < 0)
		return atm_err(ATM_E_NOMEM, "out of memory adding tensor '%s'", name);

	atm_tensor *t = &g->tensors[g->n_tensors];
	memset(t, 0, sizeof *t);
	t->id = g->n_tensors;
	t->name = arena_strdup(g, name);
	if (!t->name)
		return atm_err(ATM_E_NOMEM, "out of memory adding tensor '%s'", name);
	t->dtype = dtype;
	t->ndim = ndim;
	memcpy(t->dims, dims, (size_t)ndim * sizeof *dims);
	t->n_elems = elems;
	t->bytes = elems * atm_dtype_bytes(dtype);
	t->kind = kind;
	t->locations = locations;
	rc = index_insert(&g->tensor_names, t->name, t->id, tensor_name_of, g);
	if (rc < 0)
		return rc;
	g->total_bytes += t->bytes;
	*id = g->n_tensors++;
	return ATM_OK;
}

/* format_range -- "2" or "2 to 3" */
static void format_range(char *buf, size_t len, int lo, int hi)
{
	if (lo == hi)
		snprintf(buf, len, "%d", lo);
	else
		snprintf(buf, len, "%d to %d", lo, hi);
}

atm_status atm_graph_add_node(atm_graph *g, const char *name, atm_op op, const atm_attrs *attrs,
                              int n_in, const int32_t *in, int n_out, const int32_t *out,
                              int32_t *id)
{
	const atm_op_desc *d = atm_op_describe(op);
	*id = -1;
	if (!name || !*name)
		return atm_err(ATM_E_INPUT, "node %d: a node needs a non-empty name", g->n_nodes);
	if (!d)
		return atm_err(ATM_E_INPUT, "node '%s': unknown op %d", name, (int)op);
	if (n_in < d->min_in || n_in > d->max_in || n_out < d->min_out || n_out > d->max_out) {
		char ins[32], outs[32];
		format_range(ins, sizeof ins, d->min_in, d->max_in);
		format_range(outs, sizeof outs, d->min_out, d->max_out);
		return atm_err(ATM_E_INPUT, "node '%s': %s takes %s inputs and %s outputs, got %d and %d",
		               name, atm_op_name(op), ins, outs, n_in, n_out);
	}
	for (int i = 0; i < n_in + n_out; i++) {
		int32_t t = i < n_in ? in[i] : out[i - n_in];
		if (t < 0 || t >= g->n_tensors)
			return atm_err(ATM_E_INPUT, "node '%s': %s %d refers to tensor %d, which does not exist "
			               "(valid ids: 0 to %d)", name, i < n_in ? "input" : "output",
			               i < n_in ? i : i - n_in, t, g->n_tensors - 1);
	}
	if (index_find(&g->node_names, name, node_name_of, g) >= 0)
		return atm_err(ATM_E_INPUT, "node '%s': the name is used by node %d already", name,
		               index_find(&g->node_names, name, node_name_of, g));
	if (grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes, sizeof *g->nodes) < 0)
		return atm_err(ATM_E_NOMEM, "out of memory adding node '%s'", name);

	atm_node *n = &g->nodes[g->n_nodes];
	memset(n, 0, sizeof *n);
	int32_t *ids = arena_alloc(g, (size_t)(n_in + n_out) * sizeof *ids + 1);
	n->name = arena_strdup(g, name);
	if (!ids || !n->name)
		return atm_err(ATM_E_NOMEM, "out of memory adding node '%s'", name);
	if (n_in)
		memcpy(ids, in, (size_t)n_in * sizeof *ids);
	if (n_out)
		memcpy(ids + n_in, out, (size_t)n_out * sizeof *ids);
	n->id = g->n_nodes;
	n->op = op;
	if (attrs)
		n->attrs = *attrs;
	n->n_in = n_in;
	n->in = ids;
	n->n_out = n_out;
	n->out = ids + n_in;
	atm_status rc = index_insert(&g->node_names, n->name, n->id, node_name_of, g);
	if (rc < 0)
		return rc;
	*id = g->n_nodes++;
	return ATM_OK;
}

atm_status atm_graph_mark_batched(atm_graph *g, int32_t tensor)
{
	if (tensor < 0 || tensor >= g->n_tensors)
		return atm_err(ATM_E_USAGE, "tensor %d does not exist (valid: 0 to %d)", tensor,
		               g->n_tensors - 1);
	g->tensors[tensor].batched = true;
	return ATM_OK;
}

/* atm_graph_producer -- a scan of the schedule: callers ask once per tensor they set up */
int32_t atm_graph_producer(const atm_graph *g, int32_t tensor)
{
	for (int32_t k = 0; k < g->n_nodes; k++) {
		const atm_node *n = &g->nodes[k];
		for (int i = 0; i < n->n_out; i++)
			if (n->out[i] == tensor)
				return k;
	}
	return -1;
}

/* atm_node_runs_bf16 -- node reads or writes a bf16 tensor and is no cast: a backend runs it on
 * bf16 kernels or widened */
bool atm_node_runs_bf16(const atm_graph *g, int32_t node)
{
	const atm_node *n = &g->nodes[node];
	for (int i = 0; n->op != ATM_OP_CAST && i < n->n_in + n->n_out; i++)
		if (g->tensors[i < n->n_in ? n->in[i] : n->out[i - n->n_in]].dtype == ATM_BF16)
			return true;
	return false;
}

int64_t atm_graph_batch(const atm_graph *g)
{
	for (int32_t t = 0; t < g->n_tensors; t++)
		if (g->tensors[t].batched)
			return g->tensors[t].dims[0];
	return 0;
}

atm_status atm_graph_set_workspace(atm_graph *g, int32_t node, int64_t bytes)
{
	if (node < 0 || node >= g->n_nodes)
		return atm_err(ATM_E_USAGE, "node %d does not exist (valid: 0 to %d)", node,
		               g->n_nodes - 1);
	if (bytes < 0 || bytes > ATM_MAX_BYTES)
		return atm_err(ATM_E_INPUT, "node '%s': workspace of %lld bytes is out of range",
		               g->nodes[node].name, (long long)bytes);
	int64_t rest = g->total_bytes - g->nodes[node].workspace_bytes;
	if (bytes > ATM_MAX_GRAPH_BYTES - rest)
		return too_large(g, "node", g->nodes[node].name, bytes);
	g->nodes[node].workspace_bytes = bytes;
	g->total_bytes = rest + bytes;
	return ATM_OK;
}

bool atm_tensor_is_persistent(const atm_tensor *t)
{
	switch (t->kind) {
	case ATM_KIND_INPUT:
	case ATM_KIND_PARAM:
	case ATM_KIND_OPTIMIZER_STATE:
	case ATM_KIND_CONSTANT:
	case ATM_KIND_OUTPUT:
		return true;
	default:
		return false;
	}
}

/* ---------------------------------------------------------------- the ops' rules */

/* Operands of most nodes fit here; a concat of many parts takes an allocation. */
#define SMALL_OPERANDS 16

/* A node's operands as tensors, for its op's rules: in[i] input i, out[i] output i. */
struct operands {
	const atm_tensor **in, **out;
	const atm_tensor *small[SMALL_OPERANDS];
	const atm_tensor **heap;
};

/* operands_get -- resolve n's tensor ids; operands_put releases what this took */
static atm_status operands_get(const atm_graph *g, const atm_node *n, struct operands *o)
{
	size_t count = (size_t)n->n_in + (size_t)n->n_out;
	o->heap = NULL;
	o->in = o->small;
	if (count > SMALL_OPERANDS) {
		o->heap = malloc(count * sizeof *o->heap);
		if (!o->heap)
			return atm_err(ATM_E_NOMEM, "out of memory reading the operands of node '%s'",
			               n->name);
		o->in = o->heap;
	}
	o->out = o->in + n->n_in;
	for (int i = 0; i < n->n_in; i++)
		o->in[i] = &g->tensors[n->in[i]];
	for (int i = 0; i < n->n_out; i++)
		o->out[i] = &g->tensors[n->out[i]];
	return ATM_OK;
}

/* operands_put -- free what operands_get took */
static void operands_put(struct operands *o)
{
	free(o->heap);
	o->heap = NULL;
}

/* shape_check -- dtypes, then the shape rule of the node's op; the message names the tensor */
static atm_status shape_check(const atm_graph *g, const atm_node *n)
{
	const struct atm_op_entry *e = atm_op_entry(n->op);
	struct operands o;
	if (!e || !e->shape)
		return atm_err(ATM_E_INTERNAL, "no shape rule for op %d", (int)n->op);
	atm_status rc = operands_get(g, n, &o);
	if (rc < 0)
		return rc;
	rc = atm_shape_dtypes(&e->d, n, o.in, o.out);
	if (rc == ATM_OK)
		rc = e->shape(n, o.in, o.out);
	operands_put(&o);
	return rc;
}

/* atm_node_work -- the traffic every op has, then the work rule of the node's op */
atm_status atm_node_work(const atm_graph *g, int32_t node, atm_work *w)
{
	const atm_node *n = atm_graph_node(g, node);
	struct operands o;
	memset(w, 0, sizeof *w);
	if (!n)
		return atm_err(ATM_E_USAGE, "atm_node_work: node %d is out of range (graph '%s' has %d "
		               "nodes)", node, g->name, g->n_nodes);
	const struct atm_op_entry *e = atm_op_entry(n->op);
	if (!e || !e->work)
		return atm_err(ATM_E_UNSUPPORTED, "node '%s': no work model for op %s", n->name,
		               atm_op_name(n->op));
	atm_status rc = operands_get(g, n, &o);
	if (rc < 0)
		return rc;
	w->traffic_bytes = atm_work_io_bytes(&e->d, n, o.in, o.out);
	e->work(n, o.in, o.out, w);
	operands_put(&o);
	return ATM_OK;
}

/* ---------------------------------------------------------------- validation */

/* exists_before_step -- kinds that exist before the step starts are never kernel outputs */
static bool exists_before_step(const atm_tensor *t)
{
	return atm_tensor_is_persistent(t) && t->kind != ATM_KIND_OUTPUT;
}

atm_status atm_graph_validate(const atm_graph *g)
{
	atm_status rc = ATM_OK;
	int32_t *producer = malloc((size_t)(g->n_tensors ? g->n_tensors : 1) * sizeof *producer);
	if (!producer)
		return atm_err(ATM_E_NOMEM, "out of memory validating graph '%s'", g->name);
	for (int32_t t = 0; t < g->n_tensors; t++)
		producer[t] = -1;

	for (int32_t i = 0; i < g->n_nodes; i++) {
		const atm_node *n = &g->nodes[i];
		/* a graph of millions of nodes takes seconds: Ctrl-C ends it too */
		if (i % 4096 == 0 && atm_stopped()) {
			rc = atm_err(ATM_E_INTERRUPTED, "interrupted checking graph '%s' (node %d of %d)",
			             g->name, i, g->n_nodes);
			goto out;
		}
		for (int k = 0; k < n->n_in; k++) {
			const atm_tensor *t = &g->tensors[n->in[k]];
			if (!exists_before_step(t) && producer[t->id] < 0) {
				rc = atm_err(ATM_E_INPUT, "node %d ('%s'): input %d, tensor %d ('%s'), is used "
				             "before it is produced", i, n->name, k, t->id, t->name);
				goto out;
			}
		}
		for (int k = 0; k < n->n_in; k++) {
			atm_tensor_kind kind = g->tensors[n->in[k]].kind;
			if (!atm_op_writes_input(n->op, k) || kind == ATM_KIND_PARAM ||
			    kind == ATM_KIND_OPTIMIZER_STATE)
				continue;
			rc = atm_err(ATM_E_INPUT, "node %d ('%s'): %s updates tensor '%s' in place, which "
			             "must be a param or optimizer_state, not %s", i, n->name,
			             atm_op_name(n->op), g->tensors[n->in[k]].name, atm_kind_name(kind));
			goto out;
		}
		for (int k = 0; k < n->n_out; k++) {
			const atm_tensor *t = &g->tensors[n->out[k]];
			if (exists_before_step(t)) {
				rc = atm_err(ATM_E_INPUT, "node %d ('%s'): output %d, tensor '%s', is of kind %s, "
				             "which exists before the step and cannot be produced by a kernel",
				             i, n->name, k, t->name, atm_kind_name(t->kind));
				goto out;
			}
			if (producer[t->id] >= 0) {
				rc = atm_err(ATM_E_INPUT, "node %d ('%s'): output %d, tensor '%s', is already "
				             "produced by node %d ('%s')", i, n->name, k, t->name,
				             producer[t->id], g->nodes[producer[t->id]].name);
				goto out;
			}
			producer[t->id] = i;
		}
		for (int k = 0; k < n->n_out; k++)
			for (int j = 0; j < n->n_in; j++)
				if (n->out[k] == n->in[j]) {
					rc = atm_err(ATM_E_INPUT, "node %d ('%s'): tensor '%s' is both an input and "
					             "an output", i, n->name, g->tensors[n->out[k]].name);
					goto out;
				}
		rc = shape_check(g, n);
		if (rc < 0) {
			atm_err_prefix(rc, "node %d ('%s', %s): ", i, n->name, atm_op_name(n->op));
			goto out;
		}
	}
	int64_t batch = atm_graph_batch(g);
	for (int32_t t = 0; t < g->n_tensors; t++) {
		const atm_tensor *x = &g->tensors[t];
		if (x->batched && x->dims[0] != batch) {
			rc = atm_err(ATM_E_INPUT, "tensor %d ('%s') is marked batched with %lld rows, but the "
			             "batch is %lld", t, x->name, (long long)x->dims[0], (long long)batch);
			goto out;
		}
		if (!exists_before_step(&g->tensors[t]) && producer[t] < 0) {
			rc = atm_err(ATM_E_INPUT, "tensor %d ('%s', %s) is never produced by any node", t,
			             g->tensors[t].name, atm_kind_name(g->tensors[t].kind));
			goto out;
		}
	}
out:
	free(producer);
	return rc;
}

const char *atm_graph_name(const atm_graph *g)
{
	return g->name;
}

int32_t atm_graph_n_tensors(const atm_graph *g)
{
	return g->n_tensors;
}

int32_t atm_graph_n_nodes(const atm_graph *g)
{
	return g->n_nodes;
}

const atm_tensor *atm_graph_tensor(const atm_graph *g, int32_t id)
{
	return id >= 0 && id < g->n_tensors ? &g->tensors[id] : NULL;
}

const atm_node *atm_graph_node(const atm_graph *g, int32_t id)
{
	return id >= 0 && id < g->n_nodes ? &g->nodes[id] : NULL;
}

int32_t atm_graph_find_tensor(const atm_graph *g, const char *name)
{
	return name ? index_find(&g->tensor_names, name, tensor_name_of, g) : -1;
}

/* atm_tensor_is_labels -- some node of g reads tensor t as labels */
bool atm_tensor_is_labels(const atm_graph *g, int32_t t)
{
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		const atm_node *n = atm_graph_node(g, k);
		for (int i = 0; i < n->n_in; i++)
			if (n->in[i] == t && atm_op_in_role(n->op, i) == ATM_ROLE_LABELS)
				return true;
	}
	return false;
}

/* atm_tensor_token_limit -- the ids tensor t may hold are below this: the fewest rows of a
 * table or classes of a loss that a node reads t against; 0 when no node reads t as tokens */
int64_t atm_tensor_token_limit(const atm_graph *g, int32_t t)
{
	int64_t limit = 0;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		const atm_node *n = atm_graph_node(g, k);
		for (int i = 0; i < n->n_in; i++) {
			if (n->in[i] != t || atm_op_in_role(n->op, i) != ATM_ROLE_TOKENS)
				continue;
			/* an embedding indexes its table's rows, a loss its logits' classes */
			bool emb = n->op == ATM_OP_EMBEDDING_FWD || n->op == ATM_OP_EMBEDDING_BWD;
			const atm_tensor *x = atm_graph_tensor(g, n->op == ATM_OP_EMBEDDING_BWD ? n->out[0]
			                                                                        : n->in[0]);
			int64_t lim = x->dims[x->ndim - (emb ? 2 : 1)];
			if (limit == 0 || lim < limit)
				limit = lim;
		}
	}
	return limit;
}
