/* status.c -- thread-local error messages, the mapping of status codes to exit codes, the stop flag */
#include <stdarg.h>
#include <string.h>

#include "atm_core.h"

#define ATM_ERRMSG_MAX 2048

static _Thread_local char errmsg[ATM_ERRMSG_MAX];

const char *atm_errmsg(void)
{
	return errmsg;
}

void atm_err_clear(void)
{
	errmsg[0] = '\0';
}

atm_status atm_err(atm_status code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof errmsg, fmt, ap);
	va_end(ap);
	return code;
}

atm_status atm_err_prefix(atm_status code, const char *fmt, ...)
{
	char prefix[ATM_ERRMSG_MAX];
	char old[ATM_ERRMSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	size_t n = strlen(prefix);
	memcpy(old, errmsg, sizeof old);
	if (n >= sizeof errmsg)
		n = sizeof errmsg - 1;
	memcpy(errmsg, prefix, n);
	size_t rest = strnlen(old, sizeof old - 1);
	if (rest > sizeof errmsg - 1 - n)
		rest = sizeof errmsg - 1 - n;
	memcpy(errmsg + n, old, rest);
	errmsg[n + rest] = '\0';
	return code;
}

const char *atm_status_name(atm_status code)
{
	switch (code) {
	case ATM_OK: return "ok";
	case ATM_E_USAGE: return "usage";
	case ATM_E_INPUT: return "input";
	case ATM_E_INFEASIBLE: return "infeasible";
	case ATM_E_UNSUPPORTED: return "unsupported";
	case ATM_E_IO: return "io";
	case ATM_E_NOMEM: return "nomem";
	case ATM_E_NOSPACE: return "nospace";
	case ATM_E_INTERRUPTED: return "interrupted";
	case ATM_E_NOTFOUND: return "notfound";
	case ATM_E_OVER_LIMIT: return "over-limit";
	default: return "internal";
	}
}

int atm_exit_code(atm_status code)
{
	switch (code) {
	case ATM_OK: return 0;
	case ATM_E_USAGE: return 2;
	case ATM_E_INPUT: return 3;
	case ATM_E_INFEASIBLE: return 4;
	case ATM_E_UNSUPPORTED: return 5;
	case ATM_E_IO: return 6;
	case ATM_E_NOMEM:
	case ATM_E_NOSPACE: return 7;
	case ATM_E_NOTFOUND: return 8;
	case ATM_E_OVER_LIMIT: return 9;
	case ATM_E_INTERRUPTED: return 130;
	default: return 1;
	}
}

static volatile sig_atomic_t *stop_flag;

void atm_stop_flag_set(volatile sig_atomic_t *stop)
{
	stop_flag = stop;
}

bool atm_stopped(void)
{
	return stop_flag && *stop_flag;
}
