/* kernels_plain.c -- the CPU kernels in plain C: batch norm, split, the optimizers' updates,
 * the losses, and the transformer ops oneDNN 2.x does not have */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "kernel_parts.h"

/* Batch norm in plain C, over x as [N, C, S] (S the product of the dims past C). oneDNN 2.6's
 * batch norm on this plain layout took 1.6 times PyTorch's own kernel in a ResNet-50 step (its
 * fast kernels want blocked layouts, which would need reorders at every tier boundary); these
 * loops stream x (and dy) twice per channel, the channels shared among the threads. Each
 * channel's sums run in one fixed order whatever the thread count: LANES float partial sums
 * per row of S, the rows added in double, so a step's weights are the same bitwise. */
#define BN_LANES 16

/* bn_row_sum -- sum of x[0..n) (minus shift, squared when sq), in BN_LANES float lanes */
static double bn_row_sum(const float *x, int64_t n, float shift, bool sq)
{
	float lane[BN_LANES] = {0};
	int64_t i = 0;
	for (; i + BN_LANES <= n; i += BN_LANES)
		for (int j = 0; j < BN_LANES; j++) {
			float d = x[i + j] - shift;
			lane[j] += sq ? d * d : d;
		}
	double sum = 0;
	for (; i < n; i++) {
		float d = x[i] - shift;
		sum += sq ? d * d : d;
	}
	for (int j = 0; j < BN_LANES; j++)
		sum += lane[j];
	return sum;
}

/* bn_row_dot -- the sums of dy and of dy * (x - mean) over a row, in BN_LANES float lanes */
static void bn_row_dot(const float *x, const float *dy, int64_t n, float mean, double *sum_dy,
                       double *sum_dyx)
{
	float a[BN_LANES] = {0}, b[BN_LANES] = {0};
	int64_t i = 0;
	for (; i + BN_LANES <= n; i += BN_LANES)
		for (int j = 0; j < BN_LANES; j++) {
			a[j] += dy[i + j];
			b[j] += dy[i + j] * (x[i + j] - mean);
		}
	double sa = 0, sb = 0;
	for (; i < n; i++) {
		sa += dy[i];
		sb += dy[i] * (x[i] - mean);
	}
	for (int j = 0; j < BN_LANES; j++) {
		sa += a[j];
		sb += b[j];
	}
	*sum_dy += sa;
	*sum_dyx += sb;
}

/* bn_shape -- a batch norm's x as [n, c, sp], the count of values per channel, its epsilon */
struct bn_shape {
	int64_t n, c, sp;
	double count;
	float eps;
};

static struct bn_shape bn_shape_of(const atm_kernel *k)
{
	int64_t n = k->n_rows, c = k->n_cols, sp = cpu_tensor_of(k, SLOT_IN, 0)->n_elems / (n * c);
	return (struct bn_shape){n, c, sp, (double)(n * sp), knode(k)->attrs.epsilon};
}

/* cpu_build_bn -- the batch norm's [N, C, S] */
atm_status cpu_build_bn(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	(void)attr;
	const atm_tensor *x = cpu_tensor_of(k, SLOT_IN, 0);
	k->n_rows = x->dims[0];
	k->n_cols = x->dims[1];
	return ATM_OK;
}

/* cpu_run_bn -- training batch norm: the batch mean and biased variance of each channel (two
 * passes), y = (x - mean) / sqrt(var + eps) * gamma + beta */
atm_status cpu_run_bn(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0], *gamma = in[1], *beta = in[2];
	float *y = out[0], *mean = out[1], *var = out[2];
	const struct bn_shape sh = bn_shape_of(k);
	const int64_t n = sh.n, c = sh.c, sp = sh.sp;
#pragma omp parallel for schedule(static)
	for (int64_t ch = 0; ch < c; ch++) {
		double sum = 0, sq = 0;
		for (int64_t b = 0; b < n; b++)
			sum += bn_row_sum(x + (b * c + ch) * sp, sp, 0.0f, false);
		float m = (float)(sum / sh.count);
		for (int64_t b = 0; b < n; b++)
			sq += bn_row_sum(x + (b * c + ch) * sp, sp, m, true);
		float v = (float)(sq / sh.count);
		float scale = gamma[ch] / sqrtf(v + sh.eps), shift = beta[ch];
		for (int64_t b = 0; b < n; b++) {
			const float *xr = x + (b * c + ch) * sp;
			float *yr = y + (b * c + ch) * sp;
			for (int64_t i = 0; i < sp; i++)
				yr[i] = (xr[i] - m) * scale + shift;
		}
		mean[ch] = m;
		var[ch] = v;
	}
	return ATM_OK;
}

/* cpu_run_bn_bwd -- dbeta = sum dy, dgamma = sum dy * xhat, dx = gamma / sqrt(var + eps) *
 * (dy - dbeta / M - xhat * dgamma / M), xhat = (x - mean) / sqrt(var + eps), M = N * S */
atm_status cpu_run_bn_bwd(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0], *dy = in[1], *gamma = in[2], *mean = in[3], *var = in[4];
	float *dx = out[0], *dgamma = out[1], *dbeta = out[2];
	const struct bn_shape sh = bn_shape_of(k);
	const int64_t n = sh.n, c = sh.c, sp = sh.sp;
#pragma omp parallel for schedule(static)
	for (int64_t ch = 0; ch < c; ch++) {
		double sum_dy = 0, sum_dyx = 0;
		float m = mean[ch], rstd = 1.0f / sqrtf(var[ch] + sh.eps);
		for (int64_t b = 0; b < n; b++)
			bn_row_dot(x + (b * c + ch) * sp, dy + (b * c + ch) * sp, sp, m, &sum_dy, &sum_dyx);
		float db = (float)sum_dy, dg = (float)(sum_dyx * rstd);
		float a = gamma[ch] * rstd, mdg = (float)(dg / sh.count) * rstd;
		float mdb = (float)(db / sh.count);
		for (int64_t b = 0; b < n; b++) {
			const float *xr = x + (b * c + ch) * sp, *dyr = dy + (b * c + ch) * sp;
			float *dxr = dx + (b * c + ch) * sp;
			for (int64_t i = 0; i < sp; i++)
				dxr[i] = a * (dyr[i] - mdb - (xr[i] - m) * mdg);
		}
		dgamma[ch] = dg;
		dbeta[ch] = db;
	}
	return ATM_OK;
}


/* cpu_build_split -- the parts of dy along attrs.axis, as [outer, C, inner] blocks copied in plain
 * C: oneDNN's reorder per part took twice PyTorch's cat backward on DenseNet-264 */
atm_status cpu_build_split(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	(void)attr;
	const atm_tensor *dy = cpu_tensor_of(k, SLOT_IN, 0);
	int axis = knode(k)->attrs.axis;
	k->n_rows = 1; /* the dims before the axis */
	for (int d = 0; d < axis; d++)
		k->n_rows *= dy->dims[d];
	k->n_cols = dy->n_elems / k->n_rows; /* one block: the axis and the dims after it */
	return ATM_OK;
}

/* cpu_run_split -- every part's rows of every block, the blocks shared by the threads */
atm_status cpu_run_split(const atm_kernel *k, void *const *in, void *const *out)
{
	const atm_node *n = knode(k);
	const char *dy = in[0];
	int64_t block = k->n_cols * (int64_t)sizeof(float), outer = k->n_rows;
#pragma omp parallel for schedule(static)
	for (int64_t b = 0; b < outer; b++) {
		int64_t at = 0;
		for (int i = 0; i < n->n_out; i++) {
			int64_t len = cpu_tensor_of(k, SLOT_OUT, i)->bytes / outer;
			memcpy((char *)out[i] + b * len, dy + b * block + at, (size_t)len);
			at += len;
		}
	}
	return ATM_OK;
}


/* ---------------------------------------------------------------- plain C ops */

/* cpu_build_lead -- a plain C op over input 0 as [rows, last] (the losses' [N, K]) */
atm_status cpu_build_lead(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	(void)attr;
	const atm_tensor *t = cpu_tensor_of(k, SLOT_IN, 0);
	k->n_cols = t->dims[t->ndim - 1];
	k->n_rows = t->n_elems / k->n_cols;
	return ATM_OK;
}

/* cpu_build_flat -- a plain C op over the elements of input 0 */
atm_status cpu_build_flat(atm_kernel *k, const_dnnl_primitive_attr_t attr)
{
	(void)attr;
	k->n_rows = cpu_tensor_of(k, SLOT_IN, 0)->n_elems;
	return ATM_OK;
}

/* cpu_run_allreduce -- each gradient copied into its mean's buffer, then the bucket of means
 * averaged over the ranks in place (atm_bk_allreduce: the communicator's fixed order) */
atm_status cpu_run_allreduce(const atm_kernel *k, void *const *in, void *const *out)
{
	const atm_node *n = knode(k);
	float *bufs[ATM_ALLREDUCE_BUCKET_TENSORS];
	int64_t counts[ATM_ALLREDUCE_BUCKET_TENSORS];
	for (int i = 0; i < n->n_in; i++) {
		const atm_tensor *t = cpu_tensor_of(k, SLOT_IN, i);
		memcpy(out[i], in[i], (size_t)t->bytes);
		bufs[i] = out[i];
		counts[i] = t->n_elems;
	}
	atm_status rc = atm_bk_allreduce(bufs, counts, n->n_in, n->attrs.ranks);
	if (rc < 0) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s", atm_errmsg());
		return cpu_node_err(k, rc, msg);
	}
	return ATM_OK;
}

/* cpu_run_sgd -- w -= lr * dw, one element at a time in index order */
atm_status cpu_run_sgd(const atm_kernel *k, void *const *in, void *const *out)
{
	(void)out;
	float *w = in[0];
	const float *dw = in[1];
	float lr = knode(k)->attrs.lr;
	for (int64_t i = 0; i < k->n_rows; i++)
		w[i] -= lr * dw[i];
	return ATM_OK;
}

/* cpu_run_sgd_momentum -- PyTorch's SGD step with weight decay and momentum, element by element
 * (elements in parallel): g = dw + weight_decay * w; buf = momentum * buf + g (a zero buffer
 * gives PyTorch's first step, buf = g); w -= lr * buf. Without a buffer, w -= lr * g. */
atm_status cpu_run_sgd_momentum(const atm_kernel *k, void *const *in, void *const *out)
{
	(void)out;
	const atm_node *n = knode(k);
	float *w = in[0], *buf = n->n_in > 2 ? in[2] : NULL;
	const float *dw = in[1];
	float lr = n->attrs.lr, wd = n->attrs.weight_decay, mom = n->attrs.momentum;
#pragma omp parallel for schedule(static)
	for (int64_t i = 0; i < k->n_rows; i++) {
		float g = wd != 0 ? dw[i] + wd * w[i] : dw[i];
		if (buf) {
			buf[i] = buf[i] * mom + g;
			g = buf[i];
		}
		w[i] = w[i] - lr * g;
	}
	return ATM_OK;
}

/* cpu_run_adamw -- PyTorch's AdamW step (torch.optim.AdamW, its single-tensor form), element by
 * element (elements in parallel): t = step + 1; w *= 1 - lr * weight_decay; m = beta1 * m +
 * (1 - beta1) g; v = beta2 * v + (1 - beta2) g^2; w -= lr / (1 - beta1^t) * m / (sqrt(v) /
 * sqrt(1 - beta2^t) + eps); step = t. The scalars are taken in double, as PyTorch's Python
 * does, and applied in float. */
atm_status cpu_run_adamw(const atm_kernel *k, void *const *in, void *const *out)
{
	(void)out;
	const atm_attrs *a = &knode(k)->attrs;
	float *w = in[0], *m = in[2], *v = in[3], *step = in[4];
	const float *dw = in[1];
	double t = (double)step[0] + 1.0;
	float decay = (float)(1.0 - (double)a->lr * (double)a->weight_decay);
	float step_size = (float)((double)a->lr / (1.0 - pow((double)a->beta1, t)));
	float bc2 = (float)sqrt(1.0 - pow((double)a->beta2, t));
	float b1 = a->beta1, b2 = a->beta2, eps = a->epsilon;
	float c1 = (float)(1.0 - (double)a->beta1), c2 = (float)(1.0 - (double)a->beta2);
#pragma omp parallel for schedule(static)
	for (int64_t i = 0; i < k->n_rows; i++) {
		float g = dw[i];
		w[i] *= decay;
		m[i] = m[i] * b1 + c1 * g;
		v[i] = v[i] * b2 + c2 * g * g;
		float denom = sqrtf(v[i]) / bc2 + eps;
		w[i] = w[i] - step_size * (m[i] / denom);
	}
	step[0] = (float)t;
	return ATM_OK;
}

/* cpu_run_softmax_xent -- probs = softmax(logits) per row and loss = mean over rows of
 * -sum(labels * log(probs)); log(probs) is taken as (x - max) - log(sum), which
 * is finite for finite logits (sum >= 1), so log(0) never happens; sums are in
 * double and in index order, so the result is reproducible */
atm_status cpu_run_softmax_xent(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *logits = in[0], *labels = in[1];
	float *probs = out[0], *loss = out[1];
	double total = 0;
	for (int64_t r = 0; r < k->n_rows; r++) {
		const float *x = logits + r * k->n_cols;
		const float *l = labels + r * k->n_cols;
		float *p = probs + r * k->n_cols;
		float max = x[0];
		double sum = 0;
		for (int64_t c = 1; c < k->n_cols; c++)
			max = x[c] > max ? x[c] : max;
		for (int64_t c = 0; c < k->n_cols; c++)
			sum += exp((double)x[c] - max);
		double log_sum = log(sum);
		for (int64_t c = 0; c < k->n_cols; c++) {
			double log_p = (double)x[c] - max - log_sum;
			p[c] = (float)exp(log_p);
			/* skip zero labels: 0 * log_p is 0 but 0 * -inf would be NaN */
			if (l[c] != 0)
				total -= l[c] * log_p;
		}
	}
	loss[0] = (float)(total / (double)k->n_rows);
	return ATM_OK;
}

/* cpu_run_softmax_xent_bwd -- dlogits = (probs - labels) / N */
atm_status cpu_run_softmax_xent_bwd(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *probs = in[0], *labels = in[1];
	float *dlogits = out[0];
	int64_t n = k->n_rows * k->n_cols;
	float inv = 1.0f / (float)k->n_rows;
	for (int64_t i = 0; i < n; i++)
		dlogits[i] = (probs[i] - labels[i]) * inv;
	return ATM_OK;
}

/* cpu_run_reduce_sum -- y = the sum of x's rows ([rows, y's elements]), row by row in order. oneDNN
 * 2.6 has a sum reduction, but over the leading dim it runs its reference kernel here: 6 ms for
 * a [256, 3072] bias gradient, 15% of a GPT-2 step; this loop streams x once. */
atm_status cpu_run_reduce_sum(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0];
	float *y = out[0];
	int64_t cols = cpu_tensor_of(k, SLOT_OUT, 0)->n_elems, rows = k->n_rows / cols;
	memcpy(y, x, (size_t)cols * sizeof *y);
	for (int64_t r = 1; r < rows; r++) {
		const float *xr = x + r * cols;
		for (int64_t c = 0; c < cols; c++)
			y[c] += xr[c];
	}
	return ATM_OK;
}

/* cpu_run_mul_bwd -- db = dy * a summed over the dims db is repeated along (atm_broadcast_of):
 * each element of db sums its elements of dy * a in index order, in double, so that the
 * result does not depend on the threads */
atm_status cpu_run_mul_bwd(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *dy = in[0], *a = in[1];
	float *db = out[0];
	atm_broadcast bc;
	atm_status rc = atm_broadcast_of(k->g, knode(k), &bc);
	if (rc < 0)
		return rc;
	int64_t n = cpu_tensor_of(k, SLOT_OUT, 0)->n_elems;
#pragma omp parallel for schedule(static)
	for (int64_t j = 0; j < n; j++) {
		int64_t rem = j, off = 0, idx[ATM_MAX_DIMS] = {0};
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
	return ATM_OK;
}

/* cpu_run_rms_norm -- y = x * rstd * w per row, rstd = 1 / sqrt(mean of x^2 + epsilon), the mean
 * summed in double in index order; rows in parallel, each alone */
atm_status cpu_run_rms_norm(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0], *w = in[1];
	float *y = out[0], *rstd = out[1];
	int64_t c = k->n_cols;
	double eps = knode(k)->attrs.epsilon;
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < k->n_rows; r++) {
		const float *xr = x + r * c;
		double ss = 0;
		for (int64_t i = 0; i < c; i++)
			ss += (double)xr[i] * xr[i];
		float s = (float)(1.0 / sqrt(ss / (double)c + eps));
		rstd[r] = s;
		for (int64_t i = 0; i < c; i++)
			y[r * c + i] = xr[i] * s * w[i];
	}
	return ATM_OK;
}

/* cpu_run_rms_norm_bwd -- g = dy * w, xhat = x * rstd: dx = rstd * (g - xhat * mean of g * xhat)
 * per row (rows in parallel), dw = the sum over rows of dy * xhat (columns in parallel, rows in
 * order); sums in double */
atm_status cpu_run_rms_norm_bwd(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0], *dy = in[1], *w = in[2], *rstd = in[3];
	float *dx = out[0], *dw = out[1];
	int64_t c = k->n_cols, rows = k->n_rows;
#pragma omp parallel for schedule(static)
	for (int64_t r = 0; r < rows; r++) {
		const float *xr = x + r * c, *dyr = dy + r * c;
		double s = rstd[r], dot = 0;
		for (int64_t i = 0; i < c; i++)
			dot += (double)dyr[i] * w[i] * xr[i] * s;
		double m = dot / (double)c;
		for (int64_t i = 0; i < c; i++)
			dx[r * c + i] = (float)(s * ((double)dyr[i] * w[i] - (double)xr[i] * s * m));
	}
#pragma omp parallel for schedule(static)
	for (int64_t i = 0; i < c; i++) {
		double acc = 0;
		for (int64_t r = 0; r < rows; r++)
			acc += (double)dy[r * c + i] * x[r * c + i] * rstd[r];
		dw[i] = (float)acc;
	}
	return ATM_OK;
}

/* cpu_run_hardsigmoid -- y = min(max(x / 6 + 1/2, 0), 1), or dx = dy / 6 where -3 < x < 3 (PyTorch's
 * gradient, 0 at the kinks); oneDNN 2.6 has no hardsigmoid */
atm_status cpu_run_hardsigmoid(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0];
	float *y = out[0];
	if (knode(k)->op == ATM_OP_HARDSIGMOID_FWD) {
#pragma omp parallel for schedule(static)
		for (int64_t i = 0; i < k->n_rows; i++)
			y[i] = fminf(fmaxf(x[i] / 6.0f + 0.5f, 0.0f), 1.0f);
		return ATM_OK;
	}
	const float *dy = in[1];
#pragma omp parallel for schedule(static)
	for (int64_t i = 0; i < k->n_rows; i++)
		y[i] = x[i] > -3.0f && x[i] < 3.0f ? dy[i] / 6.0f : 0.0f;
	return ATM_OK;
}

/* cpu_run_rope -- rotary embeddings over x [..., T, D] in the rotate-half form: with h = D/2 and
 * a = t * theta^(-2i/D) at position t (the row's place along T), y_i = x_i cos a - x_{i+h} sin a
 * and y_{i+h} = x_{i+h} cos a + x_i sin a; the backward rotates by -a. Angles in double. */
atm_status cpu_run_rope(const atm_kernel *k, void *const *in, void *const *out)
{
	const float *x = in[0];
	float *y = out[0];
	const atm_tensor *t = cpu_tensor_of(k, SLOT_IN, 0);
	int64_t d = k->n_cols, h = d / 2, seq = t->dims[t->ndim - 2];
	double theta = knode(k)->attrs.theta, sign = knode(k)->op == ATM_OP_ROPE_BWD ? -1.0 : 1.0;
	enum { FREQS = 64 };
	/* the frequencies of FREQS pairs at a time, taken once by each thread, not once per row */
#pragma omp parallel
	{
		double freq[FREQS];
		for (int64_t i0 = 0; i0 < h; i0 += FREQS) {
			int64_t nf = h - i0 < FREQS ? h - i0 : FREQS;
			for (int64_t j = 0; j < nf; j++)
				freq[j] = pow(theta, -2.0 * (double)(i0 + j) / (double)d);
#pragma omp for schedule(static)
			for (int64_t r = 0; r < k->n_rows; r++) {
				double pos = (double)(r % seq);
				const float *xr = x + r * d;
				float *yr = y + r * d;
				for (int64_t j = 0; j < nf; j++) {
					int64_t i = i0 + j;
					double a = pos * freq[j];
					float c = (float)cos(a), s = (float)(sign * sin(a));
					float x0 = xr[i], x1 = xr[i + h];
					yr[i] = x0 * c - x1 * s;
					yr[i + h] = x1 * c + x0 * s;
				}
			}
		}
	}
	return ATM_OK;
}

/* cpu_run_causal_softmax -- for a causal softmax (the others ran as a primitive): softmax of each row of x over its first i + 1 entries, where i is the
 * row's place in its [T, T] matrix; the masked entries are 0. The sum is in double, in index
 * order. */
atm_status cpu_run_causal_softmax(const atm_kernel *k, void *const *in, void *const *out)
{
	if (!knode(k)->attrs.causal)
		return ATM_OK; /* oneDNN's primitive did it */
	const float *x = in[0];
	float *y = out[0];
	int64_t t = k->n_cols;
	for (int64_t r = 0; r < k->n_rows; r++) {
		const float *xr = x + r * t;
		float *yr = y + r * t;
		int64_t valid = r % t + 1;
		float max = xr[0];
		for (int64_t c = 1; c < valid; c++)
			max = xr[c] > max ? xr[c] : max;
		double sum = 0;
		for (int64_t c = 0; c < valid; c++) {
			yr[c] = expf(xr[c] - max);
			sum += yr[c];
		}
		float inv = (float)(1.0 / sum);
		for (int64_t c = 0; c < valid; c++)
			yr[c] *= inv;
		for (int64_t c = valid; c < t; c++)
			yr[c] = 0.0f;
	}
	return ATM_OK;
}

/* bad_id -- the message for a token id or label outside [0, limit) */
static atm_status bad_id(const atm_kernel *k, const char *what, int64_t at, int32_t id,
                         int64_t limit)
{
	char msg[256];
	snprintf(msg, sizeof msg, "%s %d at position %lld is outside the %lld %s", what, id,
	         (long long)at, (long long)limit, strcmp(what, "label") == 0 ? "classes" : "rows of "
	         "the table");
	return cpu_node_err(k, ATM_E_INPUT, msg);
}

/* embedding_row -- the table row position r of y reads: its id, or its place in the
 * sequence; -1 (after the message) for an id outside the table */
static int64_t embedding_row(const atm_kernel *k, const int32_t *ids, int64_t r, int64_t seq,
                             int64_t rows)
{
	if (!ids)
		return r % seq;
	if (ids[r] < 0 || ids[r] >= rows) {
		bad_id(k, "token id", r, ids[r], rows);
		return -1;
	}
	return ids[r];
}

/* cpu_run_embedding -- forward: y's rows copied from the table, by id or by position;
 * backward: dtable = 0, then each position's dy row added to its table row in position order
 * (a fixed order of sums, so the gradient is the same on every run) */
atm_status cpu_run_embedding(const atm_kernel *k, void *const *in, void *const *out)
{
	const atm_node *n = knode(k);
	bool fwd = n->op == ATM_OP_EMBEDDING_FWD;
	const atm_tensor *tab = cpu_tensor_of(k, fwd ? SLOT_IN : SLOT_OUT, 0);
	const atm_tensor *pos = cpu_tensor_of(k, fwd ? SLOT_OUT : SLOT_IN, 0); /* y or dy */
	const float *src = in[0]; /* the table, or dy */
	const int32_t *ids = n->n_in == 2 ? in[1] : NULL;
	float *dst = out[0]; /* y, or dtable */
	int64_t c = pos->dims[pos->ndim - 1], rows = tab->dims[tab->ndim - 2];
	int64_t seq = pos->dims[pos->ndim - 2];
	if (!fwd)
		memset(dst, 0, (size_t)tab->bytes);
	for (int64_t r = 0; r < pos->n_elems / c; r++) {
		int64_t row = embedding_row(k, ids, r, seq, rows);
		if (row < 0)
			return ATM_E_INPUT;
		if (fwd) {
			memcpy(dst + r * c, src + row * c, (size_t)c * sizeof *dst);
			continue;
		}
		float *d = dst + row * c;
		const float *s = src + r * c;
		for (int64_t j = 0; j < c; j++)
			d[j] += s[j];
	}
	return ATM_OK;
}

/* cpu_run_narrow -- copy the part of whole along axis (first part_len of whole_len) to or from
 * part; backward zeroes the rest of whole. memcpy of contiguous blocks: no oneDNN primitive
 * is needed for that. */
atm_status cpu_run_narrow(const atm_kernel *k, void *const *in, void *const *out)
{
	const atm_node *n = knode(k);
	bool fwd = n->op == ATM_OP_NARROW_FWD;
	const atm_tensor *whole = fwd ? cpu_tensor_of(k, SLOT_IN, 0) : cpu_tensor_of(k, SLOT_OUT, 0);
	const atm_tensor *part = fwd ? cpu_tensor_of(k, SLOT_OUT, 0) : cpu_tensor_of(k, SLOT_IN, 0);
	int axis = n->attrs.axis;
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < axis; d++)
		outer *= whole->dims[d];
	for (int d = axis + 1; d < whole->ndim; d++)
		inner *= whole->dims[d];
	int64_t wlen = whole->dims[axis] * inner, plen = part->dims[axis] * inner;
	for (int64_t o = 0; o < outer; o++) {
		if (fwd) {
			memcpy((float *)out[0] + o * plen, (const float *)in[0] + o * wlen,
			       (size_t)plen * sizeof(float));
		} else {
			float *w = (float *)out[0] + o * wlen;
			memcpy(w, (const float *)in[0] + o * plen, (size_t)plen * sizeof(float));
			memset(w + plen, 0, (size_t)(wlen - plen) * sizeof(float));
		}
	}
	return ATM_OK;
}

/* cpu_run_token_xent -- after the log-softmax step: loss = -mean over rows of logp[label], summed
 * in double in row order */
atm_status cpu_run_token_xent(const atm_kernel *k, void *const *in, void *const *out)
{
	const int32_t *labels = in[1];
	const float *logp = out[0];
	float *loss = out[1];
	double total = 0;
	for (int64_t r = 0; r < k->n_rows; r++) {
		if (labels[r] < 0 || labels[r] >= k->n_cols)
			return bad_id(k, "label", r, labels[r], k->n_cols);
		total -= logp[r * k->n_cols + labels[r]];
	}
	loss[0] = (float)(total / (double)k->n_rows);
	return ATM_OK;
}

/* cpu_run_token_xent_bwd -- after exp(logp) / rows: take 1 / rows off each row's label */
atm_status cpu_run_token_xent_bwd(const atm_kernel *k, void *const *in, void *const *out)
{
	const int32_t *labels = in[1];
	float *d = out[0];
	float inv = 1.0f / (float)k->n_rows;
	for (int64_t r = 0; r < k->n_rows; r++) {
		if (labels[r] < 0 || labels[r] >= k->n_cols)
			return bad_id(k, "label", r, labels[r], k->n_cols);
		d[r * k->n_cols + labels[r]] -= inv;
	}
	return ATM_OK;
}


/* Elements a thread of the cast narrows at a time. */
#define CAST_CHUNK ((int64_t)1 << 16)

void cpu_bf16_narrow(const float *x, uint16_t *y, int64_t n)
{
	/* safetensors' rounding (as PyTorch's), in a chunk per thread */
	int64_t chunks = (n + CAST_CHUNK - 1) / CAST_CHUNK;
	/* one chunk on the calling thread: waking the team costs more than a small cast */
#pragma omp parallel for schedule(static) if (chunks > 1)
	for (int64_t c = 0; c < chunks; c++) {
		int64_t lo = c * CAST_CHUNK, len = n - lo < CAST_CHUNK ? n - lo : CAST_CHUNK;
		atm_st_narrow(x + lo, len, ATM_ST_BF16, y + lo);
	}
}

void cpu_bf16_widen(const uint16_t *x, float *y, int64_t n)
{
	uint32_t *w = (uint32_t *)y;
#pragma omp parallel for schedule(static) if (n > CAST_CHUNK)
	for (int64_t i = 0; i < n; i++)
		w[i] = (uint32_t)x[i] << 16;
}

atm_status cpu_run_cast(const atm_kernel *k, void *const *in, void *const *out)
{
	atm_dtype from = cpu_tensor_of(k, SLOT_IN, 0)->dtype, to = cpu_tensor_of(k, SLOT_OUT, 0)->dtype;
	if (from == to)
		memcpy(out[0], in[0], (size_t)cpu_tensor_of(k, SLOT_IN, 0)->bytes);
	else if (to == ATM_BF16)
		cpu_bf16_narrow(in[0], out[0], k->n_rows);
	else
		cpu_bf16_widen(in[0], out[0], k->n_rows);
	return ATM_OK;
}
