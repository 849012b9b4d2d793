/* tiny_nets.h -- the two networks the optimizer's tests plan (tiny_mlp, tiny_cnn at batch 4), each with the synthetic profile
 *
 * Usage: cmocka_run_group_tests(tests, tiny_nets_setup, tiny_nets_teardown); each test's
 * state is then the array of the two, tiny_mlp first.
 */
#ifndef ATM_TEST_TINY_NETS_H
#define ATM_TEST_TINY_NETS_H

#include "atm_zoo.h"
#include "optimizer/synth.h"

#define TINY_NETS 2

/* A network and the synthetic profile that prices it. */
struct net {
	atm_graph *g;
	atm_profile *prof;
};

static struct net tiny_nets[TINY_NETS];

/* tiny_nets_teardown -- what tiny_nets_setup made released */
static inline int tiny_nets_teardown(void **state)
{
	(void)state;
	for (int i = 0; i < TINY_NETS; i++) {
		atm_profile_destroy(tiny_nets[i].prof);
		atm_graph_destroy(tiny_nets[i].g);
		tiny_nets[i] = (struct net){0};
	}
	return 0;
}

/* tiny_nets_setup -- tiny_mlp and tiny_cnn with their profiles, the group's state */
static inline int tiny_nets_setup(void **state)
{
	const char *names[TINY_NETS] = {"tiny_mlp", "tiny_cnn"};
	for (int i = 0; i < TINY_NETS; i++) {
		atm_zoo_opts o = {.batch = 4};
		if (atm_zoo_build(&tiny_nets[i].g, names[i], &o) < 0 ||
		    synth_profile(tiny_nets[i].g, &tiny_nets[i].prof) < 0)
			return -1;
	}
	*state = tiny_nets;
	return 0;
}

#endif /* ATM_TEST_TINY_NETS_H */
