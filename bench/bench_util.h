/* bench_util.h -- small helpers the benchmark programs share */
#ifndef ATM_BENCH_UTIL_H
#define ATM_BENCH_UTIL_H

#include <stdbool.h>
#include <string.h>

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

#endif /* ATM_BENCH_UTIL_H */
