/* core_internal.h -- helpers shared by the core sources, not part of the public contract */
#ifndef ATM_CORE_INTERNAL_H
#define ATM_CORE_INTERNAL_H

#include "atm_core.h"

/* atm_shape_check -- does node's input and output shapes obey its op's rule?
 * The message names the node and the tensor. */
atm_status atm_shape_check(const atm_graph *g, const atm_node *n);

/* atm_shape_elems -- product of dims with overflow and range checks */
atm_status atm_shape_elems(int ndim, const int64_t *dims, int64_t *elems);

/* A text being built: the JSON files core writes put one element a line, which jansson's
 * indenting cannot do. A failed allocation is remembered and reported once, by
 * atm_text_finish. Start from (atm_text){0}. */
typedef struct {
	char *buf;
	size_t len, cap;
	bool failed;
} atm_text;

/* atm_text_add -- append printf-style text */
void atm_text_add(atm_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* atm_text_str -- append s as it is (it may hold '%') */
void atm_text_str(atm_text *t, const char *s);
/* atm_text_json -- append v (borrowed) on one line, dumped with json_dumps's flags (any
 * value may be dumped, not only arrays and objects); NULL is a failure */
void atm_text_json(atm_text *t, const struct json_t *v, size_t flags);
/* atm_text_json_new -- the same, and v is released (it steals v) */
void atm_text_json_new(atm_text *t, struct json_t *v, size_t flags);
/* atm_text_finish -- *out the malloc'd text (and *len its length; len may be NULL), t
 * emptied; after a failed allocation ATM_E_NOMEM ("out of memory writing WHAT") and the
 * text freed */
atm_status atm_text_finish(atm_text *t, char **out, size_t *len, const char *what);

#endif /* ATM_CORE_INTERNAL_H */
