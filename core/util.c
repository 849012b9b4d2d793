/* util.c -- byte sizes read and printed, dims printed, FNV-1a, medians, the monotonic clock */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atm_core.h"

atm_status atm_parse_bytes(const char *s, int64_t *out)
{
	char *end = NULL;
	double v, mult = 1;
	*out = 0;
	if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		goto bad;
	/* decimal only: strtod would read 0x10M as hex, and nan or inf as numbers */
	for (const char *c = s; *c && !strchr("KMGTkmgtIiBb", *c); c++)
		if (!isdigit((unsigned char)*c) && *c != '.')
			goto bad;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v))
		goto bad;
	switch (toupper((unsigned char)*end)) {
	case 'K': mult = 1024.0; end++; break;
	case 'M': mult = 1024.0 * 1024; end++; break;
	case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
	case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (mult > 1 && (end[0] == 'i' || end[0] == 'I') && toupper((unsigned char)end[1]) == 'B')
		end += 2;
	else if (toupper((unsigned char)*end) == 'B')
		end++;
	if (*end)
		goto bad;
	v *= mult;
	if (v < 1 || v > (double)ATM_MAX_BYTES)
		goto bad;
	*out = (int64_t)v;
	return ATM_OK;
bad:
	return atm_err(ATM_E_USAGE, "'%s' is not a byte size; use a positive number with an optional "
	               "K, M, G or T suffix (binary units), e.g. 4096, 512M, 1.5G", s ? s : "");
}

const char *atm_format_dims(int ndim, const int64_t *dims, char *buf, size_t len)
{
	size_t k = (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < ndim && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
	if (k < len)
		snprintf(buf + k, len - k, "]");
	return buf;
}

const char *atm_format_bytes(int64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)bytes;
	int u = 0;
	while (fabs(v) >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%lld B", (long long)bytes);
	else
		snprintf(buf, len, "%.2f %s", v, units[u]);
	return buf;
}

/* atm_fnv1a -- FNV-1a over len bytes, continuing from h */
uint64_t atm_fnv1a(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

int atm_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double atm_sort_median(double *v, int64_t n)
{
	qsort(v, (size_t)n, sizeof *v, atm_cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* atm_now_s -- CLOCK_MONOTONIC in seconds */
double atm_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
