/* reference.h -- plain C forward references of the CPU kernels, in double, for test_kernels.c only */
#ifndef ATM_TESTS_RUNTIME_REFERENCE_H
#define ATM_TESTS_RUNTIME_REFERENCE_H

#include <math.h>
#include <stdint.h>

/* ref_win -- geometry of a 2-D sliding window over x[n, c, h, w] giving [n, ?, oh, ow] */
struct ref_win {
	int64_t n, c, h, w;  /* input */
	int64_t kh, kw;      /* window */
	int64_t sh, sw;      /* strides (>= 1) */
	int64_t pt, pl;      /* top and left padding; bottom and right follow from oh, ow */
	int64_t oh, ow;      /* output */
	int64_t groups;      /* convolutions: channel groups (0 means 1) */
};

/* ref_conv -- y[n,o,i,j] = b[o] + sum over the c of o's group, a, e of
 * x[n,c,i*sh-pt+a, j*sw-pl+e] * w[o,c - first c of the group,a,e]; b may be NULL */
static void ref_conv(const struct ref_win *g, int64_t o_ch, const float *x, const float *w,
                     const float *b, double *y)
{
	int64_t groups = g->groups > 1 ? g->groups : 1, cg = g->c / groups, og = o_ch / groups;
	for (int64_t n = 0; n < g->n; n++)
		for (int64_t o = 0; o < o_ch; o++)
			for (int64_t i = 0; i < g->oh; i++)
				for (int64_t j = 0; j < g->ow; j++) {
					double s = b ? b[o] : 0.0;
					for (int64_t k = 0, c0 = o / og * cg; k < cg; k++)
						for (int64_t a = 0; a < g->kh; a++)
							for (int64_t e = 0; e < g->kw; e++) {
								int64_t hi = i * g->sh - g->pt + a, wi = j * g->sw - g->pl + e;
								if (hi < 0 || hi >= g->h || wi < 0 || wi >= g->w)
									continue;
								s += (double)x[((n * g->c + c0 + k) * g->h + hi) * g->w + wi] *
								     w[((o * cg + k) * g->kh + a) * g->kw + e];
							}
					y[((n * o_ch + o) * g->oh + i) * g->ow + j] = s;
				}
}

/* ref_ip -- y[n,o] = b[o] + sum over i of x[n,i] * w[o,i] */
static void ref_ip(int64_t n_rows, int64_t n_in, int64_t n_out, const float *x, const float *w,
                   const float *b, double *y)
{
	for (int64_t n = 0; n < n_rows; n++)
		for (int64_t o = 0; o < n_out; o++) {
			double s = b[o];
			for (int64_t i = 0; i < n_in; i++)
				s += (double)x[n * n_in + i] * w[o * n_in + i];
			y[n * n_out + o] = s;
		}
}

enum ref_pool_mode { REF_MAX, REF_AVG_INCLUDE, REF_AVG_EXCLUDE };

/* ref_pool -- max, or average over the window counting padding (include) or
 * only the elements inside x (exclude); the window is clipped to the padded
 * extent, which with floor-sized outputs is always the full window */
static void ref_pool(const struct ref_win *g, enum ref_pool_mode mode, const float *x, double *y)
{
	for (int64_t nc = 0; nc < g->n * g->c; nc++)
		for (int64_t i = 0; i < g->oh; i++)
			for (int64_t j = 0; j < g->ow; j++) {
				double best = -INFINITY, sum = 0;
				int64_t inside = 0;
				for (int64_t a = 0; a < g->kh; a++)
					for (int64_t e = 0; e < g->kw; e++) {
						int64_t hi = i * g->sh - g->pt + a, wi = j * g->sw - g->pl + e;
						if (hi < 0 || hi >= g->h || wi < 0 || wi >= g->w)
							continue;
						double v = x[(nc * g->h + hi) * g->w + wi];
						best = v > best ? v : best;
						sum += v;
						inside++;
					}
				double *out = &y[(nc * g->oh + i) * g->ow + j];
				if (mode == REF_MAX)
					*out = best;
				else
					*out = sum / (double)(mode == REF_AVG_EXCLUDE ? inside : g->kh * g->kw);
			}
}

/* ref_bn -- training batch norm of x[n, c, s]: batch mean, biased variance,
 * y = gamma * (x - mean) / sqrt(var + eps) + beta */
static void ref_bn(int64_t n, int64_t c, int64_t s, double eps, const float *x, const float *gamma,
                   const float *beta, double *y, double *mean, double *var)
{
	for (int64_t ch = 0; ch < c; ch++) {
		double m = 0, v = 0;
		for (int64_t i = 0; i < n; i++)
			for (int64_t k = 0; k < s; k++)
				m += x[(i * c + ch) * s + k];
		m /= (double)(n * s);
		for (int64_t i = 0; i < n; i++)
			for (int64_t k = 0; k < s; k++) {
				double d = x[(i * c + ch) * s + k] - m;
				v += d * d;
			}
		v /= (double)(n * s);
		mean[ch] = m;
		var[ch] = v;
		for (int64_t i = 0; i < n; i++)
			for (int64_t k = 0; k < s; k++) {
				int64_t at = (i * c + ch) * s + k;
				y[at] = gamma[ch] * (x[at] - m) / sqrt(v + eps) + beta[ch];
			}
	}
}

/* ref_softmax_xent -- probs of each row and the mean cross-entropy against labels */
static void ref_softmax_xent(int64_t n, int64_t k, const float *logits, const float *labels,
                             double *probs, double *loss)
{
	double total = 0;
	for (int64_t r = 0; r < n; r++) {
		double max = logits[r * k], sum = 0;
		for (int64_t c = 1; c < k; c++)
			max = fmax(max, logits[r * k + c]);
		for (int64_t c = 0; c < k; c++)
			sum += exp(logits[r * k + c] - max);
		for (int64_t c = 0; c < k; c++) {
			double lp = logits[r * k + c] - max - log(sum);
			probs[r * k + c] = exp(lp);
			if (labels[r * k + c] != 0)
				total -= labels[r * k + c] * lp;
		}
	}
	*loss = total / (double)n;
}

#endif /* ATM_TESTS_RUNTIME_REFERENCE_H */
