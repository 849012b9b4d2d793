/* roofline.c -- the analytic kernel model behind --estimate: work per op, calibration, estimates and their error */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "atm_profiler.h"

/* ---------------------------------------------------------------- work */

/* atm_prof_kernel_work -- FLOPs and traffic of node from its op and shapes: each op's rule sits
 * in core beside its shape rule (core/work.c), the rates it is divided by here */
atm_status atm_prof_kernel_work(const atm_graph *g, int32_t node, atm_prof_work *w)
{
	return atm_node_work(g, node, w);
}

/* ---------------------------------------------------------------- model */

/* Round defaults, for tests that need a model and no calibration. */
#define DEFAULT_GFLOPS_PER_THREAD 10.0
#define DEFAULT_OVERHEAD_S 5e-6
#define DEFAULT_GBPS 10.0
#define DEFAULT_CACHE_BYTES ((int64_t)4 << 20)
#define SYSCONF_LLC_MAX_BYTES ((int64_t)64 << 20)

/* atm_prof_roofline_default -- the round defaults */
void atm_prof_roofline_default(atm_prof_roofline *rf, int n_threads)
{
	memset(rf, 0, sizeof *rf);
	rf->n_threads = n_threads > 0 ? n_threads : 1;
	for (int o = 0; o < ATM_N_OPS; o++) {
		rf->gflops[o] = DEFAULT_GFLOPS_PER_THREAD * rf->n_threads;
		rf->gbps[o] = DEFAULT_GBPS;
		rf->overhead_s[o] = DEFAULT_OVERHEAD_S;
	}
	for (int o = 0; o < ATM_N_OPS; o++)
		if (atm_op_describe((atm_op)o)->pointwise_rate)
			rf->gflops_1x1[o] = DEFAULT_GFLOPS_PER_THREAD * rf->n_threads;
	rf->fast_gbps = DEFAULT_GBPS;
	rf->cache_bytes = DEFAULT_CACHE_BYTES;
	rf->slow_read_gbps = rf->slow_write_gbps = rf->ref_fast_gbps = DEFAULT_GBPS;
}

/* A GPU model's kernels reach these shares of its datasheet rates: fitted to the kernels of
 * vgg19, resnet200, inception_v4 and densenet264 measured on an H100 (cuDNN 9, cuBLAS, float32
 * without TF32, autotm's own kernels for the rest; docs/gpu.md, "GPU models"). */
#define GPU_CONV_FWD_SHARE 0.46   /* of the FP32 peak: cuDNN's forward convolutions */
#define GPU_CONV_DATA_SHARE 0.46  /* backward to the data */
#define GPU_CONV_WEIGHTS_SHARE 0.39 /* backward to the weights */
/* a cuDNN convolution's own set-up beyond a launch, small as its shape may be (least squares
 * over the H100's convolutions: time = set-up + FLOPs / rate) */
#define GPU_CONV_FWD_SETUP_S 107e-6
#define GPU_CONV_DATA_SETUP_S 151e-6
#define GPU_CONV_WEIGHTS_SETUP_S 227e-6
#define GPU_GEMM_SHARE 0.35       /* inner products and matmuls (cuBLAS) */
#define GPU_OTHER_SHARE 0.5       /* every other op's arithmetic */
#define GPU_STREAM_SHARE 0.7      /* of the memory bandwidth: element-wise kernels */
#define GPU_BN_STREAM_SHARE 0.45  /* cuDNN's batch norms */
#define GPU_PLAIN_STREAM_SHARE 0.2 /* autotm's gather and scatter kernels (concat, split,
                                     * pooling): fixed-order, unvectorised */
#define GPU_OVERHEAD_S 8e-6       /* a kernel's launch and library set-up */

/* gpu_share -- op's share of the FP32 peak */
static double gpu_share(atm_op o)
{
	switch (o) {
	case ATM_OP_CONV_FWD:
		return GPU_CONV_FWD_SHARE;
	case ATM_OP_CONV_BWD_DATA:
		return GPU_CONV_DATA_SHARE;
	case ATM_OP_CONV_BWD_WEIGHTS:
		return GPU_CONV_WEIGHTS_SHARE;
	case ATM_OP_IP_FWD:
	case ATM_OP_IP_BWD_DATA:
	case ATM_OP_IP_BWD_WEIGHTS:
	case ATM_OP_MATMUL:
		return GPU_GEMM_SHARE;
	default:
		return GPU_OTHER_SHARE;
	}
}

/* gpu_stream_share -- op's share of the memory bandwidth */
static double gpu_stream_share(atm_op o)
{
	switch (o) {
	case ATM_OP_BN_FWD:
	case ATM_OP_BN_BWD:
		return GPU_BN_STREAM_SHARE;
	case ATM_OP_CONCAT:
	case ATM_OP_SPLIT:
	case ATM_OP_MAXPOOL_BWD:
	case ATM_OP_AVGPOOL_FWD:
	case ATM_OP_AVGPOOL_BWD:
		return GPU_PLAIN_STREAM_SHARE;
	default:
		return GPU_STREAM_SHARE;
	}
}

void atm_prof_roofline_gpu(atm_prof_roofline *rf, const atm_gpu_model *m)
{
	memset(rf, 0, sizeof *rf);
	rf->n_threads = 1;
	rf->gpu_model = true;
	for (int o = 0; o < ATM_N_OPS; o++) {
		rf->gflops[o] = m->fp32_tflops * 1e3 * gpu_share((atm_op)o);
		if (atm_op_describe((atm_op)o)->pointwise_rate)
			rf->gflops_1x1[o] = rf->gflops[o];
		rf->gbps[o] = m->memory_gbps * gpu_stream_share((atm_op)o);
		rf->overhead_s[o] = GPU_OVERHEAD_S;
	}
	rf->overhead_s[ATM_OP_CONV_FWD] = GPU_CONV_FWD_SETUP_S;
	rf->overhead_s[ATM_OP_CONV_BWD_DATA] = GPU_CONV_DATA_SETUP_S;
	rf->overhead_s[ATM_OP_CONV_BWD_WEIGHTS] = GPU_CONV_WEIGHTS_SETUP_S;
	rf->fast_gbps = m->memory_gbps * GPU_STREAM_SHARE;
	rf->bf16_speedup = m->bf16_tflops > m->fp32_tflops ? m->bf16_tflops / m->fp32_tflops : 1;
	rf->cache_bytes = m->l2_bytes;
	/* the slow tier is host memory behind the link: what moves cross */
	rf->slow_read_gbps = m->h2d_gbps;
	rf->slow_write_gbps = m->d2h_gbps;
	rf->ref_fast_gbps = rf->fast_gbps;
}

/* model_s -- the roofline of op for work w with these operand bytes */
static double model_s(const atm_prof_roofline *rf, atm_op op, const atm_prof_work *w, double fb,
                      double sr, double sw)
{
	double io = fb + sr + sw;
	bool pointwise = w->pointwise && atm_op_describe(op)->pointwise_rate;
	double rate = pointwise ? rf->gflops_1x1[op] : rf->gflops[op];
	double compute = w->flops / (rate * 1e9);
	/* in the cache an op runs at its own rate; beyond it, no faster than it streams */
	double bw = io <= (double)rf->cache_bytes ? INFINITY : rf->gbps[op] * 1e9;
	if (rf->emulated) {
		/* the kernel itself runs on fast memory; the emulator then waits */
		double extra = sr / (rf->slow_read_gbps * 1e9) + sw / (rf->slow_write_gbps * 1e9) -
		               (sr + sw) / (rf->ref_fast_gbps * 1e9);
		return rf->overhead_s[op] + fmax(compute, w->traffic_bytes / bw) + fmax(extra, 0);
	}
	/* real slow memory: its operands stream at its speed (never above the
	 * op's own), as many times as the kernel passes over its operands */
	double scale = io > 0 ? w->traffic_bytes / io : 0;
	double own = rf->gbps[op] * 1e9;
	double srb = fmin(rf->slow_read_gbps * 1e9, own), swb = fmin(rf->slow_write_gbps * 1e9, own);
	double memory = scale * (fb / bw + sr / srb + sw / swb);
	return rf->overhead_s[op] + fmax(compute, memory);
}

/* atm_prof_roofline_s -- the model for op with negative byte counts taken as 0 */
double atm_prof_roofline_s(const atm_prof_roofline *rf, atm_op op, const atm_prof_work *w,
                           int64_t fast_bytes, int64_t slow_read_bytes, int64_t slow_written_bytes)
{
	if ((unsigned)op >= ATM_N_OPS)
		return NAN;
	return model_s(rf, op, w, fast_bytes > 0 ? (double)fast_bytes : 0,
	               slow_read_bytes > 0 ? (double)slow_read_bytes : 0,
	               slow_written_bytes > 0 ? (double)slow_written_bytes : 0);
}

/* tensor_core_op -- op runs on a GPU's tensor cores when its operands are bf16 */
static bool tensor_core_op(atm_op op)
{
	return op == ATM_OP_CONV_FWD || op == ATM_OP_CONV_BWD_DATA || op == ATM_OP_CONV_BWD_WEIGHTS ||
	       op == ATM_OP_IP_FWD || op == ATM_OP_IP_BWD_DATA || op == ATM_OP_IP_BWD_WEIGHTS ||
	       op == ATM_OP_MATMUL;
}

/* atm_prof_estimate -- the model for node in config, as an estimated entry (a bf16 convolution,
 * inner product or matmul at the tensor cores' rate) */
atm_status atm_prof_estimate(const atm_prof_roofline *rf, const atm_graph *g, int32_t node,
                             uint32_t config, atm_profile_entry *e)
{
	const atm_node *n = atm_graph_node(g, node);
	atm_prof_work w;
	atm_status rc;
	memset(e, 0, sizeof *e);
	if ((rc = atm_prof_kernel_work(g, node, &w)) < 0)
		return rc;
	if (rf->bf16_speedup > 1 && tensor_core_op(n->op) &&
	    atm_graph_tensor(g, n->in[0])->dtype == ATM_BF16)
		w.flops /= rf->bf16_speedup;
	int64_t fast = 0, sr = 0, sw = 0;
	/* the executor's accounting: slow inputs read, slow outputs written, an
	 * in-place op's slow inputs it writes written too */
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		bool is_in = i < n->n_in;
		int64_t b = atm_graph_tensor(g, is_in ? n->in[i] : n->out[i - n->n_in])->bytes;
		bool inplace = is_in && atm_op_writes_input(n->op, i);
		if (atm_node_config_loc(g, node, config, i) == ATM_LOC_SLOW) {
			if (is_in)
				sr += b;
			if (!is_in || inplace)
				sw += b;
		} else {
			fast += inplace ? 2 * b : b;
		}
	}
	e->min_s = e->median_s = atm_prof_roofline_s(rf, n->op, &w, fast, sr, sw);
	e->count = 1;
	e->estimated = true;
	return ATM_OK;
}

/* ---------------------------------------------------------------- calibration */

/* The calibration graph: every op on almost nothing (the call overhead), on
 * operands that fit in the cache (the compute rate), and, but convolutions,
 * on operands twice the cache (the streaming rate); the pointwise form of the
 * ops that have one (1x1 convolutions) apart. The shapes are none of the
 * zoo's, so that no network is estimated from its own measurements. A new op
 * needs its nodes in cal_set: cal_graph refuses a graph that lacks them. */
enum { SET_TINY, SET_CACHE, SET_STREAM, N_SETS };

struct cal {
	atm_graph *g;
	int32_t node[N_SETS][ATM_N_OPS]; /* -1: none (the streaming set has no convolutions) */
	int32_t pointwise[ATM_N_OPS];    /* -1 for the ops without atm_op_desc.pointwise_rate */
	atm_status rc;
};

/* Sizes of one set: images [n, ch, hw, hw], features [rows, feat] -> [rows,
 * outf], a loss over [rows, classes]. */
struct cal_size {
	int64_t n, ch, hw, rows, feat, outf, classes;
	bool convs;
};

/* cal_t -- a tensor of the calibration graph (nothing once a call failed) */
static int32_t cal_t(struct cal *c, const char *pre, const char *name, atm_dtype dt, int ndim,
                     const int64_t *dims, atm_tensor_kind kind)
{
	char full[64];
	int32_t id = -1;
	snprintf(full, sizeof full, "%s%s", pre, name);
	if (c->rc >= 0)
		c->rc = atm_graph_add_tensor(c->g, full, dt, ndim, dims, kind, ATM_LOC_ANY, &id);
	return id;
}

/* cal_n -- a node of the calibration graph (nothing once a call failed) */
static int32_t cal_n(struct cal *c, const char *pre, const char *name, atm_op op,
                     const atm_attrs *a, int n_in, const int32_t *in, int n_out, const int32_t *out)
{
	char full[64];
	int32_t id = -1;
	snprintf(full, sizeof full, "%s%s", pre, name ? name : atm_op_name(op));
	if (c->rc >= 0)
		c->rc = atm_graph_add_node(c->g, full, op, a, n_in, in, n_out, out, &id);
	return id;
}

/* cal_convs -- the three convolutions of a kw x kw kernel from ch to oc channels, into nodes
 * indexed by op */
static void cal_convs(struct cal *c, const char *p, const struct cal_size *z, int64_t kw,
                      int64_t oc, int32_t *nodes)
{
	const atm_tensor_kind IN = ATM_KIND_INPUT, ACT = ATM_KIND_ACTIVATION;
	char pre[32];
	int64_t img[4] = {z->n, z->ch, z->hw, z->hw}, out[4] = {z->n, oc, z->hw, z->hw};
	int64_t wd[4] = {oc, z->ch, kw, kw};
	int32_t pad = (int32_t)(kw / 2);
	atm_attrs conv = {.pad = {pad, pad, pad, pad}};
	snprintf(pre, sizeof pre, "%sconv%lld.", p, (long long)kw);
	int32_t x = cal_t(c, pre, "x", ATM_F32, 4, img, IN);
	int32_t w = cal_t(c, pre, "w", ATM_F32, 4, wd, ATM_KIND_PARAM);
	int32_t dy = cal_t(c, pre, "dy", ATM_F32, 4, out, IN);
	int32_t y = cal_t(c, pre, "y", ATM_F32, 4, out, ACT);
	int32_t dx = cal_t(c, pre, "dx", ATM_F32, 4, img, ACT);
	int32_t dw = cal_t(c, pre, "dw", ATM_F32, 4, wd, ACT);
	nodes[ATM_OP_CONV_FWD] = cal_n(c, pre, NULL, ATM_OP_CONV_FWD, &conv, 2, (int32_t[]){x, w}, 1,
	                               &y);
	nodes[ATM_OP_CONV_BWD_DATA] = cal_n(c, pre, NULL, ATM_OP_CONV_BWD_DATA, &conv, 2,
	                                    (int32_t[]){dy, w}, 1, &dx);
	nodes[ATM_OP_CONV_BWD_WEIGHTS] = cal_n(c, pre, NULL, ATM_OP_CONV_BWD_WEIGHTS, &conv, 2,
	                                       (int32_t[]){x, dy}, 1, &dw);
}

/* cal_seq -- one node of every transformer op: a linear layer on [1, rows, feat] (the inner
 * product's sizes), element-wise and normalising ops on [n, hw, feat] sequences, [n, hw, hw]
 * scores, a table of [outf, feat] (the inner product's weight bytes) and a token loss over
 * [1, rows, classes] (the softmax loss's) */
static void cal_seq(struct cal *c, int32_t *nd, const char *p, const struct cal_size *z)
{
	const atm_tensor_kind IN = ATM_KIND_INPUT, ACT = ATM_KIND_ACTIVATION, PAR = ATM_KIND_PARAM;
	int64_t sq[3] = {z->n, z->hw, z->feat}, ch[1] = {z->feat}, rows[2] = {z->n, z->hw};
	int64_t lx[3] = {1, z->rows, z->feat}, ly[3] = {1, z->rows, z->outf}, ww[2] = {z->outf, z->feat};
	int64_t wb[1] = {z->outf}, sc[3] = {z->n, z->hw, z->hw}, lg[3] = {1, z->rows, z->classes};
	int64_t lr[2] = {1, z->rows}, one[1] = {1}, hd[4] = {z->n, z->feat, z->hw, 1};
	atm_attrs tb = {.trans_b = true}, eps = {.epsilon = 1e-5f}, causal = {.causal = true};
	atm_attrs perm = {.n_perm = 3, .perm = {0, 2, 1}}, ax = {.axis = 1};
	int32_t x = cal_t(c, p, "seq.x", ATM_F32, 3, sq, IN), dy = cal_t(c, p, "seq.dy", ATM_F32, 3, sq, IN);
	int32_t lin = cal_t(c, p, "seq.lin", ATM_F32, 3, lx, IN);
	int32_t w = cal_t(c, p, "seq.w", ATM_F32, 2, ww, PAR), b = cal_t(c, p, "seq.b", ATM_F32, 1, wb, PAR);
	int32_t g = cal_t(c, p, "seq.gamma", ATM_F32, 1, ch, PAR), be = cal_t(c, p, "seq.beta", ATM_F32, 1, ch, PAR);
	int32_t s = cal_t(c, p, "seq.scores", ATM_F32, 3, sc, IN);
	int32_t ds = cal_t(c, p, "seq.dscores", ATM_F32, 3, sc, IN);
	int32_t ids = cal_t(c, p, "seq.ids", ATM_I32, 2, rows, IN);
	int32_t lab = cal_t(c, p, "seq.labels", ATM_I32, 2, lr, IN);
	int32_t t = cal_t(c, p, "seq.table", ATM_F32, 2, ww, PAR);
	int32_t lo = cal_t(c, p, "seq.logits", ATM_F32, 3, lg, IN);
#define OUT(name, nd_, dims) cal_t(c, p, name, ATM_F32, nd_, dims, ACT)
	int32_t mm = OUT("mm.y", 3, ly), rs = OUT("sum.y", 1, ch);
	int32_t ly_ = OUT("ln.y", 3, sq), lm = OUT("ln.mean", 2, rows), lv = OUT("ln.var", 2, rows);
	int32_t ldx = OUT("ln.dx", 3, sq), ldg = OUT("ln.dgamma", 1, ch), ldb = OUT("ln.dbeta", 1, ch);
	int32_t gy = OUT("gelu.y", 3, sq), gdx = OUT("gelu.dx", 3, sq);
	int32_t ty = OUT("tanh.y", 3, sq), tdx = OUT("tanh.dx", 3, sq);
	int32_t sy = OUT("softmax.y", 3, sc), sdx = OUT("softmax.dx", 3, sc);
	int32_t ey = OUT("emb.y", 3, sq), edt = OUT("emb.dtable", 2, ww);
	int32_t py = OUT("perm.y", 4, hd), ny = OUT("narrow.y", 3, sq), ndx = OUT("narrow.dx", 3, sq);
	int32_t lp = OUT("xent.logp", 3, lg), ls = OUT("xent.loss", 1, one), dl = OUT("xent.dlogits", 3, lg);
	int32_t uy = OUT("silu.y", 3, sq), udx = OUT("silu.dx", 3, sq);
	int32_t my = OUT("mul.y", 3, sq), mdb = OUT("mul.db", 1, ch);
	int32_t ry = OUT("rms.y", 3, sq), rr = OUT("rms.rstd", 2, rows);
	int32_t rdx = OUT("rms.dx", 3, sq), rdw = OUT("rms.dw", 1, ch);
	int32_t qy = OUT("rope.y", 3, sq), qdx = OUT("rope.dx", 3, sq);
	int32_t ay[4], adx[4];
	for (int i = 0; i < 4; i++) {
		char an[32];
		snprintf(an, sizeof an, "act%d.y", i);
		ay[i] = OUT(an, 3, sq);
		snprintf(an, sizeof an, "act%d.dx", i);
		adx[i] = OUT(an, 3, sq);
	}
#undef OUT
	nd[ATM_OP_MATMUL] = cal_n(c, p, NULL, ATM_OP_MATMUL, &tb, 3, (int32_t[]){lin, w, b}, 1, &mm);
	nd[ATM_OP_REDUCE_SUM] = cal_n(c, p, NULL, ATM_OP_REDUCE_SUM, NULL, 1, &dy, 1, &rs);
	nd[ATM_OP_LAYER_NORM_FWD] = cal_n(c, p, NULL, ATM_OP_LAYER_NORM_FWD, &eps, 3,
	                                  (int32_t[]){x, g, be}, 3, (int32_t[]){ly_, lm, lv});
	nd[ATM_OP_LAYER_NORM_BWD] = cal_n(c, p, NULL, ATM_OP_LAYER_NORM_BWD, &eps, 5,
	                                  (int32_t[]){x, dy, g, lm, lv}, 3, (int32_t[]){ldx, ldg, ldb});
	nd[ATM_OP_GELU_FWD] = cal_n(c, p, NULL, ATM_OP_GELU_FWD, NULL, 1, &x, 1, &gy);
	nd[ATM_OP_GELU_BWD] = cal_n(c, p, NULL, ATM_OP_GELU_BWD, NULL, 2, (int32_t[]){x, dy}, 1, &gdx);
	nd[ATM_OP_TANH_FWD] = cal_n(c, p, NULL, ATM_OP_TANH_FWD, NULL, 1, &x, 1, &ty);
	nd[ATM_OP_TANH_BWD] = cal_n(c, p, NULL, ATM_OP_TANH_BWD, NULL, 2, (int32_t[]){ty, dy}, 1, &tdx);
	nd[ATM_OP_SOFTMAX_FWD] = cal_n(c, p, NULL, ATM_OP_SOFTMAX_FWD, &causal, 1, &s, 1, &sy);
	nd[ATM_OP_SOFTMAX_BWD] = cal_n(c, p, NULL, ATM_OP_SOFTMAX_BWD, NULL, 2, (int32_t[]){sy, ds}, 1,
	                               &sdx);
	nd[ATM_OP_EMBEDDING_FWD] = cal_n(c, p, NULL, ATM_OP_EMBEDDING_FWD, NULL, 2,
	                                 (int32_t[]){t, ids}, 1, &ey);
	nd[ATM_OP_EMBEDDING_BWD] = cal_n(c, p, NULL, ATM_OP_EMBEDDING_BWD, NULL, 2,
	                                 (int32_t[]){dy, ids}, 1, &edt);
	nd[ATM_OP_PERMUTE] = cal_n(c, p, NULL, ATM_OP_PERMUTE, &perm, 1, &x, 1, &py);
	nd[ATM_OP_NARROW_FWD] = cal_n(c, p, NULL, ATM_OP_NARROW_FWD, &ax, 1, &x, 1, &ny);
	nd[ATM_OP_NARROW_BWD] = cal_n(c, p, NULL, ATM_OP_NARROW_BWD, &ax, 1, &dy, 1, &ndx);
	nd[ATM_OP_TOKEN_XENT_FWD] = cal_n(c, p, NULL, ATM_OP_TOKEN_XENT_FWD, NULL, 2,
	                                  (int32_t[]){lo, lab}, 2, (int32_t[]){lp, ls});
	nd[ATM_OP_TOKEN_XENT_BWD] = cal_n(c, p, NULL, ATM_OP_TOKEN_XENT_BWD, NULL, 2,
	                                  (int32_t[]){lp, lab}, 1, &dl);
	nd[ATM_OP_SILU_FWD] = cal_n(c, p, NULL, ATM_OP_SILU_FWD, NULL, 1, &x, 1, &uy);
	nd[ATM_OP_SILU_BWD] = cal_n(c, p, NULL, ATM_OP_SILU_BWD, NULL, 2, (int32_t[]){x, dy}, 1, &udx);
	nd[ATM_OP_MUL] = cal_n(c, p, NULL, ATM_OP_MUL, NULL, 2, (int32_t[]){x, g}, 1, &my);
	nd[ATM_OP_MUL_BWD] = cal_n(c, p, NULL, ATM_OP_MUL_BWD, NULL, 2, (int32_t[]){dy, x}, 1, &mdb);
	static const atm_op acts[4][2] = {{ATM_OP_SIGMOID_FWD, ATM_OP_SIGMOID_BWD},
	                                  {ATM_OP_HARDSWISH_FWD, ATM_OP_HARDSWISH_BWD},
	                                  {ATM_OP_HARDSIGMOID_FWD, ATM_OP_HARDSIGMOID_BWD},
	                                  {ATM_OP_RELU6_FWD, ATM_OP_RELU6_BWD}};
	for (int i = 0; i < 4; i++) {
		nd[acts[i][0]] = cal_n(c, p, NULL, acts[i][0], NULL, 1, &x, 1, &ay[i]);
		nd[acts[i][1]] = cal_n(c, p, NULL, acts[i][1], NULL, 2, (int32_t[]){x, dy}, 1, &adx[i]);
	}
	atm_attrs th = {.theta = 10000.0f};
	nd[ATM_OP_ROPE_FWD] = cal_n(c, p, NULL, ATM_OP_ROPE_FWD, &th, 1, &x, 1, &qy);
	nd[ATM_OP_ROPE_BWD] = cal_n(c, p, NULL, ATM_OP_ROPE_BWD, &th, 1, &dy, 1, &qdx);
	nd[ATM_OP_RMS_NORM_FWD] = cal_n(c, p, NULL, ATM_OP_RMS_NORM_FWD, &eps, 2, (int32_t[]){x, g}, 2,
	                                (int32_t[]){ry, rr});
	nd[ATM_OP_RMS_NORM_BWD] = cal_n(c, p, NULL, ATM_OP_RMS_NORM_BWD, &eps, 4,
	                                (int32_t[]){x, dy, g, rr}, 2, (int32_t[]){rdx, rdw});
	int32_t half = cal_t(c, p, "cast.y", ATM_BF16, 3, sq, ACT);
	nd[ATM_OP_CAST] = cal_n(c, p, NULL, ATM_OP_CAST, NULL, 1, &x, 1, &half);
}

/* cal_set -- one node of every op (convolutions when z->convs) at sizes z */
static void cal_set(struct cal *c, int set, const char *p, const struct cal_size *z)
{
	const atm_tensor_kind IN = ATM_KIND_INPUT, ACT = ATM_KIND_ACTIVATION, PAR = ATM_KIND_PARAM;
	int64_t img[4] = {z->n, z->ch, z->hw, z->hw}, half[4] = {z->n, z->ch, z->hw / 2, z->hw / 2};
	int64_t cat[4] = {z->n, 2 * z->ch, z->hw, z->hw}, vec[1] = {z->ch}, one[1] = {1};
	int64_t xf[2] = {z->rows, z->feat}, wf[2] = {z->outf, z->feat}, yf[2] = {z->rows, z->outf};
	int64_t bf[1] = {z->outf}, lg[2] = {z->rows, z->classes};
	int64_t flat[1] = {z->n * z->ch * z->hw * z->hw};
	atm_attrs pool = {.kernel = {2, 2}, .stride = {2, 2}};
	atm_attrs bn = {.epsilon = 1e-5f}, cat1 = {.axis = 1}, sgd = {.lr = 1e-3f};
	int32_t *nd = c->node[set];
	if (z->convs) {
		cal_convs(c, p, z, 3, z->ch, nd);
		if (set == SET_CACHE)
			cal_convs(c, p, z, 1, 4 * z->ch, c->pointwise);
	}
	int32_t x = cal_t(c, p, "x", ATM_F32, 4, img, IN), x2 = cal_t(c, p, "x2", ATM_F32, 4, img, IN);
	int32_t dy = cal_t(c, p, "dy", ATM_F32, 4, img, IN);
	int32_t r = cal_t(c, p, "relu.y", ATM_F32, 4, img, ACT);
	int32_t dr = cal_t(c, p, "relu.dx", ATM_F32, 4, img, ACT);
	int32_t mp = cal_t(c, p, "mp.y", ATM_F32, 4, half, ACT);
	int32_t ws = cal_t(c, p, "mp.ws", ATM_I32, 4, half, ACT);
	int32_t dh = cal_t(c, p, "dhalf", ATM_F32, 4, half, IN);
	int32_t mdx = cal_t(c, p, "mp.dx", ATM_F32, 4, img, ACT);
	int32_t ap = cal_t(c, p, "ap.y", ATM_F32, 4, half, ACT);
	int32_t adx = cal_t(c, p, "ap.dx", ATM_F32, 4, img, ACT);
	int32_t ga = cal_t(c, p, "gamma", ATM_F32, 1, vec, PAR);
	int32_t be = cal_t(c, p, "beta", ATM_F32, 1, vec, PAR);
	int32_t by = cal_t(c, p, "bn.y", ATM_F32, 4, img, ACT);
	int32_t bm = cal_t(c, p, "bn.mean", ATM_F32, 1, vec, ACT);
	int32_t bv = cal_t(c, p, "bn.var", ATM_F32, 1, vec, ACT);
	int32_t bdx = cal_t(c, p, "bn.dx", ATM_F32, 4, img, ACT);
	int32_t bdg = cal_t(c, p, "bn.dgamma", ATM_F32, 1, vec, ACT);
	int32_t bdb = cal_t(c, p, "bn.dbeta", ATM_F32, 1, vec, ACT);
	int32_t cy = cal_t(c, p, "cat.y", ATM_F32, 4, cat, ACT);
	int32_t dc = cal_t(c, p, "dcat", ATM_F32, 4, cat, IN);
	int32_t s1 = cal_t(c, p, "split.1", ATM_F32, 4, img, ACT);
	int32_t s2 = cal_t(c, p, "split.2", ATM_F32, 4, img, ACT);
	int32_t ad = cal_t(c, p, "add.y", ATM_F32, 4, img, ACT);
	int32_t fx = cal_t(c, p, "fx", ATM_F32, 2, xf, IN), fw = cal_t(c, p, "fw", ATM_F32, 2, wf, PAR);
	int32_t fb = cal_t(c, p, "fb", ATM_F32, 1, bf, PAR), fdy = cal_t(c, p, "fdy", ATM_F32, 2, yf, IN);
	int32_t fy = cal_t(c, p, "ip.y", ATM_F32, 2, yf, ACT);
	int32_t fdx = cal_t(c, p, "ip.dx", ATM_F32, 2, xf, ACT);
	int32_t fdw = cal_t(c, p, "ip.dw", ATM_F32, 2, wf, ACT);
	int32_t fdb = cal_t(c, p, "ip.db", ATM_F32, 1, bf, ACT);
	int32_t lo = cal_t(c, p, "logits", ATM_F32, 2, lg, IN);
	int32_t la = cal_t(c, p, "labels", ATM_F32, 2, lg, IN);
	int32_t pr = cal_t(c, p, "probs", ATM_F32, 2, lg, ACT);
	int32_t ls = cal_t(c, p, "loss", ATM_F32, 1, one, ACT);
	int32_t dl = cal_t(c, p, "dlogits", ATM_F32, 2, lg, ACT);
	int32_t sp = cal_t(c, p, "sgd.w", ATM_F32, 1, flat, PAR);
	int32_t sd = cal_t(c, p, "sgd.dw", ATM_F32, 1, flat, IN);
	nd[ATM_OP_IP_FWD] = cal_n(c, p, NULL, ATM_OP_IP_FWD, NULL, 3, (int32_t[]){fx, fw, fb}, 1, &fy);
	nd[ATM_OP_IP_BWD_DATA] = cal_n(c, p, NULL, ATM_OP_IP_BWD_DATA, NULL, 2, (int32_t[]){fdy, fw},
	                               1, &fdx);
	nd[ATM_OP_IP_BWD_WEIGHTS] = cal_n(c, p, NULL, ATM_OP_IP_BWD_WEIGHTS, NULL, 2,
	                                  (int32_t[]){fx, fdy}, 2, (int32_t[]){fdw, fdb});
	nd[ATM_OP_RELU_FWD] = cal_n(c, p, NULL, ATM_OP_RELU_FWD, NULL, 1, &x, 1, &r);
	nd[ATM_OP_RELU_BWD] = cal_n(c, p, NULL, ATM_OP_RELU_BWD, NULL, 2, (int32_t[]){r, dy}, 1, &dr);
	nd[ATM_OP_MAXPOOL_FWD] = cal_n(c, p, NULL, ATM_OP_MAXPOOL_FWD, &pool, 1, &x, 2,
	                               (int32_t[]){mp, ws});
	nd[ATM_OP_MAXPOOL_BWD] = cal_n(c, p, NULL, ATM_OP_MAXPOOL_BWD, &pool, 2, (int32_t[]){dh, ws},
	                               1, &mdx);
	nd[ATM_OP_AVGPOOL_FWD] = cal_n(c, p, NULL, ATM_OP_AVGPOOL_FWD, &pool, 1, &x, 1, &ap);
	nd[ATM_OP_AVGPOOL_BWD] = cal_n(c, p, NULL, ATM_OP_AVGPOOL_BWD, &pool, 1, &dh, 1, &adx);
	nd[ATM_OP_BN_FWD] = cal_n(c, p, NULL, ATM_OP_BN_FWD, &bn, 3, (int32_t[]){x, ga, be}, 3,
	                          (int32_t[]){by, bm, bv});
	nd[ATM_OP_BN_BWD] = cal_n(c, p, NULL, ATM_OP_BN_BWD, &bn, 5, (int32_t[]){x, dy, ga, bm, bv}, 3,
	                          (int32_t[]){bdx, bdg, bdb});
	nd[ATM_OP_CONCAT] = cal_n(c, p, NULL, ATM_OP_CONCAT, &cat1, 2, (int32_t[]){x, x2}, 1, &cy);
	nd[ATM_OP_SPLIT] = cal_n(c, p, NULL, ATM_OP_SPLIT, &cat1, 1, &dc, 2, (int32_t[]){s1, s2});
	nd[ATM_OP_ADD] = cal_n(c, p, NULL, ATM_OP_ADD, NULL, 2, (int32_t[]){x, dy}, 1, &ad);
	nd[ATM_OP_SOFTMAX_XENT_FWD] = cal_n(c, p, NULL, ATM_OP_SOFTMAX_XENT_FWD, NULL, 2,
	                                    (int32_t[]){lo, la}, 2, (int32_t[]){pr, ls});
	nd[ATM_OP_SOFTMAX_XENT_BWD] = cal_n(c, p, NULL, ATM_OP_SOFTMAX_XENT_BWD, NULL, 2,
	                                    (int32_t[]){pr, la}, 1, &dl);
	nd[ATM_OP_SGD] = cal_n(c, p, NULL, ATM_OP_SGD, &sgd, 2, (int32_t[]){sp, sd}, 0, NULL);
	/* the updates with state: a parameter's buffer, averages and step */
	const atm_tensor_kind ST = ATM_KIND_OPTIMIZER_STATE;
	int32_t sb = cal_t(c, p, "sgd.buf", ATM_F32, 1, flat, ST);
	int32_t sm = cal_t(c, p, "adamw.m", ATM_F32, 1, flat, ST);
	int32_t sv = cal_t(c, p, "adamw.v", ATM_F32, 1, flat, ST);
	int32_t ss = cal_t(c, p, "adamw.step", ATM_F32, 1, one, ST);
	atm_attrs mom = {.lr = 1e-3f, .momentum = 0.9f, .weight_decay = 1e-4f};
	atm_attrs adamw = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .epsilon = 1e-8f,
	                   .weight_decay = 1e-2f};
	nd[ATM_OP_SGD_MOMENTUM] = cal_n(c, p, NULL, ATM_OP_SGD_MOMENTUM, &mom, 3,
	                                (int32_t[]){sp, sd, sb}, 0, NULL);
	nd[ATM_OP_ADAMW] = cal_n(c, p, NULL, ATM_OP_ADAMW, &adamw, 5, (int32_t[]){sp, sd, sm, sv, ss},
	                         0, NULL);
	/* the allreduce of one rank: the copy into its mean, what every rank does besides the
	 * network (whose time only a profile of the ranks measures) */
	int32_t am = cal_t(c, p, "allreduce.mean", ATM_F32, 1, flat, ATM_KIND_GRAD);
	atm_attrs alone = {.ranks = 1};
	nd[ATM_OP_ALLREDUCE] = cal_n(c, p, NULL, ATM_OP_ALLREDUCE, &alone, 1, &sd, 1, &am);
	cal_seq(c, nd, p, z);
}

/* cal_graph -- the calibration graph for a cache of cache_bytes: the cached
 * set's largest operands near a quarter of it, the streaming set's above it */
static atm_status cal_graph(struct cal *c, int64_t cache_bytes)
{
	struct cal_size tiny = {1, 2, 2, 1, 2, 2, 2, true};
	struct cal_size cached = {8, 64, 28, 64, 512, 256, 1000, true};
	struct cal_size stream = {8, 16, 56, 16, 4096, 256, 1000, false};
	/* [8, ch, 28, 28] floats are ch * 100 KiB; the 1x1 output is 4x that */
	while (cached.ch > 4 && 4 * 8 * cached.ch * 28 * 28 * 4 > cache_bytes / 2)
		cached.ch /= 2;
	/* [8, ch, 56, 56] floats are ch * 400 KiB: each image above the cache */
	while (8 * stream.ch * 56 * 56 * 4 < cache_bytes)
		stream.ch *= 2;
	while (stream.outf * stream.feat * 4 < 2 * cache_bytes)
		stream.outf *= 2;
	while (stream.rows * stream.classes * 4 < 2 * cache_bytes)
		stream.classes *= 2;
	memset(c, 0, sizeof *c);
	memset(c->node, 0xff, sizeof c->node);
	memset(c->pointwise, 0xff, sizeof c->pointwise);
	if ((c->rc = atm_graph_new(&c->g, "calibration")) < 0)
		return c->rc;
	cal_set(c, SET_TINY, "tiny.", &tiny);
	cal_set(c, SET_CACHE, "", &cached);
	cal_set(c, SET_STREAM, "stream.", &stream);
	for (int op = 0; op < ATM_N_OPS && c->rc >= 0; op++)
		if (c->node[SET_TINY][op] < 0 || c->node[SET_CACHE][op] < 0 ||
		    (atm_op_describe((atm_op)op)->pointwise_rate && c->pointwise[op] < 0))
			c->rc = atm_err(ATM_E_INTERNAL, "op %s has no calibration kernel",
			                atm_op_name((atm_op)op));
	if (c->rc >= 0)
		c->rc = atm_graph_validate(c->g);
	if (c->rc < 0) {
		atm_graph_destroy(c->g);
		c->g = NULL;
		return atm_err_prefix(c->rc, "calibration graph: ");
	}
	return ATM_OK;
}

/* llc_bytes -- the last-level cache of CPU 0 as sysfs gives it (glibc's
 * sysconf reports the whole package's on some AMD parts, 8x too much on the
 * EPYC this was built on), else sysconf's, else 0 */
static int64_t llc_bytes(void)
{
	int64_t best = 0;
	int best_level = 0;
	for (int i = 0; i < 16; i++) {
		char path[128], buf[64];
		int level = 0;
		long long kib = 0;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		FILE *f = fopen(path, "r");
		if (!f)
			break;
		if (fscanf(f, "%d", &level) != 1)
			level = 0;
		fclose(f);
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		if (!(f = fopen(path, "r")))
			continue;
		if (fgets(buf, sizeof buf, f) && sscanf(buf, "%lldK", &kib) == 1 && level > best_level) {
			best_level = level;
			best = (int64_t)kib * 1024;
		}
		fclose(f);
	}
	if (best > 0)
		return best;
	/* without sysfs (some virtual machines) sysconf's figure may be the whole package's: 512
	 * MiB on a 2-core slice of an EPYC, which made every streaming operand of the calibration
	 * hundreds of MB and the calibration a minute long. One chiplet's (32 MiB on EPYC) is
	 * the most a few threads can have to themselves. */
	long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
	int64_t llc = l3 > 0 ? l3 : l2 > 0 ? l2 : 0;
	return llc < SYSCONF_LLC_MAX_BYTES ? llc : SYSCONF_LLC_MAX_BYTES;
}

/* cache_size -- operands up to half the last-level cache stay there between
 * the runs of a kernel (the other half holds everything else) */
static int64_t cache_size(void)
{
	int64_t llc = llc_bytes();
	return llc > 0 ? llc / 2 : DEFAULT_CACHE_BYTES;
}

/* Rounds over the cached and tiny sets (the streaming set is timed once: it
 * takes most of the calibration's time). */
#define CAL_ROUNDS 3

/* net_rate -- work per second of a kernel timed at t, net of the call overhead */
static double net_rate(double work, double t, double overhead)
{
	return work / fmax(t - overhead, 1e-9) / 1e9;
}

/* time_one -- one calibration kernel timed, unless the stop flag is set (Ctrl-C then ends the
 * calibration between kernels, within a kernel's time) */
static atm_status time_one(atm_kbench *kb, const atm_kbench_opts *o, int32_t node,
                           atm_profile_entry *e)
{
	if (o->stop && *o->stop)
		return atm_err(ATM_E_INTERRUPTED, "interrupted");
	return atm_kbench_time(kb, node, 0, e);
}

/* atm_prof_roofline_calibrate -- time the calibration graph's kernels, derive the rates */
atm_status atm_prof_roofline_calibrate(atm_prof_roofline *rf, const atm_kbench_opts *o)
{
	atm_kbench_opts ko = *o;
	atm_kbench *kb = NULL;
	atm_profile_machine m;
	atm_profile_entry e, t;
	atm_prof_work w;
	struct cal c;
	atm_status rc;
	int64_t cb = cache_size();
	/* no emulation: only the fast side is calibrated; ten runs at the least,
	 * so that a busy moment does not become the machine's rate */
	ko.emulate = NULL;
	ko.reps = ko.reps > 10 ? ko.reps : 10;
	if ((rc = cal_graph(&c, cb)) < 0)
		return rc;
	if ((rc = atm_kbench_new(&kb, c.g, &ko)) < 0)
		goto done;
	atm_kbench_machine(kb, &m);
	rf->n_threads = m.n_threads;
	rf->cache_bytes = cb;
	/* every op in CAL_ROUNDS rounds, keeping its fastest: a process that
	 * shares the cores for a while slows one round, not the machine's rate */
	double tiny[ATM_N_OPS], cached[ATM_N_OPS], pointwise[ATM_N_OPS];
	for (int op = 0; op < ATM_N_OPS; op++)
		tiny[op] = cached[op] = pointwise[op] = INFINITY;
	for (int round = 0; round < CAL_ROUNDS; round++) {
		for (int op = 0; op < ATM_N_OPS; op++) {
			if ((rc = time_one(kb, &ko, c.node[SET_TINY][op], &t)) < 0 ||
			    (rc = time_one(kb, &ko, c.node[SET_CACHE][op], &e)) < 0)
				goto done;
			tiny[op] = fmin(tiny[op], t.min_s);
			cached[op] = fmin(cached[op], e.min_s);
		}
		for (int op = 0; op < ATM_N_OPS; op++) {
			if (c.pointwise[op] < 0)
				continue;
			if ((rc = time_one(kb, &ko, c.pointwise[op], &e)) < 0)
				goto done;
			pointwise[op] = fmin(pointwise[op], e.min_s);
		}
	}
	for (int op = 0; op < ATM_N_OPS; op++) {
		atm_prof_kernel_work(c.g, c.node[SET_CACHE][op], &w);
		rf->overhead_s[op] = tiny[op];
		rf->gflops[op] = net_rate(w.flops, cached[op], tiny[op]);
	}
	for (int op = 0; op < ATM_N_OPS; op++) {
		if (c.pointwise[op] < 0)
			continue;
		atm_prof_kernel_work(c.g, c.pointwise[op], &w);
		rf->gflops_1x1[op] = net_rate(w.flops, pointwise[op], tiny[op]);
	}
	for (int op = 0; op < ATM_N_OPS; op++) {
		if (c.node[SET_STREAM][op] < 0)
			continue;
		if ((rc = time_one(kb, &ko, c.node[SET_STREAM][op], &e)) < 0)
			goto done;
		atm_prof_kernel_work(c.g, c.node[SET_STREAM][op], &w);
		rf->gbps[op] = net_rate(w.traffic_bytes, e.min_s, rf->overhead_s[op]);
	}
	/* ops not timed streaming (convolutions) stream like the plainest kernel would */
	rf->fast_gbps = rf->gbps[ATM_OP_RELU_FWD];
	for (int op = 0; op < ATM_N_OPS; op++)
		if (c.node[SET_STREAM][op] < 0)
			rf->gbps[op] = rf->fast_gbps;
	rf->calibrated = true;
done:
	atm_kbench_destroy(kb);
	atm_graph_destroy(c.g);
	return rc < 0 ? atm_err_prefix(rc, "calibrating the roofline: ") : ATM_OK;
}

/* ---------------------------------------------------------------- error */

/* config_all -- node's configuration with every operand that may be slow in slow memory */
static uint32_t config_all(const atm_graph *g, int32_t node)
{
	return atm_node_config_at(g, node, atm_node_n_configs(g, node) - 1);
}

/* atm_prof_compare -- absolute percentage errors of est against meas over g's configurations */
atm_status atm_prof_compare(const atm_profile *est, const atm_profile *meas, const atm_graph *g,
                            atm_prof_error *out)
{
	atm_status rc;
	memset(out, 0, sizeof *out);
	/* room for every node's every configuration: at least the distinct ones compared */
	int64_t n_room = 1;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
		n_room += atm_node_n_configs(g, k);
	double *ape = malloc((size_t)n_room * sizeof *ape);
	if (!ape)
		return atm_err(ATM_E_NOMEM, "out of memory comparing profiles");
	/* each distinct (signature, configuration) once: the first node that has it */
	int64_t n = 0;
	char sig[ATM_SIGNATURE_MAX];
	json_t *done = json_object();
	for (int32_t k = 0; k < atm_graph_n_nodes(g) && done; k++) {
		atm_profile_entry a, b;
		if ((rc = atm_node_signature(g, k, sig, sizeof sig)) < 0)
			goto fail;
		for (int i = 0; i < atm_node_n_configs(g, k); i++) {
			uint32_t c = atm_node_config_at(g, k, i);
			char key[ATM_SIGNATURE_MAX + 32], name[32];
			snprintf(key, sizeof key, "%s %s", sig, atm_node_config_name(g, k, c, name, sizeof name));
			if (json_object_get(done, key))
				continue;
			json_object_set_new(done, key, json_true());
			if (atm_profile_get(est, g, k, c, &a) < 0 || atm_profile_get(meas, g, k, c, &b) < 0 ||
			    !(b.min_s > 0))
				continue;
			ape[n++] = fabs(a.min_s - b.min_s) / b.min_s * 100.0;
		}
		atm_profile_entry a0, b0, a1, b1;
		if (atm_profile_get(est, g, k, 0, &a0) == ATM_OK &&
		    atm_profile_get(meas, g, k, 0, &b0) == ATM_OK) {
			out->step_fast_est_s += a0.min_s;
			out->step_fast_meas_s += b0.min_s;
		}
		if (atm_profile_get(est, g, k, config_all(g, k), &a1) == ATM_OK &&
		    atm_profile_get(meas, g, k, config_all(g, k), &b1) == ATM_OK) {
			out->step_slow_est_s += a1.min_s;
			out->step_slow_meas_s += b1.min_s;
		}
	}
	atm_err_clear();
	if (!done) {
		rc = atm_err(ATM_E_NOMEM, "out of memory comparing profiles");
		goto fail;
	}
	if (!n) {
		rc = atm_err(ATM_E_NOTFOUND, "the estimated and the measured profile share no "
		             "configuration of graph '%s'", atm_graph_name(g));
		goto fail;
	}
	out->median_ape = atm_sort_median(ape, n);
	double sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += ape[i];
	out->n_configs = n;
	out->mean_ape = sum / (double)n;
	rc = ATM_OK;
fail:
	if (rc < 0)
		memset(out, 0, sizeof *out);
	json_decref(done);
	free(ape);
	return rc;
}
