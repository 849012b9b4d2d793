/* names.c -- the names of dtypes and tensor kinds as the JSON formats spell them, and the lookup of a name in a list (op names sit with their table in ops.c) */
#include <string.h>

#include "core_internal.h"

static const char *const dtype_names[ATM_N_DTYPES] = {"f32", "i32", "u8", "bf16"};
static const int64_t dtype_sizes[ATM_N_DTYPES] = {4, 4, 1, 2};

static const char *const kind_names[ATM_N_KINDS] = {
	"input", "param", "grad", "activation", "optimizer_state", "constant", "output",
};

const char *atm_dtype_name(atm_dtype t)
{
	return (unsigned)t < ATM_N_DTYPES ? dtype_names[t] : "?";
}

int64_t atm_dtype_bytes(atm_dtype t)
{
	return (unsigned)t < ATM_N_DTYPES ? dtype_sizes[t] : 0;
}

const char *atm_kind_name(atm_tensor_kind k)
{
	return (unsigned)k < ATM_N_KINDS ? kind_names[k] : "?";
}

/* atm_name_lookup -- index of s in names, or an ATM_E_INPUT message listing them all */
atm_status atm_name_lookup(const char *what, const char *const *names, int n, const char *s,
                           int *out)
{
	char valid[1024];
	size_t used = 0;
	for (int i = 0; i < n; i++) {
		if (s && strcmp(s, names[i]) == 0) {
			*out = i;
			return ATM_OK;
		}
	}
	valid[0] = '\0';
	for (int i = 0; i < n && used < sizeof valid; i++)
		used += (size_t)snprintf(valid + used, sizeof valid - used, "%s%s", i ? ", " : "",
		                         names[i]);
	return atm_err(ATM_E_INPUT, "unknown %s '%s' (valid: %s)", what, s ? s : "(null)", valid);
}

atm_status atm_dtype_from_name(const char *s, atm_dtype *out)
{
	int i = 0;
	atm_status rc = atm_name_lookup("dtype", dtype_names, ATM_N_DTYPES, s, &i);
	*out = (atm_dtype)i;
	return rc;
}

atm_status atm_kind_from_name(const char *s, atm_tensor_kind *out)
{
	int i = 0;
	atm_status rc = atm_name_lookup("tensor kind", kind_names, ATM_N_KINDS, s, &i);
	*out = (atm_tensor_kind)i;
	return rc;
}
