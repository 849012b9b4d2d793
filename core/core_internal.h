/* core_internal.h -- helpers shared by the core sources, not part of the public contract */
#ifndef ATM_CORE_INTERNAL_H
#define ATM_CORE_INTERNAL_H

#include "atm_core.h"

/* ---------------------------------------------------------------- ops */

/* A rule of an op's entry: its shapes (shape.c; the message names the tensor) and its work
 * (work.c; the traffic every op has is set already, the rule adds FLOPs and any extra passes).
 * A rule reads the node's op and attributes and its operands, in[i] the tensor of input i and
 * out[i] that of output i, resolved by the caller (graph.c); it calls nothing in graph.c or
 * ops.c, which sit above it. Both run on nodes whose arity fits the op. */
typedef atm_status atm_shape_rule(const atm_node *n, const atm_tensor *const *in,
                                  const atm_tensor *const *out);
typedef void atm_work_rule(const atm_node *n, const atm_tensor *const *in,
                           const atm_tensor *const *out, atm_work *w);

/* One op's entry in core/ops.c: what atm_op_describe hands out and what only core uses. */
struct atm_op_entry {
	atm_op_desc d;
	/* the number the graph digest hashes for the op: fixed once given (plans hold digests),
	 * never reused, unlike the enum's values */
	int32_t digest_id;
	atm_shape_rule *shape;
	atm_work_rule *work;
};

/* atm_op_entry -- op's entry; NULL for a value that is no op */
const struct atm_op_entry *atm_op_entry(atm_op op);

/* atm_name_lookup -- *out the index of s among names[0..n), or ATM_E_INPUT naming what was
 * looked up and listing every valid name (names.c) */
atm_status atm_name_lookup(const char *what, const char *const *names, int n, const char *s,
                           int *out);

/* Shape rules (shape.c), each for the ops its name says. */
atm_shape_rule atm_shape_conv, atm_shape_ip, atm_shape_relu, atm_shape_pool, atm_shape_bn,
	atm_shape_concat, atm_shape_add, atm_shape_loss, atm_shape_sgd, atm_shape_matmul,
	atm_shape_reduce, atm_shape_layer_norm, atm_shape_softmax, atm_shape_embedding,
	atm_shape_permute, atm_shape_narrow, atm_shape_token_loss, atm_shape_mul, atm_shape_mul_bwd,
	atm_shape_rms_norm, atm_shape_rope, atm_shape_update, atm_shape_allreduce;

/* atm_shape_matmul_dims, atm_shape_permute_view -- the geometry the matmul and permute rules
 * check, for atm_matmul_dims_of and atm_permute_view (geometry.c) */
atm_status atm_shape_matmul_dims(const atm_node *n, const atm_tensor *a, const atm_tensor *b,
                                 const atm_tensor *c, atm_matmul_dims *d);
atm_status atm_shape_permute_view(const atm_attrs *a, const atm_tensor *x, const atm_tensor *y,
                                  int64_t *view, int64_t *permuted);

/* atm_shape_dtypes -- every operand is f32 but those d's roles give as indices (i32, checked by
 * the op's rule): the check every op has, before its rule */
atm_status atm_shape_dtypes(const atm_op_desc *d, const atm_node *n, const atm_tensor *const *in,
                            const atm_tensor *const *out);

/* Work rules (work.c). */
atm_work_rule atm_work_conv, atm_work_ip, atm_work_per_out_elem, atm_work_pool, atm_work_bn_fwd,
	atm_work_bn_bwd, atm_work_copy, atm_work_softmax_xent_fwd, atm_work_two_per_in_elem,
	atm_work_matmul, atm_work_transcendental, atm_work_update, atm_work_allreduce;

/* atm_work_io_bytes -- every operand once, and the inputs an op writes in place twice (read
 * and written): the traffic every op has, before its rule */
double atm_work_io_bytes(const atm_op_desc *d, const atm_node *n, const atm_tensor *const *in,
                         const atm_tensor *const *out);

/* atm_shape_elems -- product of dims with overflow and range checks */
atm_status atm_shape_elems(int ndim, const int64_t *dims, int64_t *elems);

/* A text being built: the JSON files core writes put one element a line, which jansson's
 * indenting cannot do. A failed allocation is remembered and reported once, by
 * atm_text_finish. Start from (atm_text){0}. */
typedef struct {
	char *buf;
	size_t len, cap;
	bool failed;
} atm_text;

/* atm_text_add -- append printf-style text */
void atm_text_add(atm_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* atm_text_str -- append s as it is (it may hold '%') */
void atm_text_str(atm_text *t, const char *s);
/* atm_text_json -- append v (borrowed) on one line, dumped with json_dumps's flags (any
 * value may be dumped, not only arrays and objects); NULL is a failure */
void atm_text_json(atm_text *t, const struct json_t *v, size_t flags);
/* atm_text_json_new -- the same, and v is released (it steals v) */
void atm_text_json_new(atm_text *t, struct json_t *v, size_t flags);
/* atm_json_float -- f as the JSON number with the fewest digits that reads back as f (NULL
 * for a number that is not finite) */
struct json_t *atm_json_float(float f);
/* atm_text_finish -- *out the malloc'd text (and *len its length; len may be NULL), t
 * emptied; after a failed allocation ATM_E_NOMEM ("out of memory writing WHAT") and the
 * text freed */
atm_status atm_text_finish(atm_text *t, char **out, size_t *len, const char *what);

/* ---------------------------------------------------------------- kernel keys */

/* The longest configuration name with its algorithm: "FFFFFFFF/" and "#15" and the NUL;
 * grouped names are shorter. */
#define ATM_CONFIG_NAME_MAX 16

/* atm_node_signature_alloc -- n's signature (atm_node_signature), malloc'd; NULL when out of
 * memory */
char *atm_node_signature_alloc(const atm_graph *g, const atm_node *n);
/* atm_config_name_valid -- a name atm_node_config_name could have written, with an algorithm
 * ("#2") or not: what a profile file may hold */
bool atm_config_name_valid(const char *name);
/* atm_node_key -- where a profile files node in config with algorithm algo: *sig the node's
 * signature (malloc'd), cfg its configuration's name ("FF/F", "FF/F#2"); ATM_E_USAGE naming
 * who when the node, the configuration or the algorithm is not one of the graph's */
atm_status atm_node_key(const atm_graph *g, int32_t node, uint32_t config, int algo,
                        const char *who, char **sig, char cfg[ATM_CONFIG_NAME_MAX]);

/* ---------------------------------------------------------------- profiles */

/* Times keep this many significant digits, in memory and in the file alike, so that a profile
 * read back is the profile that was written. */
#define ATM_PROFILE_TIME_DIGITS 10

/* A profile, shared by profile.c (the profile in memory) and profile_json.c (its file). */
struct atm_profile {
	char *path;               /* the cache file, for messages; NULL: in memory only */
	atm_profile_machine m;
	struct json_t *kernels;   /* this machine: signature -> {config name -> entry} */
	struct json_t *dirty;     /* the same shape: what was put since the last save */
	struct json_t *steps;     /* graph digest -> its calibration's all-fast step */
	struct json_t *steps_dirty; /* the same shape: what was put since the last save */
	int64_t n_entries;
	atm_profile_moves moves;
	bool has_moves, moves_dirty;
	bool replace;             /* rebuild: the next merge drops the file's entries of this machine */
	bool isolated;            /* atm_profile_use_in_step(false): the calibration is ignored */
};

/* atm_profile_set_entry -- kernels[sig][cfg] = e, a new reference taken; -1 when out of
 * memory */
int atm_profile_set_entry(struct json_t *kernels, const char *sig, const char *cfg,
                          struct json_t *e);

/* The key of a kernel's in-step calibration beside its configurations: no configuration is
 * named so (atm_config_name_valid refuses it). */
#define ATM_PROFILE_IN_STEP_KEY "in_step"
/* the in-step object's "statistic": each kernel's time in the fastest step, as a run measures
 * it; an object without it (an earlier autotm's, each kernel's own fastest) is not used */
#define ATM_PROFILE_IN_STEP_STAT "fastest_step"

/* The key, beside a section's kernels, of each graph's calibration step
 * (atm_profile_calibration): {digest: {"graph", "step_s", "measured_at"}}. */
#define ATM_PROFILE_STEPS_KEY "all_fast_steps"

/* atm_graph_copy_tensors -- a new graph of g's name holding g's tensors (and batched marks),
 * no nodes yet: where a rewrite of g's nodes starts (update.c, data_parallel.c) */
atm_status atm_graph_copy_tensors(const atm_graph *g, atm_graph **out);
/* atm_graph_copy_node -- node n of a graph whose tensors c copied into c, as it is, reading in
 * instead of its own inputs where in is not NULL (n->n_in of them) */
atm_status atm_graph_copy_node(atm_graph *c, const atm_node *n, const int32_t *in);
/* atm_graph_rewritten -- the end of a rewrite into c that reached rc: c validated and handed
 * out in *out, or destroyed and the failure returned */
atm_status atm_graph_rewritten(atm_graph *c, atm_status rc, atm_graph **out);

#endif /* ATM_CORE_INTERNAL_H */
