/* elementwise.cu -- SGD, add, multiply, bias, pooling, losses, batch-norm statistics, and the transformer ops' element-wise, row and copy kernels on the GPU */
#include "elementwise.h"

#define THREADS 256

/* blocks -- enough blocks of THREADS for n items, capped (the kernels stride) */
static unsigned blocks(int64_t n)
{
	int64_t b = (n + THREADS - 1) / THREADS;
	return (unsigned)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

#define FOR_EACH(i, n) \
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
	     i += (int64_t)gridDim.x * blockDim.x)

__global__ void k_add(const float *a, const float *b, float *y, int64_t n)
{
	FOR_EACH(i, n) y[i] = a[i] + b[i];
}

__global__ void k_sgd(float *w, const float *dw, float lr, int64_t n)
{
	/* the same expression as the CPU's: w - lr * dw, rounded once per step */
	FOR_EACH(i, n) w[i] -= lr * dw[i];
}

__global__ void k_sgd_momentum(float *w, const float *dw, float *buf, float lr, float mom, float wd,
                               int64_t n)
{
	/* the CPU's expressions (runtime/cpu/kernels.c, run_sgd_momentum) */
	FOR_EACH(i, n) {
		float g = wd != 0 ? dw[i] + wd * w[i] : dw[i];
		if (buf) {
			buf[i] = buf[i] * mom + g;
			g = buf[i];
		}
		w[i] = w[i] - lr * g;
	}
}

__global__ void k_adamw(float *w, const float *dw, float *m, float *v, const float *step,
                        atm_cu_adamw_factors a, int64_t n)
{
	/* every thread takes the step's scalars in double from the step before this one, as the
	 * CPU does (runtime/cpu/kernels.c, run_adamw); k_step counts it afterwards */
	double t = (double)step[0] + 1.0;
	float decay = (float)(1.0 - a.lr * a.weight_decay);
	float step_size = (float)(a.lr / (1.0 - pow(a.beta1, t)));
	float bc2 = (float)sqrt(1.0 - pow(a.beta2, t));
	float b1 = (float)a.beta1, b2 = (float)a.beta2;
	float c1 = (float)(1.0 - a.beta1), c2 = (float)(1.0 - a.beta2);
	FOR_EACH(i, n) {
		float g = dw[i];
		float wi = w[i] * decay;
		float mi = m[i] * b1 + c1 * g;
		float vi = v[i] * b2 + c2 * g * g;
		float denom = sqrtf(vi) / bc2 + a.eps;
		m[i] = mi;
		v[i] = vi;
		w[i] = wi - step_size * (mi / denom);
	}
}

__global__ void k_step(float *step)
{
	step[0] = (float)((double)step[0] + 1.0);
}

__global__ void k_add_bias_rows(float *y, const float *b, int64_t rows, int64_t cols)
{
	FOR_EACH(i, rows * cols) y[i] += b[i % cols];
}

__global__ void k_sum_rows(const float *dy, float *db, int64_t rows, int64_t cols)
{
	FOR_EACH(c, cols) {
		float s = 0;
		for (int64_t r = 0; r < rows; r++)
			s += dy[r * cols + c];
		db[c] = s;
	}
}

/* window -- the part inside x of an output's window: rows y0 to y1 - 1, columns x0 to x1 - 1 */
struct window {
	int32_t y0, y1, x0, x1;
};

/* window_at -- the window of output (oy, ox) */
__device__ window window_at(const atm_cu_pool &p, int32_t oy, int32_t ox)
{
	int32_t y0 = oy * p.sh - p.pt, x0 = ox * p.sw - p.pl;
	int32_t y1 = y0 + p.kh, x1 = x0 + p.kw;
	window w;
	w.y0 = y0 < 0 ? 0 : y0;
	w.x0 = x0 < 0 ? 0 : x0;
	w.y1 = y1 > p.h ? p.h : y1;
	w.x1 = x1 > p.w ? p.w : x1;
	return w;
}

/* divisor -- the whole window, or the part of it inside x */
__device__ float divisor(const atm_cu_pool &p, int32_t oy, int32_t ox)
{
	if (!p.exclude_pad)
		return (float)(p.kh * p.kw);
	window w = window_at(p, oy, ox);
	return (float)((w.y1 - w.y0) * (w.x1 - w.x0));
}

/* k_pool_fwd -- max pooling, its argmax the first of equal values, or (argmax NULL) average
 * pooling: over each output's window inside x, in row-major order */
__global__ void k_pool_fwd(atm_cu_pool p, const float *x, float *y, int32_t *argmax)
{
	int64_t per = (int64_t)p.oh * p.ow;
	FOR_EACH(i, p.planes * per) {
		int32_t oy = (int32_t)(i % per / p.ow), ox = (int32_t)(i % p.ow);
		const float *xp = x + i / per * p.h * p.w;
		window w = window_at(p, oy, ox);
		float best = 0, s = 0;
		int32_t at = -1;
		for (int32_t iy = w.y0; iy < w.y1; iy++)
			for (int32_t ix = w.x0; ix < w.x1; ix++) {
				float v = xp[iy * p.w + ix];
				if (!argmax) {
					s += v;
				} else if (at < 0 || v > best) {
					best = v;
					at = iy * p.w + ix;
				}
			}
		if (argmax) {
			y[i] = best;
			argmax[i] = at;
		} else {
			y[i] = s / divisor(p, oy, ox);
		}
	}
}

/* window_range -- outputs along one axis whose window covers input position v */
__device__ void window_range(int32_t v, int32_t pad, int32_t k, int32_t s, int32_t out,
                             int32_t *lo, int32_t *hi)
{
	int32_t a = v + pad - k + 1;
	*lo = a <= 0 ? 0 : (a + s - 1) / s;
	*hi = (v + pad) / s;
	if (*hi > out - 1)
		*hi = out - 1;
}

__global__ void k_maxpool_bwd(atm_cu_pool p, const float *dy, const int32_t *argmax, float *dx)
{
	int64_t per = (int64_t)p.h * p.w;
	FOR_EACH(i, p.planes * per) {
		int64_t plane = i / per;
		int32_t iy = (int32_t)(i % per / p.w), ix = (int32_t)(i % p.w), me = iy * p.w + ix;
		int32_t y0, y1, x0, x1;
		window_range(iy, p.pt, p.kh, p.sh, p.oh, &y0, &y1);
		window_range(ix, p.pl, p.kw, p.sw, p.ow, &x0, &x1);
		const float *d = dy + plane * p.oh * p.ow;
		const int32_t *a = argmax + plane * p.oh * p.ow;
		float s = 0;
		for (int32_t oy = y0; oy <= y1; oy++)
			for (int32_t ox = x0; ox <= x1; ox++)
				if (a[oy * p.ow + ox] == me)
					s += d[oy * p.ow + ox];
		dx[i] = s;
	}
}

__global__ void k_avgpool_bwd(atm_cu_pool p, const float *dy, float *dx)
{
	int64_t per = (int64_t)p.h * p.w;
	FOR_EACH(i, p.planes * per) {
		int64_t plane = i / per;
		int32_t iy = (int32_t)(i % per / p.w), ix = (int32_t)(i % p.w);
		int32_t y0, y1, x0, x1;
		window_range(iy, p.pt, p.kh, p.sh, p.oh, &y0, &y1);
		window_range(ix, p.pl, p.kw, p.sw, p.ow, &x0, &x1);
		const float *d = dy + plane * p.oh * p.ow;
		float s = 0;
		for (int32_t oy = y0; oy <= y1; oy++)
			for (int32_t ox = x0; ox <= x1; ox++)
				s += d[oy * p.ow + ox] / divisor(p, oy, ox);
		dx[i] = s;
	}
}

__global__ void k_softmax_xent_rows(const float *x, const float *labels, float *probs,
                                    double *row_loss, int64_t rows, int64_t cols)
{
	FOR_EACH(r, rows) {
		const float *xr = x + r * cols, *l = labels + r * cols;
		float *pr = probs + r * cols;
		float mx = xr[0];
		double sum = 0, loss = 0;
		for (int64_t c = 1; c < cols; c++)
			mx = xr[c] > mx ? xr[c] : mx;
		for (int64_t c = 0; c < cols; c++)
			sum += exp((double)xr[c] - mx);
		double log_sum = log(sum);
		for (int64_t c = 0; c < cols; c++) {
			double log_p = (double)xr[c] - mx - log_sum;
			pr[c] = (float)exp(log_p);
			if (l[c] != 0)
				loss -= l[c] * log_p;
		}
		row_loss[r] = loss;
	}
}

__global__ void k_mean_loss(const double *row_loss, float *loss, int64_t rows)
{
	if (blockIdx.x || threadIdx.x)
		return;
	double t = 0;
	for (int64_t r = 0; r < rows; r++)
		t += row_loss[r];
	loss[0] = (float)(t / (double)rows);
}

__global__ void k_softmax_xent_bwd(const float *probs, const float *labels, float *dx,
                                   int64_t rows, int64_t cols)
{
	float inv = 1.0f / (float)rows;
	FOR_EACH(i, rows * cols) dx[i] = (probs[i] - labels[i]) * inv;
}

__global__ void k_inv_to_var(const float *inv, float *var, float eps, int64_t n)
{
	/* a constant channel's variance is 0 give or take rounding: never below it */
	FOR_EACH(i, n) var[i] = fmaxf(1.0f / (inv[i] * inv[i]) - eps, 0.0f);
}

__global__ void k_var_to_inv(const float *var, float *inv, float eps, int64_t n)
{
	FOR_EACH(i, n) inv[i] = 1.0f / sqrtf(var[i] + eps);
}

/* ---------------------------------------------------------------- transformer ops */

#define WARP 32
#define FULL_MASK 0xffffffffu

/* row_blocks -- enough blocks of THREADS for one warp per row, capped (the kernels stride) */
static unsigned row_blocks(int64_t rows)
{
	int64_t per = THREADS / WARP, b = (rows + per - 1) / per;
	return (unsigned)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

/* One warp per row: every lane of a warp has the same r, so the shuffles see all 32 lanes. */
#define FOR_EACH_ROW(r, rows)                                                               \
	for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / WARP; r < (rows); \
	     r += (int64_t)gridDim.x * blockDim.x / WARP)

/* warp_sum -- the sum of v over the warp, the same butterfly every time; every lane gets the
 * same bits (each step adds the same two values, and addition commutes) */
__device__ double warp_sum(double v)
{
	for (int o = WARP / 2; o > 0; o /= 2)
		v += __shfl_xor_sync(FULL_MASK, v, o);
	return v;
}

/* warp_max -- the largest v over the warp, on every lane */
__device__ float warp_max(float v)
{
	for (int o = WARP / 2; o > 0; o /= 2)
		v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
	return v;
}

#define SQRT_2_OVER_PI 0.79788456080286535588f
#define INV_SQRT_2 0.70710678118654752440f
#define INV_SQRT_2PI 0.39894228040143267794f
#define GELU_A 0.044715f

/* k_gelu_fwd -- y = gelu(x), tanh or erf form */
__global__ void k_gelu_fwd(const float *x, float *y, int tanh_form, int64_t n)
{
	FOR_EACH(i, n) {
		float v = x[i];
		float t = tanh_form ? tanhf(SQRT_2_OVER_PI * v * (1.0f + GELU_A * v * v))
		                    : erff(v * INV_SQRT_2);
		y[i] = 0.5f * v * (1.0f + t);
	}
}

/* k_gelu_bwd -- dx = dy * gelu'(x) */
__global__ void k_gelu_bwd(const float *x, const float *dy, float *dx, int tanh_form, int64_t n)
{
	FOR_EACH(i, n) {
		float v = x[i], d;
		if (tanh_form) {
			float v2 = v * v;
			float t = tanhf(SQRT_2_OVER_PI * v * (1.0f + GELU_A * v2));
			float dg = SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_A * v2);
			d = 0.5f * (1.0f + t) * (1.0f + v * (1.0f - t) * dg);
		} else {
			d = 0.5f * (1.0f + erff(v * INV_SQRT_2)) + v * INV_SQRT_2PI * expf(-0.5f * v * v);
		}
		dx[i] = dy[i] * d;
	}
}

/* k_to_bf16 -- y = x rounded to bf16, to nearest even (a NaN stays one): the CPU's bits */
__global__ void k_to_bf16(const uint32_t *x, uint16_t *y, int64_t n)
{
	FOR_EACH(i, n) {
		uint32_t b = x[i];
		y[i] = (b & 0x7fffffffu) > 0x7f800000u ? (uint16_t)(b >> 16 | 0x40)
		                                       : (uint16_t)((b + 0x7fffu + (b >> 16 & 1)) >> 16);
	}
}

/* k_from_bf16 -- y = x widened to f32, exactly */
__global__ void k_from_bf16(const uint16_t *x, uint32_t *y, int64_t n)
{
	FOR_EACH(i, n) y[i] = (uint32_t)x[i] << 16;
}

/* k_copy16 -- y = x, n 16-bit words (a kernel: cudaMemcpy may not reach mapped host memory) */
__global__ void k_copy16(const uint16_t *x, uint16_t *y, int64_t n)
{
	FOR_EACH(i, n) y[i] = x[i];
}

/* k_tanh_fwd -- y = tanh(x) */
__global__ void k_tanh_fwd(const float *x, float *y, int64_t n)
{
	FOR_EACH(i, n) y[i] = tanhf(x[i]);
}

/* k_tanh_bwd -- dx = dy * (1 - y^2) */
__global__ void k_tanh_bwd(const float *y, const float *dy, float *dx, int64_t n)
{
	FOR_EACH(i, n) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

/* k_act_fwd -- SiLU (x / (1 + exp(-x))), sigmoid, hardswish (x relu6(x + 3) / 6), hardsigmoid
 * (clip(x / 6 + 1/2, 0, 1)) or relu6 (clip(x, 0, 6)) */
__global__ void k_act_fwd(int kind, const float *x, float *y, int64_t n)
{
	FOR_EACH(i, n) {
		float v = x[i];
		y[i] = kind == ATM_CU_SILU          ? v / (1.0f + expf(-v))
		     : kind == ATM_CU_SIGMOID       ? 1.0f / (1.0f + expf(-v))
		     : kind == ATM_CU_HARDSWISH     ? v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f
		     : kind == ATM_CU_HARDSIGMOID   ? fminf(fmaxf(v / 6.0f + 0.5f, 0.0f), 1.0f)
		                                    : fminf(fmaxf(v, 0.0f), 6.0f);
	}
}

/* k_act_bwd -- their gradients: sigmoid y (1 - y), relu6 1 where 0 < y < 6 (from y); SiLU
 * s (1 + x (1 - s)) with s = sigmoid(x), hardswish 0 below -3, 1 above 3, (2x + 3) / 6 between,
 * hardsigmoid 1/6 on (-3, 3) (from x) */
__global__ void k_act_bwd(int kind, const float *f, const float *dy, float *dx, int64_t n)
{
	FOR_EACH(i, n) {
		float v = f[i], d;
		if (kind == ATM_CU_SILU) {
			float sg = 1.0f / (1.0f + expf(-v));
			d = sg * (1.0f + v * (1.0f - sg));
		} else if (kind == ATM_CU_SIGMOID) {
			d = v * (1.0f - v);
		} else if (kind == ATM_CU_RELU6) {
			d = v > 0.0f && v < 6.0f ? 1.0f : 0.0f;
		} else if (kind == ATM_CU_HARDSWISH) {
			d = v < -3.0f ? 0.0f : v > 3.0f ? 1.0f : (2.0f * v + 3.0f) / 6.0f;
		} else {
			d = v > -3.0f && v < 3.0f ? 1.0f / 6.0f : 0.0f;
		}
		dx[i] = dy[i] * d;
	}
}

/* k_mul -- y = a * b, b read at the offset a's index has in the dims b keeps */
__global__ void k_mul(const float *a, const float *b, float *y, atm_cu_bcast bc, int64_t n)
{
	FOR_EACH(i, n) {
		int64_t off = 0, mult = 1;
		for (int d = 0; d < bc.n_kept; d++) {
			off += i / bc.kept_stride[d] % bc.kept[d] * mult;
			mult *= bc.kept[d];
		}
		y[i] = a[i] * b[off];
	}
}

/* k_mul_same -- y = a * b, one shape */
__global__ void k_mul_same(const float *a, const float *b, float *y, int64_t n)
{
	FOR_EACH(i, n) y[i] = a[i] * b[i];
}

/* k_mul_bwd -- db[j] = the sum of dy * a over the elements of a that read b[j], in index
 * order, in double (the CPU's run_mul_bwd) */
__global__ void k_mul_bwd(const float *dy, const float *a, float *db, atm_cu_bcast bc, int64_t n)
{
	FOR_EACH(j, n) {
		int64_t rem = j, off = 0, idx[ATM_CU_MAX_DIMS] = {0};
		for (int d = 0; d < bc.n_kept; d++) {
			off += rem % bc.kept[d] * bc.kept_stride[d];
			rem /= bc.kept[d];
		}
		double acc = 0;
		for (int64_t r = 0; r < bc.rep_elems; r++) {
			acc += (double)dy[off] * (double)a[off];
			for (int d = 0; d < bc.n_rep; d++) {
				if (++idx[d] < bc.rep[d]) {
					off += bc.rep_stride[d];
					break;
				}
				off -= (bc.rep[d] - 1) * bc.rep_stride[d];
				idx[d] = 0;
			}
		}
		db[j] = (float)acc;
	}
}

/* k_softmax_fwd -- one warp per row: the row's maximum over its valid entries, exp(x - max)
 * summed in double, scaled by the sum's inverse; 0 past the valid entries (the CPU's
 * run_causal_softmax, step for step) */
__global__ void k_softmax_fwd(const float *x, float *y, int causal, int64_t rows, int64_t cols)
{
	int lane = threadIdx.x % WARP;
	FOR_EACH_ROW(r, rows) {
		const float *xr = x + r * cols;
		float *yr = y + r * cols;
		int64_t valid = causal ? r % cols + 1 : cols;
		float mx = -INFINITY;
		for (int64_t c = lane; c < valid; c += WARP)
			mx = fmaxf(mx, xr[c]);
		mx = warp_max(mx);
		double sum = 0;
		for (int64_t c = lane; c < valid; c += WARP) {
			float e = expf(xr[c] - mx);
			yr[c] = e;
			sum += e;
		}
		float inv = (float)(1.0 / warp_sum(sum));
		/* each lane scales the entries it wrote itself: no other lane's writes are read */
		for (int64_t c = lane; c < valid; c += WARP)
			yr[c] *= inv;
		for (int64_t c = valid + lane; c < cols; c += WARP)
			yr[c] = 0.0f;
	}
}

/* k_softmax_bwd -- one warp per row: dx = y * (dy - sum(dy * y)), the sum in double */
__global__ void k_softmax_bwd(const float *y, const float *dy, float *dx, int64_t rows,
                              int64_t cols)
{
	int lane = threadIdx.x % WARP;
	FOR_EACH_ROW(r, rows) {
		const float *yr = y + r * cols, *dr = dy + r * cols;
		double dot = 0;
		for (int64_t c = lane; c < cols; c += WARP)
			dot += (double)dr[c] * yr[c];
		float s = (float)warp_sum(dot);
		for (int64_t c = lane; c < cols; c += WARP)
			dx[r * cols + c] = yr[c] * (dr[c] - s);
	}
}

/* k_layer_norm_fwd -- one warp per row: mean, then the biased variance about it (two passes,
 * in double), then y = (x - mean) * inv * gamma + beta */
__global__ void k_layer_norm_fwd(const float *x, const float *gamma, const float *beta, float *y,
                                 float *mean, float *var, float eps, int64_t rows, int64_t cols)
{
	int lane = threadIdx.x % WARP;
	FOR_EACH_ROW(r, rows) {
		const float *xr = x + r * cols;
		double sum = 0;
		for (int64_t c = lane; c < cols; c += WARP)
			sum += xr[c];
		double mu = warp_sum(sum) / (double)cols, sq = 0;
		for (int64_t c = lane; c < cols; c += WARP)
			sq += ((double)xr[c] - mu) * ((double)xr[c] - mu);
		float m = (float)mu, v = (float)(warp_sum(sq) / (double)cols);
		float inv = 1.0f / sqrtf(v + eps);
		for (int64_t c = lane; c < cols; c += WARP)
			y[r * cols + c] = (xr[c] - m) * inv * gamma[c] + beta[c];
		if (lane == 0) {
			mean[r] = m;
			var[r] = v;
		}
	}
}

/* k_rope -- a thread per pair (row r, i < D/2): the CPU's run_rope, angles in double */
__global__ void k_rope(const float *x, float *y, double theta, double sign, int64_t rows,
                       int64_t seq, int64_t d)
{
	int64_t h = d / 2;
	FOR_EACH(j, rows * h) {
		int64_t r = j / h, i = j % h;
		double a = (double)(r % seq) * pow(theta, -2.0 * (double)i / (double)d);
		float c = (float)cos(a), s = (float)(sign * sin(a));
		float x0 = x[r * d + i], x1 = x[r * d + i + h];
		y[r * d + i] = x0 * c - x1 * s;
		y[r * d + i + h] = x1 * c + x0 * s;
	}
}

/* k_rms_norm_fwd -- one warp per row: rstd = 1 / sqrt(mean of x^2 + eps) (the sum in double),
 * y = x * rstd * w */
__global__ void k_rms_norm_fwd(const float *x, const float *w, float *y, float *rstd, double eps,
                               int64_t rows, int64_t cols)
{
	int lane = threadIdx.x % WARP;
	FOR_EACH_ROW(r, rows) {
		const float *xr = x + r * cols;
		double ss = 0;
		for (int64_t c = lane; c < cols; c += WARP)
			ss += (double)xr[c] * xr[c];
		float s = (float)(1.0 / sqrt(warp_sum(ss) / (double)cols + eps));
		for (int64_t c = lane; c < cols; c += WARP)
			y[r * cols + c] = xr[c] * s * w[c];
		if (lane == 0)
			rstd[r] = s;
	}
}

/* k_rms_norm_bwd_dx -- one warp per row: with g = dy * w and xhat = x * rstd,
 * dx = rstd * (g - xhat * mean(g * xhat)), the mean in double */
__global__ void k_rms_norm_bwd_dx(const float *x, const float *dy, const float *w,
                                  const float *rstd, float *dx, int64_t rows, int64_t cols)
{
	int lane = threadIdx.x % WARP;
	FOR_EACH_ROW(r, rows) {
		const float *xr = x + r * cols, *dyr = dy + r * cols;
		double s = rstd[r], dot = 0;
		for (int64_t c = lane; c < cols; c += WARP)
			dot += (double)dyr[c] * w[c] * xr[c] * s;
		double m = warp_sum(dot) / (double)cols;
		for (int64_t c = lane; c < cols; c += WARP)
			dx[r * cols + c] = (float)(s * ((double)dyr[c] * w[c] - (double)xr[c] * s * m));
	}
}

/* k_rms_norm_bwd_dw -- a thread per column: dw = the sum over rows of dy * x * rstd, rows in
 * order, in double */
__global__ void k_rms_norm_bwd_dw(const float *x, const float *dy, const float *rstd, float *dw,
                                  int64_t rows, int64_t cols)
{
	FOR_EACH(c, cols) {
		double acc = 0;
		for (int64_t r = 0; r < rows; r++)
			acc += (double)dy[r * cols + c] * x[r * cols + c] * rstd[r];
		dw[c] = (float)acc;
	}
}

/* k_layer_norm_bwd_dx -- one warp per row: with xhat = (x - mean) * inv and g = dy * gamma,
 * dx = inv * (g - mean(g) - xhat * mean(g * xhat)), the means in double */
__global__ void k_layer_norm_bwd_dx(const float *x, const float *dy, const float *gamma,
                                    const float *mean, const float *var, float *dx, float eps,
                                    int64_t rows, int64_t cols)
{
	int lane = threadIdx.x % WARP;
	FOR_EACH_ROW(r, rows) {
		const float *xr = x + r * cols, *dr = dy + r * cols;
		float m = mean[r], inv = 1.0f / sqrtf(var[r] + eps);
		double sg = 0, sgx = 0;
		for (int64_t c = lane; c < cols; c += WARP) {
			float g = dr[c] * gamma[c];
			sg += g;
			sgx += (double)g * ((xr[c] - m) * inv);
		}
		float mg = (float)(warp_sum(sg) / (double)cols);
		float mgx = (float)(warp_sum(sgx) / (double)cols);
		for (int64_t c = lane; c < cols; c += WARP) {
			float xhat = (xr[c] - m) * inv;
			dx[r * cols + c] = inv * (dr[c] * gamma[c] - mg - xhat * mgx);
		}
	}
}

/* k_layer_norm_bwd_part -- one thread per (chunk of rows, column): that chunk's sums of
 * dy * xhat and of dy, rows in order, into part[chunk][0][c] and part[chunk][1][c] */
__global__ void k_layer_norm_bwd_part(const float *x, const float *dy, const float *mean,
                                      const float *var, float *part, float eps, int64_t rows,
                                      int64_t cols, int64_t chunks)
{
	FOR_EACH(i, chunks * cols) {
		int64_t ch = i / cols, c = i % cols;
		int64_t r1 = (ch + 1) * ATM_CU_LN_CHUNK < rows ? (ch + 1) * ATM_CU_LN_CHUNK : rows;
		float sg = 0, sb = 0;
		for (int64_t r = ch * ATM_CU_LN_CHUNK; r < r1; r++) {
			float d = dy[r * cols + c];
			sg += d * ((x[r * cols + c] - mean[r]) * (1.0f / sqrtf(var[r] + eps)));
			sb += d;
		}
		part[(ch * 2) * cols + c] = sg;
		part[(ch * 2 + 1) * cols + c] = sb;
	}
}

/* k_layer_norm_bwd_params -- one thread per column: the chunks' partial sums in chunk order */
__global__ void k_layer_norm_bwd_params(const float *part, float *dgamma, float *dbeta,
                                        int64_t cols, int64_t chunks)
{
	FOR_EACH(c, cols) {
		float sg = 0, sb = 0;
		for (int64_t ch = 0; ch < chunks; ch++) {
			sg += part[(ch * 2) * cols + c];
			sb += part[(ch * 2 + 1) * cols + c];
		}
		dgamma[c] = sg;
		dbeta[c] = sb;
	}
}

/* table_row -- the table row row r of y reads (its id, or its place in the sequence), or -1
 * for an id outside the table */
__device__ int64_t table_row(const int32_t *ids, int64_t r, int64_t seq, int64_t table_rows)
{
	if (!ids)
		return r % seq;
	int64_t id = ids[r];
	return id >= 0 && id < table_rows ? id : -1;
}

/* k_embedding_fwd -- one thread per element of y: its table row's entry (NaN for a bad id) */
__global__ void k_embedding_fwd(const float *table, const int32_t *ids, float *y, int64_t seq,
                                int64_t table_rows, int64_t rows, int64_t cols)
{
	FOR_EACH(i, rows * cols) {
		int64_t t = table_row(ids, i / cols, seq, table_rows);
		y[i] = t < 0 ? NAN : table[t * cols + i % cols];
	}
}

/* k_zero -- p[i] = 0 (a kernel, not cudaMemset: the tensor may be mapped host memory) */
__global__ void k_zero(float *p, int64_t n)
{
	FOR_EACH(i, n) p[i] = 0.0f;
}

/* k_embedding_bwd -- one thread per column of the (zeroed) dtable: dy's rows added into it in
 * increasing row order, the CPU's order; a bad id anywhere makes the whole column NaN */
__global__ void k_embedding_bwd(const float *dy, const int32_t *ids, float *dtable, int64_t seq,
                                int64_t table_rows, int64_t rows, int64_t cols)
{
	FOR_EACH(c, cols) {
		bool bad = false;
		for (int64_t r = 0; r < rows; r++) {
			int64_t t = table_row(ids, r, seq, table_rows);
			if (t < 0)
				bad = true;
			else
				dtable[t * cols + c] += dy[r * cols + c];
		}
		for (int64_t t = 0; bad && t < table_rows; t++)
			dtable[t * cols + c] = NAN;
	}
}

/* k_permute -- one thread per element of y: its index split over y's dims gives x's offset */
__global__ void k_permute(atm_cu_perm p, const float *x, float *y, int64_t n)
{
	FOR_EACH(i, n) {
		int64_t rest = i, at = 0;
		for (int d = p.ndim - 1; d >= 0; d--) {
			at += rest % p.dims[d] * p.strides[d];
			rest /= p.dims[d];
		}
		y[i] = x[at];
	}
}

/* k_narrow -- one thread per element of dst (rows of dst_len): entry c of its row is entry c
 * of src's row (rows of src_len) where both have one, else 0; narrowing (dst_len <= src_len)
 * and its gradient (dst_len >= src_len, zero past src) alike */
__global__ void k_narrow(const float *src, float *dst, int64_t rows, int64_t src_len,
                         int64_t dst_len)
{
	FOR_EACH(i, rows * dst_len) {
		int64_t r = i / dst_len, c = i % dst_len;
		dst[i] = c < src_len ? src[r * src_len + c] : 0.0f;
	}
}

/* log_prob -- entry c of a row's log-softmax, from its maximum and log-sum: the one
 * expression both the writer of logp and the loss use, so the loss sees logp's bits */
__device__ float log_prob(const float *xr, int64_t c, float mx, double log_sum)
{
	return (float)((double)xr[c] - mx - log_sum);
}

/* k_token_xent_rows -- one warp per row: logp = x - max - log(sum exp(x - max)), the sum in
 * double; row_loss[r] = -logp[label] (NaN for a label outside the classes) */
__global__ void k_token_xent_rows(const float *x, const int32_t *labels, float *logp,
                                  double *row_loss, int64_t rows, int64_t cols)
{
	int lane = threadIdx.x % WARP;
	FOR_EACH_ROW(r, rows) {
		const float *xr = x + r * cols;
		float mx = -INFINITY;
		for (int64_t c = lane; c < cols; c += WARP)
			mx = fmaxf(mx, xr[c]);
		mx = warp_max(mx);
		double sum = 0;
		for (int64_t c = lane; c < cols; c += WARP)
			sum += exp((double)xr[c] - mx);
		double log_sum = log(warp_sum(sum));
		for (int64_t c = lane; c < cols; c += WARP)
			logp[r * cols + c] = log_prob(xr, c, mx, log_sum);
		if (lane == 0) {
			int64_t l = labels[r];
			row_loss[r] = l >= 0 && l < cols ? -(double)log_prob(xr, l, mx, log_sum) : NAN;
		}
	}
}

/* k_token_xent_bwd -- dx = exp(logp) / rows, less 1 / rows at the label (the CPU's steps);
 * NaN across a row whose label is outside the classes */
__global__ void k_token_xent_bwd(const float *logp, const int32_t *labels, float *dx,
                                 int64_t rows, int64_t cols)
{
	float inv = 1.0f / (float)rows;
	FOR_EACH(i, rows * cols) {
		int64_t l = labels[i / cols], c = i % cols;
		float d = expf(logp[i]) * inv;
		if (c == l)
			d -= inv;
		dx[i] = l >= 0 && l < cols ? d : NAN;
	}
}

extern "C" {

cudaError_t atm_cu_add(cudaStream_t s, const float *a, const float *b, float *y, int64_t n)
{
	k_add<<<blocks(n), THREADS, 0, s>>>(a, b, y, n);
	return cudaGetLastError();
}

cudaError_t atm_cu_sgd(cudaStream_t s, float *w, const float *dw, float lr, int64_t n)
{
	k_sgd<<<blocks(n), THREADS, 0, s>>>(w, dw, lr, n);
	return cudaGetLastError();
}

cudaError_t atm_cu_sgd_momentum(cudaStream_t s, float *w, const float *dw, float *buf, float lr,
                                float momentum, float weight_decay, int64_t n)
{
	k_sgd_momentum<<<blocks(n), THREADS, 0, s>>>(w, dw, buf, lr, momentum, weight_decay, n);
	return cudaGetLastError();
}

cudaError_t atm_cu_adamw(cudaStream_t s, float *w, const float *dw, float *m, float *v,
                         float *step, const atm_cu_adamw_factors *a, int64_t n)
{
	k_adamw<<<blocks(n), THREADS, 0, s>>>(w, dw, m, v, step, *a, n);
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess)
		return e;
	k_step<<<1, 1, 0, s>>>(step);
	return cudaGetLastError();
}

cudaError_t atm_cu_add_bias_rows(cudaStream_t s, float *y, const float *b, int64_t rows,
                                 int64_t cols)
{
	k_add_bias_rows<<<blocks(rows * cols), THREADS, 0, s>>>(y, b, rows, cols);
	return cudaGetLastError();
}

cudaError_t atm_cu_sum_rows(cudaStream_t s, const float *dy, float *db, int64_t rows, int64_t cols)
{
	k_sum_rows<<<blocks(cols), THREADS, 0, s>>>(dy, db, rows, cols);
	return cudaGetLastError();
}

cudaError_t atm_cu_maxpool_fwd(cudaStream_t s, const atm_cu_pool *p, const float *x, float *y,
                               int32_t *argmax)
{
	k_pool_fwd<<<blocks(p->planes * p->oh * p->ow), THREADS, 0, s>>>(*p, x, y, argmax);
	return cudaGetLastError();
}

cudaError_t atm_cu_maxpool_bwd(cudaStream_t s, const atm_cu_pool *p, const float *dy,
                               const int32_t *argmax, float *dx)
{
	k_maxpool_bwd<<<blocks(p->planes * p->h * p->w), THREADS, 0, s>>>(*p, dy, argmax, dx);
	return cudaGetLastError();
}

cudaError_t atm_cu_avgpool_fwd(cudaStream_t s, const atm_cu_pool *p, const float *x, float *y)
{
	k_pool_fwd<<<blocks(p->planes * p->oh * p->ow), THREADS, 0, s>>>(*p, x, y, NULL);
	return cudaGetLastError();
}

cudaError_t atm_cu_avgpool_bwd(cudaStream_t s, const atm_cu_pool *p, const float *dy, float *dx)
{
	k_avgpool_bwd<<<blocks(p->planes * p->h * p->w), THREADS, 0, s>>>(*p, dy, dx);
	return cudaGetLastError();
}

cudaError_t atm_cu_softmax_xent_rows(cudaStream_t s, const float *x, const float *labels,
                                     float *probs, double *row_loss, int64_t rows, int64_t cols)
{
	k_softmax_xent_rows<<<blocks(rows), THREADS, 0, s>>>(x, labels, probs, row_loss, rows, cols);
	return cudaGetLastError();
}

cudaError_t atm_cu_mean_loss(cudaStream_t s, const double *row_loss, float *loss, int64_t rows)
{
	k_mean_loss<<<1, 1, 0, s>>>(row_loss, loss, rows);
	return cudaGetLastError();
}

cudaError_t atm_cu_softmax_xent_bwd(cudaStream_t s, const float *probs, const float *labels,
                                    float *dx, int64_t rows, int64_t cols)
{
	k_softmax_xent_bwd<<<blocks(rows * cols), THREADS, 0, s>>>(probs, labels, dx, rows, cols);
	return cudaGetLastError();
}

cudaError_t atm_cu_inv_to_var(cudaStream_t s, const float *inv, float *var, float eps, int64_t n)
{
	k_inv_to_var<<<blocks(n), THREADS, 0, s>>>(inv, var, eps, n);
	return cudaGetLastError();
}

cudaError_t atm_cu_var_to_inv(cudaStream_t s, const float *var, float *inv, float eps, int64_t n)
{
	k_var_to_inv<<<blocks(n), THREADS, 0, s>>>(var, inv, eps, n);
	return cudaGetLastError();
}

/* atm_cu_gelu_fwd -- launch k_gelu_fwd */
cudaError_t atm_cu_gelu_fwd(cudaStream_t s, const float *x, float *y, int tanh_form, int64_t n)
{
	k_gelu_fwd<<<blocks(n), THREADS, 0, s>>>(x, y, tanh_form, n);
	return cudaGetLastError();
}

/* atm_cu_gelu_bwd -- launch k_gelu_bwd */
cudaError_t atm_cu_gelu_bwd(cudaStream_t s, const float *x, const float *dy, float *dx,
                            int tanh_form, int64_t n)
{
	k_gelu_bwd<<<blocks(n), THREADS, 0, s>>>(x, dy, dx, tanh_form, n);
	return cudaGetLastError();
}

/* atm_cu_cast -- launch k_to_bf16, k_from_bf16 or, for one dtype, k_copy16 */
cudaError_t atm_cu_cast(cudaStream_t s, const void *x, void *y, int from_bytes, int to_bytes,
                        int64_t n)
{
	if (from_bytes == to_bytes)
		k_copy16<<<blocks(n * from_bytes / 2), THREADS, 0, s>>>((const uint16_t *)x,
		                                                      (uint16_t *)y, n * from_bytes / 2);
	else if (to_bytes == 2)
		k_to_bf16<<<blocks(n), THREADS, 0, s>>>((const uint32_t *)x, (uint16_t *)y, n);
	else
		k_from_bf16<<<blocks(n), THREADS, 0, s>>>((const uint16_t *)x, (uint32_t *)y, n);
	return cudaGetLastError();
}

/* atm_cu_tanh_fwd -- launch k_tanh_fwd */
cudaError_t atm_cu_tanh_fwd(cudaStream_t s, const float *x, float *y, int64_t n)
{
	k_tanh_fwd<<<blocks(n), THREADS, 0, s>>>(x, y, n);
	return cudaGetLastError();
}

/* atm_cu_tanh_bwd -- launch k_tanh_bwd */
cudaError_t atm_cu_tanh_bwd(cudaStream_t s, const float *y, const float *dy, float *dx, int64_t n)
{
	k_tanh_bwd<<<blocks(n), THREADS, 0, s>>>(y, dy, dx, n);
	return cudaGetLastError();
}

/* atm_cu_act_fwd -- launch k_act_fwd */
cudaError_t atm_cu_act_fwd(cudaStream_t s, int kind, const float *x, float *y, int64_t n)
{
	k_act_fwd<<<blocks(n), THREADS, 0, s>>>(kind, x, y, n);
	return cudaGetLastError();
}

/* atm_cu_act_bwd -- launch k_act_bwd */
cudaError_t atm_cu_act_bwd(cudaStream_t s, int kind, const float *fwd, const float *dy, float *dx,
                           int64_t n)
{
	k_act_bwd<<<blocks(n), THREADS, 0, s>>>(kind, fwd, dy, dx, n);
	return cudaGetLastError();
}

/* atm_cu_mul -- launch k_mul_same, or k_mul for a broadcast b */
cudaError_t atm_cu_mul(cudaStream_t s, const float *a, const float *b, float *y,
                       const atm_cu_bcast *bc, int64_t n)
{
	if (bc)
		k_mul<<<blocks(n), THREADS, 0, s>>>(a, b, y, *bc, n);
	else
		k_mul_same<<<blocks(n), THREADS, 0, s>>>(a, b, y, n);
	return cudaGetLastError();
}

/* atm_cu_mul_bwd -- launch k_mul_bwd, a thread per element of db */
cudaError_t atm_cu_mul_bwd(cudaStream_t s, const float *dy, const float *a, float *db,
                           const atm_cu_bcast *bc, int64_t n)
{
	k_mul_bwd<<<blocks(n), THREADS, 0, s>>>(dy, a, db, *bc, n);
	return cudaGetLastError();
}

/* atm_cu_softmax_fwd -- launch k_softmax_fwd, a warp per row */
cudaError_t atm_cu_softmax_fwd(cudaStream_t s, const float *x, float *y, int causal, int64_t rows,
                               int64_t cols)
{
	k_softmax_fwd<<<row_blocks(rows), THREADS, 0, s>>>(x, y, causal, rows, cols);
	return cudaGetLastError();
}

/* atm_cu_softmax_bwd -- launch k_softmax_bwd, a warp per row */
cudaError_t atm_cu_softmax_bwd(cudaStream_t s, const float *y, const float *dy, float *dx,
                               int64_t rows, int64_t cols)
{
	k_softmax_bwd<<<row_blocks(rows), THREADS, 0, s>>>(y, dy, dx, rows, cols);
	return cudaGetLastError();
}

/* atm_cu_layer_norm_fwd -- launch k_layer_norm_fwd, a warp per row */
cudaError_t atm_cu_layer_norm_fwd(cudaStream_t s, const float *x, const float *gamma,
                                  const float *beta, float *y, float *mean, float *var, float eps,
                                  int64_t rows, int64_t cols)
{
	k_layer_norm_fwd<<<row_blocks(rows), THREADS, 0, s>>>(x, gamma, beta, y, mean, var, eps,
	                                                       rows, cols);
	return cudaGetLastError();
}

/* atm_cu_rope -- launch k_rope, a thread per rotated pair */
cudaError_t atm_cu_rope(cudaStream_t s, const float *x, float *y, float theta, int inverse,
                        int64_t rows, int64_t seq, int64_t d)
{
	k_rope<<<blocks(rows * (d / 2)), THREADS, 0, s>>>(x, y, (double)theta, inverse ? -1.0 : 1.0,
	                                                  rows, seq, d);
	return cudaGetLastError();
}

/* atm_cu_rms_norm_fwd -- launch k_rms_norm_fwd, a warp per row */
cudaError_t atm_cu_rms_norm_fwd(cudaStream_t s, const float *x, const float *w, float *y,
                                float *rstd, float eps, int64_t rows, int64_t cols)
{
	k_rms_norm_fwd<<<row_blocks(rows), THREADS, 0, s>>>(x, w, y, rstd, (double)eps, rows, cols);
	return cudaGetLastError();
}

/* atm_cu_rms_norm_bwd -- launch k_rms_norm_bwd_dx (a warp per row), then k_rms_norm_bwd_dw (a
 * thread per column) */
cudaError_t atm_cu_rms_norm_bwd(cudaStream_t s, const float *x, const float *dy, const float *w,
                                const float *rstd, float *dx, float *dw, int64_t rows,
                                int64_t cols)
{
	k_rms_norm_bwd_dx<<<row_blocks(rows), THREADS, 0, s>>>(x, dy, w, rstd, dx, rows, cols);
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess)
		return e;
	k_rms_norm_bwd_dw<<<blocks(cols), THREADS, 0, s>>>(x, dy, rstd, dw, rows, cols);
	return cudaGetLastError();
}

/* atm_cu_layer_norm_bwd_chunks -- chunks of ATM_CU_LN_CHUNK rows the parameter sums take */
int64_t atm_cu_layer_norm_bwd_chunks(int64_t rows)
{
	return (rows + ATM_CU_LN_CHUNK - 1) / ATM_CU_LN_CHUNK;
}

/* atm_cu_layer_norm_bwd -- dx, then the chunks' partial parameter sums, then their totals */
cudaError_t atm_cu_layer_norm_bwd(cudaStream_t s, const float *x, const float *dy,
                                  const float *gamma, const float *mean, const float *var,
                                  float *dx, float *dgamma, float *dbeta, float *part, float eps,
                                  int64_t rows, int64_t cols)
{
	int64_t chunks = atm_cu_layer_norm_bwd_chunks(rows);
	k_layer_norm_bwd_dx<<<row_blocks(rows), THREADS, 0, s>>>(x, dy, gamma, mean, var, dx, eps,
	                                                          rows, cols);
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess)
		return e;
	k_layer_norm_bwd_part<<<blocks(chunks * cols), THREADS, 0, s>>>(x, dy, mean, var, part, eps,
	                                                                 rows, cols, chunks);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	k_layer_norm_bwd_params<<<blocks(cols), THREADS, 0, s>>>(part, dgamma, dbeta, cols, chunks);
	return cudaGetLastError();
}

/* atm_cu_embedding_fwd -- launch k_embedding_fwd */
cudaError_t atm_cu_embedding_fwd(cudaStream_t s, const float *table, const int32_t *ids,
                                 float *y, int64_t seq, int64_t table_rows, int64_t rows,
                                 int64_t cols)
{
	k_embedding_fwd<<<blocks(rows * cols), THREADS, 0, s>>>(table, ids, y, seq, table_rows, rows,
	                                                         cols);
	return cudaGetLastError();
}

/* atm_cu_embedding_bwd -- zero dtable, then launch k_embedding_bwd */
cudaError_t atm_cu_embedding_bwd(cudaStream_t s, const float *dy, const int32_t *ids,
                                 float *dtable, int64_t seq, int64_t table_rows, int64_t rows,
                                 int64_t cols)
{
	k_zero<<<blocks(table_rows * cols), THREADS, 0, s>>>(dtable, table_rows * cols);
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess)
		return e;
	k_embedding_bwd<<<blocks(cols), THREADS, 0, s>>>(dy, ids, dtable, seq, table_rows, rows,
	                                                  cols);
	return cudaGetLastError();
}

/* atm_cu_permute -- launch k_permute over y's elements */
cudaError_t atm_cu_permute(cudaStream_t s, const atm_cu_perm *p, const float *x, float *y)
{
	int64_t n = 1;
	for (int d = 0; d < p->ndim; d++)
		n *= p->dims[d];
	k_permute<<<blocks(n), THREADS, 0, s>>>(*p, x, y, n);
	return cudaGetLastError();
}

/* atm_cu_narrow -- launch k_narrow */
cudaError_t atm_cu_narrow(cudaStream_t s, const float *src, float *dst, int64_t rows,
                          int64_t src_len, int64_t dst_len)
{
	k_narrow<<<blocks(rows * dst_len), THREADS, 0, s>>>(src, dst, rows, src_len, dst_len);
	return cudaGetLastError();
}

/* atm_cu_token_xent_rows -- launch k_token_xent_rows, a warp per row */
cudaError_t atm_cu_token_xent_rows(cudaStream_t s, const float *x, const int32_t *labels,
                                   float *logp, double *row_loss, int64_t rows, int64_t cols)
{
	k_token_xent_rows<<<row_blocks(rows), THREADS, 0, s>>>(x, labels, logp, row_loss, rows, cols);
	return cudaGetLastError();
}

/* atm_cu_token_xent_bwd -- launch k_token_xent_bwd */
cudaError_t atm_cu_token_xent_bwd(cudaStream_t s, const float *logp, const int32_t *labels,
                                  float *dx, int64_t rows, int64_t cols)
{
	k_token_xent_bwd<<<blocks(rows * cols), THREADS, 0, s>>>(logp, labels, dx, rows, cols);
	return cudaGetLastError();
}

} /* extern "C" */
