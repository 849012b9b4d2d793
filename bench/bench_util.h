/* bench_util.h -- small helpers the benchmark programs share */
#ifndef ATM_BENCH_UTIL_H
#define ATM_BENCH_UTIL_H

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atm_zoo.h"

/* bench_split -- the next comma-separated item of *s into buf, false at the end */
static inline bool bench_split(const char **s, char *buf, size_t len)
{
	if (!*s || !**s)
		return false;
	const char *c = strchr(*s, ',');
	size_t n = c ? (size_t)(c - *s) : strlen(*s);
	if (n >= len)
		n = len - 1;
	memcpy(buf, *s, n);
	buf[n] = '\0';
	*s = c ? c + 1 : NULL;
	return true;
}

/* bench_usage_error -- "PROG: message" and where the help is, on stderr; exit code 2, as
 * autotm's usage errors */
__attribute__((format(printf, 2, 3), unused)) static int bench_usage_error(const char *prog,
                                                                           const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	return 2;
}

/* bench_other_option -- the end of every bench's option loop (getopt_long with ":h..."):
 * --help prints usage and exits 0, a missing value or an unknown option is a usage error;
 * the exit code */
__attribute__((unused)) static int bench_other_option(const char *prog, int opt, int optind,
                                                      char **argv, const char *usage)
{
	if (opt == 'h') {
		fputs(usage, stdout);
		return 0;
	}
	if (opt == ':')
		return bench_usage_error(prog, "option '%s' needs a value", argv[optind - 1]);
	return bench_usage_error(prog, "unknown option '%s'", argv[optind - 1]);
}

/* bench_int -- v as an integer from lo to hi into *out; false (with a message) when it is not */
__attribute__((unused)) static bool bench_int(const char *prog, const char *opt, const char *v,
                                              long long lo, long long hi, long long *out)
{
	char *end = NULL;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (end == v || *end || errno || x < lo || x > hi) {
		bench_usage_error(prog, "--%s '%s' is not valid; expected an integer from %lld to %lld",
		                  opt, v, lo, hi);
		return false;
	}
	*out = x;
	return true;
}

/* bench_real -- v as a finite number above lo (at least lo when !open) and at most hi into
 * *out; false (with a message) when it is not */
__attribute__((unused)) static bool bench_real(const char *prog, const char *opt, const char *v,
                                               double lo, bool open, double hi, double *out)
{
	char *end = NULL;
	errno = 0;
	double x = strtod(v, &end);
	if (end == v || *end || errno || !isfinite(x) || x < lo || (open && x == lo) || x > hi) {
		bench_usage_error(prog, "--%s '%s' is not valid; expected a number %s %g and at most "
		                  "%g", opt, v, open ? "above" : "from", lo, hi);
		return false;
	}
	*out = x;
	return true;
}

/* bench_models_known -- every network of the comma-separated list is the zoo's ("all" stands
 * for every one): -1; else a usage error naming the one that is not, and its exit code */
__attribute__((unused)) static int bench_models_known(const char *prog, const char *list)
{
	char name[64];
	for (const char *s = list; strcmp(list, "all") && bench_split(&s, name, sizeof name);) {
		const atm_zoo_model *zm;
		if (atm_zoo_find(name, &zm) < 0)
			return bench_usage_error(prog, "--models: %s", atm_errmsg());
	}
	return -1;
}

#endif /* ATM_BENCH_UTIL_H */
