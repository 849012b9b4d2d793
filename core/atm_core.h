/* atm_core.h -- autotm graph IR, status codes and graph JSON: the contract every module plans against.
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
atm_status atm_err(atm_status code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* atm_err_prefix -- prepend context ("graph.json: ") to the current message; returns code */
atm_status atm_err_prefix(atm_status code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* atm_err_clear -- forget the current message */
void atm_err_clear(void);

/* atm_stop_flag_set -- the process's stop flag (Ctrl-C sets it; NULL: none): waits that a
 * caller cannot otherwise end, such as for another process's file lock, give up with
 * ATM_E_INTERRUPTED once it is set */
void atm_stop_flag_set(volatile sig_atomic_t *stop);

/* atm_stopped -- the stop flag is set */
bool atm_stopped(void);

/* atm_status_name -- short name of a status ("input", "infeasible", ...) */
const char *atm_status_name(atm_status code);

/* atm_exit_code -- the process exit code a command uses for a status:
 * 0 ok, 1 internal, 2 usage, 3 bad input file, 4 infeasible, 5 unsupported
 * hardware, 6 file system, 7 out of memory or space, 8 not found, 130 interrupted. */
int atm_exit_code(atm_status code);

/* ---------------------------------------------------------------- types */

#define ATM_MAX_DIMS 6
/* Dimensions above this are rejected: no real tensor has them, and it keeps
 * every product of two dimensions inside int64_t before the overflow check. */
#define ATM_MAX_DIM ((int64_t)1 << 40)
/* Byte sizes above this are rejected as overflow (8 EiB / 2: room to add two). */
#define ATM_MAX_BYTES ((int64_t)1 << 62)
/* A graph's tensors and workspaces together take at most this (2 EiB): every sum of sizes
 * over a step (live bytes, a plan's copies in both memories, an arena's offsets) then stays
 * inside int64_t. */
#define ATM_MAX_GRAPH_BYTES ((int64_t)1 << 61)

typedef enum { ATM_F32 = 0, ATM_I32, ATM_U8, ATM_N_DTYPES } atm_dtype;

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

/* Ops. Each has one entry in core/ops.c (atm_op_describe) and a kernel in each backend's
 * table; docs/extending.md says how to add one. The values index those tables and carry
 * no meaning of their own: files name ops by name, and nothing depends on their order. */
typedef enum {
	ATM_OP_CONV_FWD = 0,      /* in: x[N,C,H,W], w[O,C,KH,KW], (b[O]) out: y[N,O,OH,OW] */
	ATM_OP_CONV_BWD_DATA,     /* in: dy, w                 out: dx */
	ATM_OP_CONV_BWD_WEIGHTS,  /* in: x, dy                 out: dw, (db) */
	ATM_OP_IP_FWD,            /* in: x[N,...], w[O,I], b[O] out: y[N,O]  (I = prod of x dims past N) */
	ATM_OP_IP_BWD_DATA,       /* in: dy, w                 out: dx */
	ATM_OP_IP_BWD_WEIGHTS,    /* in: x, dy                 out: dw, db */
	ATM_OP_RELU_FWD,          /* in: x                     out: y */
	ATM_OP_RELU_BWD,          /* in: y (forward output), dy out: dx */
	ATM_OP_MAXPOOL_FWD,       /* in: x                     out: y, ws (i32 argmax, shape of y) */
	ATM_OP_MAXPOOL_BWD,       /* in: dy, ws                out: dx */
	ATM_OP_AVGPOOL_FWD,       /* in: x                     out: y */
	ATM_OP_AVGPOOL_BWD,       /* in: dy                    out: dx */
	ATM_OP_BN_FWD,            /* in: x, gamma[C], beta[C]  out: y, mean[C], var[C] (batch statistics, biased var) */
	ATM_OP_BN_BWD,            /* in: x, dy, gamma, mean, var out: dx, dgamma, dbeta */
	ATM_OP_CONCAT,            /* in: x0..xk                out: y    (along attrs.axis) */
	ATM_OP_SPLIT,             /* in: dy                    out: dx0..dxk (backward of concat) */
	ATM_OP_ADD,               /* in: a, b                  out: y = a + b (residuals, gradient sums) */
	ATM_OP_SOFTMAX_XENT_FWD,  /* in: logits[N,K], labels[N,K] (one-hot) out: probs[N,K], loss[1] */
	ATM_OP_SOFTMAX_XENT_BWD,  /* in: probs, labels         out: dlogits = (probs - labels) / N */
	ATM_OP_SGD,               /* in: w, dw  out: none; writes w -= lr * dw in place */
	/* transformers: activations are [batch, seq, features]; docs/graph-format.md has the rules */
	ATM_OP_MATMUL,            /* in: a, b, (bias[N]) out: c = scale * op(a) op(b) (+ bias); three forms */
	ATM_OP_REDUCE_SUM,        /* in: x[..., S...]          out: y[S...], the sum over the leading dims */
	ATM_OP_LAYER_NORM_FWD,    /* in: x[..., C], gamma[C], beta[C] out: y, mean[...], var[...] */
	ATM_OP_LAYER_NORM_BWD,    /* in: x, dy, gamma, mean, var out: dx, dgamma, dbeta */
	ATM_OP_GELU_FWD,          /* in: x                     out: y (erf form; tanh form by attr) */
	ATM_OP_GELU_BWD,          /* in: x, dy                 out: dx */
	ATM_OP_TANH_FWD,          /* in: x                     out: y */
	ATM_OP_TANH_BWD,          /* in: y (forward output), dy out: dx */
	ATM_OP_SOFTMAX_FWD,       /* in: x[..., K]             out: y (over the last dim, causal by attr) */
	ATM_OP_SOFTMAX_BWD,       /* in: y, dy                 out: dx */
	ATM_OP_EMBEDDING_FWD,     /* in: table[V, C], (ids i32 [...]) out: y[..., C] (rows by id or position) */
	ATM_OP_EMBEDDING_BWD,     /* in: dy, (ids)             out: dtable (a scatter-add in a fixed order) */
	ATM_OP_PERMUTE,           /* in: x                     out: y (axes reordered by attrs.perm) */
	ATM_OP_NARROW_FWD,        /* in: x                     out: y, the first y.dims[axis] along axis */
	ATM_OP_NARROW_BWD,        /* in: dy                    out: dx, zero past dy along axis */
	ATM_OP_TOKEN_XENT_FWD,    /* in: logits[..., V], labels i32 [...] out: logp, loss[1] (mean) */
	ATM_OP_TOKEN_XENT_BWD,    /* in: logp, labels          out: dlogits = (exp(logp) - onehot) / rows */
	ATM_OP_SILU_FWD,          /* in: x                     out: y = x * sigmoid(x) */
	ATM_OP_SILU_BWD,          /* in: x, dy                 out: dx */
	ATM_OP_MUL,               /* in: a, b                  out: y = a * b, a's shape (b broadcast:
	                           * its dims a's trailing ones, each equal or 1) */
	ATM_OP_MUL_BWD,           /* in: dy, a                 out: db = dy * a summed over the dims
	                           * db broadcasts (b's gradient when b is smaller than a) */
	ATM_OP_RMS_NORM_FWD,      /* in: x[..., C], w[C]       out: y = x * rstd * w, rstd[...] =
	                           * 1 / sqrt(mean over C of x^2 + epsilon) */
	ATM_OP_RMS_NORM_BWD,      /* in: x, dy, w, rstd        out: dx, dw */
	ATM_OP_ROPE_FWD,          /* in: x[..., T, D]          out: y, x's pairs (i, i + D/2) rotated
	                           * by t * theta^(-2i/D) at position t (rotary embeddings) */
	ATM_OP_ROPE_BWD,          /* in: dy                    out: dx, dy rotated back */
	ATM_OP_SIGMOID_FWD,          /* in: x                     out: y = 1 / (1 + exp(-x)) */
	ATM_OP_SIGMOID_BWD,          /* in: y (the forward output), dyout: dx */
	ATM_OP_HARDSWISH_FWD,        /* in: x                     out: y = x * min(max(x + 3, 0), 6) / 6 */
	ATM_OP_HARDSWISH_BWD,        /* in: x, dy                 out: dx */
	ATM_OP_HARDSIGMOID_FWD,      /* in: x                     out: y = min(max(x / 6 + 1/2, 0), 1) */
	ATM_OP_HARDSIGMOID_BWD,      /* in: x, dy                 out: dx */
	ATM_OP_RELU6_FWD,            /* in: x                     out: y = min(max(x, 0), 6) */
	ATM_OP_RELU6_BWD,            /* in: y (the forward output), dyout: dx */
	ATM_OP_SGD_MOMENTUM,      /* in: w, dw, (buf)  out: none; PyTorch's SGD with weight decay
	                           * and momentum: g = dw + weight_decay * w, buf = momentum * buf
	                           * + g (without buf: buf = g), w -= lr * buf; writes w, buf */
	ATM_OP_ADAMW,             /* in: w, dw, exp_avg, exp_avg_sq, step[1]  out: none; PyTorch's
	                           * AdamW at step t = step + 1 (decoupled weight decay, bias
	                           * correction); writes w, exp_avg, exp_avg_sq and step = t */
	ATM_OP_ALLREDUCE,         /* in: dw0..dwk  out: r0..rk, each dwi's mean over attrs.ranks
	                           * data-parallel ranks, in a fixed order (a bucket of gradients) */
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
	bool trans_a;       /* matmul: a's last two dims swapped */
	bool trans_b;       /* matmul: b's last two dims swapped */
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
	int64_t n_elems;
	int64_t bytes;
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

/* Attributes of atm_attrs an op may read, one bit each; signatures and graph JSON write
 * an op's attributes in this order. */
enum {
	ATM_ATTR_KERNEL = 1u << 0,      /* "kernel" */
	ATM_ATTR_STRIDE = 1u << 1,      /* "stride" */
	ATM_ATTR_PAD = 1u << 2,         /* "pad" */
	ATM_ATTR_EXCLUDE_PAD = 1u << 3, /* "exclude_pad" */
	ATM_ATTR_EPSILON = 1u << 4,     /* "epsilon" */
	ATM_ATTR_AXIS = 1u << 5,        /* "axis" */
	ATM_ATTR_LR = 1u << 6,          /* "lr" */
	ATM_ATTR_TRANS_A = 1u << 7,     /* "trans_a" */
	ATM_ATTR_TRANS_B = 1u << 8,     /* "trans_b" */
	ATM_ATTR_SCALE = 1u << 9,       /* "scale" */
	ATM_ATTR_CAUSAL = 1u << 10,     /* "causal" */
	ATM_ATTR_TANH = 1u << 11,       /* "tanh" */
	ATM_ATTR_POSITIONS = 1u << 12,  /* "positions" */
	ATM_ATTR_PERM = 1u << 13,       /* "perm" */
	ATM_ATTR_THETA = 1u << 14,      /* "theta" */
	ATM_ATTR_MOMENTUM = 1u << 15,   /* "momentum" */
	ATM_ATTR_BETA1 = 1u << 16,      /* "beta1" */
	ATM_ATTR_BETA2 = 1u << 17,      /* "beta2" */
	ATM_ATTR_WEIGHT_DECAY = 1u << 18, /* "weight_decay" */
	ATM_ATTR_GROUPS = 1u << 19,     /* "groups" (written only when above 1) */
	ATM_ATTR_RANKS = 1u << 20,      /* "ranks" */
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
	ATM_ROLE_INDEX,    /* i32 indices (max pooling's argmax), where every other operand is f32 */
	ATM_ROLE_TOKENS,   /* i32 token ids or labels, each below the rows or classes it indexes */
} atm_op_role;

/* Roles are given for an op's first operands; those past them are data. */
#define ATM_OP_MAX_ROLES 8

/* One op as the rest of the code may ask about it (read-only, owned by core). Parameter
 * roles sit on the op that introduces a parameter (its forward op); a parameter in a data
 * slot of such an op starts at zero. */
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

/* atm_graph_add_tensor -- append a tensor; its id is the number of tensors before it.
 * Rejects dims < 1, dims > ATM_MAX_DIM, byte sizes over ATM_MAX_BYTES, empty
 * location sets, and names used before. */
atm_status atm_graph_add_tensor(atm_graph *g, const char *name, atm_dtype dtype, int ndim,
                                const int64_t *dims, atm_tensor_kind kind, unsigned locations,
                                int32_t *id);

/* atm_graph_add_node -- append a node to the schedule; attrs may be NULL (all zero).
 * Checks that the ids exist and the arity fits the op; shapes are checked by validate. */
atm_status atm_graph_add_node(atm_graph *g, const char *name, atm_op op, const atm_attrs *attrs,
                              int n_in, const int32_t *in, int n_out, const int32_t *out,
                              int32_t *id);

/* atm_graph_mark_batched -- tensor's first dimension is the batch size, so that
 * a saved graph can be loaded at another batch */
atm_status atm_graph_mark_batched(atm_graph *g, int32_t tensor);
/* atm_graph_batch -- the batch of the batched tensors, 0 when none is marked */
int64_t atm_graph_batch(const atm_graph *g);

/* ---------------------------------------------------------------- the update */

/* The optimizer a training step ends in. A graph built by the zoo or read from a forward
 * file ends in SGD, one node per parameter; atm_graph_with_update rewrites it to another
 * update, PyTorch's formulas and defaults (docs/graph-format.md, "Optimizers"). */
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

/* atm_update_kind_name, atm_update_kind_from_name -- "sgd", "momentum", "adamw"; an unknown
 * name is ATM_E_USAGE listing the valid ones */
const char *atm_update_kind_name(atm_update_kind k);
atm_status atm_update_kind_from_name(const char *s, atm_update_kind *out);

/* atm_update_defaults -- PyTorch's defaults for kind: lr 0 (the graph's; adamw 1e-3),
 * momentum 0.9, betas 0.9 and 0.999, eps 1e-8, weight decay 0 (adamw 1e-2) */
atm_update atm_update_defaults(atm_update_kind kind);

/* atm_graph_with_update -- a copy of g (*out, validated) whose SGD nodes are u's update: the
 * states are tensors of kind optimizer_state named after their parameter as torch.optim's
 * state is ("W.momentum_buffer", "W.exp_avg", "W.exp_avg_sq", "W.step"), zero at the start,
 * placed by the plan like any tensor; each update is one node where the SGD was. ATM_E_USAGE
 * for factors out of range or a graph without SGD nodes (the message says which). */
atm_status atm_graph_with_update(const atm_graph *g, const atm_update *u, atm_graph **out);

/* atm_graph_update_of -- the update g's step ends in (its first update node's) and the
 * bytes of its optimizer state; false for a graph with no update node */
bool atm_graph_update_of(const atm_graph *g, atm_update *u, int64_t *state_bytes);

/* ---------------------------------------------------------------- data parallelism */

/* Data-parallel training: every rank takes the step on its shard of the batch, and the
 * gradients are averaged over the ranks before the update (docs/graph-format.md, "Many
 * machines"). */
#define ATM_ALLREDUCE_BUCKET_BYTES ((int64_t)25 << 20) /* PyTorch DDP's default bucket */
#define ATM_ALLREDUCE_BUCKET_TENSORS 32

/* atm_graph_with_allreduce -- a copy of g (*out, validated) in which the gradients each update
 * reads are first averaged over ranks: the updates in schedule order fall into buckets of
 * gradients (at most bucket_bytes, 0: ATM_ALLREDUCE_BUCKET_BYTES, and at most
 * ATM_ALLREDUCE_BUCKET_TENSORS tensors; a gradient larger than a bucket is a bucket of its
 * own); after the last gradient of a bucket is complete one allreduce node "allreduce.K"
 * reads them all and writes their means ("G.mean" for gradient G), and the bucket's updates
 * follow it, reading the means. ATM_E_USAGE for ranks below 2, a graph without updates or one
 * that has allreduce nodes already. */
atm_status atm_graph_with_allreduce(const atm_graph *g, int ranks, int64_t bucket_bytes,
                                    atm_graph **out);

/* atm_graph_ranks -- the ranks g's allreduce nodes average over; 1 for a graph without them */
int atm_graph_ranks(const atm_graph *g);

/* atm_graph_set_workspace -- scratch bytes node id needs while it runs */
atm_status atm_graph_set_workspace(atm_graph *g, int32_t node, int64_t bytes);

/* atm_graph_validate -- every input produced earlier (or an input, param,
 * constant or optimizer state), every non-persistent tensor produced exactly
 * once, shapes consistent with each op's rule, batched tensors agreeing on the
 * batch. The message names the node or tensor. */
atm_status atm_graph_validate(const atm_graph *g);

const char *atm_graph_name(const atm_graph *g);
int32_t atm_graph_n_tensors(const atm_graph *g);
int32_t atm_graph_n_nodes(const atm_graph *g);
/* NULL when id is out of range. The pointers stay valid until the next tensor
 * or node is added (the arrays grow), so copy what you keep while building. */
const atm_tensor *atm_graph_tensor(const atm_graph *g, int32_t id);
/* atm_tensor_is_labels -- some node of g reads tensor t as labels (ATM_ROLE_LABELS) */
bool atm_tensor_is_labels(const atm_graph *g, int32_t t);
/* atm_tensor_token_limit -- some node of g reads tensor t as i32 token ids or labels
 * (ATM_ROLE_TOKENS): the bound they must stay below (the fewest table rows or classes among
 * those nodes); 0 when none does */
int64_t atm_tensor_token_limit(const atm_graph *g, int32_t t);
const atm_node *atm_graph_node(const atm_graph *g, int32_t id);
/* atm_graph_find_tensor -- id of the tensor with this name, or -1 */
int32_t atm_graph_find_tensor(const atm_graph *g, const char *name);
/* atm_graph_producer -- the first node that writes tensor, or -1 (an input, a parameter) */
int32_t atm_graph_producer(const atm_graph *g, int32_t tensor);

/* atm_tensor_is_persistent -- lives for the whole step (input, param, optimizer
 * state, constant, output) */
bool atm_tensor_is_persistent(const atm_tensor *t);

/* What a kernel must do at the least, from its op and shapes: the roofline model's input. */
typedef struct {
	double flops;         /* 2 per multiply-add; elementwise ops one or a few per element */
	double traffic_bytes; /* every operand once, an in-place input twice, plus the passes an
	                       * op makes over its operands (batch norm reads x twice) */
	bool pointwise;       /* a 1x1 window (atm_op_desc.pointwise_rate) */
} atm_work;

/* atm_node_work -- FLOPs and traffic of node of a valid graph; ATM_E_USAGE for a node out of
 * range. *w is zero on failure. */
atm_status atm_node_work(const atm_graph *g, int32_t node, atm_work *w);

/* A matmul as one GEMM per batch entry: c[i] (m x n) = scale * op(a[i]) (m x k) op(b[i]) (k x n),
 * a stored row-major as [batch, trans_a ? k : m, trans_a ? m : k] and b likewise, where b with
 * b_batched false is one matrix every entry shares. The three forms of the op (docs/graph-format.md):
 * c of rank 2 folds the leading dims of a and b into rows (a weight gradient); b of rank 2
 * folds a's leading dims into m (a linear layer on [batch, seq, features]); a, b and c of one
 * rank >= 3 multiply matrix by matrix over the leading dims (attention). */
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

/* A tensor b broadcast to a larger tensor a's shape (mul's second operand; its gradient, which
 * mul_bwd sums): the dims of a that b keeps and those it is repeated along, each with its
 * stride in a, fastest (last) first; dims of 1 are left out. An element of a at offset i reads
 * b at the offset its kept digits give, counted in the kept dims alone. */
typedef struct {
	int n_kept, n_rep;
	int64_t kept[ATM_MAX_DIMS], kept_stride[ATM_MAX_DIMS];
	int64_t rep[ATM_MAX_DIMS], rep_stride[ATM_MAX_DIMS];
	int64_t rep_elems; /* elements of a per element of b: the product of rep */
} atm_broadcast;

/* atm_broadcast_of -- how node n's operand of b's shape lines up with its operand of a's shape:
 * mul's inputs 1 and 0, mul_bwd's output 0 and input 0; ATM_E_USAGE for another node */
atm_status atm_broadcast_of(const atm_graph *g, const atm_node *n, atm_broadcast *out);

/* ---------------------------------------------------------------- liveness */

typedef struct atm_liveness atm_liveness;

/* atm_liveness_new -- live range of every tensor and bytes live at every node,
 * freeing each tensor right after its last use. The graph must be valid and
 * must outlive the result. */
atm_status atm_liveness_new(atm_liveness **lv, const atm_graph *g);
void atm_liveness_destroy(atm_liveness *lv);

/* First and last node index at which tensor id is live. Persistent tensors
 * span [0, n_nodes - 1]; a tensor nobody reads dies at its producer. */
int32_t atm_liveness_first(const atm_liveness *lv, int32_t tensor);
int32_t atm_liveness_last(const atm_liveness *lv, int32_t tensor);
/* Bytes live while node runs, including the node's workspace. */
int64_t atm_liveness_bytes_at(const atm_liveness *lv, int32_t node);
int64_t atm_liveness_peak_bytes(const atm_liveness *lv);
/* Index of the first node where the peak is reached. */
int32_t atm_liveness_peak_node(const atm_liveness *lv);

/* ---------------------------------------------------------------- summary */

typedef struct {
	int64_t n_params;      /* elements in param tensors */
	int64_t param_bytes;
	int64_t io_bytes;      /* bytes of persistent tensors (inputs, params, state, constants, outputs) */
	int64_t peak_bytes;    /* peak of the footprint curve */
	int64_t total_bytes;   /* sum of all tensor sizes (what a no-reuse allocator needs) */
	int32_t n_kernels;
	int32_t n_tensors;
} atm_graph_stats;

atm_status atm_graph_stats_compute(const atm_graph *g, atm_graph_stats *out);

/* ---------------------------------------------------------------- JSON */

struct json_t; /* jansson's */
/* atm_json_type_name -- "an object", "an array", "a string", "a number", "a boolean" or "null":
 * what a value is, for "expected X, got Y" messages */
const char *atm_json_type_name(const struct json_t *v);
/* atm_json_unknown_key -- the first key of object o that is not one of keys (NULL-terminated),
 * NULL when every key is known; valid then holds keys, comma separated, for the message.
 * Every reader of a JSON file refuses keys it does not know, so that a misspelt one is named
 * rather than ignored. */
const char *atm_json_unknown_key(const struct json_t *o, const char *const *keys, char *valid,
                                 size_t len);
/* atm_json_text -- v as text (malloc'd; flags as json_dumps's), or ATM_E_NOMEM. Unlike
 * json_dumps, which (jansson 2.14) can return an object with a key's text missing when an
 * allocation fails, it gives the whole text or none. */
atm_status atm_json_text(const struct json_t *v, size_t flags, char **text);
/* atm_json_set_new -- obj[key] = v, stealing v as json_object_set_new does; a failure (obj or
 * v NULL: an allocation that failed; or a failed set) clears *ok, so that a writer checks once
 * at the end and never drops a field unnoticed */
void atm_json_set_new(struct json_t *obj, const char *key, struct json_t *v, bool *ok);

/* Loading options: values for symbolic dimensions ("batch"). */
typedef struct {
	int64_t batch; /* > 0 overrides the file's "batch" parameter */
} atm_graph_load_opts;

/* atm_graph_load -- read and validate a graph JSON file (docs/graph-format.md).
 * Errors are ATM_E_INPUT (message names the file and the element) or ATM_E_IO. */
atm_status atm_graph_load(atm_graph **g, const char *path, const atm_graph_load_opts *opts);
/* atm_graph_load_buffer -- the same from memory; origin names it in messages */
atm_status atm_graph_load_buffer(atm_graph **g, const char *data, size_t len, const char *origin,
                                 const atm_graph_load_opts *opts);
/* atm_graph_dump -- the graph as canonical JSON text (malloc'd, caller frees) */
atm_status atm_graph_dump(const atm_graph *g, char **text);
/* atm_graph_save -- write canonical JSON atomically (temporary file + rename) */
atm_status atm_graph_save(const atm_graph *g, const char *path);

/* ---------------------------------------------------------------- plans */

/* A plan says where every tensor lives over the schedule.
 *
 * Each tensor has an initial location: where a kernel output is allocated when
 * produced, or where a persistent tensor (input, param, ...) sits when a step
 * starts. Moves copy a tensor between tiers after a node. A tensor may hold a
 * copy in both tiers; kernels read the fast copy when there is one. A move to
 * fast adds a fast copy; a move to slow writes a slow copy (free when a valid
 * one exists already) and drops the fast copy. A kernel that writes a tensor in
 * place (SGD) drops its other copy. A synchronous move blocks the schedule; an
 * asynchronous one overlaps the kernels after it and is complete before node
 * `until` runs (or before the first node that reads the tensor, if earlier).
 * At the end of a step each persistent tensor must be back in its initial
 * location, so that every step starts alike; a persistent tensor whose initial
 * location is fast keeps its place in fast memory all step (to move one in and
 * out, give it slow memory as its initial location). */

typedef struct {
	int32_t tensor;
	unsigned to;    /* ATM_LOC_FAST or ATM_LOC_SLOW */
	int32_t after;  /* node after which it starts; -1: before the first node */
	int32_t until;  /* asynchronous: done before this node runs (n_nodes: by the step's end) */
	bool async;
} atm_move;

/* A recomputation: tensor's every copy is freed after node drop_after, and the tensor is
 * computed again, into fast memory, right before node `before` runs, by running the node that
 * produced it once more (in the configuration its inputs have there). Between the two it
 * takes no memory. Eligible tensors (atm_recompute_eligible): not persistent, an output of a
 * node that is a forward op and writes nothing in place; a node with several outputs (batch
 * norm: y, mean, var; max pooling: y, argmax) writes the others into scratch, which counts in
 * the recomputation's workspace, and they are discarded. No use of the tensor and no move of
 * it lies between drop_after and before; drop_after is at or after the node that produced it.
 *
 * Either `before` reads the tensor, which is live there (its last use at or after `before`), or
 * the recomputation is a *link*: the tensor's last use is before `before` (drop_after must be
 * that last use, where it was freed, and a link drops nothing), and it is made again only so
 * that other recomputations before the same node can read it; one of them must, and one link
 * per tensor and node. The recomputations before a node run in the order of their producer
 * nodes (so a link is made before those that read it), and a link is freed right after the
 * last of them that reads it: it holds fast memory only among them, never while `before` runs.
 * At `before` every input of the producer must hold a copy: a persistent one not written since
 * the node ran, one still live there (its last use at or after `before`) and not itself dropped,
 * or a link before the same node, made earlier (chains of any depth). */
typedef struct {
	int32_t tensor;
	int32_t drop_after; /* node after which (after its moves) every copy is freed */
	int32_t before;     /* node before which (after the moves due there) it is made again */
} atm_recompute;

/* atm_recompute_eligible -- t may be recomputed (the rule above, without the inputs' copies,
 * which depend on the plan); when not, and why is not NULL, *why says why in a few words */
bool atm_recompute_eligible(const atm_graph *g, int32_t t, const char **why);
/* atm_recompute_producer -- the node that makes t (-1: none, a persistent tensor) */
int32_t atm_recompute_producer(const atm_graph *g, int32_t t);
/* atm_recompute_is_link -- r makes its tensor again only for the recomputations before the same
 * node: no node from r->before on uses the tensor */
bool atm_recompute_is_link(const atm_graph *g, const atm_recompute *r);

/* Most solves one plan records: the optimizer's defragmentation rounds. */
#define ATM_PLAN_MAX_ROUNDS 16

/* What the optimizer knew when it made the plan (solver figures may be absent: < 0). */
typedef struct {
	char formulation[32];       /* "all-fast", "static", "synchronous", ... */
	int64_t fast_limit_bytes;   /* 0: no limit */
	double predicted_runtime_s; /* < 0: unknown */
	double predicted_recompute_s; /* of that, the kernels run again for recomputations (< 0:
	                              * unknown) */
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
/* atm_plan_add_recompute -- append a recomputation (checked, with the moves, by
 * atm_schedule_new; ATM_E_INPUT here for a tensor or node out of range or a tensor that is
 * not eligible, naming it and why) */
atm_status atm_plan_add_recompute(atm_plan *p, const atm_recompute *r);
int32_t atm_plan_n_recomputes(const atm_plan *p);
const atm_recompute *atm_plan_recompute(const atm_plan *p, int32_t i);
atm_plan_info *atm_plan_info_of(atm_plan *p);
const atm_plan_info *atm_plan_info_get(const atm_plan *p);

/* atm_plan_set_algo -- node runs its algorithm algo (0, the default, unless a GPU profile
 * found a faster one; ATM_E_INPUT out of 0..ATM_MAX_ALGOS - 1) */
atm_status atm_plan_set_algo(atm_plan *p, int32_t node, int algo);
int atm_plan_algo(const atm_plan *p, int32_t node);
/* atm_plan_algos_differ -- how many nodes run another algorithm in b than in a (plans of one
 * graph): placements that run the same algorithms train to the same bits, others need not */
int32_t atm_plan_algos_differ(const atm_plan *a, const atm_plan *b);
/* atm_plan_set_workspace -- node's kernel takes bytes of workspace inside the fast arena while it
 * runs: GPU plans that count the chosen algorithm's workspace against the limit (0, the default:
 * the backend's own scratch outside the arena; ATM_E_INPUT when negative) */
atm_status atm_plan_set_workspace(atm_plan *p, int32_t node, int64_t bytes);
int64_t atm_plan_workspace(const atm_plan *p, int32_t node);

/* atm_plan_uniform -- every tensor in loc (all-fast or all-slow; fast-only tensors stay fast) */
atm_status atm_plan_uniform(atm_plan **p, const atm_graph *g, unsigned loc);
/* atm_plan_random -- a valid random plan with synchronous and asynchronous moves and
 * recomputations (about one eligible tensor in three, where the rules allow; half the time
 * with links, up to three deep, for its node's inputs dead there), to stress the move and
 * recomputation machinery; the same seed gives the same plan */
atm_status atm_plan_random(atm_plan **p, const atm_graph *g, uint64_t seed);

/* Events of a step in the order the executor performs them. */
typedef enum {
	ATM_EV_ALLOC,      /* tensor gets a copy in loc (fast copies at offset) */
	ATM_EV_KERNEL,     /* node runs; its inputs and outputs use the locations in cfg */
	ATM_EV_MOVE_START, /* move starts copying tensor to loc (the destination is allocated) */
	ATM_EV_MOVE_WAIT,  /* wait until move is done */
	ATM_EV_FREE,       /* tensor's copy in loc is released */
	ATM_EV_RECOMPUTE,  /* node runs again to make tensor (one of its outputs) anew: recompute
	                    * is the index of the plan's recomputation; its fast copy was allocated
	                    * by the ALLOC before it; cfg gives its inputs' locations there, then its
	                    * outputs' (all fast: the others are written into the workspace block,
	                    * after the kernel's own workspace, and discarded) */
} atm_event_kind;

typedef struct {
	atm_event_kind kind;
	int32_t node;   /* KERNEL; for the others the node they follow (-1 before the first) */
	int32_t tensor; /* ALLOC, MOVE_*, FREE */
	int32_t move;   /* MOVE_*: index into the plan's moves */
	int32_t recompute; /* RECOMPUTE: index into the plan's recomputations (else -1) */
	unsigned loc;   /* ALLOC, FREE: which copy; MOVE_START: destination */
	int64_t offset; /* ALLOC in fast memory: offset in the fast arena; KERNEL, RECOMPUTE: its
	                 * workspace's */
	const unsigned *cfg; /* KERNEL, RECOMPUTE: location of each input then each output */
	int64_t workspace_bytes; /* KERNEL, RECOMPUTE: the plan's workspace of node, a block of the
	                          * fast arena at offset live while the kernel runs (0: none); a
	                          * RECOMPUTE's block also holds the node's other outputs, each
	                          * rounded up to ATM_ARENA_ALIGN, after the workspace rounded up */
} atm_event;

typedef struct atm_schedule atm_schedule;

/* Fast copies sit at multiples of this in the fast arena: the schedule's first fit places
 * them there, the runtime's arena takes only such offsets, and the optimizer counts what a
 * tensor takes there. 64 bytes: a cache line and a full AVX-512 vector. */
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

/* atm_schedule_new -- check the plan against its graph and lay out one step: every
 * copy's life, fast offsets by first fit inside the plan's fast limit. Errors:
 * ATM_E_INPUT for a plan that contradicts its graph (naming the tensor, move or
 * recomputation: the rules of atm_recompute, each checked here),
 * ATM_E_INFEASIBLE when fast copies exceed the limit at a node (naming the node,
 * the bytes needed and the limit) or do not fit for fragmentation. */
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
/* atm_schedule_emulated_wait_s -- of one step, the seconds an emulated slow tier (read_gbps,
 * write_gbps beside fast_gbps, 1e9 bytes/s) waits in the schedule's own line: after each kernel
 * and recomputation for its slow operands' bytes, and in each synchronous move, the slow time
 * less the fast time, as the executor's emulation waits (asynchronous moves wait on the
 * mover, beside the kernels: not counted). The part of a step that does not drift with the
 * machine's speed. 0 when a rate is not positive. */
double atm_schedule_emulated_wait_s(const atm_schedule *s, double read_gbps, double write_gbps,
                                    double fast_gbps);
/* atm_emulated_extra_s -- what an emulated slow tier waits for these slow bytes: their time at
 * its rates less their time at the fast rate, at least 0 (latency is not added: kernels and
 * moves stream megabytes, where the prefetchers hide it and bandwidth sets the time) */
double atm_emulated_extra_s(double read_bytes, double written_bytes, double read_gbps,
                            double write_gbps, double fast_gbps);

/* Plan JSON (docs/formats.md). Loading checks the plan belongs to g: same
 * graph name and tensor names, and a digest of the graph's structure. */
atm_status atm_plan_load(atm_plan **p, const atm_graph *g, const char *path);
atm_status atm_plan_load_buffer(atm_plan **p, const atm_graph *g, const char *data, size_t len,
                                const char *origin);
atm_status atm_plan_dump(const atm_plan *p, char **text);
atm_status atm_plan_save(const atm_plan *p, const char *path);
/* atm_graph_digest -- 16 hex digits identifying the graph's structure and sizes */
void atm_graph_digest(const atm_graph *g, char out[17]);

/* ---------------------------------------------------------------- kernel keys */

/* Identical kernels (same op, attributes, shapes and dtypes) share a signature, and each
 * kernel has IO configurations: where its operands are. A profile keys kernel times by both.
 *
 * An IO configuration is a mask over a node's operand groups: bit i set means
 * group i is in slow memory. A node has one group per operand (inputs, then
 * outputs: bit i is the i-th of them) unless it has more than
 * ATM_CONFIG_MAX_OPERANDS operands (a DenseNet concatenation of 64 inputs would
 * have 2^65 configurations); then it has two groups, bit 0 for all its inputs
 * and bit 1 for all its outputs, which move together. A group holding a tensor
 * that may only live in fast memory never has its bit set, and operands that
 * are the same tensor share one location. atm_node_config_loc and
 * atm_node_config_of translate between masks and per-operand locations, so
 * that callers need not know the grouping. */

#define ATM_CONFIG_MAX_OPERANDS 8
/* A buffer this long holds the signature of any node of up to about 200 operands. */
#define ATM_SIGNATURE_MAX 8192
/* Kernels with several implementations (a GPU's convolution algorithms) are timed and
 * planned per algorithm, 0 the default one. */
#define ATM_MAX_ALGOS 16

/* atm_node_signature -- the kernel signature of node (same for identical
 * kernels), e.g. "conv_fwd/s1,1/p1,1,1,1/f32[8,3,64,64],f32[64,3,3,3]->f32[8,64,64,64]";
 * ATM_E_USAGE when it does not fit in len bytes (ATM_SIGNATURE_MAX is plenty) */
atm_status atm_node_signature(const atm_graph *g, int32_t node, char *buf, size_t len);
/* atm_node_n_configs -- how many IO configurations node has: 2^k, k = its
 * groups that may be slow, counting operands that are one tensor once */
int atm_node_n_configs(const atm_graph *g, int32_t node);
/* atm_node_config_at -- the i-th configuration's mask (i = 0: everything fast) */
uint32_t atm_node_config_at(const atm_graph *g, int32_t node, int i);
/* atm_node_config_loc -- ATM_LOC_FAST or ATM_LOC_SLOW: where operand (inputs
 * then outputs) is in config */
unsigned atm_node_config_loc(const atm_graph *g, int32_t node, uint32_t config, int operand);
/* atm_node_config_of -- the configuration with these per-operand locations
 * (inputs then outputs); ATM_E_NOTFOUND naming the node when the node has none
 * (a fast-only tensor in slow memory, one tensor in two places, the inputs of a
 * grouped node apart) */
atm_status atm_node_config_of(const atm_graph *g, int32_t node, const unsigned *locs,
                              uint32_t *config);
/* atm_node_config_name -- "FS/F": F or S per input, '/', F or S per output; a
 * grouped node's "S+/F+" means all its inputs slow, all its outputs fast */
const char *atm_node_config_name(const atm_graph *g, int32_t node, uint32_t config, char *buf,
                                 size_t len);

/* ---------------------------------------------------------------- profiles */

/* A profile holds measured (or estimated) kernel times, keyed by the kernel's
 * signature and its IO configuration, for one machine: timings from another CPU,
 * thread count, tier pair, emulation preset or backend are never mixed in. The
 * optimizer reads it; the profiler fills it and keeps it in its on-disk cache
 * (atm_prof_cache_open, atm_prof_cache_save: profiler/atm_profiler.h), whose file
 * format is read and written here. The format: docs/profile.md.
 *
 *     atm_profile_machine m = {...};                  // atm_kbench_machine fills it
 *     atm_profile *p = NULL;
 *     atm_profile_new(&p, &m, NULL);                   // in memory; or atm_prof_cache_open
 *     atm_profile_put(p, g, node, 0, &(atm_profile_entry){.min_s = 1e-3, .median_s = 1e-3,
 *                                                         .count = 1});
 *     for (int i = 0; i < atm_node_n_configs(g, node); i++) {
 *             uint32_t c = atm_node_config_at(g, node, i);
 *             atm_profile_entry e;
 *             if (atm_profile_get(p, g, node, c, &e) < 0)  // names the kernel
 *                     fprintf(stderr, "%s\n", atm_errmsg());
 *     }
 *     atm_profile_destroy(p);
 */

/* What makes timings comparable. Two profiles are of the same machine when
 * every field is equal. */
typedef struct {
	char cpu[128];       /* CPU model */
	int n_threads;       /* threads the kernels run on (OpenMP) */
	char backend[48];    /* "cpu-onednn-2.6.3" */
	char fast_tier[48];  /* tier kind and node: "dram:0" */
	char slow_tier[48];  /* "pmem-dir", "kmem-dax:2", ... */
	char emulation[32];  /* preset or spec name; "" when the slow tier is real */
	bool estimated;      /* a roofline estimate, nothing measured */
} atm_profile_machine;

/* What a profile may hold, so that any sum of its times and move times stays finite: a
 * kernel time above ATM_PROFILE_MAX_S (a day)
 * is no measurement, a move bandwidth below ATM_PROFILE_MIN_GBPS (1 kB/s) or above
 * ATM_PROFILE_MAX_GBPS (100 TB/s) no memory's. */
#define ATM_PROFILE_MAX_S 86400.0
#define ATM_PROFILE_MIN_GBPS 1e-6
#define ATM_PROFILE_MAX_GBPS 1e5

/* One kernel in one configuration. */
typedef struct {
	double min_s;
	double median_s;
	int32_t count;          /* timed runs (>= 1) */
	int64_t scratch_bytes;  /* scratch the kernel asked for */
	bool estimated;
} atm_profile_entry;

/* Moves between the tiers: bandwidths of synchronous copies (1e9 bytes/s), and what an
 * asynchronous copy costs the kernels it overlaps. */
typedef struct {
	double to_fast_gbps;
	double to_slow_gbps;
	bool estimated;
	/* The fraction of an overlapped copy's time that the kernel running beside it loses
	 * (0 to 1): 0 when the copy takes nothing from the kernel (a GPU's copy engines), near 1
	 * when the copy's thread takes a core the kernel needed, so that overlapping buys nothing.
	 * A kernel of time k beside copies of time c then takes max(k + overlap_loss * c, c). */
	double overlap_loss;
	bool overlap_measured; /* overlap_loss was measured (absent from older caches: 0) */
	/* The same by direction, [0] copies to fast memory (fetches), [1] to slow memory
	 * (evictions), as measured with each direction's copies alone beside a kernel: what the
	 * kernel loses (kernel_loss, a fraction of the copies' time, 0 to 1) and what the copies
	 * lose (copy_stretch, their time beside the kernel over their time alone, 1 to
	 * ATM_PROFILE_MAX_STRETCH). Kernels of time k beside copies c[d] then take
	 * max(k + sum kernel_loss[d] c[d], sum copy_stretch[d] c[d]) (atm_profile_overlap).
	 * Without by_direction (older caches, estimates, a GPU's copy engines) both directions
	 * are overlap_loss and a stretch of 1. */
	double kernel_loss[2], copy_stretch[2];
	bool by_direction;
	int overlap_threads;          /* threads the kernel ran on when measured (0: unknown) */
	char overlap_wait_policy[16]; /* OMP_WAIT_POLICY then ("passive"; "": unset or unknown) */
	/* The slow tier's own rates, what a kernel's slow accesses are charged (an emulated tier's
	 * spec, a real one's as surveyed), and the fast bandwidth the kernels' times were measured
	 * at (an emulation's waits count from it): what a 2LM cache's misses cost
	 * (atm_twolm_wait_s). 0: unknown (older caches; a tier whose speed nobody knows). */
	double slow_read_gbps, slow_write_gbps, fast_gbps;
} atm_profile_moves;

typedef struct atm_profile atm_profile;

/* atm_profile_new -- an empty profile of machine m (ATM_E_USAGE naming a field that is empty
 * or not terminated); path names the cache file it belongs to, in messages and
 * atm_profile_path (NULL: in memory only) */
atm_status atm_profile_new(atm_profile **p, const atm_profile_machine *m, const char *path);
void atm_profile_destroy(atm_profile *p);
/* atm_profile_machine_get -- the machine the profile is of */
const atm_profile_machine *atm_profile_machine_get(const atm_profile *p);
/* atm_profile_path -- the cache file, NULL when in memory only */
const char *atm_profile_path(const atm_profile *p);
/* atm_profile_n_entries -- kernel configurations held for this machine (in-step
 * calibrations are not counted) */
int64_t atm_profile_n_entries(const atm_profile *p);
/* atm_profile_machine_json -- machine m as a profile file writes it: a new reference, NULL
 * when out of memory */
struct json_t *atm_profile_machine_json(const atm_profile_machine *m);

/* atm_profile_get -- node's time in config; ATM_E_NOTFOUND naming the kernel
 * and the configuration when it was never profiled */
atm_status atm_profile_get(const atm_profile *p, const atm_graph *g, int32_t node, uint32_t config,
                           atm_profile_entry *out);
/* atm_profile_put -- record e (times >= 0, count >= 1) for node in config,
 * replacing what was there; times are kept to 10 significant digits, as saved */
atm_status atm_profile_put(atm_profile *p, const atm_graph *g, int32_t node, uint32_t config,
                           const atm_profile_entry *e);
/* Kernels with several implementations keep each one's time under its index: 0 is the
 * default one, what atm_profile_get and atm_profile_put mean; its workspace is the entry's
 * scratch_bytes. The most workspace an algorithm of a GPU kernel may take: inside the plan's
 * limit and arena when the plan counts it (atm_plan_set_workspace), else in the device memory
 * kept back from plans (ATM_GPU_RESERVE_BYTES). */
#define ATM_GPU_WORKSPACE_BYTES ((int64_t)256 << 20)
/* atm_profile_get_algo, atm_profile_put_algo -- node in config with algorithm algo
 * (0 to ATM_MAX_ALGOS - 1); ATM_E_NOTFOUND when never profiled */
atm_status atm_profile_get_algo(const atm_profile *p, const atm_graph *g, int32_t node,
                                uint32_t config, int algo, atm_profile_entry *out);
atm_status atm_profile_put_algo(atm_profile *p, const atm_graph *g, int32_t node, uint32_t config,
                                int algo, const atm_profile_entry *e);
/* atm_profile_has -- is node in config in the profile */
bool atm_profile_has(const atm_profile *p, const atm_graph *g, int32_t node, uint32_t config);

/* A kernel inside a training step runs slower (or faster) than the same kernel timed alone:
 * the step's other kernels have evicted its operands from the caches, and on a GPU the
 * timing events around one kernel cost more than the kernel in a stream of launches. The
 * profiler measures this once per signature in real all-fast steps of the graph, and the
 * profile keeps it beside the kernel's configurations ("in_step", docs/profile.md): step_s
 * is the kernel's time in the fastest of those steps (a mean over its nodes), isolated_s its
 * all-fast time alone when that was measured. While the calibration is in use (the default), every time
 * atm_profile_get and atm_profile_get_algo give for the kernel, in any configuration, is
 * shifted by step_s - isolated_s (never below 0): the part of a time that a slow operand
 * adds is left as measured. It is one machine's, as every entry: a profile of another CPU,
 * thread count, tier pair, emulation or backend holds its own or none. */
typedef struct {
	double step_s;       /* time in the fastest all-fast step, mean over n_nodes nodes */
	double isolated_s;   /* the all-fast time alone, as the profile held it then */
	int32_t n_nodes;     /* nodes of the signature the mean is over (>= 1) */
} atm_profile_in_step;

/* atm_profile_put_in_step -- record node's signature's in-step time (times >= 0 and at most
 * ATM_PROFILE_MAX_S, n_nodes >= 1), replacing what was there */
atm_status atm_profile_put_in_step(atm_profile *p, const atm_graph *g, int32_t node,
                                   const atm_profile_in_step *s);
/* atm_profile_get_in_step -- node's signature's in-step time; ATM_E_NOTFOUND when never
 * measured */
atm_status atm_profile_get_in_step(const atm_profile *p, const atm_graph *g, int32_t node,
                                   atm_profile_in_step *out);
/* The all-fast step of one graph as its in-step calibration measured it: when, and the
 * fastest of the calibration's steps (what a run reports as its step). A run that measures
 * all-fast later compares its step with this one to tell how much faster or slower the
 * machine is now than when it was profiled ("all_fast_steps", docs/profile.md). Kept per
 * graph (its digest): the in-step times are per kernel signature, shared by graphs. */
/* a UTC time as text, "2025-01-31T12:00:00Z", with its NUL (atm_utc_now) */
#define ATM_UTC_TEXT_MAX 21
typedef struct {
	double step_s;                        /* > 0 and at most ATM_PROFILE_MAX_S */
	char measured_at[ATM_UTC_TEXT_MAX];   /* UTC, as atm_utc_now writes it */
} atm_profile_calibration;

/* atm_profile_put_calibration -- record g's calibration step (ATM_E_USAGE when the time is out
 * of range, the date is not one, or the profile is estimated), replacing what was there */
atm_status atm_profile_put_calibration(atm_profile *p, const atm_graph *g,
                                       const atm_profile_calibration *c);
/* atm_profile_get_calibration -- g's calibration step; ATM_E_NOTFOUND when the profile holds
 * none for g (its kernels were calibrated in another graph's steps, or before autotm kept
 * the step, or never) */
atm_status atm_profile_get_calibration(const atm_profile *p, const atm_graph *g,
                                       atm_profile_calibration *out);
/* atm_profile_use_in_step -- price kernels with the in-step calibration (on by default) or
 * with their isolated times alone */
void atm_profile_use_in_step(atm_profile *p, bool on);
/* atm_profile_uses_in_step -- the calibration is in use */
bool atm_profile_uses_in_step(const atm_profile *p);
/* Move bandwidths; ATM_E_NOTFOUND when never measured. */
atm_status atm_profile_get_moves(const atm_profile *p, atm_profile_moves *out);
atm_status atm_profile_set_moves(atm_profile *p, const atm_profile_moves *m);
/* Most a copy beside a kernel may take over its time alone in a profile. */
#define ATM_PROFILE_MAX_STRETCH 100.0
/* atm_profile_overlap -- what copies to loc (ATM_LOC_FAST or ATM_LOC_SLOW) beside a kernel cost
 * it (*kernel_loss, a fraction of their time) and themselves (*copy_stretch, a factor), by
 * direction where m has them, else overlap_loss and 1 */
void atm_profile_overlap(const atm_profile_moves *m, unsigned loc, double *kernel_loss,
                         double *copy_stretch);

/* The cache file: one JSON document holding a section per machine. Reading and merging work
 * on its text; the profiler's cache does the file's I/O, its lock and its atomic writes. */

/* atm_profile_read_cache -- take in the section of p's machine from a cache file's text (NULL:
 * no file yet), checked whole first: a broken one is ATM_E_INPUT naming p's path and where it
 * broke, and nothing is taken. With rebuild nothing is taken either, a broken text is no
 * error, and the next merge drops the section (the whole text when it is broken). */
atm_status atm_profile_read_cache(atm_profile *p, const char *text, size_t len, bool rebuild);
/* atm_profile_merge_cache -- *out (malloc'd, *out_len bytes): the cache file's text (NULL: no
 * file yet) with everything p holds unsaved merged into its machine's section, every other
 * section kept; p takes in what the text had of its machine. ATM_E_INPUT when the text is
 * broken (unless a rebuild is pending). p stays unsaved until atm_profile_saved. */
atm_status atm_profile_merge_cache(atm_profile *p, const char *text, size_t len, char **out,
                                   size_t *out_len);
/* atm_profile_unsaved -- entries or moves put since the last save, or a rebuild pending */
bool atm_profile_unsaved(const atm_profile *p);
/* atm_profile_saved -- the merged text is in the file: nothing is unsaved any more */
void atm_profile_saved(atm_profile *p);

/* ---------------------------------------------------------------- 2LM cache model */

/* Memory Mode (2LM) puts fast memory in front of slow memory as a cache the hardware manages:
 * direct-mapped, indexed by address, in lines of 64 bytes, as large as the fast memory. The
 * model does the same over addresses the caller gives (a tensor's place in the slow heap), so
 * tensors whose lines share sets evict each other even when the cache has room, and a tensor
 * larger than the cache evicts its own first part. The hardware never learns that a tensor
 * died: its dirty lines stay until something evicts them and are written back then, and a
 * tensor given a dead one's address hits what that one left. Every miss, a write's too, reads
 * the line from slow memory (Hildebrand et al., ISPASS 2021, measured Memory Mode filling on a
 * write miss). The runtime uses the model to emulate 2LM on machines without Memory Mode, the
 * optimizer to predict it (docs/tiers.md, "2LM emulation"). */

typedef struct atm_twolm atm_twolm;

/* Memory Mode's line. */
#define ATM_CACHE_LINE_BYTES 64
/* The line the executor's emulation and the optimizer's prediction model: a page, 64 of
 * Memory Mode's lines. Simulating 64-byte lines costs 30-230 ms a step for the large networks
 * at the small preset, time the emulated step would count; whole pages change the slow
 * traffic by under 0.6% on them (docs/tiers.md, "2LM emulation"). */
#define ATM_2LM_LINE_BYTES 4096

/* Slow-memory traffic accesses caused. */
typedef struct {
	int64_t read_bytes;    /* lines filled from slow memory (every miss, reads and writes) */
	int64_t fill_bytes;    /* of those, lines filled for a write that missed */
	int64_t written_bytes; /* dirty lines written back to slow memory when evicted or flushed */
	int64_t n_misses;      /* lines that missed */
} atm_twolm_traffic;

/* atm_twolm_new -- an empty direct-mapped cache of capacity_bytes (rounded down to whole
 * lines) in lines of line_bytes (a power of two); ATM_E_USAGE naming the value when the line is
 * not a power of two or the cache holds no whole line (a capacity of 0 among them) */
atm_status atm_twolm_new(atm_twolm **c, int64_t capacity_bytes, int64_t line_bytes);
void atm_twolm_destroy(atm_twolm *c);
/* atm_twolm_line_bytes -- c's line */
int64_t atm_twolm_line_bytes(const atm_twolm *c);
/* atm_twolm_access -- the bytes at addr (any integer; the set of a line is its number modulo the
 * cache's lines) are read or written; every line the range touches, partly or whole, is looked
 * up in turn; adds the traffic to t */
void atm_twolm_access(atm_twolm *c, int64_t addr, int64_t bytes, bool write,
                      atm_twolm_traffic *t);
/* atm_twolm_flush -- write back every dirty line (the end of a measurement) */
void atm_twolm_flush(atm_twolm *c, atm_twolm_traffic *t);
/* atm_twolm_node -- the accesses kernel event ev of g makes through the cache, in order: each
 * operand ev's cfg leaves slow, inputs read (and written again where the op writes one),
 * outputs written, at the address addr(ctx, tensor) gives; adds the traffic to t. The executor's
 * emulation and the optimizer's prediction both walk a kernel through this. */
void atm_twolm_node(atm_twolm *c, const atm_graph *g, const atm_event *ev,
                    int64_t (*addr)(const void *ctx, int32_t tensor), const void *ctx,
                    atm_twolm_traffic *t);
/* atm_twolm_traffic_add -- sum += t */
void atm_twolm_traffic_add(atm_twolm_traffic *sum, const atm_twolm_traffic *t);
/* atm_twolm_wait_s -- what traffic t adds to a kernel whose operands, timed in fast memory (at
 * fast_gbps), live behind the 2LM cache of a slow tier (read_gbps, write_gbps; 1e9 bytes/s):
 * a read miss serves a read the kernel makes anyway, from slow memory instead of fast, and
 * costs its slow time less its fast time (atm_emulated_extra_s); a write miss's fill and a
 * write-back are traffic the kernel never asked for and cost their whole slow time. The
 * executor's 2LM emulation waits this, and the optimizer's 2LM prediction adds it. fast_gbps
 * <= 0 (unknown) counts every miss whole. */
double atm_twolm_wait_s(const atm_twolm_traffic *t, double read_gbps, double write_gbps,
                      double fast_gbps);

/* ---------------------------------------------------------------- results */

/* Version of the results format written and appended to (docs/formats.md, "Results JSON"). */
#define ATM_RESULTS_VERSION 2

/* What the workload is beyond its graph: the sizes it was built with. */
typedef struct {
	const char *preset; /* the zoo preset the sizes came from; NULL: a graph file or given sizes */
	int64_t batch;      /* 0: atm_graph_batch */
	int64_t image;      /* input height and width; 0: not an image network or unknown */
	int64_t seq;        /* a language model's sequence; 0: none or unknown (not written) */
	const char *gpu_model; /* a plan for a GPU model (--gpu-model): its name, written in each
	                        * record that nothing ran ("backend": "gpu-model", "device"); NULL:
	                        * none */
} atm_results_workload;

/* A run's part in a comparison: placements of one workload trained in turns in one process,
 * so that a reader pairs turn t of one with turn t of another (README "Results JSON"). */
typedef struct {
	const char *id;            /* shared by the comparison's runs, unique per process */
	const char *interleave;    /* "step" (executors alive together, a step each in turn) or
	                            * "turn" (a fresh executor per placement and turn) */
	int index;                 /* this placement's place in the order listed, 0 first */
	int n_placements;          /* placements trained in the comparison */
	int n_turns;
	int steps_per_turn;        /* steps a turn counts (the fastest is the turn's time) */
	const double *turn_s;      /* per turn: the step time */
	const int *turn_position;  /* per turn: where it ran in the turn's order, 0 first */
	const double *turn_others; /* per turn: CPU time other processes took while its counted
	                            * steps ran, in cores (0.5: half a core the whole time) */
	const int *turn_reruns;    /* per turn: disturbed rounds (or turns) measured again */
	bool with_all_fast;        /* all-fast was compared too: the slowdowns hold */
	double predicted_slowdown; /* its predicted step / all-fast's, both with the machine's drift
	                            * on all but the emulated waits; < 0: unknown */
	double predicted_slowdown_raw; /* the same as planned, without the drift; < 0: unknown */
	double predicted_drift_s;  /* its predicted step with the drift; < 0: drift unknown */
	double predicted_wait_s;   /* of its predicted step, the emulated waits; < 0: unknown */
	double measured_slowdown;  /* median over turns of its step / all-fast's in the same turn */
	double measured_slowdown_min, measured_slowdown_max;
} atm_run_comparison;

/* What a run measured; the plan and its schedule give the rest of a results record.
 * Negative times and NULL pointers are written as null (not measured). */
typedef struct {
	double actual_runtime_s; /* fastest measured step */
	double mean_runtime_s;
	int n_iters;
	const double *kernel_s;  /* per node */
	const double *step_kernel_s; /* per node: its time in the fastest step (NULL: unknown) */
	const double *kernel_pred_s; /* per node: the plan's predicted kernel time (NULL: unknown) */
	int32_t n_in_step_nodes; /* of those, priced with the profile's in-step time */
	double overlap_loss;     /* the profile's overlap loss the prediction used */
	int n_losses;
	const float *losses;     /* per step, warm-up first */
	const char *weights_checksum;
	int64_t dram_alloc_bytes; /* fast memory the run used (arena extent): its high-water mark */
	const char *dram_high_water_at; /* what first held that mark (NULL: unknown) */
	int64_t scratch_bytes;    /* kernels' scratch in fast memory outside the arena */
	int64_t pmem_alloc_bytes; /* slow memory high-water mark */
	double emulation_wait_s;  /* per step */
	double move_wait_s;       /* per step */
	double recompute_s;       /* per step: kernels run again for the plan's recomputations
	                           * (in the fastest step; 0 with none) */
	bool emulated;
	const char *emulation;    /* preset or spec name */
	bool emulation_absolute;  /* emulated: the spec's rates as they are, not scaled */
	double emulation_scale;   /* emulated: its rates over the spec's (1: absolute, <= 0: unknown) */
	double emulation_fast_gbps; /* emulated: the fast bandwidth its waits count from */
	double emulation_reference_gbps; /* emulated: the spec's own fast bandwidth */
	const char *memory_mode;  /* 2LM runs: "hardware" (the machine is in Memory Mode) or
	                           * "emulated"; NULL for other runs */
	const char *fast_tier, *slow_tier; /* descriptions */
	const char *slow_path, *slow_fs; /* a file slow tier's folder (or fsdax file) and its file
	                          * system ("tmpfs", "ext4"); NULL for memory tiers */
	double slow_read_gbps, slow_write_gbps; /* for move_time; 0 unknown */
	uint64_t seed;
	int n_threads;
	const char *backend;      /* "cpu", "cuda", "gpu-sim"; NULL: "cpu" */
	const char *device;       /* the GPU's name (or the simulated one's description) */
	const char *versions;     /* the kernel libraries' versions */
	bool simulated;           /* a simulated GPU: no GPU figure */
	int64_t gpu_memory_bytes; /* GPU: device memory the plan could use; 0 on the CPU */
	bool managed;             /* the cudaMallocManaged baseline: its step time becomes the
	                           * results' gpu_managed_runtime */
	double oracle_s;          /* GPU: every kernel at its fastest, no moves (< 0 or 0: unknown) */
	bool has_oracle;          /* the backend has an oracle (a GPU's, where kernels take device
	                           * operands only): oracle_time is written, null when unknown */
	const atm_run_comparison *comparison; /* NULL: a run alone; else actual_runtime_s is the
	                           * median of its turns */
	/* the machine now against when its profile was calibrated (atm_profile_calibration) */
	const char *profile_calibrated_at; /* NULL: the profile holds no calibration step of the
	                           * graph, or no profile priced the run */
	double profile_step_s;    /* the calibration's all-fast step */
	double profile_drift;     /* all-fast's step measured by this run (or its comparison) /
	                           * profile_step_s; <= 0: unknown (no all-fast step measured) */
	/* data parallelism (mpirun): losses, times and checksum above are rank 0's, the losses the
	 * mean over the ranks (each loss a mean over its shard, the shards of one size) */
	int ranks;                /* 0 or 1: one process, nothing of the following written */
	int64_t rank_batch;       /* each rank's part of the batch */
	const double *rank_step_s; /* per rank: its fastest measured step */
	double allreduce_s;       /* rank 0's allreduce kernels in its fastest step, less their wait */
	double allreduce_wait_s;  /* of those kernels' time, rank 0's wait for the other ranks to
	                           * arrive (the ranks' skew, not the mean's own cost) */
	double allreduce_pred_s;  /* the plan's prediction of them; < 0: unknown */
} atm_run_measured;

/* atm_results_write -- a results file (AutoTM's fields, docs/formats.md "Results JSON") with one
 * run: the plan (its ratio and solver figures in its info), its schedule's figures and what
 * m measured (NULL: a plan that did not run: actual times are null). w may be NULL. With
 * append, the run is added to path's runs when path holds results of the same workload
 * (graph name and digest), and refused (ATM_E_USAGE) when it holds another's, or results of
 * another version (ATM_E_INPUT); without append the file is replaced. The whole
 * read-change-write holds path's lock (atm_file_lock), so concurrent appends lose nothing;
 * written atomically. */
atm_status atm_results_write(const char *path, const atm_plan *p, const atm_schedule *s,
                             const atm_results_workload *w, const atm_run_measured *m,
                             bool append);
/* atm_results_write_runs -- atm_results_write of n runs at once (one read-change-write under
 * the lock: all of them or none): p[i], s[i] and m[i] (m NULL: none measured) are one run's;
 * every plan is of one graph */
atm_status atm_results_write_runs(const char *path, int n, const atm_plan *const *p,
                                  const atm_schedule *const *s, const atm_results_workload *w,
                                  const atm_run_measured *m, bool append);
/* atm_results_check -- before long work: can a run of g be written to path (its folder takes
 * a new file, path is not a folder), and with append, is an existing path a results file of
 * this version and of g's workload? Nothing is written. */
atm_status atm_results_check(const char *path, const atm_graph *g, bool append);

/* ---------------------------------------------------------------- timeline */

/* A plan's step as a picture of it needs it (docs/plan-timeline.md, plots/plan.py): at every
 * kernel the bytes fast memory holds by tensor kind and the plan's workspace, the arena's
 * extent, the slow operands; every move with where it starts and where it is waited for. It
 * is read off the step's schedule (atm_schedule_new), the layout the runtime allocates by.
 * What the plan does not know is optional (NULL: written as null). */
typedef struct {
	const atm_results_workload *workload; /* the preset, batch and image the graph was built with */
	const atm_profile *profile;           /* the profile the plan was priced with: its machine */
	const double *kernel_pred_s;          /* per node, its predicted kernel time */
} atm_timeline_opts;

/* atm_timeline_dump -- the timeline of plan p as JSON text (malloc'd, caller frees); s is p's
 * schedule (NULL: laid out here, with its errors: ATM_E_INPUT, ATM_E_INFEASIBLE); o may be
 * NULL */
atm_status atm_timeline_dump(const atm_plan *p, const atm_schedule *s, const atm_timeline_opts *o,
                             char **text);
/* atm_timeline_write -- the same written to path atomically (temporary file + rename) */
atm_status atm_timeline_write(const char *path, const atm_plan *p, const atm_schedule *s,
                              const atm_timeline_opts *o);

/* ---------------------------------------------------------------- safetensors */

/* Tensors by name in the safetensors layout PyTorch's tools write (docs/formats.md): an 8-byte
 * little-endian header length, a JSON header {"NAME": {"dtype", "shape", "data_offsets":
 * [BEGIN, END]}, "__metadata__": {...}}, then the tensors' bytes, which the offsets (counted
 * from the end of the header) cover whole, without a gap or an overlap. autotm reads weights
 * (--weights-in) and a step's inputs and labels (--data) from such files and writes weights
 * (--weights-out). */
typedef enum {
	ATM_ST_F32 = 0, ATM_ST_F64, ATM_ST_F16, ATM_ST_BF16, ATM_ST_I64, ATM_ST_I32, ATM_ST_I16,
	ATM_ST_I8, ATM_ST_U8, ATM_ST_U16, ATM_ST_U32, ATM_ST_U64, ATM_ST_BOOL, ATM_ST_N_DTYPES
} atm_st_dtype;

typedef struct {
	const char *name;
	atm_st_dtype dtype;
	int ndim;                   /* 0 (a scalar) to ATM_MAX_DIMS */
	int64_t dims[ATM_MAX_DIMS];
	int64_t n_elems;
	const void *data;           /* little-endian, not aligned */
	int64_t bytes;
} atm_st_tensor;

typedef struct atm_st_file atm_st_file;

/* atm_st_read -- a safetensors file (a regular file, mapped), every field checked: ATM_E_INPUT
 * naming the file and what is wrong (a short file, a header length past its end, a JSON error,
 * an unknown dtype, offsets outside the data, not matching the shape, overlapping or leaving a
 * gap), ATM_E_NOTFOUND, ATM_E_IO */
atm_status atm_st_read(atm_st_file **f, const char *path);
/* atm_st_parse -- the same from len bytes in memory (copied); path names them in messages */
atm_status atm_st_parse(atm_st_file **f, const void *buf, size_t len, const char *path);
void atm_st_destroy(atm_st_file *f);
const char *atm_st_path(const atm_st_file *f);
int64_t atm_st_count(const atm_st_file *f);
/* atm_st_at -- the i-th tensor in the order of their bytes; NULL out of range */
const atm_st_tensor *atm_st_at(const atm_st_file *f, int64_t i);
const atm_st_tensor *atm_st_find(const atm_st_file *f, const char *name);
const char *atm_st_dtype_name(atm_st_dtype d);
int atm_st_dtype_size(atm_st_dtype d);
/* atm_st_dump -- n tensors as a file's bytes (malloc'd), in the order given, the header padded
 * so that the tensors start 8-byte aligned, {"format": format} as metadata (NULL: "pt") */
atm_status atm_st_dump(const atm_st_tensor *t, int64_t n, const char *format, char **out,
                       size_t *len);
/* atm_st_narrow -- n floats as BF16 or F16 (to; F32 copies), each rounded to the nearest
 * value of the format, ties to even, as PyTorch's .to(torch.bfloat16) and .half() do: F16
 * overflows to an infinity and keeps subnormals; NaNs stay NaNs. dst holds n values of to and
 * does not overlap src. */
void atm_st_narrow(const float *src, int64_t n, atm_st_dtype to, void *dst);
/* atm_st_write -- the same written to path atomically (temporary file + rename) */
atm_status atm_st_write(const char *path, const atm_st_tensor *t, int64_t n, const char *format);
/* atm_st_check -- f holds g's tensors of kind (ATM_KIND_PARAM: weights; ATM_KIND_INPUT: a
 * step's data) and nothing else: each by its graph name, F32 of the graph's shape (or BF16 or
 * F16, which float32 holds exactly: widened on filling; F64 is refused). An input
 * may also go by "input" (the graph's one data input) or "labels" (its one labels input), and
 * labels may be integer class indices, one per row (the labels' elements over their last
 * dimension), each within the classes. With the weights, the optimizer's states (kind
 * optimizer_state, "W.exp_avg", ...): all of them or none; a step may be a scalar. ATM_E_INPUT
 * naming the tensor and what was expected. */
atm_status atm_st_check(const atm_st_file *f, const atm_graph *g, atm_tensor_kind kind);
/* atm_st_fill -- g's tensor t's starting values from f (checked by atm_st_check), class
 * indices as one-hot rows; false (data untouched) when f (or NULL) does not hold it */
bool atm_st_fill(const atm_st_file *f, const atm_graph *g, int32_t t, float *data);

/* ---------------------------------------------------------------- files */

/* atm_write_file_atomic -- write len bytes to path via a temporary file in the
 * same folder, fsync, rename; an interrupted write leaves the old file intact */
atm_status atm_write_file_atomic(const char *path, const char *data, size_t len);
/* atm_make_dirs -- dir and every folder above it that is missing (mkdir -p; the folders made
 * get mode, less the umask); ATM_E_IO naming dir and the folder where it stopped */
atm_status atm_make_dirs(const char *dir, unsigned mode);
/* atm_check_writable -- can path be written atomically (its folder takes a new
 * file)? Checked before long work so that its results are not lost at the end;
 * path itself is left as it is. */
atm_status atm_check_writable(const char *path);
/* atm_file_lock -- an exclusive lock for path's read-change-write (a flock on "path.lock",
 * waited for); *fd is -1 on failure. atm_file_unlock(fd) releases it (-1: nothing). */
atm_status atm_file_lock(const char *path, int *fd);
void atm_file_unlock(int fd);
/* atm_mem_available_bytes -- what the kernel says can be allocated now without swapping
 * (/proc/meminfo's MemAvailable); -1 unknown */
int64_t atm_mem_available_bytes(void);
/* atm_read_file -- whole file into a NUL-terminated malloc'd buffer; a pipe is read to its end
 * (one with no writer reads as empty at once; waiting for a writer's data ends with
 * ATM_E_INTERRUPTED once the stop flag is set), a device or folder is refused */
atm_status atm_read_file(const char *path, char **data, size_t *len);
/* atm_read_file_max -- atm_read_file of a file that is a what ("graph file"), refused with
 * ATM_E_INPUT naming both sizes when it holds more than max_bytes (a regular file's size is
 * checked before anything is read). The caps of the formats (docs/formats.md): */
atm_status atm_read_file_max(const char *path, size_t max_bytes, const char *what, char **data,
                             size_t *len);
#define ATM_MACHINE_FILE_MAX_BYTES ((size_t)16 << 20)
#define ATM_TIERSPEC_MAX_BYTES ((size_t)1 << 20)
#define ATM_GRAPH_FILE_MAX_BYTES ((size_t)256 << 20)
#define ATM_PLAN_FILE_MAX_BYTES ((size_t)256 << 20)
#define ATM_RESULTS_FILE_MAX_BYTES ((size_t)1 << 30)
#define ATM_PROFILE_FILE_MAX_BYTES ((size_t)1 << 30)

/* The machine file keeps what autotm measures once per machine (docs/profile.md, "The
 * machine file"), by machine key in named sections: {"format": "autotm-machine", "version": 1,
 * SECTION: {KEY: entry, ...}, ...}. */
/* atm_machine_file_path -- $AUTOTM_MACHINE_FILE ("none": nowhere), else
 * $XDG_CACHE_HOME/autotm/machine.json, else ~/.cache/autotm/machine.json; "" when there is
 * nowhere to keep it; ATM_E_INPUT (path "") when what is there is no regular file */
atm_status atm_machine_file_path(char *path, size_t len);
/* atm_machine_file_check -- path is a regular file or nothing yet (ATM_E_INPUT naming what it
 * is otherwise: a pipe would be written through and wait for a reader, a device never keep) */
atm_status atm_machine_file_check(const char *path);
/* atm_machine_file_section -- the object SECTION of a machine file's text, checked: ATM_E_INPUT
 * naming path when the file is not one (or of another version), ATM_E_NOTFOUND when it has no
 * such section. *sec is borrowed from *root, which the caller releases (even on failure). */
atm_status atm_machine_file_section(const char *path, const char *text, size_t len,
                                    const char *section, struct json_t **root,
                                    struct json_t **sec);
/* atm_machine_file_put -- SECTION[key] = entry (its reference is taken, also on failure) in the
 * file at path: folders made, the other entries kept, an unusable file replaced, written
 * atomically under the file's lock */
atm_status atm_machine_file_put(const char *path, const char *section, const char *key,
                                struct json_t *entry);

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
/* atm_splitmix64 -- the next number of the splitmix64 stream whose state is *s: the same on
 * every libc, for whatever must repeat from a seed (random plans, the searching baseline) */
uint64_t atm_splitmix64(uint64_t *s);

/* atm_now_s -- seconds on the monotonic clock, for intervals: timings, deadlines, progress */
double atm_now_s(void);
/* atm_utc_now -- the wall clock in UTC as "2025-01-31T12:00:00Z" (ATM_UTC_TEXT_MAX bytes with
 * its NUL), as results and profiles date what they hold */
void atm_utc_now(char out[ATM_UTC_TEXT_MAX]);
/* atm_utc_valid -- text is such a time ("YYYY-MM-DDTHH:MM:SSZ", every field in its range) */
bool atm_utc_valid(const char *text);

/* atm_cpu_model -- the CPU's model from /proc/cpuinfo ("model name", or "Model" / "cpu model"
 * on other architectures), "unknown" when there is none */
void atm_cpu_model(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* ATM_CORE_H */
