/* formats_internal.h -- helpers shared by the format sources, not part of the public contract */
#ifndef ATM_FORMATS_INTERNAL_H
#define ATM_FORMATS_INTERNAL_H

#include "atm_formats.h"

/* A text being built: the JSON files written here put one element a line, which jansson's
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
/* atm_json_float -- f as the JSON number with the fewest digits that reads back as f (NULL
 * for a number that is not finite) */
struct json_t *atm_json_float(float f);
/* atm_text_finish -- *out the malloc'd text (and *len its length; len may be NULL), t
 * emptied; after a failed allocation ATM_E_NOMEM ("out of memory writing WHAT") and the
 * text freed */
atm_status atm_text_finish(atm_text *t, char **out, size_t *len, const char *what);

/* ---------------------------------------------------------------- kernel keys */

/* The longest configuration name with its algorithm: "FFFFFFFF/" and "#15" and the NUL;
 * grouped names are shorter. */
#define ATM_CONFIG_NAME_MAX 16

/* atm_node_signature_alloc -- n's signature (atm_node_signature), malloc'd; NULL when out of
 * memory */
char *atm_node_signature_alloc(const atm_graph *g, const atm_node *n);
/* atm_config_name_valid -- a name atm_node_config_name could have written, with an algorithm
 * ("#2") or not: what a profile file may hold */
bool atm_config_name_valid(const char *name);
/* atm_node_key -- where a profile files node in config with algorithm algo: *sig the node's
 * signature (malloc'd), cfg its configuration's name ("FF/F", "FF/F#2"); ATM_E_USAGE naming
 * who when the node, the configuration or the algorithm is not one of the graph's */
atm_status atm_node_key(const atm_graph *g, int32_t node, uint32_t config, int algo,
                        const char *who, char **sig, char cfg[ATM_CONFIG_NAME_MAX]);

/* ---------------------------------------------------------------- profiles */

/* Times keep this many significant digits, in memory and in the file alike, so that a profile
 * read back is the profile that was written. */
#define ATM_PROFILE_TIME_DIGITS 10

/* A profile, shared by profile.c (the profile in memory) and profile_json.c (its file). */
struct atm_profile {
	char *path;               /* the cache file, for messages; NULL: in memory only */
	atm_profile_machine m;
	struct json_t *kernels;   /* this machine: signature -> {config name -> entry} */
	struct json_t *dirty;     /* the same shape: what was put since the last save */
	struct json_t *steps;     /* graph digest -> its calibration's all-fast step */
	struct json_t *steps_dirty; /* the same shape: what was put since the last save */
	int64_t n_entries;
	atm_profile_moves moves;
	bool has_moves, moves_dirty;
	bool replace;             /* rebuild: the next merge drops the file's entries of this machine */
	bool isolated;            /* atm_profile_use_in_step(false): the calibration is ignored */
};

/* atm_profile_set_entry -- kernels[sig][cfg] = e, a new reference taken; -1 when out of
 * memory */
int atm_profile_set_entry(struct json_t *kernels, const char *sig, const char *cfg,
                          struct json_t *e);

/* The key of a kernel's in-step calibration beside its configurations: no configuration is
 * named so (atm_config_name_valid refuses it). */
#define ATM_PROFILE_IN_STEP_KEY "in_step"
/* the in-step object's "statistic": each kernel's time in the fastest step, as a run measures
 * it; an object without it (an earlier autotm's, each kernel's own fastest) is not used */
#define ATM_PROFILE_IN_STEP_STAT "fastest_step"

/* The key, beside a section's kernels, of each graph's calibration step
 * (atm_profile_calibration): {digest: {"graph", "step_s", "measured_at"}}. */
#define ATM_PROFILE_STEPS_KEY "all_fast_steps"

#endif /* ATM_FORMATS_INTERNAL_H */
