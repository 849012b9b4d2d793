/* ops.c -- one entry per op: its name, arity, attributes, operand roles, shape rule and work, which the rest of the code looks up instead of switching on the op */
#include "core_internal.h"

/* Arity limits of the ops that take any number of parts. */
#define MANY 4096

#define CONV_ATTRS (ATM_ATTR_STRIDE | ATM_ATTR_PAD | ATM_ATTR_GROUPS)
#define MAXPOOL_ATTRS (ATM_ATTR_KERNEL | ATM_ATTR_STRIDE | ATM_ATTR_PAD)
#define AVGPOOL_ATTRS (MAXPOOL_ATTRS | ATM_ATTR_EXCLUDE_PAD)

/* The table, indexed by op, each entry under its operands. A new op takes the next unused
 * digest_id. */
static const struct atm_op_entry ops[] = {
	/* in: x[N,C,H,W], w[O,C,KH,KW], (b[O]) out: y[N,O,OH,OW] */
	[ATM_OP_CONV_FWD] = {
		.d = {.name = "conv_fwd", .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
		      .attrs = CONV_ATTRS, .pointwise_rate = true,
		      .in_role = {[1] = ATM_ROLE_WEIGHT, [2] = ATM_ROLE_SHIFT}},
		.digest_id = 0, .shape = atm_shape_conv, .work = atm_work_conv,
	},
	/* in: dy, w out: dx */
	[ATM_OP_CONV_BWD_DATA] = {
		.d = {.name = "conv_bwd_data", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
		      .attrs = CONV_ATTRS, .pointwise_rate = true},
		.digest_id = 1, .shape = atm_shape_conv, .work = atm_work_conv,
	},
	/* in: x, dy out: dw, (db) */
	[ATM_OP_CONV_BWD_WEIGHTS] = {
		.d = {.name = "conv_bwd_weights", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 2,
		      .attrs = CONV_ATTRS, .pointwise_rate = true},
		.digest_id = 2, .shape = atm_shape_conv, .work = atm_work_conv,
	},
	/* in: x[N,...], w[O,I], b[O] out: y[N,O] (I = prod of x dims past N) */
	[ATM_OP_IP_FWD] = {
		.d = {.name = "ip_fwd", .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
		      .in_role = {[1] = ATM_ROLE_WEIGHT, [2] = ATM_ROLE_SHIFT}},
		.digest_id = 3, .shape = atm_shape_ip, .work = atm_work_ip,
	},
	/* in: dy, w out: dx */
	[ATM_OP_IP_BWD_DATA] = {
		.d = {.name = "ip_bwd_data", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1},
		.digest_id = 4, .shape = atm_shape_ip, .work = atm_work_ip,
	},
	/* in: x, dy out: dw, db */
	[ATM_OP_IP_BWD_WEIGHTS] = {
		.d = {.name = "ip_bwd_weights", .min_in = 2, .max_in = 2, .min_out = 2, .max_out = 2},
		.digest_id = 5, .shape = atm_shape_ip, .work = atm_work_ip,
	},
	/* in: x out: y */
	[ATM_OP_RELU_FWD] = {
		.d = {.name = "relu_fwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1},
		.digest_id = 6, .shape = atm_shape_relu, .work = atm_work_per_out_elem,
	},
	/* in: y (forward output), dy out: dx */
	[ATM_OP_RELU_BWD] = {
		.d = {.name = "relu_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1},
		.digest_id = 7, .shape = atm_shape_relu, .work = atm_work_per_out_elem,
	},
	/* in: x out: y, ws (i32 argmax, shape of y) */
	[ATM_OP_MAXPOOL_FWD] = {
		.d = {.name = "maxpool_fwd", .min_in = 1, .max_in = 1, .min_out = 2, .max_out = 2,
		      .attrs = MAXPOOL_ATTRS, .out_role = {[1] = ATM_ROLE_INDEX}},
		.digest_id = 8, .shape = atm_shape_pool, .work = atm_work_pool,
	},
	/* in: dy, ws out: dx */
	[ATM_OP_MAXPOOL_BWD] = {
		.d = {.name = "maxpool_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
		      .attrs = MAXPOOL_ATTRS, .in_role = {[1] = ATM_ROLE_INDEX}},
		.digest_id = 9, .shape = atm_shape_pool, .work = atm_work_pool,
	},
	/* in: x out: y */
	[ATM_OP_AVGPOOL_FWD] = {
		.d = {.name = "avgpool_fwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
		      .attrs = AVGPOOL_ATTRS},
		.digest_id = 10, .shape = atm_shape_pool, .work = atm_work_pool,
	},
	/* in: dy out: dx */
	[ATM_OP_AVGPOOL_BWD] = {
		.d = {.name = "avgpool_bwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
		      .attrs = AVGPOOL_ATTRS},
		.digest_id = 11, .shape = atm_shape_pool, .work = atm_work_pool,
	},
	/* in: x, gamma[C], beta[C] out: y, mean[C], var[C] (batch statistics, biased var) */
	[ATM_OP_BN_FWD] = {
		.d = {.name = "bn_fwd", .min_in = 3, .max_in = 3, .min_out = 3, .max_out = 3,
		      .attrs = ATM_ATTR_EPSILON,
		      .in_role = {[1] = ATM_ROLE_SCALE, [2] = ATM_ROLE_SHIFT}},
		.digest_id = 12, .shape = atm_shape_bn, .work = atm_work_bn_fwd,
	},
	/* in: x, dy, gamma, mean, var out: dx, dgamma, dbeta */
	[ATM_OP_BN_BWD] = {
		.d = {.name = "bn_bwd", .min_in = 5, .max_in = 5, .min_out = 3, .max_out = 3,
		      .attrs = ATM_ATTR_EPSILON},
		.digest_id = 13, .shape = atm_shape_bn, .work = atm_work_bn_bwd,
	},
	/* in: x0..xk out: y (along attrs.axis) */
	[ATM_OP_CONCAT] = {
		.d = {.name = "concat", .min_in = 1, .max_in = MANY, .min_out = 1, .max_out = 1,
		      .attrs = ATM_ATTR_AXIS},
		.digest_id = 14, .shape = atm_shape_concat, .work = atm_work_copy,
	},
	/* in: dy out: dx0..dxk (backward of concat) */
	[ATM_OP_SPLIT] = {
		.d = {.name = "split", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = MANY,
		      .attrs = ATM_ATTR_AXIS},
		.digest_id = 15, .shape = atm_shape_concat, .work = atm_work_copy,
	},
	/* in: a, b out: y = a + b (residuals, gradient sums) */
	[ATM_OP_ADD] = {
		.d = {.name = "add", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1},
		.digest_id = 16, .shape = atm_shape_add, .work = atm_work_per_out_elem,
	},
	/* in: logits[N,K], labels[N,K] (one-hot) out: probs[N,K], loss[1] */
	[ATM_OP_SOFTMAX_XENT_FWD] = {
		.d = {.name = "softmax_xent_fwd", .min_in = 2, .max_in = 2, .min_out = 2, .max_out = 2,
		      .in_role = {[1] = ATM_ROLE_LABELS}},
		.digest_id = 17, .shape = atm_shape_loss, .work = atm_work_softmax_xent_fwd,
	},
	/* in: probs, labels out: dlogits = (probs - labels) / N */
	[ATM_OP_SOFTMAX_XENT_BWD] = {
		.d = {.name = "softmax_xent_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
		      .in_role = {[1] = ATM_ROLE_LABELS}},
		.digest_id = 18, .shape = atm_shape_loss, .work = atm_work_two_per_in_elem,
	},
	/* in: w, dw out: none; writes w -= lr * dw in place */
	[ATM_OP_SGD] = {
		.d = {.name = "sgd", .min_in = 2, .max_in = 2, .min_out = 0, .max_out = 0,
		      .attrs = ATM_ATTR_LR, .inplace = 1u << 0},
		.digest_id = 19, .shape = atm_shape_sgd, .work = atm_work_two_per_in_elem,
	},
	/* in: a, b, (bias[N]) out: c = scale * op(a) op(b) (+ bias); three forms */
	[ATM_OP_MATMUL] = {
		.d = {.name = "matmul", .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
		      .attrs = ATM_ATTR_TRANS_A | ATM_ATTR_TRANS_B | ATM_ATTR_SCALE,
		      .in_role = {[1] = ATM_ROLE_WEIGHT, [2] = ATM_ROLE_SHIFT}},
		.digest_id = 20, .shape = atm_shape_matmul, .work = atm_work_matmul,
	},
	/* in: x[..., S...] out: y[S...], the sum over the leading dims */
	[ATM_OP_REDUCE_SUM] = {
		.d = {.name = "reduce_sum", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1},
		.digest_id = 21, .shape = atm_shape_reduce, .work = atm_work_copy,
	},
	/* in: x[..., C], gamma[C], beta[C] out: y, mean[...], var[...] */
	[ATM_OP_LAYER_NORM_FWD] = {
		.d = {.name = "layer_norm_fwd", .min_in = 3, .max_in = 3, .min_out = 3, .max_out = 3,
		      .attrs = ATM_ATTR_EPSILON,
		      .in_role = {[1] = ATM_ROLE_SCALE, [2] = ATM_ROLE_SHIFT}},
		.digest_id = 22, .shape = atm_shape_layer_norm, .work = atm_work_bn_fwd,
	},
	/* in: x, dy, gamma, mean, var out: dx, dgamma, dbeta */
	[ATM_OP_LAYER_NORM_BWD] = {
		.d = {.name = "layer_norm_bwd", .min_in = 5, .max_in = 5, .min_out = 3, .max_out = 3,
		      .attrs = ATM_ATTR_EPSILON},
		.digest_id = 23, .shape = atm_shape_layer_norm, .work = atm_work_bn_bwd,
	},
	/* in: x out: y (erf form; tanh form by attr) */
	[ATM_OP_GELU_FWD] = {
		.d = {.name = "gelu_fwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
		      .attrs = ATM_ATTR_TANH},
		.digest_id = 24, .shape = atm_shape_relu, .work = atm_work_transcendental,
	},
	/* in: x, dy out: dx */
	[ATM_OP_GELU_BWD] = {
		.d = {.name = "gelu_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
		      .attrs = ATM_ATTR_TANH},
		.digest_id = 25, .shape = atm_shape_relu, .work = atm_work_transcendental,
	},
	/* in: x out: y */
	[ATM_OP_TANH_FWD] = {
		.d = {.name = "tanh_fwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1},
		.digest_id = 26, .shape = atm_shape_relu, .work = atm_work_transcendental,
	},
	/* in: y (forward output), dy out: dx */
	[ATM_OP_TANH_BWD] = {
		.d = {.name = "tanh_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1},
		.digest_id = 27, .shape = atm_shape_relu, .work = atm_work_per_out_elem,
	},
	/* in: x[..., K] out: y (over the last dim, causal by attr) */
	[ATM_OP_SOFTMAX_FWD] = {
		.d = {.name = "softmax_fwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
		      .attrs = ATM_ATTR_CAUSAL},
		.digest_id = 28, .shape = atm_shape_softmax, .work = atm_work_transcendental,
	},
	/* in: y, dy out: dx */
	[ATM_OP_SOFTMAX_BWD] = {
		.d = {.name = "softmax_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1},
		.digest_id = 29, .shape = atm_shape_softmax, .work = atm_work_two_per_in_elem,
	},
	/* in: table[V, C], (ids i32 [...]) out: y[..., C] (rows by id or position) */
	[ATM_OP_EMBEDDING_FWD] = {
		.d = {.name = "embedding_fwd", .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,
		      .attrs = ATM_ATTR_POSITIONS,
		      .in_role = {[0] = ATM_ROLE_WEIGHT, [1] = ATM_ROLE_TOKENS}},
		.digest_id = 30, .shape = atm_shape_embedding, .work = atm_work_per_out_elem,
	},
	/* in: dy, (ids) out: dtable (a scatter-add in a fixed order) */
	[ATM_OP_EMBEDDING_BWD] = {
		.d = {.name = "embedding_bwd", .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,
		      .attrs = ATM_ATTR_POSITIONS, .in_role = {[1] = ATM_ROLE_TOKENS}},
		.digest_id = 31, .shape = atm_shape_embedding, .work = atm_work_copy,
	},
	/* in: x out: y (axes reordered by attrs.perm) */
	[ATM_OP_PERMUTE] = {
		.d = {.name = "permute", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
		      .attrs = ATM_ATTR_PERM},
		.digest_id = 32, .shape = atm_shape_permute, .work = atm_work_copy,
	},
	/* in: x out: y, the first y.dims[axis] along axis */
	[ATM_OP_NARROW_FWD] = {
		.d = {.name = "narrow_fwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
		      .attrs = ATM_ATTR_AXIS},
		.digest_id = 33, .shape = atm_shape_narrow, .work = atm_work_per_out_elem,
	},
	/* in: dy out: dx, zero past dy along axis */
	[ATM_OP_NARROW_BWD] = {
		.d = {.name = "narrow_bwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
		      .attrs = ATM_ATTR_AXIS},
		.digest_id = 34, .shape = atm_shape_narrow, .work = atm_work_per_out_elem,
	},
	/* in: logits[..., V], labels i32 [...] out: logp, loss[1] (mean) */
	[ATM_OP_TOKEN_XENT_FWD] = {
		.d = {.name = "token_xent_fwd", .min_in = 2, .max_in = 2, .min_out = 2, .max_out = 2,
		      .in_role = {[1] = ATM_ROLE_TOKENS}},
		.digest_id = 35, .shape = atm_shape_token_loss, .work = atm_work_transcendental,
	},
	/* in: logp, labels out: dlogits = (exp(logp) - onehot) / rows */
	[ATM_OP_TOKEN_XENT_BWD] = {
		.d = {.name = "token_xent_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
		      .in_role = {[1] = ATM_ROLE_TOKENS}},
		.digest_id = 36, .shape = atm_shape_token_loss, .work = atm_work_transcendental,
	},
	/* in: x out: y = x * sigmoid(x) */
	[ATM_OP_SILU_FWD] = {
		.d = {.name = "silu_fwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1},
		.digest_id = 37, .shape = atm_shape_relu, .work = atm_work_transcendental,
	},
	/* in: x, dy out: dx */
	[ATM_OP_SILU_BWD] = {
		.d = {.name = "silu_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1},
		.digest_id = 38, .shape = atm_shape_relu, .work = atm_work_transcendental,
	},
	/* in: a, b out: y = a * b, a's shape (b broadcast: its dims a's trailing ones, each
	 * equal or 1) */
	[ATM_OP_MUL] = {
		.d = {.name = "mul", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
		      .in_role = {[1] = ATM_ROLE_SCALE}}, /* a learned scale starts at one */
		.digest_id = 39, .shape = atm_shape_mul, .work = atm_work_per_out_elem,
	},
	/* in: dy, a out: db = dy * a summed over the dims db broadcasts (b's gradient when b is
	 * smaller than a) */
	[ATM_OP_MUL_BWD] = {
		.d = {.name = "mul_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1},
		.digest_id = 40, .shape = atm_shape_mul_bwd, .work = atm_work_two_per_in_elem,
	},
	/* in: x[..., C], w[C] out: y = x * rstd * w, rstd[...] = 1 / sqrt(mean over C of x^2 +
	 * epsilon) */
	[ATM_OP_RMS_NORM_FWD] = {
		.d = {.name = "rms_norm_fwd", .min_in = 2, .max_in = 2, .min_out = 2, .max_out = 2,
		      .attrs = ATM_ATTR_EPSILON, .in_role = {[1] = ATM_ROLE_SCALE}},
		.digest_id = 41, .shape = atm_shape_rms_norm, .work = atm_work_bn_fwd,
	},
	/* in: x, dy, w, rstd out: dx, dw */
	[ATM_OP_RMS_NORM_BWD] = {
		.d = {.name = "rms_norm_bwd", .min_in = 4, .max_in = 4, .min_out = 2, .max_out = 2,
		      .attrs = ATM_ATTR_EPSILON},
		.digest_id = 42, .shape = atm_shape_rms_norm, .work = atm_work_bn_bwd,
	},
	/* in: x[..., T, D] out: y, x's pairs (i, i + D/2) rotated by t * theta^(-2i/D) at
	 * position t (rotary embeddings) */
	[ATM_OP_ROPE_FWD] = {
		.d = {.name = "rope_fwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
		      .attrs = ATM_ATTR_THETA},
		.digest_id = 43, .shape = atm_shape_rope, .work = atm_work_transcendental,
	},
	/* in: dy out: dx, dy rotated back */
	[ATM_OP_ROPE_BWD] = {
		.d = {.name = "rope_bwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
		      .attrs = ATM_ATTR_THETA},
		.digest_id = 44, .shape = atm_shape_rope, .work = atm_work_transcendental,
	},
	/* in: x out: y = 1 / (1 + exp(-x)) */
	[ATM_OP_SIGMOID_FWD] = {
		.d = {.name = "sigmoid_fwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1},
		.digest_id = 45, .shape = atm_shape_relu, .work = atm_work_transcendental,
	},
	/* in: y (the forward output), dy out: dx */
	[ATM_OP_SIGMOID_BWD] = {
		.d = {.name = "sigmoid_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1},
		.digest_id = 46, .shape = atm_shape_relu, .work = atm_work_per_out_elem,
	},
	/* in: x out: y = x * min(max(x + 3, 0), 6) / 6 */
	[ATM_OP_HARDSWISH_FWD] = {
		.d = {.name = "hardswish_fwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1},
		.digest_id = 47, .shape = atm_shape_relu, .work = atm_work_transcendental,
	},
	/* in: x, dy out: dx */
	[ATM_OP_HARDSWISH_BWD] = {
		.d = {.name = "hardswish_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1},
		.digest_id = 48, .shape = atm_shape_relu, .work = atm_work_per_out_elem,
	},
	/* in: x out: y = min(max(x / 6 + 1/2, 0), 1) */
	[ATM_OP_HARDSIGMOID_FWD] = {
		.d = {.name = "hardsigmoid_fwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1},
		.digest_id = 49, .shape = atm_shape_relu, .work = atm_work_transcendental,
	},
	/* in: x, dy out: dx */
	[ATM_OP_HARDSIGMOID_BWD] = {
		.d = {.name = "hardsigmoid_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1},
		.digest_id = 50, .shape = atm_shape_relu, .work = atm_work_per_out_elem,
	},
	/* in: x out: y = min(max(x, 0), 6) */
	[ATM_OP_RELU6_FWD] = {
		.d = {.name = "relu6_fwd", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1},
		.digest_id = 51, .shape = atm_shape_relu, .work = atm_work_transcendental,
	},
	/* in: y (the forward output), dy out: dx */
	[ATM_OP_RELU6_BWD] = {
		.d = {.name = "relu6_bwd", .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1},
		.digest_id = 52, .shape = atm_shape_relu, .work = atm_work_per_out_elem,
	},
	/* in: w, dw, (buf) out: none; PyTorch's SGD with weight decay and momentum: g = dw +
	 * weight_decay * w, buf = momentum * buf + g (without buf: buf = g), w -= lr * buf;
	 * writes w, buf */
	[ATM_OP_SGD_MOMENTUM] = {
		.d = {.name = "sgd_momentum", .min_in = 2, .max_in = 3, .min_out = 0, .max_out = 0,
		      .attrs = ATM_ATTR_LR | ATM_ATTR_MOMENTUM | ATM_ATTR_WEIGHT_DECAY,
		      .inplace = 1u << 0 | 1u << 2},
		.digest_id = 53, .shape = atm_shape_update, .work = atm_work_update,
	},
	/* in: w, dw, exp_avg, exp_avg_sq, step[1] out: none; PyTorch's AdamW at step t = step +
	 * 1 (decoupled weight decay, bias correction); writes w, exp_avg, exp_avg_sq and step =
	 * t */
	[ATM_OP_ADAMW] = {
		.d = {.name = "adamw", .min_in = 5, .max_in = 5, .min_out = 0, .max_out = 0,
		      .attrs = ATM_ATTR_EPSILON | ATM_ATTR_LR | ATM_ATTR_BETA1 | ATM_ATTR_BETA2 |
		               ATM_ATTR_WEIGHT_DECAY,
		      .inplace = 1u << 0 | 1u << 2 | 1u << 3 | 1u << 4},
		.digest_id = 54, .shape = atm_shape_update, .work = atm_work_update,
	},
	/* in: dw0..dwk out: r0..rk, each dwi's mean over attrs.ranks data-parallel ranks, in a
	 * fixed order (a bucket of gradients) */
	[ATM_OP_ALLREDUCE] = {
		.d = {.name = "allreduce", .min_in = 1, .max_in = ATM_ALLREDUCE_BUCKET_TENSORS,
		      .min_out = 1, .max_out = ATM_ALLREDUCE_BUCKET_TENSORS, .attrs = ATM_ATTR_RANKS},
		.digest_id = 55, .shape = atm_shape_allreduce, .work = atm_work_allreduce,
	},
	/* in: x out: y, x's values in y's dtype (f32 or bf16; to bf16 rounded to nearest even) */
	[ATM_OP_CAST] = {
		.d = {.name = "cast", .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1},
		.digest_id = 56, .shape = atm_shape_relu, .work = atm_work_per_out_elem,
	},
};

/* An op added to the enum without an entry here stops the build when it is the last one,
 * and fails tests/core/test_ops.c wherever it is. */
_Static_assert(sizeof ops / sizeof ops[0] == ATM_N_OPS, "core/ops.c: an op has no entry");

/* The JSON keys of the ATM_ATTR_* bits, bit i at index i. */
static const char *const attr_names[ATM_N_ATTRS] = {
	"kernel", "stride", "pad", "exclude_pad", "epsilon", "axis", "lr",
	"trans_a", "trans_b", "scale", "causal", "tanh", "positions", "perm", "theta",
	"momentum", "beta1", "beta2", "weight_decay", "groups", "ranks",
};

/* atm_op_entry -- op's entry, NULL for a value that is no op */
const struct atm_op_entry *atm_op_entry(atm_op op)
{
	return (unsigned)op < ATM_N_OPS ? &ops[op] : NULL;
}

/* atm_op_describe -- the public part of op's entry */
const atm_op_desc *atm_op_describe(atm_op op)
{
	return (unsigned)op < ATM_N_OPS ? &ops[op].d : NULL;
}

/* atm_op_name -- the op's name as the JSON formats spell it, "?" for a value that is no op */
const char *atm_op_name(atm_op op)
{
	const atm_op_desc *d = atm_op_describe(op);
	return d ? d->name : "?";
}

/* atm_op_from_name -- the op named s, or an ATM_E_INPUT message listing every name */
atm_status atm_op_from_name(const char *s, atm_op *out)
{
	const char *op_names[ATM_N_OPS];
	int i = 0;
	for (int op = 0; op < ATM_N_OPS; op++)
		op_names[op] = ops[op].d.name;
	atm_status rc = atm_name_lookup("op", op_names, ATM_N_OPS, s, &i);
	*out = (atm_op)i;
	return rc;
}

/* atm_op_in_role -- input i's role, data past the roles given */
atm_op_role atm_op_in_role(atm_op op, int i)
{
	const atm_op_desc *d = atm_op_describe(op);
	return d && i >= 0 && i < ATM_OP_MAX_ROLES ? d->in_role[i] : ATM_ROLE_DATA;
}

/* atm_op_out_role -- output i's role, data past the roles given */
atm_op_role atm_op_out_role(atm_op op, int i)
{
	const atm_op_desc *d = atm_op_describe(op);
	return d && i >= 0 && i < ATM_OP_MAX_ROLES ? d->out_role[i] : ATM_ROLE_DATA;
}

/* atm_op_is_inplace -- op writes one of its inputs in place */
bool atm_op_is_inplace(atm_op op)
{
	const atm_op_desc *d = atm_op_describe(op);
	return d && d->inplace;
}

bool atm_op_is_update(atm_op op)
{
	return op == ATM_OP_SGD || op == ATM_OP_SGD_MOMENTUM || op == ATM_OP_ADAMW;
}

/* atm_op_writes_input -- op writes its input i in place */
bool atm_op_writes_input(atm_op op, int i)
{
	const atm_op_desc *d = atm_op_describe(op);
	return d && i >= 0 && i < 32 && (d->inplace >> i & 1u);
}

/* atm_attr_name -- the JSON key of one attribute bit */
const char *atm_attr_name(unsigned attr)
{
	for (int i = 0; i < ATM_N_ATTRS; i++)
		if (attr == 1u << i)
			return attr_names[i];
	return NULL;
}
