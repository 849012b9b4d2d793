/* test_kernels.c -- CPU kernels: forwards against plain C references, backwards against finite differences, determinism, errors */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atm_core.h"
#include "atm_runtime.h"
#include "kernels.h"
#include "runtime/reference.h"

/* Finite differences: the forward kernel runs in float and the loss
 * sum(dy * y) is summed in double. Outputs the perturbed element does not
 * reach are computed identically both times and cancel exactly, so the noise
 * is the float rounding of the few outputs it reaches divided by 2h: up to
 * 3e-5 here. The truncation error of the central difference is O(h^2) on
 * smooth ops (BN: up to 1e-4 on these shapes, softmax) and zero on
 * piecewise-linear ones away from kinks and ties. A gradient off by 1% in its
 * larger elements fails. */
#define FD_H 1e-2f
#define FD_ATOL 2e-4
#define FD_RTOL 2e-3

#define MAX_T 96
#define MAX_N 64

static atm_cpu *cpu;
static uint64_t rng_state;

/* ---------------------------------------------------------------- helpers */

/* rng -- xorshift64*, so every run of the suite sees the same numbers */
static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* urand -- uniform float in [lo, hi) */
static float urand(float lo, float hi)
{
	return lo + (hi - lo) * (float)((double)(rng() >> 11) / 9007199254740992.0);
}

/* fill -- n uniform floats in [lo, hi) */
static void fill(float *p, int64_t n, float lo, float hi)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = urand(lo, hi);
}

/* fill_away_from_zero -- |v| in [0.05, 1.05): relu's kink is out of reach of FD_H */
static void fill_away_from_zero(float *p, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = (rng() & 1 ? 1.f : -1.f) * urand(0.05f, 1.05f);
}

/* fill_distinct -- a random permutation of 0.05 * (k - n/2): no two values
 * within 2 * FD_H, so max pooling has no ties a finite difference could cross */
static void fill_distinct(float *p, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		p[i] = 0.05f * (float)(i - n / 2);
	for (int64_t i = n - 1; i > 0; i--) {
		int64_t j = (int64_t)(rng() % (uint64_t)(i + 1));
		float t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
}

/* net -- a graph under test with a kernel per node and two sets of buffers
 * (set 1 lives elsewhere in memory, for the determinism checks) */
struct net {
	atm_graph *g;
	int set;
	void *base[2][MAX_T], *buf[2][MAX_T];
	void *scratch_base[2][MAX_N], *scratch[2][MAX_N];
	atm_kernel *k[MAX_N];
};

/* net_new -- an empty graph */
static void net_new(struct net *n, const char *name)
{
	memset(n, 0, sizeof *n);
	assert_int_equal(atm_graph_new(&n->g, name), ATM_OK);
}

/* ten -- add a tensor of dtype and kind */
static int32_t ten(struct net *n, const char *name, atm_dtype dt, atm_tensor_kind kind, int nd,
                   const int64_t *dims)
{
	int32_t id;
	assert_int_equal(atm_graph_add_tensor(n->g, name, dt, nd, dims, kind, ATM_LOC_ANY, &id), ATM_OK);
	assert_true(id < MAX_T);
	return id;
}

/* Shorthands for f32 tensors of each kind. */
#define T_IN(n, name, ...) ten((n), (name), ATM_F32, ATM_KIND_INPUT, \
	(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define T_PARAM(n, name, ...) ten((n), (name), ATM_F32, ATM_KIND_PARAM, \
	(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define T_ACT(n, name, ...) ten((n), (name), ATM_F32, ATM_KIND_ACTIVATION, \
	(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define T_GRAD(n, name, ...) ten((n), (name), ATM_F32, ATM_KIND_GRAD, \
	(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define T_WS(n, name, ...) ten((n), (name), ATM_I32, ATM_KIND_ACTIVATION, \
	(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define IDS(...) (int)(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t)), (int32_t[]){__VA_ARGS__}

/* nod -- add a node; attrs may be NULL */
static int32_t nod(struct net *n, const char *name, atm_op op, const atm_attrs *a, int n_in,
                   const int32_t *in, int n_out, const int32_t *out)
{
	int32_t id;
	assert_int_equal(atm_graph_add_node(n->g, name, op, a, n_in, in, n_out, out, &id), ATM_OK);
	assert_true(id < MAX_N);
	return id;
}

/* shifted -- a 64-byte aligned block of bytes placed shift cache lines past
 * an aligned start; the 0xff fill is NaN as f32, so an element a kernel
 * forgets to write shows up in every comparison */
static void *shifted(void **base, int64_t bytes, int shift)
{
	size_t size = (size_t)shift * 64 + (((size_t)bytes + 63) & ~(size_t)63);
	assert_int_equal(posix_memalign(base, 64, size), 0);
	memset(*base, 0xff, size);
	return (char *)*base + (size_t)shift * 64;
}

/* net_buffers -- allocate buffer set `set` for every tensor and scratch */
static void net_buffers(struct net *n, int set, int shift)
{
	for (int32_t t = 0; t < atm_graph_n_tensors(n->g); t++)
		n->buf[set][t] = shifted(&n->base[set][t], atm_graph_tensor(n->g, t)->bytes, shift + t % 3);
	for (int32_t i = 0; i < atm_graph_n_nodes(n->g); i++) {
		int64_t bytes = atm_kernel_scratch_bytes(n->k[i]);
		if (bytes > 0)
			n->scratch[set][i] = shifted(&n->scratch_base[set][i], bytes, shift);
	}
}

/* net_ready -- validate, make every kernel and buffer set 0 */
static void net_ready(struct net *n)
{
	assert_int_equal(atm_graph_validate(n->g), ATM_OK);
	for (int32_t i = 0; i < atm_graph_n_nodes(n->g); i++) {
		atm_status rc = atm_kernel_new(&n->k[i], cpu, n->g, i);
		if (rc != ATM_OK)
			fail_msg("kernel of node %d: %s", i, atm_errmsg());
	}
	net_buffers(n, 0, 0);
}

/* net_free -- kernels, buffers, graph */
static void net_free(struct net *n)
{
	for (int s = 0; s < 2; s++) {
		for (int t = 0; t < MAX_T; t++)
			free(n->base[s][t]);
		for (int i = 0; i < MAX_N; i++)
			free(n->scratch_base[s][i]);
	}
	for (int i = 0; i < MAX_N; i++)
		atm_kernel_destroy(n->k[i]);
	atm_graph_destroy(n->g);
}

/* F -- the active buffer of tensor t as floats */
static float *F(struct net *n, int32_t t)
{
	return n->buf[n->set][t];
}

/* NE -- elements of tensor t */
static int64_t NE(struct net *n, int32_t t)
{
	return atm_graph_tensor(n->g, t)->n_elems;
}

/* run -- run node on the active buffer set; it must succeed */
static void run(struct net *n, int32_t node)
{
	const atm_node *nd = atm_graph_node(n->g, node);
	void *in[8], *out[8];
	assert_true(nd->n_in <= 8 && nd->n_out <= 8);
	for (int i = 0; i < nd->n_in; i++)
		in[i] = n->buf[n->set][nd->in[i]];
	for (int i = 0; i < nd->n_out; i++)
		out[i] = n->buf[n->set][nd->out[i]];
	atm_status rc = atm_kernel_run(n->k[node], in, out, n->scratch[n->set][node]);
	if (rc != ATM_OK)
		fail_msg("running node '%s': %s", nd->name, atm_errmsg());
}

/* expect_close -- |got - want| <= atol + rtol * |want| everywhere */
static void expect_close(const char *what, const float *got, const double *want, int64_t len,
                         double atol, double rtol)
{
	for (int64_t i = 0; i < len; i++) {
		double err = fabs((double)got[i] - want[i]);
		if (!(err <= atol + rtol * fabs(want[i])))
			fail_msg("%s[%lld]: kernel %.9g, reference %.9g (error %.3g)", what, (long long)i,
			         (double)got[i], want[i], err);
	}
}

/* expect_same_floats -- bitwise equal */
static void expect_same_floats(const char *what, const float *got, const float *want, int64_t len)
{
	for (int64_t i = 0; i < len; i++)
		if (memcmp(&got[i], &want[i], sizeof(float)) != 0)
			fail_msg("%s[%lld]: kernel %.9g, expected exactly %.9g", what, (long long)i,
			         (double)got[i], (double)want[i]);
}

/* dalloc -- a zeroed array of doubles (test_free'd by the caller) */
static double *dalloc(int64_t len)
{
	double *p = calloc((size_t)len, sizeof *p);
	assert_non_null(p);
	return p;
}

/* fd_loss -- run the forward node and return sum(dy * y) in double (dy NULL: y itself, a scalar) */
static double fd_loss(struct net *n, int32_t fwd, int32_t y, const float *dy)
{
	run(n, fwd);
	const float *o = F(n, y);
	double s = 0;
	for (int64_t i = 0; i < NE(n, y); i++)
		s += (dy ? (double)dy[i] : 1.0) * o[i];
	return s;
}

/* check_fd -- the gradient a backward kernel gave for tensor p must match central
 * differences of fd_loss in every element; the forward is re-run at the end so
 * its outputs hold the unperturbed values again */
static void check_fd(struct net *n, int32_t fwd, int32_t y, const float *dy, int32_t p,
                     int32_t grad)
{
	float *x = F(n, p);
	const float *g = F(n, grad);
	for (int64_t i = 0; i < NE(n, p); i++) {
		float save = x[i], xp = save + FD_H, xm = save - FD_H;
		x[i] = xp;
		double lp = fd_loss(n, fwd, y, dy);
		x[i] = xm;
		double lm = fd_loss(n, fwd, y, dy);
		x[i] = save;
		double fd = (lp - lm) / ((double)xp - (double)xm);
		double err = fabs(fd - g[i]);
		if (!(err <= FD_ATOL + FD_RTOL * fabs(fd)))
			fail_msg("d/d%s[%lld]: backward kernel '%s' gives %.7g, finite difference %.7g",
			         atm_graph_tensor(n->g, p)->name, (long long)i,
			         atm_graph_tensor(n->g, grad)->name, (double)g[i], fd);
	}
	run(n, fwd);
}

/* ---------------------------------------------------------------- fixtures */

/* test_kernels_cast -- f32 to bf16 rounds to nearest, ties to even (PyTorch's .to(bfloat16)),
 * keeps infinities and NaN (quiet), rounds past bf16's largest to infinity; bf16 to f32 is exact;
 * one dtype to itself is a copy. A bf16 tensor is an activation or gradient: as a parameter it
 * is refused naming it */
static void test_kernels_cast(void **state)
{
	(void)state;
	struct net n;
	net_new(&n, "cast");
	int32_t x = T_IN(&n, "x", 12);
	int32_t h = ten(&n, "h", ATM_BF16, ATM_KIND_ACTIVATION, 1, (int64_t[]){12});
	int32_t y = T_ACT(&n, "y", 12), z = T_ACT(&n, "z", 12);
	int32_t down = nod(&n, "down", ATM_OP_CAST, NULL, IDS(x), IDS(h));
	int32_t up = nod(&n, "up", ATM_OP_CAST, NULL, IDS(h), IDS(y));
	int32_t same = nod(&n, "same", ATM_OP_CAST, NULL, IDS(y), IDS(z));
	assert_int_equal(atm_graph_tensor(n.g, h)->bytes, 24); /* two bytes an element */
	net_ready(&n);
	/* bits in and the bf16 bits out */
	static const uint32_t in[12] = {
		0x3f800000, /* 1.0 */
		0x3f808000, /* 1 + 2^-8: a tie, to even (down) */
		0x3f818000, /* 1 + 3 * 2^-8: a tie, to even (up) */
		0x3f808001, /* just above the tie: up */
		0xbf807fff, /* -(just below the tie): down */
		0x7f800000, 0xff800000, /* +-inf */
		0x7fc00001, /* a NaN whose payload lies in the dropped bits: still a NaN */
		0x7f7fffff, /* f32's largest: past bf16's, to inf */
		0x00000001, /* the least subnormal: to 0 */
		0x80000000, /* -0 */
		0x42f6e979, /* 123.456 */
	};
	static const uint16_t want[12] = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0xbf80, 0x7f80, 0xff80,
	                                  0x7fc0, 0x7f80, 0x0000, 0x8000, 0x42f7};
	memcpy(F(&n, x), in, sizeof in);
	run(&n, down);
	const uint16_t *got = n.buf[n.set][h];
	for (int i = 0; i < 12; i++)
		if (got[i] != want[i])
			fail_msg("cast to bf16 of %08x: %04x, expected %04x", in[i], got[i], want[i]);
	run(&n, up);
	run(&n, same);
	const uint32_t *wide = (const uint32_t *)F(&n, y), *copy = (const uint32_t *)F(&n, z);
	for (int i = 0; i < 12; i++) {
		assert_int_equal(wide[i], (uint32_t)want[i] << 16);
		assert_int_equal(copy[i], wide[i]);
	}
	net_free(&n);
	/* bf16 as what the step starts from */
	net_new(&n, "bf16 misuse");
	int32_t id;
	assert_int_equal(atm_graph_add_tensor(n.g, "w", ATM_BF16, 1, (int64_t[]){4}, ATM_KIND_PARAM,
	                                      ATM_LOC_ANY, &id), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "tensor 'w' is a bf16 param"));
	assert_non_null(strstr(atm_errmsg(), "valid bf16 kinds: activation, grad"));
	net_free(&n);
}

/* bf16r -- v rounded to bf16 (to nearest, ties to even; the test's values are finite) */
static float bf16r(float v)
{
	uint32_t u;
	memcpy(&u, &v, sizeof u);
	u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
	memcpy(&v, &u, sizeof v);
	return v;
}

/* A node of the bf16 test: its op and attributes over two inputs (the second a weight or -1)
 * and one output; where the inputs go in the graph's own f32 twin the same way. */
struct half_case {
	const char *name;
	atm_op op;
	atm_attrs a;
	int nd_x, nd_w, nd_y;
	int64_t x[4], w[4], y[4];
	bool native; /* oneDNN's bf16 kernel where this CPU has one: no bitwise twin */
};

/* half_case_run -- c's node on bf16 operands (cast from f32 inputs, its output cast back) and
 * on f32 inputs holding the same rounded values: a widened kernel gives the f32 result rounded
 * once, bit for bit; oneDNN's bf16 kernels accumulate in f32 in their own order, within a
 * rounding of bf16 (2^-8 of the largest term) */
static void half_case_run(const struct half_case *c)
{
	struct net n;
	net_new(&n, c->name);
	bool w = c->nd_w > 0;
	int32_t x = ten(&n, "x", ATM_F32, ATM_KIND_INPUT, c->nd_x, c->x);
	int32_t wx = w ? ten(&n, "w", ATM_F32, ATM_KIND_INPUT, c->nd_w, c->w) : -1;
	int32_t xb = ten(&n, "x.bf16", ATM_BF16, ATM_KIND_ACTIVATION, c->nd_x, c->x);
	int32_t wb = w ? ten(&n, "w.bf16", ATM_BF16, ATM_KIND_ACTIVATION, c->nd_w, c->w) : -1;
	int32_t yb = ten(&n, "y.bf16", ATM_BF16, ATM_KIND_ACTIVATION, c->nd_y, c->y);
	int32_t yw = ten(&n, "y.wide", ATM_F32, ATM_KIND_ACTIVATION, c->nd_y, c->y);
	int32_t y = ten(&n, "y", ATM_F32, ATM_KIND_ACTIVATION, c->nd_y, c->y);
	int32_t cx = nod(&n, "cast.x", ATM_OP_CAST, NULL, IDS(x), IDS(xb));
	int32_t cw = w ? nod(&n, "cast.w", ATM_OP_CAST, NULL, IDS(wx), IDS(wb)) : -1;
	int32_t half = nod(&n, "half", c->op, &c->a, w ? 2 : 1, (int32_t[]){xb, wb}, 1, &yb);
	int32_t cy = nod(&n, "cast.y", ATM_OP_CAST, NULL, IDS(yb), IDS(yw));
	int32_t full = nod(&n, "full", c->op, &c->a, w ? 2 : 1, (int32_t[]){x, wx}, 1, &y);
	net_ready(&n);
	assert_int_equal(atm_graph_tensor(n.g, yb)->bytes, 2 * NE(&n, y));
	fill(F(&n, x), NE(&n, x), -2, 2);
	if (w)
		fill(F(&n, wx), NE(&n, wx), -1, 1);
	run(&n, cx);
	if (w)
		run(&n, cw);
	run(&n, half);
	run(&n, cy);
	/* the f32 twin reads the values the bf16 node read */
	for (int64_t i = 0; i < NE(&n, x); i++)
		F(&n, x)[i] = bf16r(F(&n, x)[i]);
	for (int64_t i = 0; w && i < NE(&n, wx); i++)
		F(&n, wx)[i] = bf16r(F(&n, wx)[i]);
	run(&n, full);
	bool widened = atm_kernel_widened(n.k[half]);
	print_message("%s: %s\n", c->name, widened ? "widened to f32" : "oneDNN's bf16 kernel");
	if (!c->native)
		assert_true(widened);
	double big = 0;
	for (int64_t i = 0; i < NE(&n, y); i++)
		big = fmax(big, fabs((double)F(&n, y)[i]));
	for (int64_t i = 0; i < NE(&n, y); i++) {
		float want = bf16r(F(&n, y)[i]), got = F(&n, yw)[i];
		if (widened ? memcmp(&got, &want, sizeof got) != 0
		            : !(fabs((double)got - F(&n, y)[i]) <= 0x1p-8 * big))
			fail_msg("%s y[%lld]: bf16 %.9g, f32 %.9g (rounded %.9g)", c->name, (long long)i,
			         (double)got, (double)F(&n, y)[i], (double)want);
	}
	net_free(&n);
}

/* test_kernels_bf16 -- every op runs on bf16: convolutions, inner products, the element-wise
 * ops, pools, sums and concatenations on oneDNN's bf16 kernels (where the CPU has them), the
 * rest widened to f32 and rounded once */
static void test_kernels_bf16(void **state)
{
	(void)state;
	const struct half_case cases[] = {
		{"conv", ATM_OP_CONV_FWD, {.stride = {1, 1}, .pad = {1, 1, 1, 1}, .groups = 1}, 4, 4, 4,
		 {2, 3, 6, 6}, {4, 3, 3, 3}, {2, 4, 6, 6}, true},
		{"conv.bwd_data", ATM_OP_CONV_BWD_DATA, {.stride = {1, 1}, .pad = {1, 1, 1, 1}, .groups = 1},
		 4, 4, 4, {2, 4, 6, 6}, {4, 3, 3, 3}, {2, 3, 6, 6}, true},
		{"conv.bwd_weights", ATM_OP_CONV_BWD_WEIGHTS, {.stride = {1, 1}, .pad = {1, 1, 1, 1},
		 .groups = 1}, 4, 4, 4, {2, 3, 6, 6}, {2, 4, 6, 6}, {4, 3, 3, 3}, true},
		{"matmul", ATM_OP_MATMUL, {.trans_b = true, .scale = 1}, 3, 3, 3, {2, 5, 16},
		 {2, 7, 16}, {2, 5, 7}, true},
		{"relu", ATM_OP_RELU_FWD, {.axis = 0}, 2, 0, 2, {3, 17}, {0}, {3, 17}, true},
		{"gelu", ATM_OP_GELU_FWD, {.tanh = true}, 2, 0, 2, {3, 17}, {0}, {3, 17}, true},
		{"softmax", ATM_OP_SOFTMAX_FWD, {.axis = 0}, 2, 0, 2, {3, 17}, {0}, {3, 17}, false},
		{"avgpool", ATM_OP_AVGPOOL_FWD, {.kernel = {2, 2}, .stride = {2, 2}}, 4, 0, 4,
		 {2, 3, 6, 6}, {0}, {2, 3, 3, 3}, true},
		{"add", ATM_OP_ADD, {.axis = 0}, 2, 2, 2, {3, 17}, {3, 17}, {3, 17}, true},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		half_case_run(&cases[i]);
}

/* group_setup -- one engine for the whole suite */
static int group_setup(void **state)
{
	(void)state;
	return atm_cpu_new(&cpu) == ATM_OK ? 0 : -1;
}

/* group_teardown -- release the engine */
static int group_teardown(void **state)
{
	(void)state;
	atm_cpu_destroy(cpu);
	cpu = NULL;
	return 0;
}

/* reseed -- every test starts from the same random numbers, whatever ran before */
static int reseed(void **state)
{
	(void)state;
	rng_state = 0x9e3779b97f4a7c15ull;
	return 0;
}

/* ---------------------------------------------------------------- convolution */

/* conv_ids -- tensors and nodes of conv_net: x[2,2,5,4] * w[3,2,3,3],
 * stride (2,1), padding top 1, left 2, bottom 0, right 1 -> y[2,3,2,5];
 * with and without bias, and all backwards */
struct conv_ids {
	int32_t x, w, b, y, y_nb, dy, dx, dw, db, dw_nb;
	int32_t fwd, fwd_nb, bwd_data, bwd_w, bwd_w_nb;
	struct ref_win win;
};

/* conv_net -- the graph above with its kernels and random inputs */
static void conv_net(struct net *n, struct conv_ids *c)
{
	atm_attrs a = {.stride = {2, 1}, .pad = {1, 2, 0, 1}};
	net_new(n, "conv");
	c->x = T_IN(n, "x", 2, 2, 5, 4);
	c->w = T_PARAM(n, "w", 3, 2, 3, 3);
	c->b = T_PARAM(n, "b", 3);
	c->y = T_ACT(n, "y", 2, 3, 2, 5);
	c->y_nb = T_ACT(n, "y_nb", 2, 3, 2, 5);
	c->dy = T_IN(n, "dy", 2, 3, 2, 5);
	c->dx = T_GRAD(n, "dx", 2, 2, 5, 4);
	c->dw = T_GRAD(n, "dw", 3, 2, 3, 3);
	c->db = T_GRAD(n, "db", 3);
	c->dw_nb = T_GRAD(n, "dw_nb", 3, 2, 3, 3);
	c->fwd = nod(n, "conv", ATM_OP_CONV_FWD, &a, IDS(c->x, c->w, c->b), IDS(c->y));
	c->fwd_nb = nod(n, "conv_nb", ATM_OP_CONV_FWD, &a, IDS(c->x, c->w), IDS(c->y_nb));
	c->bwd_data = nod(n, "conv.bwd_data", ATM_OP_CONV_BWD_DATA, &a, IDS(c->dy, c->w), IDS(c->dx));
	c->bwd_w = nod(n, "conv.bwd_w", ATM_OP_CONV_BWD_WEIGHTS, &a, IDS(c->x, c->dy),
	               IDS(c->dw, c->db));
	c->bwd_w_nb = nod(n, "conv_nb.bwd_w", ATM_OP_CONV_BWD_WEIGHTS, &a, IDS(c->x, c->dy),
	                  IDS(c->dw_nb));
	net_ready(n);
	fill(F(n, c->x), NE(n, c->x), -1, 1);
	fill(F(n, c->w), NE(n, c->w), -1, 1);
	fill(F(n, c->b), NE(n, c->b), -1, 1);
	fill(F(n, c->dy), NE(n, c->dy), -1, 1);
	c->win = (struct ref_win){.n = 2, .c = 2, .h = 5, .w = 4, .kh = 3, .kw = 3, .sh = 2, .sw = 1,
	                          .pt = 1, .pl = 2, .oh = 2, .ow = 5};
}

/* test_kernels_conv_fwd -- y with and without bias against the reference */
static void test_kernels_conv_fwd(void **state)
{
	(void)state;
	struct net n;
	struct conv_ids c;
	conv_net(&n, &c);
	run(&n, c.fwd);
	run(&n, c.fwd_nb);
	double *want = dalloc(NE(&n, c.y));
	ref_conv(&c.win, 3, F(&n, c.x), F(&n, c.w), F(&n, c.b), want);
	expect_close("y", F(&n, c.y), want, NE(&n, c.y), 1e-5, 1e-5);
	ref_conv(&c.win, 3, F(&n, c.x), F(&n, c.w), NULL, want);
	expect_close("y_nb", F(&n, c.y_nb), want, NE(&n, c.y_nb), 1e-5, 1e-5);
	free(want);
	net_free(&n);
}

/* test_kernels_conv_bwd_data_fd -- dx against finite differences of the forward */
static void test_kernels_conv_bwd_data_fd(void **state)
{
	(void)state;
	struct net n;
	struct conv_ids c;
	conv_net(&n, &c);
	run(&n, c.bwd_data);
	check_fd(&n, c.fwd, c.y, F(&n, c.dy), c.x, c.dx);
	net_free(&n);
}

/* test_kernels_conv_bwd_weights_fd -- dw, db (and dw without bias) against finite differences */
static void test_kernels_conv_bwd_weights_fd(void **state)
{
	(void)state;
	struct net n;
	struct conv_ids c;
	conv_net(&n, &c);
	run(&n, c.bwd_w);
	run(&n, c.bwd_w_nb);
	check_fd(&n, c.fwd, c.y, F(&n, c.dy), c.w, c.dw);
	check_fd(&n, c.fwd, c.y, F(&n, c.dy), c.b, c.db);
	check_fd(&n, c.fwd_nb, c.y_nb, F(&n, c.dy), c.w, c.dw_nb);
	net_free(&n);
}

/* grouped_net -- x[2,c,5,6] over groups of channels, 3x3 windows, stride 1, padding 1:
 * w[o,c/groups,3,3] -> y[2,o,5,6] without bias, dx and dw (depthwise: groups = c = o) */
static void grouped_net(struct net *n, struct conv_ids *c, int64_t ci, int64_t co, int32_t groups)
{
	atm_attrs a = {.stride = {1, 1}, .pad = {1, 1, 1, 1}, .groups = groups};
	net_new(n, "grouped");
	c->x = T_IN(n, "x", 2, ci, 5, 6);
	c->w = T_PARAM(n, "w", co, ci / groups, 3, 3);
	c->y = T_ACT(n, "y", 2, co, 5, 6);
	c->dy = T_IN(n, "dy", 2, co, 5, 6);
	c->dx = T_GRAD(n, "dx", 2, ci, 5, 6);
	c->dw = T_GRAD(n, "dw", co, ci / groups, 3, 3);
	c->fwd = nod(n, "conv", ATM_OP_CONV_FWD, &a, IDS(c->x, c->w), IDS(c->y));
	c->bwd_data = nod(n, "conv.bwd_data", ATM_OP_CONV_BWD_DATA, &a, IDS(c->dy, c->w), IDS(c->dx));
	c->bwd_w = nod(n, "conv.bwd_w", ATM_OP_CONV_BWD_WEIGHTS, &a, IDS(c->x, c->dy), IDS(c->dw));
	net_ready(n);
	fill(F(n, c->x), NE(n, c->x), -1, 1);
	fill(F(n, c->w), NE(n, c->w), -1, 1);
	fill(F(n, c->dy), NE(n, c->dy), -1, 1);
	c->win = (struct ref_win){.n = 2, .c = ci, .h = 5, .w = 6, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
	                          .pt = 1, .pl = 1, .oh = 5, .ow = 6, .groups = groups};
}

/* test_kernels_conv_groups -- grouped (4 -> 6 in 2 groups), depthwise (8 channels) and
 * depthwise with a multiplier (4 -> 8 in 4 groups): y against the reference, dx and dw
 * against finite differences */
static void test_kernels_conv_groups(void **state)
{
	(void)state;
	static const int64_t shapes[][3] = {{4, 6, 2}, {8, 8, 8}, {4, 8, 4}};
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		struct net n;
		struct conv_ids c;
		grouped_net(&n, &c, shapes[i][0], shapes[i][1], (int32_t)shapes[i][2]);
		run(&n, c.fwd);
		double *want = dalloc(NE(&n, c.y));
		ref_conv(&c.win, shapes[i][1], F(&n, c.x), F(&n, c.w), NULL, want);
		expect_close("y", F(&n, c.y), want, NE(&n, c.y), 1e-5, 1e-5);
		free(want);
		run(&n, c.bwd_data);
		run(&n, c.bwd_w);
		check_fd(&n, c.fwd, c.y, F(&n, c.dy), c.x, c.dx);
		check_fd(&n, c.fwd, c.y, F(&n, c.dy), c.w, c.dw);
		net_free(&n);
	}
}

/* ---------------------------------------------------------------- inner product */

/* ip_ids -- tensors and nodes of ip_net: x[3,2,2,2] seen as [3, 8] (or
 * x[3,8] itself), w[5,8], b[5] -> y[3,5], and the backwards */
struct ip_ids {
	int32_t x, w, b, y, dy, dx, dw, db;
	int32_t fwd, bwd_data, bwd_w;
};

/* ip_net -- the graph above with its kernels and random inputs */
static void ip_net(struct net *n, struct ip_ids *c, bool flat)
{
	int64_t x4[4] = {3, 2, 2, 2}, x2[2] = {3, 8};
	net_new(n, "ip");
	c->x = ten(n, "x", ATM_F32, ATM_KIND_INPUT, flat ? 2 : 4, flat ? x2 : x4);
	c->w = T_PARAM(n, "w", 5, 8);
	c->b = T_PARAM(n, "b", 5);
	c->y = T_ACT(n, "y", 3, 5);
	c->dy = T_IN(n, "dy", 3, 5);
	c->dx = ten(n, "dx", ATM_F32, ATM_KIND_GRAD, flat ? 2 : 4, flat ? x2 : x4);
	c->dw = T_GRAD(n, "dw", 5, 8);
	c->db = T_GRAD(n, "db", 5);
	c->fwd = nod(n, "fc", ATM_OP_IP_FWD, NULL, IDS(c->x, c->w, c->b), IDS(c->y));
	c->bwd_data = nod(n, "fc.bwd_data", ATM_OP_IP_BWD_DATA, NULL, IDS(c->dy, c->w), IDS(c->dx));
	c->bwd_w = nod(n, "fc.bwd_w", ATM_OP_IP_BWD_WEIGHTS, NULL, IDS(c->x, c->dy), IDS(c->dw, c->db));
	net_ready(n);
	fill(F(n, c->x), NE(n, c->x), -1, 1);
	fill(F(n, c->w), NE(n, c->w), -1, 1);
	fill(F(n, c->b), NE(n, c->b), -1, 1);
	fill(F(n, c->dy), NE(n, c->dy), -1, 1);
}

/* test_kernels_ip_fwd -- y against the reference, for 4-d and 2-d inputs */
static void test_kernels_ip_fwd(void **state)
{
	(void)state;
	for (int flat = 0; flat < 2; flat++) {
		struct net n;
		struct ip_ids c;
		ip_net(&n, &c, flat);
		run(&n, c.fwd);
		double want[15];
		ref_ip(3, 8, 5, F(&n, c.x), F(&n, c.w), F(&n, c.b), want);
		expect_close("y", F(&n, c.y), want, 15, 1e-5, 1e-5);
		net_free(&n);
	}
}

/* test_kernels_ip_bwd_fd -- dx, dw, db against finite differences, 4-d and 2-d inputs */
static void test_kernels_ip_bwd_fd(void **state)
{
	(void)state;
	for (int flat = 0; flat < 2; flat++) {
		struct net n;
		struct ip_ids c;
		ip_net(&n, &c, flat);
		run(&n, c.bwd_data);
		run(&n, c.bwd_w);
		check_fd(&n, c.fwd, c.y, F(&n, c.dy), c.x, c.dx);
		check_fd(&n, c.fwd, c.y, F(&n, c.dy), c.w, c.dw);
		check_fd(&n, c.fwd, c.y, F(&n, c.dy), c.b, c.db);
		net_free(&n);
	}
}

/* ---------------------------------------------------------------- relu */

/* test_kernels_relu -- forward exact, backward (from y) against finite differences */
static void test_kernels_relu(void **state)
{
	(void)state;
	struct net n;
	net_new(&n, "relu");
	int32_t x = T_IN(&n, "x", 2, 3, 4, 4);
	int32_t y = T_ACT(&n, "y", 2, 3, 4, 4);
	int32_t dy = T_IN(&n, "dy", 2, 3, 4, 4);
	int32_t dx = T_GRAD(&n, "dx", 2, 3, 4, 4);
	int32_t fwd = nod(&n, "relu", ATM_OP_RELU_FWD, NULL, IDS(x), IDS(y));
	int32_t bwd = nod(&n, "relu.bwd", ATM_OP_RELU_BWD, NULL, IDS(y, dy), IDS(dx));
	net_ready(&n);
	fill_away_from_zero(F(&n, x), NE(&n, x));
	fill(F(&n, dy), NE(&n, dy), -1, 1);
	run(&n, fwd);
	double want[96];
	for (int i = 0; i < 96; i++)
		want[i] = F(&n, x)[i] > 0 ? F(&n, x)[i] : 0.0;
	/* exact, but oneDNN may write -0 for negative inputs, so compare values, not bits */
	expect_close("y", F(&n, y), want, 96, 0, 0);
	run(&n, bwd);
	check_fd(&n, fwd, y, F(&n, dy), x, dx);
	net_free(&n);
}

/* ---------------------------------------------------------------- pooling */

/* max_ids -- tensors and nodes of max_net: x[2,2,7,6], 3x2 window, stride 2,
 * padding top 1, left 1, bottom 1, right 0 -> y[2,2,4,3]; and a 17x17
 * window, whose argmax no longer fits a byte */
struct max_ids {
	int32_t x, y, ws, dy, dx, fwd, bwd;
	int32_t bx, by, bws, bdy, bdx, bfwd, bbwd;
};

/* max_net -- the graph above with its kernels and random inputs */
static void max_net(struct net *n, struct max_ids *c)
{
	atm_attrs a = {.kernel = {3, 2}, .stride = {2, 2}, .pad = {1, 1, 1, 0}};
	atm_attrs big = {.kernel = {17, 17}};
	net_new(n, "maxpool");
	c->x = T_IN(n, "x", 2, 2, 7, 6);
	c->y = T_ACT(n, "y", 2, 2, 4, 3);
	c->ws = T_WS(n, "ws", 2, 2, 4, 3);
	c->dy = T_IN(n, "dy", 2, 2, 4, 3);
	c->dx = T_GRAD(n, "dx", 2, 2, 7, 6);
	c->bx = T_IN(n, "bx", 1, 2, 17, 17);
	c->by = T_ACT(n, "by", 1, 2, 1, 1);
	c->bws = T_WS(n, "bws", 1, 2, 1, 1);
	c->bdy = T_IN(n, "bdy", 1, 2, 1, 1);
	c->bdx = T_GRAD(n, "bdx", 1, 2, 17, 17);
	c->fwd = nod(n, "pool", ATM_OP_MAXPOOL_FWD, &a, IDS(c->x), IDS(c->y, c->ws));
	c->bwd = nod(n, "pool.bwd", ATM_OP_MAXPOOL_BWD, &a, IDS(c->dy, c->ws), IDS(c->dx));
	c->bfwd = nod(n, "big", ATM_OP_MAXPOOL_FWD, &big, IDS(c->bx), IDS(c->by, c->bws));
	c->bbwd = nod(n, "big.bwd", ATM_OP_MAXPOOL_BWD, &big, IDS(c->bdy, c->bws), IDS(c->bdx));
	net_ready(n);
	fill_distinct(F(n, c->x), NE(n, c->x));
	fill_distinct(F(n, c->bx), NE(n, c->bx));
	fill(F(n, c->dy), NE(n, c->dy), -1, 1);
	fill(F(n, c->bdy), NE(n, c->bdy), -1, 1);
}

/* test_kernels_maxpool_fwd -- y against the reference, padded and with a 17x17 window */
static void test_kernels_maxpool_fwd(void **state)
{
	(void)state;
	struct net n;
	struct max_ids c;
	max_net(&n, &c);
	run(&n, c.fwd);
	run(&n, c.bfwd);
	struct ref_win w = {.n = 2, .c = 2, .h = 7, .w = 6, .kh = 3, .kw = 2, .sh = 2, .sw = 2,
	                    .pt = 1, .pl = 1, .oh = 4, .ow = 3};
	struct ref_win bw = {.n = 1, .c = 2, .h = 17, .w = 17, .kh = 17, .kw = 17, .sh = 1, .sw = 1,
	                     .oh = 1, .ow = 1};
	double want[48];
	ref_pool(&w, REF_MAX, F(&n, c.x), want);
	expect_close("y", F(&n, c.y), want, 48, 0, 0);
	ref_pool(&bw, REF_MAX, F(&n, c.bx), want);
	expect_close("by", F(&n, c.by), want, 2, 0, 0);
	net_free(&n);
}

/* test_kernels_maxpool_bwd_fd -- dx from the stored argmax against finite differences */
static void test_kernels_maxpool_bwd_fd(void **state)
{
	(void)state;
	struct net n;
	struct max_ids c;
	max_net(&n, &c);
	/* the backward reads the argmax the forward left in ws */
	run(&n, c.fwd);
	run(&n, c.bwd);
	run(&n, c.bfwd);
	run(&n, c.bbwd);
	check_fd(&n, c.fwd, c.y, F(&n, c.dy), c.x, c.dx);
	check_fd(&n, c.bfwd, c.by, F(&n, c.bdy), c.bx, c.bdx);
	net_free(&n);
}

/* avg_ids -- tensors and nodes of avg_net: x[2,2,6,7], 3x3 window, stride 2,
 * padding 1 all round -> y[2,2,3,4], counting the padding and not */
struct avg_ids {
	int32_t x, yi, ye, dy, dxi, dxe, fwd_i, fwd_e, bwd_i, bwd_e;
};

/* avg_net -- the graph above with its kernels and random inputs */
static void avg_net(struct net *n, struct avg_ids *c)
{
	atm_attrs inc = {.kernel = {3, 3}, .stride = {2, 2}, .pad = {1, 1, 1, 1}};
	atm_attrs exc = inc;
	exc.exclude_pad = true;
	net_new(n, "avgpool");
	c->x = T_IN(n, "x", 2, 2, 6, 7);
	c->yi = T_ACT(n, "y_include", 2, 2, 3, 4);
	c->ye = T_ACT(n, "y_exclude", 2, 2, 3, 4);
	c->dy = T_IN(n, "dy", 2, 2, 3, 4);
	c->dxi = T_GRAD(n, "dx_include", 2, 2, 6, 7);
	c->dxe = T_GRAD(n, "dx_exclude", 2, 2, 6, 7);
	c->fwd_i = nod(n, "avg_inc", ATM_OP_AVGPOOL_FWD, &inc, IDS(c->x), IDS(c->yi));
	c->fwd_e = nod(n, "avg_exc", ATM_OP_AVGPOOL_FWD, &exc, IDS(c->x), IDS(c->ye));
	c->bwd_i = nod(n, "avg_inc.bwd", ATM_OP_AVGPOOL_BWD, &inc, IDS(c->dy), IDS(c->dxi));
	c->bwd_e = nod(n, "avg_exc.bwd", ATM_OP_AVGPOOL_BWD, &exc, IDS(c->dy), IDS(c->dxe));
	net_ready(n);
	fill(F(n, c->x), NE(n, c->x), -1, 1);
	fill(F(n, c->dy), NE(n, c->dy), -1, 1);
}

/* test_kernels_avgpool_fwd -- y counting the padding and not, against the reference */
static void test_kernels_avgpool_fwd(void **state)
{
	(void)state;
	struct net n;
	struct avg_ids c;
	avg_net(&n, &c);
	run(&n, c.fwd_i);
	run(&n, c.fwd_e);
	struct ref_win w = {.n = 2, .c = 2, .h = 6, .w = 7, .kh = 3, .kw = 3, .sh = 2, .sw = 2,
	                    .pt = 1, .pl = 1, .oh = 3, .ow = 4};
	double want[48];
	ref_pool(&w, REF_AVG_INCLUDE, F(&n, c.x), want);
	expect_close("y_include", F(&n, c.yi), want, 48, 1e-6, 1e-6);
	ref_pool(&w, REF_AVG_EXCLUDE, F(&n, c.x), want);
	expect_close("y_exclude", F(&n, c.ye), want, 48, 1e-6, 1e-6);
	/* the corner window holds 4 real elements of 9, so there the modes differ by 9/4 */
	assert_true(fabsf(F(&n, c.yi)[0] * 9.f / 4.f - F(&n, c.ye)[0]) < 1e-5f);
	net_free(&n);
}

/* test_kernels_avgpool_bwd_fd -- dx of both modes against finite differences */
static void test_kernels_avgpool_bwd_fd(void **state)
{
	(void)state;
	struct net n;
	struct avg_ids c;
	avg_net(&n, &c);
	run(&n, c.bwd_i);
	run(&n, c.bwd_e);
	check_fd(&n, c.fwd_i, c.yi, F(&n, c.dy), c.x, c.dxi);
	check_fd(&n, c.fwd_e, c.ye, F(&n, c.dy), c.x, c.dxe);
	net_free(&n);
}

/* ---------------------------------------------------------------- batch norm */

/* bn_ids -- tensors and nodes of bn_net: batch norm of x[dims] (C = dims[1]) with its backward */
struct bn_ids {
	int32_t x, gamma, beta, y, mean, var, dy, dx, dgamma, dbeta, fwd, bwd;
	int64_t n, c, s;
};

/* bn_net -- the graph above with its kernels and random inputs */
static void bn_net(struct net *n, struct bn_ids *c, int nd, const int64_t *dims)
{
	atm_attrs a = {.epsilon = 1e-3f};
	int64_t ch[1] = {dims[1]};
	net_new(n, "bn");
	c->x = ten(n, "x", ATM_F32, ATM_KIND_INPUT, nd, dims);
	c->gamma = ten(n, "gamma", ATM_F32, ATM_KIND_PARAM, 1, ch);
	c->beta = ten(n, "beta", ATM_F32, ATM_KIND_PARAM, 1, ch);
	c->y = ten(n, "y", ATM_F32, ATM_KIND_ACTIVATION, nd, dims);
	c->mean = ten(n, "mean", ATM_F32, ATM_KIND_ACTIVATION, 1, ch);
	c->var = ten(n, "var", ATM_F32, ATM_KIND_ACTIVATION, 1, ch);
	c->dy = ten(n, "dy", ATM_F32, ATM_KIND_INPUT, nd, dims);
	c->dx = ten(n, "dx", ATM_F32, ATM_KIND_GRAD, nd, dims);
	c->dgamma = ten(n, "dgamma", ATM_F32, ATM_KIND_GRAD, 1, ch);
	c->dbeta = ten(n, "dbeta", ATM_F32, ATM_KIND_GRAD, 1, ch);
	c->fwd = nod(n, "bn", ATM_OP_BN_FWD, &a, IDS(c->x, c->gamma, c->beta),
	             IDS(c->y, c->mean, c->var));
	c->bwd = nod(n, "bn.bwd", ATM_OP_BN_BWD, &a, IDS(c->x, c->dy, c->gamma, c->mean, c->var),
	             IDS(c->dx, c->dgamma, c->dbeta));
	net_ready(n);
	fill(F(n, c->x), NE(n, c->x), -2, 2);
	fill(F(n, c->gamma), NE(n, c->gamma), 0.5f, 1.5f);
	fill(F(n, c->beta), NE(n, c->beta), -1, 1);
	fill(F(n, c->dy), NE(n, c->dy), -1, 1);
	c->n = dims[0];
	c->c = dims[1];
	c->s = NE(n, c->x) / (c->n * c->c);
}

/* bn_fwd_case -- y, mean and variance against the reference */
static void bn_fwd_case(int nd, const int64_t *dims)
{
	struct net n;
	struct bn_ids c;
	bn_net(&n, &c, nd, dims);
	run(&n, c.fwd);
	double *y = dalloc(NE(&n, c.x)), *mean = dalloc(c.c), *var = dalloc(c.c);
	ref_bn(c.n, c.c, c.s, 1e-3f, F(&n, c.x), F(&n, c.gamma), F(&n, c.beta), y, mean, var);
	expect_close("y", F(&n, c.y), y, NE(&n, c.x), 1e-5, 1e-4);
	expect_close("mean", F(&n, c.mean), mean, c.c, 1e-6, 1e-5);
	expect_close("var", F(&n, c.var), var, c.c, 1e-6, 1e-5);
	free(var);
	free(mean);
	free(y);
	net_free(&n);
}

/* test_kernels_bn_fwd -- y, mean, variance for 4-d, 2-d and 6-d inputs */
static void test_kernels_bn_fwd(void **state)
{
	(void)state;
	bn_fwd_case(4, (int64_t[]){4, 3, 3, 2});
	bn_fwd_case(2, (int64_t[]){6, 5});
	/* six dimensions: the kernel folds the trailing ones into one */
	bn_fwd_case(6, (int64_t[]){2, 3, 2, 1, 2, 2});
}

/* test_kernels_bn_bwd_fd -- dx, dgamma, dbeta against finite differences */
static void test_kernels_bn_bwd_fd(void **state)
{
	(void)state;
	struct net n;
	struct bn_ids c;
	bn_net(&n, &c, 4, (int64_t[]){4, 3, 3, 2});
	/* the backward takes the batch statistics the forward wrote */
	run(&n, c.fwd);
	run(&n, c.bwd);
	check_fd(&n, c.fwd, c.y, F(&n, c.dy), c.x, c.dx);
	check_fd(&n, c.fwd, c.y, F(&n, c.dy), c.gamma, c.dgamma);
	check_fd(&n, c.fwd, c.y, F(&n, c.dy), c.beta, c.dbeta);
	net_free(&n);
}

/* ---------------------------------------------------------------- concat, split, add */

/* cat_ids -- tensors and nodes of cat_net: three parts joined along axis
 * into y, and y's gradient split back */
struct cat_ids {
	int32_t part[3], y, dy, dpart[3], cat, split;
};

/* cat_net -- the graph above with its kernels and random inputs */
static void cat_net(struct net *n, struct cat_ids *c, int axis, const int64_t sizes[3])
{
	atm_attrs a = {.axis = axis};
	int64_t dims[4] = {2, 3, 2, 2}, total = 0;
	char name[16];
	net_new(n, "concat");
	for (int i = 0; i < 3; i++) {
		dims[axis] = sizes[i];
		total += sizes[i];
		snprintf(name, sizeof name, "x%d", i);
		c->part[i] = ten(n, name, ATM_F32, ATM_KIND_INPUT, 4, dims);
		snprintf(name, sizeof name, "dx%d", i);
		c->dpart[i] = ten(n, name, ATM_F32, ATM_KIND_GRAD, 4, dims);
	}
	dims[axis] = total;
	c->y = ten(n, "y", ATM_F32, ATM_KIND_ACTIVATION, 4, dims);
	c->dy = ten(n, "dy", ATM_F32, ATM_KIND_INPUT, 4, dims);
	c->cat = nod(n, "cat", ATM_OP_CONCAT, &a, 3, c->part, IDS(c->y));
	c->split = nod(n, "cat.bwd", ATM_OP_SPLIT, &a, IDS(c->dy), 3, c->dpart);
	net_ready(n);
	for (int i = 0; i < 3; i++)
		fill(F(n, c->part[i]), NE(n, c->part[i]), -1, 1);
	fill(F(n, c->dy), NE(n, c->dy), -1, 1);
}

/* cat_case -- concat against a copy loop, split must give the parts back */
static void cat_case(int axis, const int64_t sizes[3])
{
	struct net n;
	struct cat_ids c;
	cat_net(&n, &c, axis, sizes);
	run(&n, c.cat);
	/* reference: walk y in order; each outer index holds each part's slab in turn */
	const atm_tensor *y = atm_graph_tensor(n.g, c.y);
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= y->dims[d];
	for (int d = axis + 1; d < 4; d++)
		inner *= y->dims[d];
	float *want = calloc((size_t)y->n_elems, sizeof *want);
	assert_non_null(want);
	int64_t at = 0;
	for (int64_t o = 0; o < outer; o++)
		for (int i = 0; i < 3; i++) {
			int64_t slab = sizes[i] * inner;
			memcpy(want + at, F(&n, c.part[i]) + o * slab, (size_t)slab * sizeof(float));
			at += slab;
		}
	expect_same_floats("y", F(&n, c.y), want, y->n_elems);
	/* split of the concat's output gives the parts back bit for bit */
	memcpy(F(&n, c.dy), F(&n, c.y), (size_t)y->bytes);
	run(&n, c.split);
	for (int i = 0; i < 3; i++)
		expect_same_floats("split part", F(&n, c.dpart[i]), F(&n, c.part[i]), NE(&n, c.part[i]));
	free(want);
	net_free(&n);
}

/* test_kernels_concat_split -- concat along three axes is a copy; split undoes it */
static void test_kernels_concat_split(void **state)
{
	(void)state;
	cat_case(1, (int64_t[]){1, 3, 2});
	cat_case(3, (int64_t[]){2, 1, 4});
	cat_case(0, (int64_t[]){1, 2, 1});
}

/* test_kernels_split_fd -- split is the gradient of concat, by finite differences */
static void test_kernels_split_fd(void **state)
{
	(void)state;
	struct net n;
	struct cat_ids c;
	cat_net(&n, &c, 2, (int64_t[]){1, 2, 3});
	run(&n, c.split);
	for (int i = 0; i < 3; i++)
		check_fd(&n, c.cat, c.y, F(&n, c.dy), c.part[i], c.dpart[i]);
	net_free(&n);
}

/* test_kernels_add -- y = a + b exactly */
static void test_kernels_add(void **state)
{
	(void)state;
	struct net n;
	net_new(&n, "add");
	int32_t a = T_IN(&n, "a", 3, 4, 5);
	int32_t b = T_IN(&n, "b", 3, 4, 5);
	int32_t y = T_ACT(&n, "y", 3, 4, 5);
	int32_t add = nod(&n, "add", ATM_OP_ADD, NULL, IDS(a, b), IDS(y));
	net_ready(&n);
	fill(F(&n, a), 60, -1, 1);
	fill(F(&n, b), 60, -1, 1);
	run(&n, add);
	float want[60];
	for (int i = 0; i < 60; i++)
		want[i] = F(&n, a)[i] + F(&n, b)[i];
	/* one rounded float addition per element: exact */
	expect_same_floats("y", F(&n, y), want, 60);
	net_free(&n);
}

/* mul_case -- y = a * b with b of b_dims broadcast to a [2, 3, 4, 5]: y exactly, the gradient
 * of a (mul by b) and of b (mul_bwd, or mul where b has a's shape) against finite differences */
static void mul_case(int b_ndim, const int64_t *b_dims)
{
	struct net n;
	net_new(&n, "mul");
	int32_t a = T_IN(&n, "a", 2, 3, 4, 5), y = T_ACT(&n, "y", 2, 3, 4, 5);
	int32_t dy = T_IN(&n, "dy", 2, 3, 4, 5), da = T_GRAD(&n, "da", 2, 3, 4, 5);
	int32_t b = ten(&n, "b", ATM_F32, ATM_KIND_INPUT, b_ndim, b_dims);
	int32_t db = ten(&n, "db", ATM_F32, ATM_KIND_GRAD, b_ndim, b_dims);
	int64_t nb = NE(&n, b);
	bool same = nb == 120;
	int32_t fwd = nod(&n, "mul", ATM_OP_MUL, NULL, IDS(a, b), IDS(y));
	int32_t bwd_a = nod(&n, "mul.bwd_a", ATM_OP_MUL, NULL, IDS(dy, b), IDS(da));
	int32_t bwd_b = nod(&n, "mul.bwd_b", same ? ATM_OP_MUL : ATM_OP_MUL_BWD, NULL, IDS(dy, a),
	                    IDS(db));
	net_ready(&n);
	fill(F(&n, a), 120, -2, 2);
	fill(F(&n, b), nb, -2, 2);
	fill(F(&n, dy), 120, -1, 1);
	run(&n, fwd);
	/* b's offset for a's index: its digits in the dims b keeps, b's dims aligned at the end */
	float want[120];
	int64_t ad[4] = {2, 3, 4, 5}, bd[4];
	for (int d = 0; d < 4; d++)
		bd[d] = d < 4 - b_ndim ? 1 : b_dims[d - (4 - b_ndim)];
	for (int64_t i = 0; i < 120; i++) {
		int64_t rem = i, off = 0, mult = 1;
		for (int d = 3; d >= 0; d--) {
			int64_t digit = rem % ad[d];
			rem /= ad[d];
			if (bd[d] > 1) {
				off += digit * mult;
				mult *= bd[d];
			}
		}
		want[i] = F(&n, a)[i] * F(&n, b)[off];
	}
	/* one rounded float product per element: exact */
	expect_same_floats("y", F(&n, y), want, 120);
	run(&n, bwd_a);
	run(&n, bwd_b);
	check_fd(&n, fwd, y, F(&n, dy), a, da);
	check_fd(&n, fwd, y, F(&n, dy), b, db);
	net_free(&n);
}

/* test_kernels_mul -- the product of one shape (a gate), a per-channel scale [N, C, 1, 1] (a
 * squeeze-and-excitation), a vector over the last dim, and b with fewer dims than a */
static void test_kernels_mul(void **state)
{
	(void)state;
	mul_case(4, (int64_t[]){2, 3, 4, 5});
	mul_case(4, (int64_t[]){2, 3, 1, 1});
	mul_case(1, (int64_t[]){5});
	mul_case(3, (int64_t[]){3, 1, 5});
}

/* ---------------------------------------------------------------- loss and SGD */

/* xent_ids -- tensors and nodes of xent_net: softmax cross-entropy of
 * logits[5,6] against one-hot labels */
struct xent_ids {
	int32_t logits, labels, probs, loss, dlogits, fwd, bwd;
};

/* xent_net -- the graph above with its kernels and random inputs */
static void xent_net(struct net *n, struct xent_ids *c)
{
	net_new(n, "xent");
	c->logits = T_IN(n, "logits", 5, 6);
	c->labels = T_IN(n, "labels", 5, 6);
	c->probs = T_ACT(n, "probs", 5, 6);
	c->loss = ten(n, "loss", ATM_F32, ATM_KIND_OUTPUT, 1, (int64_t[]){1});
	c->dlogits = T_GRAD(n, "dlogits", 5, 6);
	c->fwd = nod(n, "xent", ATM_OP_SOFTMAX_XENT_FWD, NULL, IDS(c->logits, c->labels),
	             IDS(c->probs, c->loss));
	c->bwd = nod(n, "xent.bwd", ATM_OP_SOFTMAX_XENT_BWD, NULL, IDS(c->probs, c->labels),
	             IDS(c->dlogits));
	net_ready(n);
	fill(F(n, c->logits), 30, -3, 3);
	memset(F(n, c->labels), 0, 30 * sizeof(float));
	for (int r = 0; r < 5; r++)
		F(n, c->labels)[r * 6 + (int)(rng() % 6)] = 1.f;
}

/* test_kernels_softmax_xent_fwd -- probs and loss, with huge and underflowing logits */
static void test_kernels_softmax_xent_fwd(void **state)
{
	(void)state;
	struct net n;
	struct xent_ids c;
	xent_net(&n, &c);
	float *x = F(&n, c.logits), *l = F(&n, c.labels);
	/* row 3: logits so large that a naive exp overflows */
	for (int i = 0; i < 6; i++)
		x[18 + i] += 1000.f;
	/* row 4: the labelled class has a probability that underflows float: the
	 * loss must stay finite (about 200 for that row) */
	for (int i = 0; i < 6; i++)
		x[24 + i] = 0.f, l[24 + i] = 0.f;
	x[24 + 2] = -200.f;
	l[24 + 2] = 1.f;
	run(&n, c.fwd);
	double probs[30], loss;
	ref_softmax_xent(5, 6, x, l, probs, &loss);
	expect_close("probs", F(&n, c.probs), probs, 30, 1e-7, 1e-6);
	expect_close("loss", F(&n, c.loss), &loss, 1, 0, 1e-6);
	assert_true(loss > 200.0 / 5);
	for (int r = 0; r < 5; r++) {
		double s = 0;
		for (int i = 0; i < 6; i++)
			s += F(&n, c.probs)[r * 6 + i];
		assert_true(fabs(s - 1) < 1e-6);
	}
	net_free(&n);
}

/* test_kernels_softmax_xent_bwd_fd -- dlogits against finite differences of the loss */
static void test_kernels_softmax_xent_bwd_fd(void **state)
{
	(void)state;
	struct net n;
	struct xent_ids c;
	xent_net(&n, &c);
	run(&n, c.fwd);
	run(&n, c.bwd);
	/* the loss itself is the scalar: no dy */
	check_fd(&n, c.fwd, c.loss, NULL, c.logits, c.dlogits);
	net_free(&n);
}

/* ---------------------------------------------------------------- transformer ops */

/* T_I32 -- an i32 input (token ids, labels) */
#define T_I32(n, name, ...) ten((n), (name), ATM_I32, ATM_KIND_INPUT, \
	(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

/* ref_matmul -- c[i] = s op(a[i]) op(b[i]) (+ bias), matrices stored as the op says */
static void ref_matmul(const atm_matmul_dims *d, bool ta, bool tb, float s, const float *a,
                       const float *b, const float *bias, double *c)
{
	for (int64_t i = 0; i < d->batch; i++)
		for (int64_t r = 0; r < d->m; r++)
			for (int64_t col = 0; col < d->n; col++) {
				double sum = 0;
				for (int64_t k = 0; k < d->k; k++) {
					const float *ai = a + i * d->m * d->k, *bi = b + (d->b_batched ? i : 0) * d->k * d->n;
					double av = ta ? ai[k * d->m + r] : ai[r * d->k + k];
					double bv = tb ? bi[col * d->k + k] : bi[k * d->n + col];
					sum += av * bv;
				}
				c[(i * d->m + r) * d->n + col] = s * sum + (bias ? bias[col] : 0);
			}
}

/* matmul_case -- one matmul a x b -> c of the dims given against the reference, then its
 * gradients as the zoo's builder makes them (matmuls of dc with the other operand,
 * reduce_sum for the bias) against finite differences */
static void matmul_case(int na, const int64_t *ad, int nb, const int64_t *bd, int nc,
                        const int64_t *cd, bool ta, bool tb, float scale, bool bias)
{
	struct net n;
	atm_matmul_dims d;
	atm_attrs f = {.trans_a = ta, .trans_b = tb, .scale = scale};
	net_new(&n, "matmul");
	int32_t a = ten(&n, "a", ATM_F32, ATM_KIND_INPUT, na, ad);
	int32_t b = ten(&n, "b", ATM_F32, ATM_KIND_PARAM, nb, bd);
	int32_t bi = bias ? T_PARAM(&n, "bias", cd[nc - 1]) : -1;
	int32_t c = ten(&n, "c", ATM_F32, ATM_KIND_ACTIVATION, nc, cd);
	int32_t dc = ten(&n, "dc", ATM_F32, ATM_KIND_INPUT, nc, cd);
	int32_t da = ten(&n, "da", ATM_F32, ATM_KIND_GRAD, na, ad);
	int32_t db = ten(&n, "db", ATM_F32, ATM_KIND_GRAD, nb, bd);
	int32_t dbias = bias ? T_GRAD(&n, "dbias", cd[nc - 1]) : -1;
	int32_t fwd = bias ? nod(&n, "mm", ATM_OP_MATMUL, &f, IDS(a, b, bi), IDS(c))
	                   : nod(&n, "mm", ATM_OP_MATMUL, &f, IDS(a, b), IDS(c));
	atm_attrs ga = ta ? (atm_attrs){.trans_a = tb, .trans_b = true, .scale = scale}
	                  : (atm_attrs){.trans_b = !tb, .scale = scale};
	atm_attrs gb = tb ? (atm_attrs){.trans_a = true, .trans_b = ta, .scale = scale}
	                  : (atm_attrs){.trans_a = !ta, .scale = scale};
	int32_t bwd_a = ta ? nod(&n, "mm.da", ATM_OP_MATMUL, &ga, IDS(b, dc), IDS(da))
	                   : nod(&n, "mm.da", ATM_OP_MATMUL, &ga, IDS(dc, b), IDS(da));
	int32_t bwd_b = tb ? nod(&n, "mm.db", ATM_OP_MATMUL, &gb, IDS(dc, a), IDS(db))
	                   : nod(&n, "mm.db", ATM_OP_MATMUL, &gb, IDS(a, dc), IDS(db));
	int32_t bwd_bias = bias ? nod(&n, "mm.dbias", ATM_OP_REDUCE_SUM, NULL, IDS(dc), IDS(dbias)) : -1;
	net_ready(&n);
	fill(F(&n, a), NE(&n, a), -1, 1);
	fill(F(&n, b), NE(&n, b), -1, 1);
	fill(F(&n, dc), NE(&n, dc), -1, 1);
	if (bias)
		fill(F(&n, bi), NE(&n, bi), -1, 1);
	run(&n, fwd);
	assert_int_equal(atm_matmul_dims_of(n.g, atm_graph_node(n.g, fwd), &d), ATM_OK);
	double *want = dalloc(NE(&n, c));
	ref_matmul(&d, ta, tb, scale ? scale : 1.0f, F(&n, a), F(&n, b), bias ? F(&n, bi) : NULL, want);
	expect_close("c", F(&n, c), want, NE(&n, c), 1e-5, 1e-5);
	free(want);
	run(&n, bwd_a);
	run(&n, bwd_b);
	check_fd(&n, fwd, c, F(&n, dc), a, da);
	check_fd(&n, fwd, c, F(&n, dc), b, db);
	if (bias) {
		run(&n, bwd_bias);
		check_fd(&n, fwd, c, F(&n, dc), bi, dbias);
	}
	net_free(&n);
}

/* test_kernels_matmul -- the three forms, every transpose, a scale and a bias */
static void test_kernels_matmul(void **state)
{
	(void)state;
	/* batched (attention): [2, 3, 4] x [2, 4, 5], and each transposed */
	for (int t = 0; t < 4; t++) {
		bool ta = t & 1, tb = t & 2;
		int64_t ad[3] = {2, ta ? 4 : 3, ta ? 3 : 4}, bd[3] = {2, tb ? 5 : 4, tb ? 4 : 5};
		matmul_case(3, ad, 3, bd, 3, (int64_t[]){2, 3, 5}, ta, tb, t == 3 ? 0.5f : 0.0f, false);
	}
	/* linear: [2, 3, 4] x a [5, 4] weight transposed, with a bias; and not transposed */
	matmul_case(3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){5, 4}, 3, (int64_t[]){2, 3, 5}, false,
	            true, 1.0f, true);
	matmul_case(3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){4, 5}, 3, (int64_t[]){2, 3, 5}, false,
	            false, 1.0f, true);
	/* a scale with a bias: the bias is added after the scale */
	matmul_case(3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){5, 4}, 3, (int64_t[]){2, 3, 5}, false,
	            true, 0.5f, true);
	/* a weight gradient: rows folded, [2, 3, 5]^T x [2, 3, 4] -> [5, 4] */
	matmul_case(3, (int64_t[]){2, 3, 5}, 3, (int64_t[]){2, 3, 4}, 2, (int64_t[]){5, 4}, true,
	            false, 1.0f, false);
}

/* test_kernels_matmul_shapes -- inner dims that differ, a 2-d b under trans_a */
static void test_kernels_matmul_shapes(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	int32_t a, b, c, id;
	atm_attrs f = {.trans_b = true};
	assert_int_equal(atm_graph_new(&g, "mm"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "x", ATM_F32, 3, (int64_t[]){2, 3, 4},
	                                      ATM_KIND_INPUT, ATM_LOC_ANY, &a), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "w", ATM_F32, 2, (int64_t[]){5, 6}, ATM_KIND_PARAM,
	                                      ATM_LOC_ANY, &b), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "y", ATM_F32, 3, (int64_t[]){2, 3, 5},
	                                      ATM_KIND_ACTIVATION, ATM_LOC_ANY, &c), ATM_OK);
	assert_int_equal(atm_graph_add_node(g, "fc", ATM_OP_MATMUL, &f, 2, (int32_t[]){a, b}, 1, &c,
	                                    &id), ATM_OK);
	assert_int_equal(atm_graph_validate(g), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "node 0 ('fc', matmul)"));
	assert_non_null(strstr(atm_errmsg(), "matmul inner dimensions differ: a 'x' [2, 3, 4] gives "
	                                     "k = 4 but b 'w' [5, 6] (transposed) gives 6"));
	atm_graph_destroy(g);
}

/* ref_layer_norm -- y, mean and biased variance per row of [rows, c] */
static void ref_layer_norm(int64_t rows, int64_t c, float eps, const float *x, const float *g,
                           const float *b, double *y, double *mean, double *var)
{
	for (int64_t r = 0; r < rows; r++) {
		double m = 0, v = 0;
		for (int64_t j = 0; j < c; j++)
			m += x[r * c + j];
		m /= (double)c;
		for (int64_t j = 0; j < c; j++)
			v += (x[r * c + j] - m) * (x[r * c + j] - m);
		v /= (double)c;
		mean[r] = m, var[r] = v;
		for (int64_t j = 0; j < c; j++)
			y[r * c + j] = (x[r * c + j] - m) / sqrt(v + eps) * g[j] + b[j];
	}
}

/* test_kernels_layer_norm -- y and statistics against the reference, the backward against
 * finite differences, on [2, 3, 5] */
static void test_kernels_layer_norm(void **state)
{
	(void)state;
	struct net n;
	atm_attrs a = {.epsilon = 1e-3f};
	net_new(&n, "ln");
	int32_t x = T_IN(&n, "x", 2, 3, 5), g = T_PARAM(&n, "g", 5), b = T_PARAM(&n, "b", 5);
	int32_t y = T_ACT(&n, "y", 2, 3, 5), m = T_ACT(&n, "mean", 2, 3), v = T_ACT(&n, "var", 2, 3);
	int32_t dy = T_IN(&n, "dy", 2, 3, 5), dx = T_GRAD(&n, "dx", 2, 3, 5);
	int32_t dg = T_GRAD(&n, "dg", 5), db = T_GRAD(&n, "db", 5);
	int32_t fwd = nod(&n, "ln", ATM_OP_LAYER_NORM_FWD, &a, IDS(x, g, b), IDS(y, m, v));
	int32_t bwd = nod(&n, "ln.bwd", ATM_OP_LAYER_NORM_BWD, &a, IDS(x, dy, g, m, v), IDS(dx, dg, db));
	net_ready(&n);
	fill(F(&n, x), 30, -2, 2);
	fill(F(&n, g), 5, 0.5f, 1.5f);
	fill(F(&n, b), 5, -1, 1);
	fill(F(&n, dy), 30, -1, 1);
	run(&n, fwd);
	double wy[30], wm[6], wv[6];
	ref_layer_norm(6, 5, 1e-3f, F(&n, x), F(&n, g), F(&n, b), wy, wm, wv);
	expect_close("y", F(&n, y), wy, 30, 1e-5, 1e-4);
	expect_close("mean", F(&n, m), wm, 6, 1e-6, 1e-5);
	expect_close("var", F(&n, v), wv, 6, 1e-6, 1e-5);
	run(&n, bwd);
	check_fd(&n, fwd, y, F(&n, dy), x, dx);
	check_fd(&n, fwd, y, F(&n, dy), g, dg);
	check_fd(&n, fwd, y, F(&n, dy), b, db);
	net_free(&n);
}

/* test_kernels_rms_norm -- y and the reciprocal RMS against x / sqrt(mean x^2 + eps) * w per
 * row, the backward (dx and the scale's gradient) against finite differences */
static void test_kernels_rms_norm(void **state)
{
	(void)state;
	struct net n;
	atm_attrs a = {.epsilon = 1e-3f};
	net_new(&n, "rms");
	int32_t x = T_IN(&n, "x", 2, 3, 5), w = T_PARAM(&n, "w", 5);
	int32_t y = T_ACT(&n, "y", 2, 3, 5), r = T_ACT(&n, "rstd", 2, 3);
	int32_t dy = T_IN(&n, "dy", 2, 3, 5), dx = T_GRAD(&n, "dx", 2, 3, 5), dw = T_GRAD(&n, "dw", 5);
	int32_t fwd = nod(&n, "rms", ATM_OP_RMS_NORM_FWD, &a, IDS(x, w), IDS(y, r));
	int32_t bwd = nod(&n, "rms.bwd", ATM_OP_RMS_NORM_BWD, &a, IDS(x, dy, w, r), IDS(dx, dw));
	net_ready(&n);
	fill(F(&n, x), 30, -2, 2);
	fill(F(&n, w), 5, 0.5f, 1.5f);
	fill(F(&n, dy), 30, -1, 1);
	run(&n, fwd);
	double wy[30], wr[6];
	for (int row = 0; row < 6; row++) {
		const float *xr = F(&n, x) + row * 5;
		double ss = 0;
		for (int i = 0; i < 5; i++)
			ss += (double)xr[i] * xr[i];
		wr[row] = 1 / sqrt(ss / 5 + 1e-3);
		for (int i = 0; i < 5; i++)
			wy[row * 5 + i] = xr[i] * wr[row] * F(&n, w)[i];
	}
	expect_close("y", F(&n, y), wy, 30, 1e-5, 1e-4);
	expect_close("rstd", F(&n, r), wr, 6, 1e-6, 1e-5);
	run(&n, bwd);
	check_fd(&n, fwd, y, F(&n, dy), x, dx);
	check_fd(&n, fwd, y, F(&n, dy), w, dw);
	net_free(&n);
}

/* test_kernels_rope -- [2, 3, 4, 6] (T 4, D 6): y against the rotate-half rotation by
 * t * theta^(-2i/D) in double, the backward against finite differences */
static void test_kernels_rope(void **state)
{
	(void)state;
	struct net n;
	atm_attrs a = {.theta = 100.0f};
	net_new(&n, "rope");
	int32_t x = T_IN(&n, "x", 2, 3, 4, 6), y = T_ACT(&n, "y", 2, 3, 4, 6);
	int32_t dy = T_IN(&n, "dy", 2, 3, 4, 6), dx = T_GRAD(&n, "dx", 2, 3, 4, 6);
	int32_t fwd = nod(&n, "rope", ATM_OP_ROPE_FWD, &a, IDS(x), IDS(y));
	int32_t bwd = nod(&n, "rope.bwd", ATM_OP_ROPE_BWD, &a, IDS(dy), IDS(dx));
	net_ready(&n);
	fill(F(&n, x), 144, -2, 2);
	fill(F(&n, dy), 144, -1, 1);
	run(&n, fwd);
	double want[144];
	for (int r = 0; r < 24; r++) {
		const float *xr = F(&n, x) + r * 6;
		for (int i = 0; i < 3; i++) {
			double ang = (r % 4) * pow(100.0, -2.0 * i / 6);
			want[r * 6 + i] = xr[i] * cos(ang) - xr[i + 3] * sin(ang);
			want[r * 6 + i + 3] = xr[i + 3] * cos(ang) + xr[i] * sin(ang);
		}
	}
	expect_close("y", F(&n, y), want, 144, 1e-6, 1e-5);
	run(&n, bwd);
	check_fd(&n, fwd, y, F(&n, dy), x, dx);
	net_free(&n);
}

/* unary_case -- forward op against f(x), backward (from x or y) against finite differences */
static void unary_case(atm_op fwd_op, atm_op bwd_op, const atm_attrs *a, bool bwd_from_y,
                       double (*f)(double))
{
	struct net n;
	net_new(&n, atm_op_name(fwd_op));
	int32_t x = T_IN(&n, "x", 3, 7), y = T_ACT(&n, "y", 3, 7), dy = T_IN(&n, "dy", 3, 7);
	int32_t dx = T_GRAD(&n, "dx", 3, 7);
	int32_t fwd = nod(&n, "f", fwd_op, a, IDS(x), IDS(y));
	int32_t bwd = nod(&n, "f.bwd", bwd_op, a, IDS(bwd_from_y ? y : x, dy), IDS(dx));
	net_ready(&n);
	/* over [-5, 8], every kink of the piecewise activations (-3, 0, 3, 6) at least 0.05 from
	 * an input, where the finite difference would straddle it */
	fill(F(&n, x), 21, -5, 8);
	for (int i = 0; i < 21; i++)
		for (int kink = -3; kink <= 6; kink += 3)
			if (fabsf(F(&n, x)[i] - (float)kink) < 0.05f)
				F(&n, x)[i] = (float)kink + 0.1f;
	fill(F(&n, dy), 21, -1, 1);
	run(&n, fwd);
	double want[21];
	for (int i = 0; i < 21; i++)
		want[i] = f(F(&n, x)[i]);
	expect_close(atm_op_name(fwd_op), F(&n, y), want, 21, 1e-6, 1e-5);
	run(&n, bwd);
	check_fd(&n, fwd, y, F(&n, dy), x, dx);
	net_free(&n);
}

static double gelu_erf(double x)
{
	return 0.5 * x * (1 + erf(x / sqrt(2.0)));
}

static double gelu_tanh(double x)
{
	return 0.5 * x * (1 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

static double silu(double x)
{
	return x / (1 + exp(-x));
}

static double sigmoid(double x)
{
	return 1 / (1 + exp(-x));
}

static double clip(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

static double hardswish(double x)
{
	return x * clip(x + 3, 0, 6) / 6;
}

static double hardsigmoid(double x)
{
	return clip(x / 6 + 0.5, 0, 1);
}

static double relu6(double x)
{
	return clip(x, 0, 6);
}

/* test_kernels_gelu_tanh -- GELU in both forms, tanh and SiLU */
static void test_kernels_gelu_tanh(void **state)
{
	(void)state;
	atm_attrs t = {.tanh = true};
	unary_case(ATM_OP_GELU_FWD, ATM_OP_GELU_BWD, NULL, false, gelu_erf);
	unary_case(ATM_OP_GELU_FWD, ATM_OP_GELU_BWD, &t, false, gelu_tanh);
	unary_case(ATM_OP_TANH_FWD, ATM_OP_TANH_BWD, NULL, true, tanh);
	unary_case(ATM_OP_SILU_FWD, ATM_OP_SILU_BWD, NULL, false, silu);
	unary_case(ATM_OP_SIGMOID_FWD, ATM_OP_SIGMOID_BWD, NULL, true, sigmoid);
	unary_case(ATM_OP_HARDSWISH_FWD, ATM_OP_HARDSWISH_BWD, NULL, false, hardswish);
	unary_case(ATM_OP_HARDSIGMOID_FWD, ATM_OP_HARDSIGMOID_BWD, NULL, false, hardsigmoid);
	unary_case(ATM_OP_RELU6_FWD, ATM_OP_RELU6_BWD, NULL, true, relu6);
}

/* softmax_case -- [2, 4, 4] scores, causal or not: y against the reference (masked entries
 * exactly 0), the backward from y against finite differences */
static void softmax_case(bool causal)
{
	struct net n;
	atm_attrs a = {.causal = causal};
	net_new(&n, "softmax");
	int32_t x = T_IN(&n, "x", 2, 4, 4), y = T_ACT(&n, "y", 2, 4, 4), dy = T_IN(&n, "dy", 2, 4, 4);
	int32_t dx = T_GRAD(&n, "dx", 2, 4, 4);
	int32_t fwd = nod(&n, "sm", ATM_OP_SOFTMAX_FWD, &a, IDS(x), IDS(y));
	int32_t bwd = nod(&n, "sm.bwd", ATM_OP_SOFTMAX_BWD, NULL, IDS(y, dy), IDS(dx));
	net_ready(&n);
	fill(F(&n, x), 32, -3, 3);
	fill(F(&n, dy), 32, -1, 1);
	run(&n, fwd);
	double want[32];
	for (int r = 0; r < 8; r++) {
		int valid = causal ? r % 4 + 1 : 4;
		double mx = -INFINITY, sum = 0;
		for (int j = 0; j < valid; j++)
			mx = fmax(mx, F(&n, x)[r * 4 + j]);
		for (int j = 0; j < valid; j++)
			sum += exp(F(&n, x)[r * 4 + j] - mx);
		for (int j = 0; j < 4; j++)
			want[r * 4 + j] = j < valid ? exp(F(&n, x)[r * 4 + j] - mx) / sum : 0.0;
	}
	expect_close("y", F(&n, y), want, 32, 1e-7, 1e-5);
	for (int r = 0; causal && r < 8; r++)
		for (int j = r % 4 + 1; j < 4; j++)
			assert_true(F(&n, y)[r * 4 + j] == 0.0f);
	run(&n, bwd);
	check_fd(&n, fwd, y, F(&n, dy), x, dx);
	net_free(&n);
}

/* test_kernels_softmax -- over the last dim, with and without the causal mask */
static void test_kernels_softmax(void **state)
{
	(void)state;
	softmax_case(false);
	softmax_case(true);
}

/* test_kernels_embedding -- rows by id (repeats summed in the backward) and by position,
 * against the reference and finite differences; an id past the table is refused */
static void test_kernels_embedding(void **state)
{
	(void)state;
	struct net n;
	atm_attrs pos = {.positions = true};
	net_new(&n, "emb");
	int32_t tab = T_PARAM(&n, "table", 5, 3), ids = T_I32(&n, "ids", 2, 3);
	int32_t ptab = T_PARAM(&n, "positions", 4, 3);
	int32_t y = T_ACT(&n, "y", 2, 3, 3), py = T_ACT(&n, "py", 2, 3, 3);
	int32_t dy = T_IN(&n, "dy", 2, 3, 3), dtab = T_GRAD(&n, "dtable", 5, 3);
	int32_t dptab = T_GRAD(&n, "dpositions", 4, 3);
	int32_t fwd = nod(&n, "emb", ATM_OP_EMBEDDING_FWD, NULL, IDS(tab, ids), IDS(y));
	int32_t bwd = nod(&n, "emb.bwd", ATM_OP_EMBEDDING_BWD, NULL, IDS(dy, ids), IDS(dtab));
	int32_t pfwd = nod(&n, "pos", ATM_OP_EMBEDDING_FWD, &pos, IDS(ptab), IDS(py));
	int32_t pbwd = nod(&n, "pos.bwd", ATM_OP_EMBEDDING_BWD, &pos, IDS(dy), IDS(dptab));
	net_ready(&n);
	fill(F(&n, tab), 15, -1, 1);
	fill(F(&n, ptab), 12, -1, 1);
	fill(F(&n, dy), 18, -1, 1);
	int32_t *id = (int32_t *)F(&n, ids);
	const int32_t chosen[6] = {4, 0, 4, 2, 2, 4};
	memcpy(id, chosen, sizeof chosen);
	run(&n, fwd);
	run(&n, pfwd);
	double want[18], pwant[18];
	for (int r = 0; r < 6; r++)
		for (int j = 0; j < 3; j++) {
			want[r * 3 + j] = F(&n, tab)[chosen[r] * 3 + j];
			pwant[r * 3 + j] = F(&n, ptab)[(r % 3) * 3 + j];
		}
	expect_close("y", F(&n, y), want, 18, 0, 0);
	expect_close("positions y", F(&n, py), pwant, 18, 0, 0);
	run(&n, bwd);
	run(&n, pbwd);
	check_fd(&n, fwd, y, F(&n, dy), tab, dtab);
	check_fd(&n, pfwd, py, F(&n, dy), ptab, dptab);
	for (int j = 0; j < 3; j++) /* row 3 of the position table is past the sequence */
		assert_true(F(&n, dptab)[9 + j] == 0.0f);
	id[4] = 5;
	void *in[2] = {F(&n, tab), id}, *out[1] = {F(&n, y)};
	assert_int_equal(atm_kernel_run(n.k[fwd], in, out, NULL), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "node 'emb' (embedding_fwd): token id 5 at position 4 "
	                                     "is outside the 5 rows of the table"));
	net_free(&n);
}

/* test_kernels_permute_narrow -- heads split from [2, 3, 8] into [2, 2, 3, 4] and joined
 * back (exact), a narrow along the sequence and its zero-padded backward */
static void test_kernels_permute_narrow(void **state)
{
	(void)state;
	struct net n;
	atm_attrs split = {.n_perm = 4, .perm = {0, 2, 1, 3}}, ax = {.axis = 1};
	net_new(&n, "perm");
	int32_t x = T_IN(&n, "x", 2, 3, 8), h = T_ACT(&n, "heads", 2, 2, 3, 4);
	int32_t back = T_ACT(&n, "joined", 2, 3, 8), nx = T_ACT(&n, "first", 2, 2, 8);
	int32_t dy = T_IN(&n, "dfirst", 2, 2, 8), dx = T_GRAD(&n, "dx", 2, 3, 8);
	int32_t p1 = nod(&n, "split", ATM_OP_PERMUTE, &split, IDS(x), IDS(h));
	int32_t p2 = nod(&n, "join", ATM_OP_PERMUTE, &split, IDS(h), IDS(back));
	int32_t nf = nod(&n, "narrow", ATM_OP_NARROW_FWD, &ax, IDS(x), IDS(nx));
	int32_t nb = nod(&n, "narrow.bwd", ATM_OP_NARROW_BWD, &ax, IDS(dy), IDS(dx));
	net_ready(&n);
	fill_distinct(F(&n, x), 48);
	fill(F(&n, dy), 32, -1, 1);
	run(&n, p1);
	run(&n, p2);
	run(&n, nf);
	run(&n, nb);
	for (int b = 0; b < 2; b++)
		for (int hh = 0; hh < 2; hh++)
			for (int t = 0; t < 3; t++)
				for (int d = 0; d < 4; d++)
					assert_true(F(&n, h)[((b * 2 + hh) * 3 + t) * 4 + d] ==
					            F(&n, x)[(b * 3 + t) * 8 + hh * 4 + d]);
	expect_same_floats("joined", F(&n, back), F(&n, x), 48);
	for (int b = 0; b < 2; b++) {
		expect_same_floats("first", F(&n, nx) + b * 16, F(&n, x) + b * 24, 16);
		expect_same_floats("dx", F(&n, dx) + b * 24, F(&n, dy) + b * 16, 16);
		for (int j = 16; j < 24; j++)
			assert_true(F(&n, dx)[b * 24 + j] == 0.0f);
	}
	net_free(&n);
}

/* test_kernels_token_xent -- log-probabilities and the mean loss of labels per position
 * against the reference, the gradient against finite differences; a label past the
 * classes is refused */
static void test_kernels_token_xent(void **state)
{
	(void)state;
	struct net n;
	net_new(&n, "txent");
	int32_t lo = T_IN(&n, "logits", 2, 3, 5), lab = T_I32(&n, "labels", 2, 3);
	int32_t lp = T_ACT(&n, "logp", 2, 3, 5), dl = T_GRAD(&n, "dlogits", 2, 3, 5);
	int32_t loss = ten(&n, "loss", ATM_F32, ATM_KIND_OUTPUT, 1, (int64_t[]){1});
	int32_t fwd = nod(&n, "xent", ATM_OP_TOKEN_XENT_FWD, NULL, IDS(lo, lab), IDS(lp, loss));
	int32_t bwd = nod(&n, "xent.bwd", ATM_OP_TOKEN_XENT_BWD, NULL, IDS(lp, lab), IDS(dl));
	net_ready(&n);
	fill(F(&n, lo), 30, -3, 3);
	int32_t *l = (int32_t *)F(&n, lab);
	for (int r = 0; r < 6; r++)
		l[r] = (int32_t)(rng() % 5);
	run(&n, fwd);
	double want[30], total = 0;
	for (int r = 0; r < 6; r++) {
		double mx = -INFINITY, sum = 0;
		for (int j = 0; j < 5; j++)
			mx = fmax(mx, F(&n, lo)[r * 5 + j]);
		for (int j = 0; j < 5; j++)
			sum += exp(F(&n, lo)[r * 5 + j] - mx);
		for (int j = 0; j < 5; j++)
			want[r * 5 + j] = F(&n, lo)[r * 5 + j] - mx - log(sum);
		total -= want[r * 5 + l[r]];
	}
	total /= 6;
	/* oneDNN's log-softmax takes its exp and log in float: a few 1e-6 off near 0 */
	expect_close("logp", F(&n, lp), want, 30, 1e-5, 1e-5);
	expect_close("loss", F(&n, loss), &total, 1, 0, 1e-6);
	run(&n, bwd);
	check_fd(&n, fwd, loss, NULL, lo, dl);
	l[2] = 5;
	void *in[2] = {F(&n, lo), l}, *out[2] = {F(&n, lp), F(&n, loss)};
	assert_int_equal(atm_kernel_run(n.k[fwd], in, out, NULL), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "label 5 at position 2 is outside the 5 classes"));
	net_free(&n);
}

/* test_kernels_sgd -- w -= lr * dw in place; lr 0 leaves w alone */
static void test_kernels_sgd(void **state)
{
	(void)state;
	struct net n;
	atm_attrs a = {.lr = 0.1f}, zero = {.lr = 0.f};
	net_new(&n, "sgd");
	int32_t w = T_PARAM(&n, "w", 3, 7);
	int32_t v = T_PARAM(&n, "v", 3, 7);
	int32_t dw = T_IN(&n, "dw", 3, 7);
	int32_t sgd = nod(&n, "sgd.w", ATM_OP_SGD, &a, IDS(w, dw), 0, NULL);
	int32_t still = nod(&n, "sgd.v", ATM_OP_SGD, &zero, IDS(v, dw), 0, NULL);
	net_ready(&n);
	fill(F(&n, w), 21, -1, 1);
	fill(F(&n, dw), 21, -1, 1);
	memcpy(F(&n, v), F(&n, w), 21 * sizeof(float));
	double want[21];
	for (int i = 0; i < 21; i++)
		want[i] = (double)F(&n, w)[i] - 0.1 * (double)F(&n, dw)[i];
	run(&n, sgd);
	run(&n, still);
	expect_close("w", F(&n, w), want, 21, 1e-7, 1e-6);
	for (int i = 0; i < 21; i++)
		want[i] = F(&n, v)[i];
	expect_close("v (lr 0)", F(&n, v), want, 21, 0, 0);
	net_free(&n);
}

/* test_kernels_updates -- SGD with weight decay and momentum, and AdamW at its third step, against
 * PyTorch's formulas in double: the parameter and every state, AdamW's step counted */
static void test_kernels_updates(void **state)
{
	(void)state;
	struct net n;
	const atm_tensor_kind ST = ATM_KIND_OPTIMIZER_STATE;
	atm_attrs mom = {.lr = 0.1f, .momentum = 0.8f, .weight_decay = 0.01f};
	atm_attrs adamw = {.lr = 0.01f, .beta1 = 0.9f, .beta2 = 0.99f, .epsilon = 1e-6f,
	                   .weight_decay = 0.1f};
	net_new(&n, "updates");
	int32_t w = T_PARAM(&n, "w", 3, 7), u = T_PARAM(&n, "u", 3, 7);
	int32_t dw = T_IN(&n, "dw", 3, 7);
	int32_t buf = ten(&n, "w.momentum_buffer", ATM_F32, ST, 2, (int64_t[]){3, 7});
	int32_t m = ten(&n, "u.exp_avg", ATM_F32, ST, 2, (int64_t[]){3, 7});
	int32_t v = ten(&n, "u.exp_avg_sq", ATM_F32, ST, 2, (int64_t[]){3, 7});
	int32_t st = ten(&n, "u.step", ATM_F32, ST, 1, (int64_t[]){1});
	int32_t k_mom = nod(&n, "w.sgd_momentum", ATM_OP_SGD_MOMENTUM, &mom, IDS(w, dw, buf), 0, NULL);
	int32_t k_adamw = nod(&n, "u.adamw", ATM_OP_ADAMW, &adamw, IDS(u, dw, m, v, st), 0, NULL);
	net_ready(&n);
	fill(F(&n, w), 21, -1, 1);
	fill(F(&n, u), 21, -1, 1);
	fill(F(&n, dw), 21, -1, 1);
	fill(F(&n, buf), 21, -0.5, 0.5);
	fill(F(&n, m), 21, -0.5, 0.5);
	fill(F(&n, v), 21, 0, 0.5);
	F(&n, st)[0] = 2; /* two steps taken: this is the third */
	double w_want[21], b_want[21], u_want[21], m_want[21], v_want[21], t = 3;
	for (int i = 0; i < 21; i++) {
		double g = F(&n, dw)[i] + 0.01 * F(&n, w)[i];
		b_want[i] = 0.8 * F(&n, buf)[i] + g;
		w_want[i] = F(&n, w)[i] - 0.1 * b_want[i];
		double gu = F(&n, dw)[i], x = F(&n, u)[i] * (1 - 0.01 * 0.1);
		m_want[i] = 0.9 * F(&n, m)[i] + 0.1 * gu;
		v_want[i] = 0.99 * F(&n, v)[i] + 0.01 * gu * gu;
		double denom = sqrt(v_want[i]) / sqrt(1 - pow(0.99, t)) + 1e-6;
		u_want[i] = x - 0.01 / (1 - pow(0.9, t)) * m_want[i] / denom;
	}
	run(&n, k_mom);
	run(&n, k_adamw);
	expect_close("w", F(&n, w), w_want, 21, 1e-6, 1e-5);
	expect_close("momentum_buffer", F(&n, buf), b_want, 21, 1e-6, 1e-5);
	expect_close("u", F(&n, u), u_want, 21, 1e-6, 1e-5);
	expect_close("exp_avg", F(&n, m), m_want, 21, 1e-6, 1e-5);
	expect_close("exp_avg_sq", F(&n, v), v_want, 21, 1e-6, 1e-5);
	double three = 3;
	expect_close("step", F(&n, st), &three, 1, 0, 0);
	net_free(&n);
}

/* ---------------------------------------------------------------- determinism */

/* step_net -- one training step of a small network using every op:
 * conv+bias, bn, relu, max pool, conv, residual add, avg pool, concat, inner
 * product, softmax cross-entropy, all their backwards and SGD on every param */
static void step_net(struct net *n)
{
	atm_attrs c3 = {.stride = {1, 1}, .pad = {1, 1, 1, 1}};
	atm_attrs bn = {.epsilon = 1e-5f};
	atm_attrs mp = {.kernel = {2, 2}, .stride = {2, 2}};
	atm_attrs ap = {.kernel = {3, 3}, .stride = {1, 1}, .pad = {1, 1, 1, 1}, .exclude_pad = true};
	atm_attrs cat = {.axis = 1};
	atm_attrs sgd = {.lr = 0.05f};
	net_new(n, "step");
	int32_t x = T_IN(n, "x", 8, 3, 16, 16);
	int32_t labels = T_IN(n, "labels", 8, 10);
	int32_t w1 = T_PARAM(n, "w1", 16, 3, 3, 3), b1 = T_PARAM(n, "b1", 16);
	int32_t g1 = T_PARAM(n, "g1", 16), be1 = T_PARAM(n, "be1", 16);
	int32_t w2 = T_PARAM(n, "w2", 16, 16, 3, 3);
	int32_t wf = T_PARAM(n, "wf", 10, 2048), bf = T_PARAM(n, "bf", 10);
	int32_t c1 = T_ACT(n, "c1", 8, 16, 16, 16);
	int32_t n1 = T_ACT(n, "n1", 8, 16, 16, 16), m1 = T_ACT(n, "m1", 16), v1 = T_ACT(n, "v1", 16);
	int32_t r1 = T_ACT(n, "r1", 8, 16, 16, 16);
	int32_t p1 = T_ACT(n, "p1", 8, 16, 8, 8), ws1 = T_WS(n, "ws1", 8, 16, 8, 8);
	int32_t c2 = T_ACT(n, "c2", 8, 16, 8, 8);
	int32_t a = T_ACT(n, "a", 8, 16, 8, 8);
	int32_t q = T_ACT(n, "q", 8, 16, 8, 8);
	int32_t k = T_ACT(n, "k", 8, 32, 8, 8);
	int32_t lo = T_ACT(n, "logits", 8, 10), pr = T_ACT(n, "probs", 8, 10);
	int32_t loss = ten(n, "loss", ATM_F32, ATM_KIND_OUTPUT, 1, (int64_t[]){1});
	int32_t dlo = T_GRAD(n, "dlogits", 8, 10);
	int32_t dk = T_GRAD(n, "dk", 8, 32, 8, 8);
	int32_t dwf = T_GRAD(n, "dwf", 10, 2048), dbf = T_GRAD(n, "dbf", 10);
	int32_t da1 = T_GRAD(n, "da1", 8, 16, 8, 8), dq = T_GRAD(n, "dq", 8, 16, 8, 8);
	int32_t da2 = T_GRAD(n, "da2", 8, 16, 8, 8), da = T_GRAD(n, "da", 8, 16, 8, 8);
	int32_t dpc = T_GRAD(n, "dp1_conv", 8, 16, 8, 8), dw2 = T_GRAD(n, "dw2", 16, 16, 3, 3);
	int32_t dp1 = T_GRAD(n, "dp1", 8, 16, 8, 8);
	int32_t dr1 = T_GRAD(n, "dr1", 8, 16, 16, 16), dn1 = T_GRAD(n, "dn1", 8, 16, 16, 16);
	int32_t dc1 = T_GRAD(n, "dc1", 8, 16, 16, 16);
	int32_t dg1 = T_GRAD(n, "dg1", 16), dbe1 = T_GRAD(n, "dbe1", 16);
	int32_t dw1 = T_GRAD(n, "dw1", 16, 3, 3, 3), db1 = T_GRAD(n, "db1", 16);
	int32_t dx = T_GRAD(n, "dx", 8, 3, 16, 16);

	nod(n, "conv1", ATM_OP_CONV_FWD, &c3, IDS(x, w1, b1), IDS(c1));
	nod(n, "bn1", ATM_OP_BN_FWD, &bn, IDS(c1, g1, be1), IDS(n1, m1, v1));
	nod(n, "relu1", ATM_OP_RELU_FWD, NULL, IDS(n1), IDS(r1));
	nod(n, "pool1", ATM_OP_MAXPOOL_FWD, &mp, IDS(r1), IDS(p1, ws1));
	nod(n, "conv2", ATM_OP_CONV_FWD, &c3, IDS(p1, w2), IDS(c2));
	nod(n, "res", ATM_OP_ADD, NULL, IDS(c2, p1), IDS(a));
	nod(n, "avg", ATM_OP_AVGPOOL_FWD, &ap, IDS(a), IDS(q));
	nod(n, "cat", ATM_OP_CONCAT, &cat, IDS(a, q), IDS(k));
	nod(n, "fc", ATM_OP_IP_FWD, NULL, IDS(k, wf, bf), IDS(lo));
	nod(n, "loss", ATM_OP_SOFTMAX_XENT_FWD, NULL, IDS(lo, labels), IDS(pr, loss));
	nod(n, "loss.bwd", ATM_OP_SOFTMAX_XENT_BWD, NULL, IDS(pr, labels), IDS(dlo));
	nod(n, "fc.bwd_data", ATM_OP_IP_BWD_DATA, NULL, IDS(dlo, wf), IDS(dk));
	nod(n, "fc.bwd_w", ATM_OP_IP_BWD_WEIGHTS, NULL, IDS(k, dlo), IDS(dwf, dbf));
	nod(n, "cat.bwd", ATM_OP_SPLIT, &cat, IDS(dk), IDS(da1, dq));
	nod(n, "avg.bwd", ATM_OP_AVGPOOL_BWD, &ap, IDS(dq), IDS(da2));
	nod(n, "grad_a", ATM_OP_ADD, NULL, IDS(da1, da2), IDS(da));
	nod(n, "conv2.bwd_data", ATM_OP_CONV_BWD_DATA, &c3, IDS(da, w2), IDS(dpc));
	nod(n, "conv2.bwd_w", ATM_OP_CONV_BWD_WEIGHTS, &c3, IDS(p1, da), IDS(dw2));
	nod(n, "grad_p1", ATM_OP_ADD, NULL, IDS(dpc, da), IDS(dp1));
	nod(n, "pool1.bwd", ATM_OP_MAXPOOL_BWD, &mp, IDS(dp1, ws1), IDS(dr1));
	nod(n, "relu1.bwd", ATM_OP_RELU_BWD, NULL, IDS(r1, dr1), IDS(dn1));
	nod(n, "bn1.bwd", ATM_OP_BN_BWD, &bn, IDS(c1, dn1, g1, m1, v1), IDS(dc1, dg1, dbe1));
	nod(n, "conv1.bwd_w", ATM_OP_CONV_BWD_WEIGHTS, &c3, IDS(x, dc1), IDS(dw1, db1));
	nod(n, "conv1.bwd_data", ATM_OP_CONV_BWD_DATA, &c3, IDS(dc1, w1), IDS(dx));
	int32_t params[][2] = {{w1, dw1}, {b1, db1}, {g1, dg1}, {be1, dbe1},
	                       {w2, dw2}, {wf, dwf}, {bf, dbf}};
	for (int i = 0; i < 7; i++)
		nod(n, atm_graph_tensor(n->g, params[i][0])->name, ATM_OP_SGD, &sgd, IDS(params[i][0],
		    params[i][1]), 0, NULL);
	net_ready(n);
	/* inputs and parameters; every other buffer starts as NaN */
	fill(F(n, x), NE(n, x), -1, 1);
	memset(F(n, labels), 0, (size_t)NE(n, labels) * sizeof(float));
	for (int r = 0; r < 8; r++)
		F(n, labels)[r * 10 + r] = 1.f;
	for (int i = 0; i < 7; i++)
		fill(F(n, params[i][0]), NE(n, params[i][0]), -0.3f, 0.3f);
	fill(F(n, g1), 16, 0.5f, 1.5f);
}

/* run_all -- every node in schedule order on the active buffer set */
static void run_all(struct net *n)
{
	for (int32_t i = 0; i < atm_graph_n_nodes(n->g); i++)
		run(n, i);
}

/* test_kernels_deterministic_across_addresses -- a whole step on two buffer sets is bitwise equal */
static void test_kernels_deterministic_across_addresses(void **state)
{
	(void)state;
	struct net n;
	step_net(&n);
	/* set 1: other addresses (shifted by cache lines, not only pages), other
	 * garbage in outputs and scratch, same inputs and parameters */
	net_buffers(&n, 1, 5);
	for (int32_t t = 0; t < atm_graph_n_tensors(n.g); t++) {
		const atm_tensor *tt = atm_graph_tensor(n.g, t);
		if (atm_tensor_is_persistent(tt) && tt->kind != ATM_KIND_OUTPUT)
			memcpy(n.buf[1][t], n.buf[0][t], (size_t)tt->bytes);
		else
			memset(n.buf[1][t], 0x3c, (size_t)tt->bytes);
	}
	for (int i = 0; i < MAX_N; i++)
		if (n.scratch[1][i])
			memset(n.scratch[1][i], 0x5a, (size_t)atm_kernel_scratch_bytes(n.k[i]));
	n.set = 0;
	run_all(&n);
	n.set = 1;
	run_all(&n);
	for (int32_t t = 0; t < atm_graph_n_tensors(n.g); t++) {
		const atm_tensor *tt = atm_graph_tensor(n.g, t);
		assert_ptr_not_equal(n.buf[0][t], n.buf[1][t]);
		if (memcmp(n.buf[0][t], n.buf[1][t], (size_t)tt->bytes) != 0)
			fail_msg("tensor '%s' differs between the two buffer sets", tt->name);
	}
	/* and the step did something: a finite loss, parameters moved */
	float loss = F(&n, atm_graph_find_tensor(n.g, "loss"))[0];
	assert_true(isfinite(loss) && loss > 0);
	net_free(&n);
}

/* ---------------------------------------------------------------- errors */

/* test_kernels_unsupported_pool_padding -- padding as large as the window is refused by name, by the checker and the kernel */
static void test_kernels_unsupported_pool_padding(void **state)
{
	(void)state;
	struct net n;
	static char sentinel;
	atm_kernel *k = (atm_kernel *)(void *)&sentinel;
	atm_attrs a = {.kernel = {2, 2}, .pad = {2, 0, 0, 0}};
	net_new(&n, "bad");
	int32_t x = T_IN(&n, "x", 1, 1, 4, 4);
	int32_t y = T_ACT(&n, "y", 1, 1, 5, 3);
	int32_t ws = T_WS(&n, "ws", 1, 1, 5, 3);
	nod(&n, "pool.bad", ATM_OP_MAXPOOL_FWD, &a, IDS(x), IDS(y, ws));
	/* the graph checker refuses it, and a kernel asked anyway refuses it too */
	assert_int_equal(atm_graph_validate(n.g), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "must be smaller than the 2x2 window"));
	assert_int_equal(atm_kernel_new(&k, cpu, n.g, 0), ATM_E_UNSUPPORTED);
	assert_null(k);
	assert_non_null(strstr(atm_errmsg(), "node 'pool.bad' (maxpool_fwd)"));
	assert_non_null(strstr(atm_errmsg(), "padding"));
	net_free(&n);
}

/* test_kernels_every_op_has_a_kernel -- the CPU backend runs every op: the op table of
 * kernels.c has an entry for each, wherever the op sits in the enum */
static void test_kernels_every_op_has_a_kernel(void **state)
{
	(void)state;
	for (int op = 0; op < ATM_N_OPS; op++)
		if (!atm_cpu_supports((atm_op)op))
			fail_msg("op %s has no CPU kernel (runtime/cpu/kernels.c)", atm_op_name((atm_op)op));
	assert_false(atm_cpu_supports(ATM_N_OPS));
	assert_false(atm_cpu_supports((atm_op)-1));
}

/* test_kernels_bad_node -- a node id out of range is a usage error */
static void test_kernels_bad_node(void **state)
{
	(void)state;
	struct net n;
	static char sentinel;
	atm_kernel *k = (atm_kernel *)(void *)&sentinel;
	net_new(&n, "empty");
	assert_int_equal(atm_kernel_new(&k, cpu, n.g, 0), ATM_E_USAGE);
	assert_null(k);
	assert_non_null(strstr(atm_errmsg(), "out of range"));
	net_free(&n);
}

/* test_kernels_run_checks_buffers -- a missing output or scratch buffer is a usage error */
static void test_kernels_run_checks_buffers(void **state)
{
	(void)state;
	struct net n;
	struct conv_ids c;
	conv_net(&n, &c);
	void *in[2] = {F(&n, c.x), F(&n, c.dy)}, *out[2] = {F(&n, c.dw), NULL};
	atm_status rc = atm_kernel_run(n.k[c.bwd_w], in, out, n.scratch[0][c.bwd_w]);
	assert_int_equal(rc, ATM_E_USAGE);
	assert_non_null(strstr(atm_errmsg(), "node 'conv.bwd_w' (conv_bwd_weights): output 1"));
	/* a kernel that needs scratch refuses to run without it */
	for (int32_t i = 0; i < atm_graph_n_nodes(n.g); i++) {
		if (atm_kernel_scratch_bytes(n.k[i]) == 0)
			continue;
		const atm_node *nd = atm_graph_node(n.g, i);
		void *ins[3], *outs[2];
		for (int j = 0; j < nd->n_in; j++)
			ins[j] = F(&n, nd->in[j]);
		for (int j = 0; j < nd->n_out; j++)
			outs[j] = F(&n, nd->out[j]);
		assert_int_equal(atm_kernel_run(n.k[i], ins, outs, NULL), ATM_E_USAGE);
		assert_non_null(strstr(atm_errmsg(), "scratch"));
	}
	net_free(&n);
}

/* test_kernels_destroy_null -- destroying NULL is fine; two engines may coexist */
static void test_kernels_destroy_null(void **state)
{
	(void)state;
	atm_kernel_destroy(NULL);
	atm_cpu_destroy(NULL);
	/* and a second engine next to the suite's one is fine */
	atm_cpu *other = NULL;
	assert_int_equal(atm_cpu_new(&other), ATM_OK);
	assert_non_null(other);
	atm_cpu_destroy(other);
}

/* main -- the suite, on one engine */
int main(int argc, char **argv)
{
	(void)argc;
	/* with spinning workers on a busy 2-core machine (ctest -j, parallel builds) each tiny
	 * primitive cost a scheduler time slice: this suite went from 0.3 s to 20 s */
	atm_openmp_passive(argv);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_kernels_conv_fwd, reseed),
		cmocka_unit_test_setup(test_kernels_bf16, reseed),
		cmocka_unit_test_setup(test_kernels_conv_bwd_data_fd, reseed),
		cmocka_unit_test_setup(test_kernels_conv_bwd_weights_fd, reseed),
		cmocka_unit_test_setup(test_kernels_conv_groups, reseed),
		cmocka_unit_test_setup(test_kernels_ip_fwd, reseed),
		cmocka_unit_test_setup(test_kernels_ip_bwd_fd, reseed),
		cmocka_unit_test_setup(test_kernels_relu, reseed),
		cmocka_unit_test_setup(test_kernels_maxpool_fwd, reseed),
		cmocka_unit_test_setup(test_kernels_maxpool_bwd_fd, reseed),
		cmocka_unit_test_setup(test_kernels_avgpool_fwd, reseed),
		cmocka_unit_test_setup(test_kernels_avgpool_bwd_fd, reseed),
		cmocka_unit_test_setup(test_kernels_bn_fwd, reseed),
		cmocka_unit_test_setup(test_kernels_bn_bwd_fd, reseed),
		cmocka_unit_test_setup(test_kernels_concat_split, reseed),
		cmocka_unit_test_setup(test_kernels_split_fd, reseed),
		cmocka_unit_test_setup(test_kernels_add, reseed),
		cmocka_unit_test_setup(test_kernels_mul, reseed),
		cmocka_unit_test_setup(test_kernels_rms_norm, reseed),
		cmocka_unit_test_setup(test_kernels_rope, reseed),
		cmocka_unit_test_setup(test_kernels_softmax_xent_fwd, reseed),
		cmocka_unit_test_setup(test_kernels_softmax_xent_bwd_fd, reseed),
		cmocka_unit_test_setup(test_kernels_sgd, reseed),
		cmocka_unit_test_setup(test_kernels_updates, reseed),
		cmocka_unit_test_setup(test_kernels_matmul, reseed),
		cmocka_unit_test_setup(test_kernels_matmul_shapes, reseed),
		cmocka_unit_test_setup(test_kernels_layer_norm, reseed),
		cmocka_unit_test_setup(test_kernels_gelu_tanh, reseed),
		cmocka_unit_test_setup(test_kernels_softmax, reseed),
		cmocka_unit_test_setup(test_kernels_embedding, reseed),
		cmocka_unit_test_setup(test_kernels_permute_narrow, reseed),
		cmocka_unit_test_setup(test_kernels_token_xent, reseed),
		cmocka_unit_test_setup(test_kernels_deterministic_across_addresses, reseed),
		cmocka_unit_test_setup(test_kernels_unsupported_pool_padding, reseed),
		cmocka_unit_test_setup(test_kernels_every_op_has_a_kernel, reseed),
		cmocka_unit_test_setup(test_kernels_cast, reseed),
		cmocka_unit_test_setup(test_kernels_bad_node, reseed),
		cmocka_unit_test_setup(test_kernels_run_checks_buffers, reseed),
		cmocka_unit_test_setup(test_kernels_destroy_null, reseed),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
