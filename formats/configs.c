/* configs.c -- a node's IO configurations: masks over its operand groups, their names, and the keys a profile files them under */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats_internal.h"

/* How a node's operands map to mask bits: each unit is one free choice (a
 * tensor that may be slow, or a group of them) and sets the bits in unit[]. */
struct layout {
	int n_in, n_out;
	bool grouped;
	int n_units;
	uint32_t unit[ATM_CONFIG_MAX_OPERANDS];
	uint32_t all; /* every bit some configuration may set */
};

/* operand -- tensor of operand i: inputs, then outputs */
static int32_t operand(const atm_node *n, int i)
{
	return i < n->n_in ? n->in[i] : n->out[i - n->n_in];
}

/* may_be_slow -- tensor t may live in slow memory */
static bool may_be_slow(const atm_graph *g, int32_t t)
{
	return (atm_graph_tensor(g, t)->locations & ATM_LOC_SLOW) != 0;
}

/* layout_of -- the units of n: one per distinct tensor that may be slow, or,
 * past ATM_CONFIG_MAX_OPERANDS operands, one for the inputs and one for the
 * outputs, each only when every tensor in it may be slow */
static void layout_of(const atm_graph *g, const atm_node *n, struct layout *L)
{
	memset(L, 0, sizeof *L);
	L->n_in = n->n_in;
	L->n_out = n->n_out;
	int n_ops = n->n_in + n->n_out;
	if (n_ops > ATM_CONFIG_MAX_OPERANDS) {
		L->grouped = true;
		for (int side = 0; side < 2; side++) {
			int lo = side ? n->n_in : 0, hi = side ? n_ops : n->n_in;
			bool free_ = hi > lo;
			for (int i = lo; i < hi; i++)
				free_ = free_ && may_be_slow(g, operand(n, i));
			if (free_)
				L->unit[L->n_units++] = 1u << side;
		}
	} else {
		/* operands that are one tensor share its unit (-1: it stays fast) */
		int unit_of[ATM_CONFIG_MAX_OPERANDS];
		for (int i = 0; i < n_ops; i++) {
			int32_t t = operand(n, i);
			int first = i;
			for (int j = 0; j < i && first == i; j++)
				if (operand(n, j) == t)
					first = j;
			if (first < i)
				unit_of[i] = unit_of[first];
			else
				unit_of[i] = may_be_slow(g, t) ? L->n_units++ : -1;
			if (unit_of[i] >= 0)
				L->unit[unit_of[i]] |= 1u << i;
		}
	}
	for (int u = 0; u < L->n_units; u++)
		L->all |= L->unit[u];
}

/* config_valid -- mask is a union of whole units */
static bool config_valid(const struct layout *L, uint32_t mask)
{
	if (mask & ~L->all)
		return false;
	for (int u = 0; u < L->n_units; u++)
		if ((mask & L->unit[u]) != 0 && (mask & L->unit[u]) != L->unit[u])
			return false;
	return true;
}

/* atm_node_n_configs -- 2 to the number of units */
int atm_node_n_configs(const atm_graph *g, int32_t node)
{
	const atm_node *n = atm_graph_node(g, node);
	struct layout L;
	if (!n)
		return 0;
	layout_of(g, n, &L);
	return 1 << L.n_units;
}

/* atm_node_config_at -- the units set by the bits of i */
uint32_t atm_node_config_at(const atm_graph *g, int32_t node, int i)
{
	const atm_node *n = atm_graph_node(g, node);
	struct layout L;
	uint32_t mask = 0;
	if (!n)
		return 0;
	layout_of(g, n, &L);
	if (i < 0 || i >= 1 << L.n_units)
		return 0;
	for (int u = 0; u < L.n_units; u++)
		if (i & (1 << u))
			mask |= L.unit[u];
	return mask;
}

static const char *config_name(const struct layout *L, uint32_t mask, char *buf, size_t len);

/* bit_of -- the mask bit that holds operand i */
static int bit_of(const struct layout *L, int i)
{
	return L->grouped ? (i < L->n_in ? 0 : 1) : i;
}

/* atm_node_config_loc -- where operand op is in config */
unsigned atm_node_config_loc(const atm_graph *g, int32_t node, uint32_t config, int op)
{
	const atm_node *n = atm_graph_node(g, node);
	struct layout L;
	if (!n || op < 0 || op >= n->n_in + n->n_out)
		return ATM_LOC_FAST;
	layout_of(g, n, &L);
	return (config >> bit_of(&L, op)) & 1u ? ATM_LOC_SLOW : ATM_LOC_FAST;
}

/* atm_node_config_of -- the mask of per-operand locations, when the node has it */
atm_status atm_node_config_of(const atm_graph *g, int32_t node, const unsigned *locs,
                              uint32_t *config)
{
	const atm_node *n = atm_graph_node(g, node);
	struct layout L;
	uint32_t mask = 0;
	*config = 0;
	if (!n)
		return atm_err(ATM_E_USAGE, "atm_node_config_of: node %d is out of range", node);
	layout_of(g, n, &L);
	for (int i = 0; i < n->n_in + n->n_out; i++) {
		bool slow = locs[i] == ATM_LOC_SLOW;
		int b = bit_of(&L, i);
		if (L.grouped && i != 0 && i != n->n_in && slow != (((mask >> b) & 1u) != 0))
			return atm_err(ATM_E_NOTFOUND, "node '%s' (%s): its %d %s are profiled together, all "
			               "fast or all slow, not some of each", n->name, atm_op_name(n->op),
			               b ? n->n_out : n->n_in, b ? "outputs" : "inputs");
		if (slow && !may_be_slow(g, operand(n, i)))
			return atm_err(ATM_E_NOTFOUND, "node '%s' (%s): tensor '%s' may only be in fast "
			               "memory", n->name, atm_op_name(n->op),
			               atm_graph_tensor(g, operand(n, i))->name);
		if (slow)
			mask |= 1u << b;
	}
	if (!config_valid(&L, mask)) {
		char name[ATM_CONFIG_NAME_MAX];
		return atm_err(ATM_E_NOTFOUND, "node '%s' (%s) has no configuration %s: %s", n->name,
		               atm_op_name(n->op), config_name(&L, mask, name, sizeof name),
		               L.grouped ? "one of a group's tensors may only be in fast memory"
		                         : "a tensor it uses twice is given two locations");
	}
	*config = mask;
	return ATM_OK;
}

/* config_name -- the name of mask under layout L */
static const char *config_name(const struct layout *L, uint32_t mask, char *buf, size_t len)
{
	char s[ATM_CONFIG_NAME_MAX];
	int k = 0;
	if (L->grouped) {
		if (L->n_in) {
			s[k++] = mask & 1u ? 'S' : 'F';
			s[k++] = '+';
		}
		s[k++] = '/';
		if (L->n_out) {
			s[k++] = mask & 2u ? 'S' : 'F';
			s[k++] = '+';
		}
	} else {
		for (int i = 0; i < L->n_in + L->n_out; i++) {
			if (i == L->n_in)
				s[k++] = '/';
			s[k++] = (mask >> i) & 1u ? 'S' : 'F';
		}
		if (L->n_in + L->n_out == L->n_in)
			s[k++] = '/';
	}
	s[k] = '\0';
	snprintf(buf, len, "%s", s);
	return buf;
}

/* atm_node_config_name -- "FS/F" for config of node */
const char *atm_node_config_name(const atm_graph *g, int32_t node, uint32_t config, char *buf,
                                 size_t len)
{
	const atm_node *n = atm_graph_node(g, node);
	struct layout L;
	if (!n) {
		snprintf(buf, len, "?");
		return buf;
	}
	layout_of(g, n, &L);
	return config_name(&L, config, buf, len);
}

/* atm_config_name_valid -- a name config_name could have written: per-operand letters
 * (at most ATM_CONFIG_MAX_OPERANDS) around one '/', or the grouped form */
bool atm_config_name_valid(const char *full)
{
	/* an algorithm other than the default: "FF/F#2" */
	char s[ATM_CONFIG_NAME_MAX];
	const char *hash = strchr(full, '#');
	size_t n = hash ? (size_t)(hash - full) : strlen(full);
	if (n >= sizeof s)
		return false;
	if (hash) {
		char *end = NULL;
		long a = strtol(hash + 1, &end, 10);
		if (end == hash + 1 || *end || a < 1 || a >= ATM_MAX_ALGOS || hash[1] == '0')
			return false;
	}
	memcpy(s, full, n);
	s[n] = '\0';
	const char *slash = strchr(s, '/');
	if (!slash || strchr(slash + 1, '/'))
		return false;
	size_t a = (size_t)(slash - s), b = strlen(slash + 1);
	bool grouped = (a == 2 && s[1] == '+') || (b == 2 && slash[2] == '+');
	if (grouped) {
		if ((a != 0 && a != 2) || (b != 0 && b != 2) || (a == 2 && s[1] != '+') ||
		    (b == 2 && slash[2] != '+'))
			return false;
		return (a == 0 || s[0] == 'F' || s[0] == 'S') &&
		       (b == 0 || slash[1] == 'F' || slash[1] == 'S');
	}
	if (a + b > ATM_CONFIG_MAX_OPERANDS || a + b == 0)
		return false;
	for (const char *c = s; *c; c++)
		if (*c != 'F' && *c != 'S' && c != slash)
			return false;
	return true;
}

/* atm_node_key -- node's signature and the name of config with algorithm algo ("FF/F",
 * "FF/F#2"), checking all three */
atm_status atm_node_key(const atm_graph *g, int32_t node, uint32_t config, int algo,
                        const char *who, char **sig, char cfg[ATM_CONFIG_NAME_MAX])
{
	const atm_node *n = atm_graph_node(g, node);
	struct layout L;
	*sig = NULL;
	if (!n)
		return atm_err(ATM_E_USAGE, "%s: node %d is out of range (graph '%s' has %d nodes)", who,
		               node, atm_graph_name(g), atm_graph_n_nodes(g));
	layout_of(g, n, &L);
	if (!config_valid(&L, config))
		return atm_err(ATM_E_USAGE, "%s: configuration 0x%x is not one of node '%s' (%s), which "
		               "has %d", who, (unsigned)config, n->name, atm_op_name(n->op), 1 << L.n_units);
	if (algo < 0 || algo >= ATM_MAX_ALGOS)
		return atm_err(ATM_E_USAGE, "%s: algorithm %d of node '%s' is out of range (0 to %d)", who,
		               algo, n->name, ATM_MAX_ALGOS - 1);
	config_name(&L, config, cfg, ATM_CONFIG_NAME_MAX);
	if (algo)
		snprintf(cfg + strlen(cfg), ATM_CONFIG_NAME_MAX - strlen(cfg), "#%d", algo);
	if (!(*sig = atm_node_signature_alloc(g, n)))
		return atm_err(ATM_E_NOMEM, "out of memory making the signature of node '%s'", n->name);
	return ATM_OK;
}
