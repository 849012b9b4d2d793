/* elementwise.cu -- SGD, add, bias, pooling, softmax cross-entropy and batch-norm statistics conversions on the GPU */
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

__global__ void k_maxpool_fwd(atm_cu_pool p, const float *x, float *y, int32_t *argmax)
{
	int64_t per = (int64_t)p.oh * p.ow;
	FOR_EACH(i, p.planes * per) {
		int64_t plane = i / per;
		int32_t oy = (int32_t)(i % per / p.ow), ox = (int32_t)(i % p.ow);
		const float *xp = x + plane * p.h * p.w;
		float best = 0;
		int32_t at = -1;
		for (int32_t ky = 0; ky < p.kh; ky++) {
			int32_t iy = oy * p.sh - p.pt + ky;
			if (iy < 0 || iy >= p.h)
				continue;
			for (int32_t kx = 0; kx < p.kw; kx++) {
				int32_t ix = ox * p.sw - p.pl + kx;
				if (ix < 0 || ix >= p.w)
					continue;
				float v = xp[iy * p.w + ix];
				if (at < 0 || v > best) {
					best = v;
					at = iy * p.w + ix;
				}
			}
		}
		y[i] = best;
		argmax[i] = at;
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

/* divisor -- the whole window, or the part of it inside x */
__device__ float divisor(const atm_cu_pool &p, int32_t oy, int32_t ox)
{
	if (!p.exclude_pad)
		return (float)(p.kh * p.kw);
	int32_t y0 = oy * p.sh - p.pt, x0 = ox * p.sw - p.pl;
	int32_t y1 = y0 + p.kh, x1 = x0 + p.kw;
	y0 = y0 < 0 ? 0 : y0;
	x0 = x0 < 0 ? 0 : x0;
	y1 = y1 > p.h ? p.h : y1;
	x1 = x1 > p.w ? p.w : x1;
	return (float)((y1 - y0) * (x1 - x0));
}

__global__ void k_avgpool_fwd(atm_cu_pool p, const float *x, float *y)
{
	int64_t per = (int64_t)p.oh * p.ow;
	FOR_EACH(i, p.planes * per) {
		int64_t plane = i / per;
		int32_t oy = (int32_t)(i % per / p.ow), ox = (int32_t)(i % p.ow);
		const float *xp = x + plane * p.h * p.w;
		float s = 0;
		for (int32_t ky = 0; ky < p.kh; ky++) {
			int32_t iy = oy * p.sh - p.pt + ky;
			if (iy < 0 || iy >= p.h)
				continue;
			for (int32_t kx = 0; kx < p.kw; kx++) {
				int32_t ix = ox * p.sw - p.pl + kx;
				if (ix >= 0 && ix < p.w)
					s += xp[iy * p.w + ix];
			}
		}
		y[i] = s / divisor(p, oy, ox);
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
	k_maxpool_fwd<<<blocks(p->planes * p->oh * p->ow), THREADS, 0, s>>>(*p, x, y, argmax);
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
	k_avgpool_fwd<<<blocks(p->planes * p->oh * p->ow), THREADS, 0, s>>>(*p, x, y);
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

} /* extern "C" */
