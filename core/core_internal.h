/* core_internal.h -- helpers shared by the core sources, not part of the public contract */
#ifndef ATM_CORE_INTERNAL_H
#define ATM_CORE_INTERNAL_H

#include "atm_core.h"

/* atm_shape_check -- does node's input and output shapes obey its op's rule?
 * The message names the node and the tensor. */
atm_status atm_shape_check(const atm_graph *g, const atm_node *n);

/* atm_shape_elems -- product of dims with overflow and range checks */
atm_status atm_shape_elems(int ndim, const int64_t *dims, int64_t *elems);

#endif /* ATM_CORE_INTERNAL_H */
