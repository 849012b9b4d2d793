/* atm_core.h -- autotm graph IR, status codes, liveness, plans and their schedules: the contract
 * every module plans against. Files of any format are formats/atm_formats.h's.
 *
 * Usage:
 *
 *     atm_graph *g = NULL;
 *     if (atm_graph_new(&g, "mlp") < 0) { fprintf(stderr, "%s\n", atm_errmsg()); ... }
 *     int64_t xd[] = {16, 784}, wd[] = {10, 784}, bd[] = {10}, yd[] = {16, 10};
 *     int32_t x, w, b, y, n;
 *     atm_graph_add_tensor(g, "x", ATM_F32, 2, xd, ATM_KIND_INPUT, ATM_LOC_ANY, &x);
 *     atm_graph_add_tensor(g, "w", ATM_F32, 2, wd, ATM_KIND_PARAM, ATM_LOC_ANY, &w);
 *     atm_graph_add_tensor(g, "b", ATM_F32, 1, bd, ATM_KIND_PARAM, ATM_LOC_ANY, &b);
 *     atm_graph_add_tensor(g, "y", ATM_F32, 2, yd, ATM_KIND_ACTIVATION, ATM_LOC_ANY, &y);
 *     atm_graph_add_node(g, "fc", ATM_OP_IP_FWD, NULL, 3, (int32_t[]){x, w, b}, 1, &y, &n);
 *     atm_graph_validate(g);            // shapes, schedule order, ids
 *     atm_liveness *lv = NULL;
 *     atm_liveness_new(&lv, g);         // live ranges and the footprint curve
 *     printf("peak %lld bytes\n", (long long)atm_liveness_peak_bytes(lv));
 *     atm_liveness_destroy(lv);
 *     atm_graph_destroy(g);
 *
 * Functions that can fail return an atm_status (0 ok, negative error) and leave a
 * thread-local message in atm_errmsg(). Out-parameters are NULL on failure.
 */
#ifndef ATM_CORE_H
#define ATM_CORE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- status */
typedef int atm_status;
enum {
	ATM_OK = 0,
	ATM_E_USAGE = -1,       /* bad command-line argument or API misuse by a caller */
	ATM_E_INPUT = -2,       /* malformed input file: graph, plan, profile, tier spec */
	ATM_E_INFEASIBLE = -3,  /* no plan fits the requested fast-memory limit */
	ATM_E_UNSUPPORTED = -4, /* hardware or backend not available here */
	ATM_E_IO = -5,          /* file system error: open, write, rename, lock */
	ATM_E_NOMEM = -6,       /* host allocation failed */
	ATM_E_NOSPACE = -7,     /* a memory pool or tier is full */
	ATM_E_INTERRUPTED = -8, /* stopped by a signal (Ctrl-C) */
	ATM_E_NOTFOUND = -9,    /* a named thing (model, kernel, cache entry) does not exist */
	ATM_E_INTERNAL = -10,   /* a bug: an invariant did not hold */
	ATM_E_OVER_LIMIT = -11, /* a run would hold more fast memory than its plan's limit */
};
/* atm_errmsg -- the message of the last failure on this thread ("" if none) */
const char *atm_errmsg(void);
/* atm_err -- record a formatted message for this thread and return code */
atm_status atm_err(atm_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* atm_err_prefix -- prepend context ("graph.json: ") to the current message; returns code */
atm_status atm_err_prefix(atm_status code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* atm_err_clear -- forget the current message */
void atm_err_clear(void);
/* atm_stop_flag_set -- the process's stop flag (Ctrl-C sets it; NULL: none): waits a caller
 * cannot otherwise end (another process's file lock) give up with ATM_E_INTERRUPTED once set */
void atm_stop_flag_set(volatile sig_atomic_t *stop);
/* atm_stopped -- the stop flag is set */
bool atm_stopped(void);
/* atm_status_name -- short name of a status ("input", "infeasible", ...) */
const char *atm_status_name(atm_status code);
/* atm_exit_code -- the process exit code a command uses for a status: 0 ok, 1 internal, 2 usage,
 * 3 bad input file, 4 infeasible, 5 unsupported hardware, 6 file system, 7 out of memory or
 * space, 8 not found, 130 interrupted. */
int atm_exit_code(atm_status code);

/* ---------------------------------------------------------------- types */
#define ATM_MAX_DIMS 6
/* Larger dimensions are rejected: none is real, and a product of two stays inside int64_t. */
#define ATM_MAX_DIM ((int64_t)1 << 40)
/* Byte sizes above this are rejected as overflow (8 EiB / 2: room to add two). */
#define ATM_MAX_BYTES ((int64_t)1 << 62)
/* A graph's tensors and workspaces together take at most this (2 EiB): every sum of sizes over
 * a step (live bytes, a plan's copies in both memories, an arena's offsets) stays in int64_t. */
#define ATM_MAX_GRAPH_BYTES ((int64_t)1 << 61)
typedef enum { ATM_F32 = 0, ATM_I32, ATM_U8, ATM_BF16, ATM_N_DTYPES } atm_dtype;
typedef enum {
	ATM_KIND_INPUT = 0,       /* graph input (data, labels): live all step */
	ATM_KIND_PARAM,           /* trainable parameter: live all step, updated in place by SGD */
	ATM_KIND_GRAD,            /* gradient of a parameter or an activation */
	ATM_KIND_ACTIVATION,      /* intermediate produced by a kernel */
	ATM_KIND_OPTIMIZER_STATE, /* momentum and similar: live all step */
	ATM_KIND_CONSTANT,        /* read-only constant: live all step */
	ATM_KIND_OUTPUT,          /* graph output (the loss): live all step */
	ATM_N_KINDS
} atm_tensor_kind;
/* Locations a tensor may take (a bit set). */
enum { ATM_LOC_FAST = 1u, ATM_LOC_SLOW = 2u, ATM_LOC_ANY = 3u };

/* Ops. Each has one entry in core/ops.c (atm_op_describe), under a line giving its operands,
 * and a kernel in each backend's table; docs/extending.md says how to add one. The values
 * index those tables and carry no meaning of their own: files name ops by name, and nothing
 * depends on their order. Operands, attributes and formulas: docs/graph-format.md, "Ops". */
typedef enum {
	ATM_OP_CONV_FWD = 0, ATM_OP_CONV_BWD_DATA, ATM_OP_CONV_BWD_WEIGHTS,
	ATM_OP_IP_FWD, ATM_OP_IP_BWD_DATA, ATM_OP_IP_BWD_WEIGHTS, /* inner product (linear) */
	ATM_OP_RELU_FWD, ATM_OP_RELU_BWD,
	ATM_OP_MAXPOOL_FWD, ATM_OP_MAXPOOL_BWD, /* the forward also writes the i32 argmax */
	ATM_OP_AVGPOOL_FWD, ATM_OP_AVGPOOL_BWD,
	ATM_OP_BN_FWD, ATM_OP_BN_BWD,           /* batch norm: batch statistics, biased var */
	ATM_OP_CONCAT, ATM_OP_SPLIT,            /* along attrs.axis; split is concat's backward */
	ATM_OP_ADD,                             /* y = a + b (residuals, gradient sums) */
	ATM_OP_SOFTMAX_XENT_FWD, ATM_OP_SOFTMAX_XENT_BWD, /* one-hot labels; loss[1] */
	ATM_OP_SGD,                             /* writes w -= lr * dw in place */
	/* transformers: activations are [batch, seq, features] */
	ATM_OP_MATMUL,                          /* c = scale * op(a) op(b) (+ bias); three forms */
	ATM_OP_REDUCE_SUM,                      /* the sum over the leading dims */
	ATM_OP_LAYER_NORM_FWD, ATM_OP_LAYER_NORM_BWD,
	ATM_OP_GELU_FWD, ATM_OP_GELU_BWD,       /* erf form; tanh form by attr */
	ATM_OP_TANH_FWD, ATM_OP_TANH_BWD,
	ATM_OP_SOFTMAX_FWD, ATM_OP_SOFTMAX_BWD, /* over the last dim, causal by attr */
	ATM_OP_EMBEDDING_FWD, ATM_OP_EMBEDDING_BWD, /* rows by i32 id or by position */
	ATM_OP_PERMUTE,                         /* axes reordered by attrs.perm */
	ATM_OP_NARROW_FWD, ATM_OP_NARROW_BWD,   /* the first y.dims[axis] along axis */
	ATM_OP_TOKEN_XENT_FWD, ATM_OP_TOKEN_XENT_BWD, /* i32 labels; loss[1] */
	ATM_OP_SILU_FWD, ATM_OP_SILU_BWD,
	ATM_OP_MUL, ATM_OP_MUL_BWD,             /* b broadcast to a's shape; b's gradient */
	ATM_OP_RMS_NORM_FWD, ATM_OP_RMS_NORM_BWD,
	ATM_OP_ROPE_FWD, ATM_OP_ROPE_BWD,       /* rotary embeddings */
	ATM_OP_SIGMOID_FWD, ATM_OP_SIGMOID_BWD, ATM_OP_HARDSWISH_FWD, ATM_OP_HARDSWISH_BWD,
	ATM_OP_HARDSIGMOID_FWD, ATM_OP_HARDSIGMOID_BWD, ATM_OP_RELU6_FWD, ATM_OP_RELU6_BWD,
	ATM_OP_SGD_MOMENTUM, ATM_OP_ADAMW,      /* PyTorch's: they write w and its states */
	ATM_OP_ALLREDUCE, ATM_OP_CAST,          /* ranks' gradient means; f32 <-> bf16 copy */
	ATM_N_OPS
} atm_op;

/* Attributes of a node; each op reads only the ones it documents. */
typedef struct {
	int32_t kernel[2];  /* pooling window h, w (convolution takes it from w) */
	int32_t stride[2];  /* h, w; 0 means 1 */
	int32_t pad[4];     /* top, left, bottom, right */
	int32_t axis;       /* concat / split axis */
	bool exclude_pad;   /* average pooling: padding not counted in the divisor */
	float epsilon;      /* batch norm */
	float lr;           /* SGD learning rate */
	float scale;        /* matmul: the product's factor; 0 means 1 */
	bool trans_a, trans_b; /* matmul: a's, b's last two dims swapped */
	bool causal;        /* softmax: entry j of row i of the last two dims is masked when j > i */
	bool tanh;          /* gelu: the tanh approximation (GPT-2) instead of the erf form */
	bool positions;     /* embedding: row t for position t, no ids */
	int32_t n_perm;     /* permute: entries of perm */
	int32_t perm[ATM_MAX_DIMS]; /* permute: output axis i is axis perm[i] of the input's view */
	float theta;        /* rope: the base of the rotation frequencies (10000 in LLaMA 2) */
	float momentum;     /* sgd_momentum: the momentum factor */
	float beta1, beta2; /* adamw: the moving averages' factors (0.9, 0.999 in PyTorch) */
	float weight_decay; /* sgd_momentum (added to the gradient), adamw (decoupled) */
	int32_t groups;     /* convolutions: channel groups (depthwise: as many as channels); 0 means 1 */
	int32_t ranks;      /* allreduce: the data-parallel ranks the mean is over */
} atm_attrs;

/* A tensor as the graph holds it (read-only view, owned by the graph). */
typedef struct {
	int32_t id;
	const char *name;
	atm_dtype dtype;
	int ndim;
	int64_t dims[ATM_MAX_DIMS];
	int64_t n_elems, bytes;
	atm_tensor_kind kind;
	unsigned locations; /* ATM_LOC_* bits */
	bool batched;       /* dims[0] is the batch: graph JSON writes it as "batch" */
} atm_tensor;

/* A node as the graph holds it (read-only view, owned by the graph). */
typedef struct {
	int32_t id; /* also its position in the schedule */
	const char *name;
	atm_op op;
	atm_attrs attrs;
	int n_in;
	const int32_t *in;
	int n_out;
	const int32_t *out;
	int64_t workspace_bytes; /* scratch the kernel needs while it runs */
} atm_node;

/* ---------------------------------------------------------------- names */
const char *atm_dtype_name(atm_dtype t);
int64_t atm_dtype_bytes(atm_dtype t);
const char *atm_kind_name(atm_tensor_kind k);
const char *atm_op_name(atm_op op);
/* Look-ups by name return ATM_E_INPUT with a message listing what is valid. */
atm_status atm_dtype_from_name(const char *s, atm_dtype *out);
atm_status atm_kind_from_name(const char *s, atm_tensor_kind *out);
atm_status atm_op_from_name(const char *s, atm_op *out);
/* atm_op_is_inplace -- the op writes one of its inputs in place (the updates: SGD, AdamW) */
bool atm_op_is_inplace(atm_op op);
/* atm_op_is_update -- the op is a parameter's update (sgd, sgd_momentum, adamw): it reads the
 * parameter (input 0) and its gradient (input 1) and writes the parameter in place */
bool atm_op_is_update(atm_op op);
/* atm_op_writes_input -- the op writes its input i in place (SGD its input 0; AdamW the
 * parameter and its three states) */
bool atm_op_writes_input(atm_op op, int i);

/* ---------------------------------------------------------------- ops */
/* Attributes of atm_attrs an op may read, one bit each; signatures and graph JSON write an op's
 * attributes in this order, each as its name in lower case ("exclude_pad"; "groups" only when
 * above 1). */
enum {
	ATM_ATTR_KERNEL = 1u << 0, ATM_ATTR_STRIDE = 1u << 1, ATM_ATTR_PAD = 1u << 2,
	ATM_ATTR_EXCLUDE_PAD = 1u << 3, ATM_ATTR_EPSILON = 1u << 4, ATM_ATTR_AXIS = 1u << 5,
	ATM_ATTR_LR = 1u << 6, ATM_ATTR_TRANS_A = 1u << 7, ATM_ATTR_TRANS_B = 1u << 8,
	ATM_ATTR_SCALE = 1u << 9, ATM_ATTR_CAUSAL = 1u << 10, ATM_ATTR_TANH = 1u << 11,
	ATM_ATTR_POSITIONS = 1u << 12, ATM_ATTR_PERM = 1u << 13, ATM_ATTR_THETA = 1u << 14,
	ATM_ATTR_MOMENTUM = 1u << 15, ATM_ATTR_BETA1 = 1u << 16, ATM_ATTR_BETA2 = 1u << 17,
	ATM_ATTR_WEIGHT_DECAY = 1u << 18, ATM_ATTR_GROUPS = 1u << 19, ATM_ATTR_RANKS = 1u << 20,
};
#define ATM_N_ATTRS 21
/* atm_attr_name -- the JSON key of one ATM_ATTR_* bit; NULL for anything else */
const char *atm_attr_name(unsigned attr);

/* What an operand is to its op, where that matters beyond its shape: how a runtime fills a
 * graph's starting tensors, and which operands are not f32. */
typedef enum {
	ATM_ROLE_DATA = 0, /* anything else */
	ATM_ROLE_LABELS,   /* one-hot rows */
	ATM_ROLE_WEIGHT,   /* a parameter that starts at random, scaled by its fan-in */
	ATM_ROLE_SCALE,    /* a parameter that starts at one (batch norm's gamma) */
	ATM_ROLE_SHIFT,    /* a parameter that starts at zero (biases, batch norm's beta) */
	ATM_ROLE_INDEX,    /* i32 indices (max pooling's argmax), where other operands are f32 or bf16 */
	ATM_ROLE_TOKENS,   /* i32 token ids or labels, each below the rows or classes it indexes */
} atm_op_role;
/* Roles are given for an op's first operands; those past them are data. */
#define ATM_OP_MAX_ROLES 8
/* One op as the rest of the code may ask about it (read-only, owned by core). Parameter roles sit
 * on the forward op that introduces one; a parameter in a data slot of it starts at zero. */
typedef struct {
	const char *name;        /* as the JSON formats spell it */
	int min_in, max_in;      /* inputs it takes */
	int min_out, max_out;    /* outputs it makes */
	unsigned attrs;          /* ATM_ATTR_* bits it reads; it ignores the other fields */
	unsigned inplace;        /* bit i (i < 32): writes its input i in place (SGD: bit 0) */
	bool pointwise_rate;     /* its work may be pointwise (atm_work.pointwise: a 1x1
	                          * convolution is one GEMM), which the roofline rates apart */
	atm_op_role in_role[ATM_OP_MAX_ROLES];
	atm_op_role out_role[ATM_OP_MAX_ROLES];
} atm_op_desc;
/* atm_op_describe -- op's entry; NULL for a value that is no op */
const atm_op_desc *atm_op_describe(atm_op op);
/* atm_op_in_role, atm_op_out_role -- the role of op's input or output i (data past the
 * roles given and for a value that is no op) */
atm_op_role atm_op_in_role(atm_op op, int i);
atm_op_role atm_op_out_role(atm_op op, int i);

/* ---------------------------------------------------------------- graph */
typedef struct atm_graph atm_graph;
/* atm_graph_new -- an empty graph; name is copied */
atm_status atm_graph_new(atm_graph **g, const char *name);
void atm_graph_destroy(atm_graph *g);
/* atm_graph_add_tensor -- append a tensor; its id is the number of tensors before it. Rejects
 * dims < 1 or > ATM_MAX_DIM, sizes over ATM_MAX_BYTES, empty location sets, names used before. */
atm_status atm_graph_add_tensor(atm_graph *g, const char *name, atm_dtype dtype, int ndim,
                                const int64_t *dims, atm_tensor_kind kind, unsigned locations,
                                int32_t *id);
/* atm_graph_add_node -- append a node to the schedule; attrs may be NULL (all zero).
 * Checks that the ids exist and the arity fits the op; shapes are checked by validate. */
atm_status atm_graph_add_node(atm_graph *g, const char *name, atm_op op, const atm_attrs *attrs,
                              int n_in, const int32_t *in, int n_out, const int32_t *out,
                              int32_t *id);
/* atm_graph_mark_batched -- tensor's dims[0] is the batch, so a saved graph loads at any batch */
atm_status atm_graph_mark_batched(atm_graph *g, int32_t tensor);
/* atm_graph_batch -- the batch of the batched tensors, 0 when none is marked */
int64_t atm_graph_batch(const atm_graph *g);
/* atm_graph_set_workspace -- scratch bytes node id needs while it runs */
atm_status atm_graph_set_workspace(atm_graph *g, int32_t node, int64_t bytes);
/* atm_graph_validate -- every input produced earlier (or an input, param, constant or optimizer
 * state), every non-persistent tensor produced exactly once, shapes consistent with each op's
 * rule, batched tensors agreeing on the batch. The message names the node or tensor. */
atm_status atm_graph_validate(const atm_graph *g);
const char *atm_graph_name(const atm_graph *g);
int32_t atm_graph_n_tensors(const atm_graph *g);
int32_t atm_graph_n_nodes(const atm_graph *g);
/* NULL when id is out of range. The pointers stay valid until the next tensor or node is added
 * (the arrays grow), so copy what you keep while building. */
const atm_tensor *atm_graph_tensor(const atm_graph *g, int32_t id);
const atm_node *atm_graph_node(const atm_graph *g, int32_t id);
bool atm_node_runs_bf16(const atm_graph *g, int32_t node); /* has bf16 operands, not a cast */
/* atm_tensor_is_labels -- some node of g reads tensor t as labels (ATM_ROLE_LABELS) */
bool atm_tensor_is_labels(const atm_graph *g, int32_t t);
/* atm_tensor_token_limit -- the bound t's i32 token ids or labels must stay below (the fewest
 * table rows or classes among the nodes reading it as ATM_ROLE_TOKENS); 0 when none does */
int64_t atm_tensor_token_limit(const atm_graph *g, int32_t t);
/* atm_graph_find_tensor -- id of the tensor with this name, or -1 */
int32_t atm_graph_find_tensor(const atm_graph *g, const char *name);
/* atm_graph_producer -- the first node that writes tensor, or -1 (an input, a parameter) */
int32_t atm_graph_producer(const atm_graph *g, int32_t tensor);
/* atm_graph_digest -- 16 hex digits identifying the graph's structure and sizes */
void atm_graph_digest(const atm_graph *g, char out[17]);
/* atm_tensor_is_persistent -- lives all step (input, param, optimizer state, constant, output) */
bool atm_tensor_is_persistent(const atm_tensor *t);
/* What a kernel must do at the least, from its op and shapes: the roofline model's input. */
typedef struct {
	double flops;         /* 2 per multiply-add; elementwise ops one or a few per element */
	double traffic_bytes; /* every operand once, an in-place input twice, plus the passes an
	                       * op makes over its operands (batch norm reads x twice) */
	bool pointwise;       /* a 1x1 window (atm_op_desc.pointwise_rate) */
} atm_work;
/* atm_node_work -- FLOPs and traffic of node of a valid graph (ATM_E_USAGE, *w zero: no node) */
atm_status atm_node_work(const atm_graph *g, int32_t node, atm_work *w);

/* A matmul as one GEMM per batch entry: c[i] (m x n) = scale * op(a[i]) (m x k) op(b[i]) (k x n),
 * a stored row-major as [batch, trans_a ? k : m, trans_a ? m : k], b likewise or, b_batched
 * false, one matrix every entry shares (the three forms: docs/graph-format.md). */
typedef struct {
	int64_t batch, m, n, k;
	bool b_batched;
} atm_matmul_dims;
/* atm_matmul_dims_of -- the GEMM of matmul node n of a valid graph; ATM_E_INPUT (the message
 * naming the tensors and the valid shapes) when its operands do not multiply */
atm_status atm_matmul_dims_of(const atm_graph *g, const atm_node *n, atm_matmul_dims *d);
/* atm_permute_view -- the shape permute node n reads its input in (view) and the shape it
 * writes (permuted, view's axes in attrs.perm's order), each of attrs.n_perm dims; ATM_E_INPUT
 * when the node's shapes do not fit its perm */
atm_status atm_permute_view(const atm_graph *g, const atm_node *n, int64_t *view,
                            int64_t *permuted);
/* A tensor b broadcast to a larger tensor a's shape (mul's b; mul_bwd's gradient): the dims of a
 * that b keeps and those it repeats along, each with its stride in a, last first, dims of 1 left
 * out. An element of a at offset i reads b at the offset its kept digits give in the kept dims. */
typedef struct {
	int n_kept, n_rep;
	int64_t kept[ATM_MAX_DIMS], kept_stride[ATM_MAX_DIMS];
	int64_t rep[ATM_MAX_DIMS], rep_stride[ATM_MAX_DIMS];
	int64_t rep_elems; /* elements of a per element of b: the product of rep */
} atm_broadcast;
/* atm_broadcast_of -- how node n's operand of b's shape lines up with its operand of a's shape:
 * mul's inputs 1 and 0, mul_bwd's output 0 and input 0; ATM_E_USAGE for another node */
atm_status atm_broadcast_of(const atm_graph *g, const atm_node *n, atm_broadcast *out);

/* ---------------------------------------------------------------- the update */
/* The optimizer a step ends in: SGD, a node per parameter, in graphs of the zoo or forward files,
 * which atm_graph_with_update rewrites (PyTorch's ways: docs/graph-format.md, "Optimizers"). */
typedef enum {
	ATM_UPDATE_SGD = 0,  /* w -= lr * (dw + weight_decay * w) */
	ATM_UPDATE_MOMENTUM, /* SGD with a momentum buffer per parameter */
	ATM_UPDATE_ADAMW,    /* AdamW: two averages and a step per parameter */
	ATM_N_UPDATES
} atm_update_kind;
typedef struct {
	atm_update_kind kind;
	float lr;           /* 0: each SGD node's own (sgd, momentum); adamw's default, 1e-3 */
	float momentum;     /* momentum: the buffer's factor, > 0 */
	float beta1, beta2; /* adamw, in [0, 1) */
	float eps;          /* adamw, > 0 */
	float weight_decay; /* >= 0: sgd and momentum add it times w to the gradient, adamw decays
	                     * w by lr times it */
} atm_update;
/* atm_update_kind_name, atm_update_kind_from_name -- "sgd", "momentum", "adamw" (ATM_E_USAGE) */
const char *atm_update_kind_name(atm_update_kind k);
atm_status atm_update_kind_from_name(const char *s, atm_update_kind *out);
/* atm_update_defaults -- PyTorch's defaults for kind: lr 0 (the graph's; adamw 1e-3),
 * momentum 0.9, betas 0.9 and 0.999, eps 1e-8, weight decay 0 (adamw 1e-2) */
atm_update atm_update_defaults(atm_update_kind kind);
/* atm_graph_with_update -- a copy of g (*out, validated) whose SGD nodes are u's update, one node
 * each; its states are optimizer_state tensors named as torch.optim's ("W.momentum_buffer",
 * "W.exp_avg", "W.exp_avg_sq", "W.step"), zero at the start, placed like any tensor.
 * ATM_E_USAGE for factors out of range or a graph without SGD nodes (the message says which). */
atm_status atm_graph_with_update(const atm_graph *g, const atm_update *u, atm_graph **out);
/* atm_graph_update_of -- the update g's step ends in (its first update node's) and the
 * bytes of its optimizer state; false for a graph with no update node */
bool atm_graph_update_of(const atm_graph *g, atm_update *u, int64_t *state_bytes);

/* ---------------------------------------------------------------- data parallelism */
/* Data-parallel training: every rank takes the step on its shard of the batch, and the
 * gradients are averaged over the ranks before the update (docs/many-machines.md). */
#define ATM_ALLREDUCE_BUCKET_BYTES ((int64_t)25 << 20) /* PyTorch DDP's default bucket */
#define ATM_ALLREDUCE_BUCKET_TENSORS 32
/* atm_graph_with_allreduce -- a copy of g (*out, validated) whose updates read their gradients'
 * means over ranks: the updates in schedule order fall into buckets of gradients (at most
 * bucket_bytes, 0: ATM_ALLREDUCE_BUCKET_BYTES, and ATM_ALLREDUCE_BUCKET_TENSORS tensors; a larger
 * gradient is a bucket alone); once a bucket's last gradient is complete one allreduce node
 * "allreduce.K" writes their means ("G.mean" for gradient G), and the bucket's updates follow
 * it. ATM_E_USAGE for ranks below 2, a graph without updates or with allreduce nodes already. */
atm_status atm_graph_with_allreduce(const atm_graph *g, int ranks, int64_t bucket_bytes,
                                    atm_graph **out);
/* atm_graph_ranks -- the ranks g's allreduce nodes average over; 1 for a graph without them */
int atm_graph_ranks(const atm_graph *g);

/* ---------------------------------------------------------------- liveness */
typedef struct atm_liveness atm_liveness;
/* atm_liveness_new -- live range of every tensor and bytes live at every node, freeing each
 * tensor right after its last use. The graph must be valid and must outlive the result. */
atm_status atm_liveness_new(atm_liveness **lv, const atm_graph *g);
void atm_liveness_destroy(atm_liveness *lv);
/* First and last node index at which tensor id is live. Persistent tensors span
 * [0, n_nodes - 1]; a tensor nobody reads dies at its producer. */
int32_t atm_liveness_first(const atm_liveness *lv, int32_t tensor);
int32_t atm_liveness_last(const atm_liveness *lv, int32_t tensor);
/* Bytes live while node runs, including the node's workspace. */
int64_t atm_liveness_bytes_at(const atm_liveness *lv, int32_t node);
int64_t atm_liveness_peak_bytes(const atm_liveness *lv);
/* Index of the first node where the peak is reached. */
int32_t atm_liveness_peak_node(const atm_liveness *lv);
/* A graph's summary (atm_graph_stats_compute). */
typedef struct {
	int64_t n_params, param_bytes; /* elements and bytes in param tensors */
	int64_t io_bytes;      /* bytes of persistent tensors (inputs, params, state, constants, outputs) */
	int64_t peak_bytes;    /* peak of the footprint curve */
	int64_t total_bytes;   /* sum of all tensor sizes (what a no-reuse allocator needs) */
	int32_t n_kernels, n_tensors;
} atm_graph_stats;
atm_status atm_graph_stats_compute(const atm_graph *g, atm_graph_stats *out);

/* ---------------------------------------------------------------- plans */
/* A plan says where every tensor lives over the schedule (the rules, each checked by
 * atm_schedule_new: docs/formats.md, "Plan files"). Each tensor has an initial location: where
 * a kernel output is allocated, or where a persistent tensor sits when a step starts. Moves
 * copy a tensor between tiers after a node; a tensor may hold a copy in both, and kernels read
 * the fast one. A move to slow drops the fast copy; a synchronous move blocks the schedule, an
 * asynchronous one overlaps the kernels after it and is done before node `until` (or the first
 * node that reads the tensor). Every persistent tensor ends a step where it started. */
typedef struct {
	int32_t tensor;
	unsigned to;    /* ATM_LOC_FAST or ATM_LOC_SLOW */
	int32_t after;  /* node after which it starts; -1: before the first node */
	int32_t until;  /* asynchronous: done before this node runs (n_nodes: by the step's end) */
	bool async;
} atm_move;
/* A recomputation: tensor's every copy is freed after node drop_after, and the node that made
 * it runs again, into fast memory, right before node `before`; between the two it takes no
 * memory. A *link* makes again a tensor dead at `before` only for the other recomputations
 * there to read. Eligibility, links and the inputs' copies: docs/formats.md, "Plan files". */
typedef struct {
	int32_t tensor;
	int32_t drop_after; /* node after which (after its moves) every copy is freed */
	int32_t before;     /* node before which (after the moves due there) it is made again */
} atm_recompute;
/* atm_recompute_eligible -- t may be recomputed (not persistent, an output of a forward op that
 * writes nothing in place); when not, and why is not NULL, *why says why in a few words */
bool atm_recompute_eligible(const atm_graph *g, int32_t t, const char **why);
/* atm_recompute_producer -- the node that makes t (-1: none, a persistent tensor) */
int32_t atm_recompute_producer(const atm_graph *g, int32_t t);
/* atm_recompute_is_link -- r is a link: no node from r->before on uses its tensor */
bool atm_recompute_is_link(const atm_graph *g, const atm_recompute *r);
/* Most solves one plan records: the optimizer's defragmentation rounds. */
#define ATM_PLAN_MAX_ROUNDS 16
/* What the optimizer knew when it made the plan (solver figures may be absent: < 0). */
typedef struct {
	char formulation[32];       /* "all-fast", "static", "synchronous", ... */
	int64_t fast_limit_bytes;   /* 0: no limit */
	double predicted_runtime_s; /* < 0: unknown */
	double predicted_recompute_s; /* of it, recomputations' kernels (< 0: unknown) */
	double creation_s, solve_s; /* < 0: not solved; over all rounds */
	double mip_gap;             /* < 0: unknown */
	char solver_status[32];
	char solver[16];            /* the ILP solver that made it: "glpk", "cbc" ("": none) */
	bool estimated;             /* priced with an estimated (roofline) profile, not a measured one */
	double ratio_slow, ratio_fast; /* the slow:fast ratio the limit came from; both 0: none */
	/* one entry per solve (results' creation_times and optimization_times); 0: not solved */
	int n_rounds;
	double round_creation_s[ATM_PLAN_MAX_ROUNDS], round_solve_s[ATM_PLAN_MAX_ROUNDS];
} atm_plan_info;
typedef struct atm_plan atm_plan;
/* atm_plan_new -- every tensor fast, no moves, formulation "all-fast"; g must outlive p */
atm_status atm_plan_new(atm_plan **p, const atm_graph *g);
void atm_plan_destroy(atm_plan *p);
const atm_graph *atm_plan_graph(const atm_plan *p);
/* atm_plan_set_location -- initial location of tensor (ATM_LOC_FAST or ATM_LOC_SLOW) */
atm_status atm_plan_set_location(atm_plan *p, int32_t tensor, unsigned loc);
unsigned atm_plan_location(const atm_plan *p, int32_t tensor);
/* atm_plan_add_move -- append a move; moves after the same node run in the order added */
atm_status atm_plan_add_move(atm_plan *p, const atm_move *m);
int32_t atm_plan_n_moves(const atm_plan *p);
const atm_move *atm_plan_move(const atm_plan *p, int32_t i);
/* atm_plan_add_recompute -- append a recomputation (checked, with the moves, by atm_schedule_new;
 * ATM_E_INPUT here for a tensor or node out of range or not eligible, naming it and why) */
atm_status atm_plan_add_recompute(atm_plan *p, const atm_recompute *r);
int32_t atm_plan_n_recomputes(const atm_plan *p);
const atm_recompute *atm_plan_recompute(const atm_plan *p, int32_t i);
atm_plan_info *atm_plan_info_of(atm_plan *p);
const atm_plan_info *atm_plan_info_get(const atm_plan *p);
/* Kernels with several implementations (a GPU's convolutions) are planned per algorithm. */
#define ATM_MAX_ALGOS 16
/* atm_plan_set_algo -- node runs its algorithm algo (0, the default, unless a GPU profile
 * found a faster one; ATM_E_INPUT out of 0..ATM_MAX_ALGOS - 1) */
atm_status atm_plan_set_algo(atm_plan *p, int32_t node, int algo);
int atm_plan_algo(const atm_plan *p, int32_t node);
/* atm_plan_algos_differ -- how many nodes run another algorithm in b than in a (plans of one
 * graph): placements that run the same algorithms train to the same bits, others need not */
int32_t atm_plan_algos_differ(const atm_plan *a, const atm_plan *b);
/* atm_plan_set_workspace -- node's kernel takes bytes of the fast arena while it runs (GPU plans
 * counting it in the limit; 0, the default: the backend's scratch outside; ATM_E_INPUT if < 0) */
atm_status atm_plan_set_workspace(atm_plan *p, int32_t node, int64_t bytes);
int64_t atm_plan_workspace(const atm_plan *p, int32_t node);
/* atm_plan_uniform -- every tensor in loc (all-fast or all-slow; fast-only tensors stay fast) */
atm_status atm_plan_uniform(atm_plan **p, const atm_graph *g, unsigned loc);
/* atm_plan_random -- a valid random plan of sync and async moves and recomputations (of about
 * one eligible tensor in three, links up to three deep) to stress them; one seed, one plan */
atm_status atm_plan_random(atm_plan **p, const atm_graph *g, uint64_t seed);

/* ---------------------------------------------------------------- the schedule */
/* Events of a step in the order the executor performs them. */
typedef enum {
	ATM_EV_ALLOC,      /* tensor gets a copy in loc (fast copies at offset) */
	ATM_EV_KERNEL,     /* node runs; its inputs and outputs use the locations in cfg */
	ATM_EV_MOVE_START, /* move starts copying tensor to loc (the destination is allocated) */
	ATM_EV_MOVE_WAIT,  /* wait until move is done */
	ATM_EV_FREE,       /* tensor's copy in loc is released */
	ATM_EV_RECOMPUTE,  /* node runs again to make tensor (one of its outputs, allocated by
	                    * the ALLOC before) anew; cfg: its inputs' locations there, then its
	                    * outputs' (all fast: the others go into its workspace, discarded) */
} atm_event_kind;
typedef struct {
	atm_event_kind kind;
	int32_t node;   /* KERNEL; for the others the node they follow (-1 before the first) */
	int32_t tensor; /* ALLOC, MOVE_*, FREE */
	int32_t move;   /* MOVE_*: index into the plan's moves */
	int32_t recompute; /* RECOMPUTE: index into the plan's recomputations (else -1) */
	unsigned loc;   /* ALLOC, FREE: which copy; MOVE_START: destination */
	int64_t offset; /* ALLOC in fast memory: the arena offset; KERNEL, RECOMPUTE: workspace's */
	const unsigned *cfg; /* KERNEL, RECOMPUTE: location of each input then each output */
	int64_t workspace_bytes; /* KERNEL, RECOMPUTE: node's workspace in the plan, a block of
	                          * the fast arena at offset while it runs (0: none); a RECOMPUTE's
	                          * also holds its other outputs, each rounded to ATM_ARENA_ALIGN */
} atm_event;
typedef struct atm_schedule atm_schedule;

/* Fast copies sit at multiples of this in the fast arena (the schedule places them so, the
 * runtime's arena and the optimizer count so): a cache line and a full AVX-512 vector. */
#define ATM_ARENA_ALIGN 64
/* atm_arena_align_up -- bytes rounded up to a multiple of ATM_ARENA_ALIGN */
static inline int64_t atm_arena_align_up(int64_t bytes)
{
	return (bytes + ATM_ARENA_ALIGN - 1) / ATM_ARENA_ALIGN * ATM_ARENA_ALIGN;
}
/* atm_arena_align_down -- the arena a limit of bytes holds: a multiple of ATM_ARENA_ALIGN */
static inline int64_t atm_arena_align_down(int64_t bytes)
{
	return bytes / ATM_ARENA_ALIGN * ATM_ARENA_ALIGN;
}
/* Per-step figures of a schedule. */
typedef struct {
	int64_t fast_peak_bytes;  /* most bytes of fast copies live at once */
	int64_t fast_arena_bytes; /* arena size the offsets need (>= peak: fragmentation) */
	int64_t slow_peak_bytes;
	int32_t fast_peak_node;
	int32_t n_moves_to_fast, n_moves_to_slow, n_async_to_fast, n_async_to_slow;
	int64_t bytes_to_fast, bytes_to_slow, bytes_async_to_fast, bytes_async_to_slow;
	int64_t persistent_fast_bytes, persistent_slow_bytes; /* allocated once, before any step */
	int32_t n_recomputes;     /* kernels run again to make a dropped tensor (links too) */
	int64_t bytes_recomputed;
} atm_schedule_stats;
/* atm_schedule_new -- check the plan against its graph and lay out one step: every copy's life,
 * fast offsets by first fit inside the plan's fast limit. ATM_E_INPUT for a plan that breaks a
 * rule (naming the tensor, move or recomputation), ATM_E_INFEASIBLE when fast copies exceed the
 * limit at a node (naming it, the bytes and the limit) or do not fit for fragmentation. */
atm_status atm_schedule_new(atm_schedule **s, const atm_plan *p);
void atm_schedule_destroy(atm_schedule *s);
int32_t atm_schedule_n_events(const atm_schedule *s);
const atm_event *atm_schedule_event(const atm_schedule *s, int32_t i);
/* Events that set up persistent tensors before the first step (ALLOC only). */
int32_t atm_schedule_n_setup(const atm_schedule *s);
const atm_event *atm_schedule_setup(const atm_schedule *s, int32_t i);
const atm_schedule_stats *atm_schedule_stats_get(const atm_schedule *s);
/* Bytes of fast copies live while node runs (workspace excluded). */
int64_t atm_schedule_fast_bytes_at(const atm_schedule *s, int32_t node);
/* atm_schedule_emulated_wait_s -- of one step, what an emulated slow tier (read_gbps, write_gbps
 * beside fast_gbps; 1e9 bytes/s) waits in the schedule's own line as the executor does: the slow
 * less the fast time of each kernel's slow operands and each synchronous move (asynchronous
 * ones wait beside); the part of a step that does not drift with the machine. 0: a rate <= 0. */
double atm_schedule_emulated_wait_s(const atm_schedule *s, double read_gbps, double write_gbps,
                                    double fast_gbps);
/* atm_emulated_extra_s -- what an emulated slow tier waits for these slow bytes: their time at
 * its rates less at the fast rate, at least 0 (no latency: streams of megabytes hide it) */
double atm_emulated_extra_s(double read_bytes, double written_bytes, double read_gbps,
                            double write_gbps, double fast_gbps);

/* ---------------------------------------------------------------- helpers */
/* atm_parse_bytes -- "12G", "512M", "4096", "1.5G" (binary units: K = 1024) */
atm_status atm_parse_bytes(const char *s, int64_t *out);
/* atm_format_dims -- "[16, 3, 224, 224]" into buf, for messages */
const char *atm_format_dims(int ndim, const int64_t *dims, char *buf, size_t len);
/* atm_format_bytes -- "1.50 GiB" into buf */
const char *atm_format_bytes(int64_t bytes, char *buf, size_t len);
/* atm_cmp_double -- ascending order of doubles, for qsort */
int atm_cmp_double(const void *a, const void *b);
/* atm_sort_median -- v[0..n) sorted ascending in place (v[0] is then the least) and their
 * median: the middle one, or the mean of the two middle ones for an even n (n >= 1) */
double atm_sort_median(double *v, int64_t n);
/* FNV-1a, 64 bits: digests of graphs, checksums of weights, keys of tier specs */
#define ATM_FNV1A_INIT 1469598103934665603ull
/* atm_fnv1a -- h extended by len bytes of data */
uint64_t atm_fnv1a(uint64_t h, const void *data, size_t len);
/* atm_splitmix64 -- the next number of the splitmix64 stream of state *s, alike on every libc */
uint64_t atm_splitmix64(uint64_t *s);
/* atm_now_s -- seconds on the monotonic clock, for intervals: timings, deadlines, progress */
double atm_now_s(void);

#ifdef __cplusplus
}
#endif

#endif /* ATM_CORE_H */
