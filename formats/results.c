/* results.c -- the results JSON: AutoTM's fields for every run, computed from the plan, its schedule and a run's measurements */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "formats_internal.h"

#define RJ_FORMAT "autotm-results"

static json_t *num_or_null(double v)
{
	return v < 0 || !isfinite(v) ? json_null() : json_real(v);
}

/* io_counts -- AutoTM's kernel input/output counts from each kernel's configuration */
static void io_counts(const atm_schedule *s, const atm_graph *g, json_t *run, json_t *config,
                      bool *ok)
{
	int64_t n_in = 0, n_out = 0, n_fast_in = 0, n_fast_out = 0;
	int64_t b_in = 0, b_out = 0, b_fast_in = 0, b_fast_out = 0, b_state = 0, b_fast_state = 0;
	for (int32_t i = 0; i < atm_schedule_n_events(s); i++) {
		const atm_event *ev = atm_schedule_event(s, i);
		if (ev->kind != ATM_EV_KERNEL)
			continue;
		const atm_node *n = atm_graph_node(g, ev->node);
		json_t *ins = json_array(), *outs = json_array(), *c = json_object();
		for (int k = 0; k < n->n_in + n->n_out; k++) {
			bool is_in = k < n->n_in, fast = ev->cfg[k] == ATM_LOC_FAST;
			int64_t bytes = atm_graph_tensor(g, is_in ? n->in[k] : n->out[k - n->n_in])->bytes;
			if (json_array_append_new(is_in ? ins : outs, json_string(fast ? "fast" : "slow")) < 0)
				*ok = false;
			if (is_in && atm_graph_tensor(g, n->in[k])->kind == ATM_KIND_OPTIMIZER_STATE)
				b_state += bytes, b_fast_state += fast ? bytes : 0;
			if (is_in) {
				n_in++, b_in += bytes;
				n_fast_in += fast, b_fast_in += fast ? bytes : 0;
			} else {
				n_out++, b_out += bytes;
				n_fast_out += fast, b_fast_out += fast ? bytes : 0;
			}
		}
		atm_json_set_new(c, "inputs", ins, ok);
		atm_json_set_new(c, "outputs", outs, ok);
		atm_json_set_new(config, n->name, c, ok);
	}
	atm_json_set_new(run, "num_kernels", json_integer(atm_graph_n_nodes(g)), ok);
	atm_json_set_new(run, "num_input_tensors", json_integer(n_in), ok);
	atm_json_set_new(run, "num_output_tensors", json_integer(n_out), ok);
	atm_json_set_new(run, "num_dram_input_tensors", json_integer(n_fast_in), ok);
	atm_json_set_new(run, "num_dram_output_tensors", json_integer(n_fast_out), ok);
	atm_json_set_new(run, "bytes_input_tensors", json_integer(b_in), ok);
	atm_json_set_new(run, "bytes_output_tensors", json_integer(b_out), ok);
	atm_json_set_new(run, "bytes_dram_input_tensors", json_integer(b_fast_in), ok);
	atm_json_set_new(run, "bytes_dram_output_tensors", json_integer(b_fast_out), ok);
	/* the optimizer's states where their update reads them (each is read once a step) */
	atm_json_set_new(run, "bytes_optimizer_state", json_integer(b_state), ok);
	atm_json_set_new(run, "bytes_dram_optimizer_state", json_integer(b_fast_state), ok);
}

/* update_json -- the optimizer a step ends in: its name, factors and the bytes of its state
 * (null for a step without an update) */
static json_t *update_json(const atm_graph *g, bool *ok)
{
	atm_update u;
	int64_t bytes = 0;
	if (!atm_graph_update_of(g, &u, &bytes))
		return json_null();
	json_t *o = json_object();
	if (!o) {
		*ok = false;
		return NULL;
	}
	atm_json_set_new(o, "name", json_string(atm_update_kind_name(u.kind)), ok);
	atm_json_set_new(o, "lr", atm_json_float(u.lr), ok);
	atm_json_set_new(o, "weight_decay", atm_json_float(u.weight_decay), ok);
	if (u.kind == ATM_UPDATE_MOMENTUM)
		atm_json_set_new(o, "momentum", atm_json_float(u.momentum), ok);
	if (u.kind == ATM_UPDATE_ADAMW) {
		json_t *betas = json_array();
		if (!betas || json_array_append_new(betas, atm_json_float(u.beta1)) < 0 ||
		    json_array_append_new(betas, atm_json_float(u.beta2)) < 0)
			*ok = false;
		atm_json_set_new(o, "betas", betas, ok);
		atm_json_set_new(o, "eps", atm_json_float(u.eps), ok);
	}
	atm_json_set_new(o, "state_bytes", json_integer(bytes), ok);
	return o;
}

/* move_counts -- AutoTM's move fields: plain fields count synchronous moves,
 * _pmem (to slow) and _dram (to fast) count both kinds, _async the overlapped */
static void move_counts(const atm_schedule_stats *st, json_t *run, bool *ok)
{
	int64_t sync_fast = st->n_moves_to_fast - st->n_async_to_fast;
	int64_t sync_slow = st->n_moves_to_slow - st->n_async_to_slow;
	int64_t sync_b_fast = st->bytes_to_fast - st->bytes_async_to_fast;
	int64_t sync_b_slow = st->bytes_to_slow - st->bytes_async_to_slow;
	atm_json_set_new(run, "num_move_nodes", json_integer(sync_fast + sync_slow), ok);
	atm_json_set_new(run, "num_pmem_move_nodes", json_integer(st->n_moves_to_slow), ok);
	atm_json_set_new(run, "num_dram_move_nodes", json_integer(st->n_moves_to_fast), ok);
	atm_json_set_new(run, "bytes_moved", json_integer(sync_b_fast + sync_b_slow), ok);
	atm_json_set_new(run, "bytes_moved_pmem", json_integer(st->bytes_to_slow), ok);
	atm_json_set_new(run, "bytes_moved_dram", json_integer(st->bytes_to_fast), ok);
	atm_json_set_new(run, "num_async_move_nodes",
	                 json_integer(st->n_async_to_fast + st->n_async_to_slow), ok);
	atm_json_set_new(run, "num_pmem_async_move_nodes", json_integer(st->n_async_to_slow), ok);
	atm_json_set_new(run, "num_dram_async_move_nodes", json_integer(st->n_async_to_fast), ok);
	atm_json_set_new(run, "bytes_async_moved",
	                 json_integer(st->bytes_async_to_fast + st->bytes_async_to_slow), ok);
	atm_json_set_new(run, "bytes_async_moved_pmem", json_integer(st->bytes_async_to_slow), ok);
	atm_json_set_new(run, "bytes_async_moved_dram", json_integer(st->bytes_async_to_fast), ok);
	/* optional fields of version 2 (added later): kernels the plan runs again */
	atm_json_set_new(run, "num_recomputed_kernels", json_integer(st->n_recomputes), ok);
	atm_json_set_new(run, "bytes_recomputed", json_integer(st->bytes_recomputed), ok);
}

/* solver_fields -- how the plan was found, and the limit and ratio it was found for */
static void solver_fields(const atm_plan_info *info, json_t *run, bool *ok)
{
	char date[ATM_UTC_TEXT_MAX];
	atm_utc_now(date);
	atm_json_set_new(run, "formulation", json_string(info->formulation), ok);
	atm_json_set_new(run, "date", json_string(date), ok);
	/* one entry per solve: several when the defragmentation loop solved again */
	json_t *creation = json_array(), *solving = json_array();
	for (int i = 0; i < info->n_rounds && i < ATM_PLAN_MAX_ROUNDS; i++)
		if (json_array_append_new(creation, json_real(info->round_creation_s[i])) < 0 ||
		    json_array_append_new(solving, json_real(info->round_solve_s[i])) < 0)
			*ok = false;
	if (!info->n_rounds && info->creation_s >= 0 &&
	    (json_array_append_new(creation, json_real(info->creation_s)) < 0 ||
	     json_array_append_new(solving, json_real(info->solve_s)) < 0))
		*ok = false;
	atm_json_set_new(run, "creation_times", creation, ok);
	atm_json_set_new(run, "optimization_times", solving, ok);
	/* an optional field of version 2 (added later): readers of older files find it absent */
	atm_json_set_new(run, "solver", info->solver[0] ? json_string(info->solver) : json_null(), ok);
	atm_json_set_new(run, "solver_status", json_string(info->solver_status), ok);
	atm_json_set_new(run, "mip_gap", num_or_null(info->mip_gap), ok);
	atm_json_set_new(run, "predicted_runtime", num_or_null(info->predicted_runtime_s), ok);
	atm_json_set_new(run, "estimated_profile", json_boolean(info->estimated), ok);
}

/* limit_fields -- the fast limit, and the ratio as AutoTM writes it (S/F, null at 1:0) and as
 * the exact pair and the fast fraction, which find every point, all slow included */
static void limit_fields(const atm_plan_info *info, json_t *run, bool *ok)
{
	bool has_ratio = info->ratio_slow + info->ratio_fast > 0;
	atm_json_set_new(run, "dram_limit", info->fast_limit_bytes
	                                        ? json_integer(info->fast_limit_bytes) : json_null(), ok);
	atm_json_set_new(run, "ratio", info->ratio_fast > 0 ? json_real(info->ratio_slow / info->ratio_fast)
	                                                    : json_null(), ok);
	atm_json_set_new(run, "ratio_slow", has_ratio ? json_real(info->ratio_slow) : json_null(), ok);
	atm_json_set_new(run, "ratio_fast", has_ratio ? json_real(info->ratio_fast) : json_null(), ok);
	atm_json_set_new(run, "fast_fraction",
	                 has_ratio ? json_real(info->ratio_fast / (info->ratio_slow + info->ratio_fast))
	                           : json_null(), ok);
}

/* fast_memory -- the fast memory a run held beside what its plan promised: the limit, the
 * layout's extent (the plan's peak, alignment and gaps included), the peak of live copies, the
 * arena's measured high-water mark and what first held it, the kernels' scratch outside the
 * arena, and whether the arena stayed within the limit (null: no limit, or not run) */
static json_t *fast_memory(const atm_schedule_stats *st, int64_t limit, const atm_run_measured *m)
{
	json_t *o = json_object();
	bool ok = true, at = m && m->dram_high_water_at && m->dram_high_water_at[0];
	atm_json_set_new(o, "limit_bytes", limit > 0 ? json_integer(limit) : json_null(), &ok);
	atm_json_set_new(o, "predicted_bytes", json_integer(st->fast_arena_bytes), &ok);
	atm_json_set_new(o, "live_peak_bytes", json_integer(st->fast_peak_bytes), &ok);
	atm_json_set_new(o, "high_water_bytes", m ? json_integer(m->dram_alloc_bytes) : json_null(),
	                 &ok);
	atm_json_set_new(o, "high_water_at", at ? json_string(m->dram_high_water_at) : json_null(), &ok);
	atm_json_set_new(o, "scratch_bytes", m ? json_integer(m->scratch_bytes) : json_null(), &ok);
	atm_json_set_new(o, "within_limit", m && limit > 0 ? json_boolean(m->dram_alloc_bytes <= limit)
	                                                   : json_null(), &ok);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* memory_fields -- what the step placed and moved: sizes, configurations, moves, memory used
 * (measured when m is there, else the schedule's) and AutoTM's estimate of the copies' time */
static void memory_fields(const atm_schedule *s, const atm_graph *g, const atm_run_measured *m,
                          json_t *run, bool *ok)
{
	const atm_schedule_stats *st = atm_schedule_stats_get(s);
	json_t *sizes = json_object(), *config = json_object();
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (!atm_tensor_is_persistent(x))
			atm_json_set_new(sizes, x->name, json_integer(x->bytes), ok);
	}
	atm_json_set_new(run, "tensor_size_map", sizes, ok);
	io_counts(s, g, run, config, ok);
	atm_json_set_new(run, "config_map", config, ok);
	move_counts(st, run, ok);
	atm_json_set_new(run, "fast_peak_bytes", json_integer(st->fast_peak_bytes), ok);
	atm_json_set_new(run, "dram_alloc_size", json_integer(m ? m->dram_alloc_bytes
	                                                        : st->fast_arena_bytes), ok);
	atm_json_set_new(run, "pmem_alloc_size", json_integer(m ? m->pmem_alloc_bytes
	                                                        : st->slow_peak_bytes), ok);
	/* synchronous copies at the slow tier's speeds, as AutoTM estimated it */
	int64_t sync_fast = st->bytes_to_fast - st->bytes_async_to_fast;
	int64_t sync_slow = st->bytes_to_slow - st->bytes_async_to_slow;
	bool speeds = m && m->slow_read_gbps > 0 && m->slow_write_gbps > 0;
	atm_json_set_new(run, "move_time",
	                 speeds ? json_real((double)sync_fast / (m->slow_read_gbps * 1e9) +
	                                    (double)sync_slow / (m->slow_write_gbps * 1e9))
	                        : json_null(), ok);
}

/* measured_fields -- what a run measured and where it ran */
static void measured_fields(const atm_graph *g, const atm_run_measured *m, json_t *run, bool *ok)
{
	if (m->kernel_s) {
		json_t *kt = json_object();
		for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
			atm_json_set_new(kt, atm_graph_node(g, k)->name, num_or_null(m->kernel_s[k]), ok);
		atm_json_set_new(run, "kernel_times", kt, ok);
	}
	if (m->step_kernel_s) {
		json_t *st = json_object();
		for (int32_t k = 0; k < atm_graph_n_nodes(g); k++)
			atm_json_set_new(st, atm_graph_node(g, k)->name, num_or_null(m->step_kernel_s[k]), ok);
		atm_json_set_new(run, "step_kernel_times", st, ok);
	}
	json_t *losses = json_array();
	for (int i = 0; i < m->n_losses; i++)
		if (json_array_append_new(losses, isfinite(m->losses[i]) ? json_real(m->losses[i])
		                                                         : json_null()) < 0)
			*ok = false;
	atm_json_set_new(run, "losses", losses, ok);
	atm_json_set_new(run, "weights_checksum", m->weights_checksum ? json_string(m->weights_checksum)
	                                                              : json_null(), ok);
	atm_json_set_new(run, "emulated", json_boolean(m->emulated), ok);
	atm_json_set_new(run, "emulation", m->emulation ? json_string(m->emulation) : json_null(), ok);
	/* added later: the rates an emulated slow tier waited for, and how they were scaled */
	if (m->emulated && m->emulation_scale > 0)
		atm_json_set_new(run, "emulation_rates",
		                 json_pack("{s:s, s:f, s:f, s:f, s:f, s:f}", "form",
		                           m->emulation_absolute ? "absolute" : "proportional",
		                           "scale", m->emulation_scale, "fast_gbps",
		                           m->emulation_fast_gbps, "reference_fast_gbps",
		                           m->emulation_reference_gbps, "read_gbps", m->slow_read_gbps,
		                           "write_gbps", m->slow_write_gbps),
		                 ok);
	atm_json_set_new(run, "memory_mode", m->memory_mode ? json_string(m->memory_mode)
	                                                    : json_null(), ok);
	atm_json_set_new(run, "emulation_wait_s", json_real(m->emulation_wait_s), ok);
	atm_json_set_new(run, "move_wait_s", json_real(m->move_wait_s), ok);
	atm_json_set_new(run, "recompute_s", json_real(m->recompute_s), ok); /* added later */
	/* slow_path and slow_fs were added later: readers of older files find them absent */
	atm_json_set_new(run, "tiers", json_pack("{s:s?, s:s?, s:s?, s:s?}", "fast", m->fast_tier,
	                                         "slow", m->slow_tier, "slow_path", m->slow_path,
	                                         "slow_fs", m->slow_fs), ok);
	atm_json_set_new(run, "seed", json_integer((json_int_t)m->seed), ok);
	atm_json_set_new(run, "n_threads", json_integer(m->n_threads), ok);
	atm_json_set_new(run, "backend", json_string(m->backend ? m->backend : "cpu"), ok);
	atm_json_set_new(run, "simulated", json_boolean(m->simulated), ok);
	if (m->device)
		atm_json_set_new(run, "device", json_string(m->device), ok);
	if (m->versions)
		atm_json_set_new(run, "versions", json_string(m->versions), ok);
	if (m->gpu_memory_bytes > 0)
		atm_json_set_new(run, "gpu_memory_limit", json_integer(m->gpu_memory_bytes), ok);
	if (m->has_oracle)
		atm_json_set_new(run, "oracle_time", m->oracle_s > 0 ? json_real(m->oracle_s)
		                                                     : json_null(), ok);
	/* added later: a GPU's energy per measured step and its clocks; null where not measured */
	atm_json_set_new(run, "energy_per_step_j", m->has_energy ? json_real(m->energy_per_step_j)
	                                                         : json_null(), ok);
	atm_json_set_new(run, "gpu_clocks", m->has_energy ? json_pack("{s:i, s:i, s:f}", "sm_mhz",
	                                                              m->sm_mhz, "mem_mhz", m->mem_mhz,
	                                                              "power_limit_w",
	                                                              m->power_limit_w)
	                                                  : json_null(), ok);
	atm_json_set_new(run, "profile_calibration",
	                 m->profile_calibrated_at && m->profile_step_s > 0
	                         ? json_pack("{s:f, s:s}", "all_fast_step_s", m->profile_step_s,
	                                     "measured_at", m->profile_calibrated_at)
	                         : json_null(), ok);
	atm_json_set_new(run, "profile_drift", m->profile_drift > 0 && m->profile_calibrated_at
	                                               ? json_real(m->profile_drift) : json_null(), ok);
}

/* prediction_fields -- where the prediction missed: each kernel's predicted time beside the
 * measured ones (kernel_times, step_kernel_times), and the step split into its kernels and the
 * rest (moves, waits, allocation, page faults) as predicted and as measured in the fastest step */
static void prediction_fields(const atm_graph *g, const atm_plan_info *info,
                              const atm_run_measured *m, json_t *run, bool *ok)
{
	json_t *kt = json_object();
	double pred = 0, meas = 0;
	const double *in_step = m->step_kernel_s ? m->step_kernel_s : m->kernel_s;
	bool all = true;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		atm_json_set_new(kt, atm_graph_node(g, k)->name, num_or_null(m->kernel_pred_s[k]), ok);
		pred += m->kernel_pred_s[k];
		if (in_step && in_step[k] >= 0)
			meas += in_step[k];
		else
			all = false;
	}
	atm_json_set_new(run, "predicted_kernel_times", kt, ok);
	double step = info->predicted_runtime_s, actual = m->actual_runtime_s;
	if (!all || !(step > 0) || !(actual > 0))
		return;
	atm_json_set_new(run, "prediction",
	                 json_pack("{s:f, s:{s:f, s:f}, s:{s:f, s:f}, s:i, s:f}", "step_error",
	                           (step - actual) / actual, "kernels", "predicted_s", pred,
	                           "measured_s", meas, "outside_kernels", "predicted_s", step - pred,
	                           "measured_s", actual - meas, "in_step_kernels",
	                           (json_int_t)m->n_in_step_nodes, "overlap_loss", m->overlap_loss),
	                 ok);
}

/* int_array, num_array -- n values as a JSON array (negative numbers null) */
static json_t *int_array(const int *v, int n, bool *ok)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		if (json_array_append_new(a, json_integer(v[i])) < 0)
			*ok = false;
	return a;
}

static json_t *num_array(const double *v, int n, bool *ok)
{
	json_t *a = json_array();
	for (int i = 0; i < n; i++)
		if (json_array_append_new(a, num_or_null(v[i])) < 0)
			*ok = false;
	return a;
}

/* comparison_fields -- the run's part in a comparison: its turns, where it ran in each, how
 * disturbed each was, and its slowdown against all-fast predicted and measured side by side */
static void comparison_fields(const atm_run_comparison *c, json_t *run, bool *ok)
{
	atm_json_set_new(run, "comparison", json_string(c->id), ok);
	atm_json_set_new(run, "interleave", json_string(c->interleave), ok);
	atm_json_set_new(run, "comparison_index", json_integer(c->index), ok);
	atm_json_set_new(run, "comparison_size", json_integer(c->n_placements), ok);
	atm_json_set_new(run, "turns", json_integer(c->n_turns), ok);
	atm_json_set_new(run, "steps_per_turn", json_integer(c->steps_per_turn), ok);
	atm_json_set_new(run, "actual_runtimes", num_array(c->turn_s, c->n_turns, ok), ok);
	atm_json_set_new(run, "turn_positions", int_array(c->turn_position, c->n_turns, ok), ok);
	atm_json_set_new(run, "turn_others", num_array(c->turn_others, c->n_turns, ok), ok);
	atm_json_set_new(run, "turn_reruns", int_array(c->turn_reruns, c->n_turns, ok), ok);
	/* added later: the prediction beside the machine's drift (docs/formats.md) */
	atm_json_set_new(run, "predicted_runtime_drift", num_or_null(c->predicted_drift_s), ok);
	atm_json_set_new(run, "predicted_emulated_wait", num_or_null(c->predicted_wait_s), ok);
	if (!c->with_all_fast)
		return;
	double pred = c->predicted_slowdown, meas = c->measured_slowdown;
	atm_json_set_new(run, "predicted_slowdown", num_or_null(pred), ok);
	atm_json_set_new(run, "predicted_slowdown_raw", num_or_null(c->predicted_slowdown_raw), ok);
	atm_json_set_new(run, "measured_slowdown", num_or_null(meas), ok);
	atm_json_set_new(run, "measured_slowdown_range",
	                 json_pack("[o, o]", num_or_null(c->measured_slowdown_min),
	                           num_or_null(c->measured_slowdown_max)), ok);
	atm_json_set_new(run, "slowdown_error",
	                 pred > 0 && meas > 0 ? json_real((pred - meas) / meas) : json_null(), ok);
}

/* run_json -- one element of "runs"; NULL when out of memory */
/* data_parallel_fields -- the ranks, each one's step, and the allreduce's share of the step,
 * measured and predicted (docs/formats.md, "Results JSON") */
static void data_parallel_fields(const atm_plan_info *info, const atm_run_measured *m,
                                 json_t *run, bool *ok)
{
	json_t *dp = json_object(), *steps = json_array();
	for (int r = 0; r < m->ranks; r++)
		if (json_array_append_new(steps, num_or_null(m->rank_step_s ? m->rank_step_s[r] : -1)) < 0)
			*ok = false;
	double pred = info->predicted_runtime_s;
	atm_json_set_new(dp, "ranks", json_integer(m->ranks), ok);
	atm_json_set_new(dp, "rank_batch", json_integer((json_int_t)m->rank_batch), ok);
	atm_json_set_new(dp, "rank_step_times", steps, ok);
	atm_json_set_new(dp, "allreduce_time", num_or_null(m->allreduce_s), ok);
	atm_json_set_new(dp, "allreduce_share", m->actual_runtime_s > 0 && m->allreduce_s >= 0
	                                           ? json_real(m->allreduce_s / m->actual_runtime_s)
	                                           : json_null(), ok);
	atm_json_set_new(dp, "allreduce_wait_time", num_or_null(m->allreduce_s >= 0
	                                                        ? m->allreduce_wait_s : -1), ok);
	atm_json_set_new(dp, "predicted_allreduce_time", num_or_null(m->allreduce_pred_s), ok);
	atm_json_set_new(dp, "predicted_allreduce_share", pred > 0 && m->allreduce_pred_s >= 0
	                                                     ? json_real(m->allreduce_pred_s / pred)
	                                                     : json_null(), ok);
	atm_json_set_new(run, "data_parallel", dp, ok);
}

static json_t *run_json(const atm_plan *p, const atm_schedule *s, const atm_run_measured *m)
{
	const atm_graph *g = atm_plan_graph(p);
	const atm_plan_info *info = atm_plan_info_get(p);
	bool ok = true;
	json_t *run = json_object();
	solver_fields(info, run, &ok);
	/* added later: of the prediction, the kernels run again (0 where the plan recomputes
	 * nothing; null when unknown: a plan file written before plans recorded it) */
	double rs = info->predicted_recompute_s;
	if (rs < 0 && info->predicted_runtime_s >= 0 && atm_plan_n_recomputes(p) == 0)
		rs = 0;
	atm_json_set_new(run, "predicted_recompute_s", rs < 0 ? json_null() : json_real(rs), &ok);
	atm_json_set_new(run, "actual_runtime", num_or_null(m ? m->actual_runtime_s : -1), &ok);
	atm_json_set_new(run, "mean_runtime", num_or_null(m ? m->mean_runtime_s : -1), &ok);
	atm_json_set_new(run, "n_iters", json_integer(m ? m->n_iters : 0), &ok);
	limit_fields(info, run, &ok);
	memory_fields(s, g, m, run, &ok);
	/* added later */
	atm_json_set_new(run, "fast_memory",
	                 fast_memory(atm_schedule_stats_get(s), info->fast_limit_bytes, m), &ok);
	if (m)
		measured_fields(g, m, run, &ok);
	if (m && m->kernel_pred_s)
		prediction_fields(g, info, m, run, &ok);
	if (m && m->comparison)
		comparison_fields(m->comparison, run, &ok);
	if (m && m->ranks > 1)
		data_parallel_fields(info, m, run, &ok);
	if (!ok) {
		json_decref(run);
		return NULL;
	}
	return run;
}

/* managed_of -- the measured cudaMallocManaged run among n; NULL when there is none */
static const atm_run_measured *managed_of(int n, const atm_run_measured *m)
{
	for (int i = 0; m && i < n; i++)
		if (m[i].managed)
			return &m[i];
	return NULL;
}

/* document -- a whole results file holding n runs of one graph */
static atm_status document(int n, const atm_plan *const *p, const atm_schedule *const *s,
                           const atm_results_workload *w, const atm_run_measured *m, json_t **out)
{
	const atm_graph *g = atm_plan_graph(p[0]);
	const atm_run_measured *managed = managed_of(n, m);
	atm_graph_stats gs;
	char digest[17], cpu[256];
	bool ok = true;
	atm_status rc;
	*out = NULL;
	for (int i = 1; i < n; i++)
		if (atm_plan_graph(p[i]) != g)
			return atm_err(ATM_E_USAGE, "the runs of one results file are of one graph");
	if ((rc = atm_graph_stats_compute(g, &gs)) < 0)
		return rc;
	json_t *doc = json_object(), *runs = json_array();
	atm_graph_digest(g, digest);
	atm_cpu_model(cpu, sizeof cpu);
	atm_json_set_new(doc, "format", json_string(RJ_FORMAT), &ok);
	atm_json_set_new(doc, "version", json_integer(ATM_RESULTS_VERSION), &ok);
	int64_t batch = w && w->batch ? w->batch : atm_graph_batch(g);
	atm_json_set_new(doc, "workload",
	                 json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:o, s:o}", "name", atm_graph_name(g),
	                           "digest", digest, "n_params", (json_int_t)gs.n_params, "n_kernels",
	                           (json_int_t)gs.n_kernels, "n_tensors", (json_int_t)gs.n_tensors,
	                           "batch", (json_int_t)batch, "preset",
	                           w && w->preset ? json_string(w->preset) : json_null(), "image",
	                           w && w->image ? json_integer(w->image) : json_null()), &ok);
	json_t *wl = json_object_get(doc, "workload");
	if (wl && w && w->seq)
		atm_json_set_new(wl, "seq", json_integer(w->seq), &ok);
	if (wl)
		atm_json_set_new(wl, "optimizer", update_json(g, &ok), &ok);
	atm_json_set_new(doc, "io_size", json_integer(gs.io_bytes), &ok);
	atm_json_set_new(doc, "default_alloc_size", json_integer(gs.peak_bytes), &ok);
	atm_json_set_new(doc, "gpu_managed_runtime", managed ? json_real(managed->actual_runtime_s)
	                                                     : json_null(), &ok);
	atm_json_set_new(doc, "machine", json_pack("{s:s, s:i}", "cpu", cpu, "n_cpus",
	                                           (int)sysconf(_SC_NPROCESSORS_ONLN)), &ok);
	for (int i = 0; i < n; i++) {
		json_t *run = run_json(p[i], s[i], m ? &m[i] : NULL);
		/* a plan for a GPU model: priced from its datasheet, nothing ran on it */
		if (run && !m && w && w->gpu_model) {
			atm_json_set_new(run, "backend", json_string("gpu-model"), &ok);
			atm_json_set_new(run, "device", json_string(w->gpu_model), &ok);
		}
		if (json_array_append_new(runs, run) < 0)
			ok = false;
	}
	atm_json_set_new(doc, "runs", runs, &ok);
	if (!ok) {
		json_decref(doc);
		return atm_err(ATM_E_NOMEM, "out of memory writing results");
	}
	*out = doc;
	return ATM_OK;
}

/* to_text -- doc as the file's text (borrowed: the caller releases doc) */
static atm_status to_text(const json_t *doc, char **text)
{
	atm_status rc = atm_json_text(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
	                                   JSON_REAL_PRECISION(10), text);
	return rc < 0 ? atm_err(rc, "out of memory writing results") : ATM_OK;
}

/* check_comparisons -- every run of a comparison says so in full: its id, its turns and one
 * step time per turn, as a reader pairing turns needs them (ATM_E_INPUT naming the run when not;
 * runs alone have none of these fields) */
static atm_status check_comparisons(const char *path, const json_t *runs)
{
	size_t i;
	json_t *run;
	json_array_foreach(runs, i, run) {
		json_t *id = json_object_get(run, "comparison"), *turns = json_object_get(run, "turns");
		json_t *times = json_object_get(run, "actual_runtimes");
		if (!id && !turns && !times)
			continue;
		if (!json_is_string(id) || !json_is_integer(turns) || json_integer_value(turns) < 1 ||
		    !json_is_array(times) || json_array_size(times) != (size_t)json_integer_value(turns))
			return atm_err(ATM_E_INPUT, "%s: run %zu is part of a comparison without a "
			               "\"comparison\" id, \"turns\" and as many \"actual_runtimes\"; not "
			               "appending to it", path, i);
	}
	return ATM_OK;
}

/* load_results -- path's results document, checked to be this version's (ATM_E_INPUT when not) */
static atm_status load_results(const char *path, json_t **out)
{
	json_error_t e;
	char *text = NULL;
	size_t len = 0;
	*out = NULL;
	/* through atm_read_file: its limits (a device, an endless file) hold here too */
	atm_status rc = atm_read_file_max(path, ATM_RESULTS_FILE_MAX_BYTES, "results file", &text, &len);
	if (rc < 0)
		return rc;
	json_t *old = json_loadb(text, len, 0, &e);
	free(text);
	/* jansson fails with no message at all when its first allocation fails */
	if (!old && (json_error_code(&e) == json_error_out_of_memory || !e.text[0]))
		return atm_err(ATM_E_NOMEM, "out of memory reading %s", path);
	if (!old)
		return atm_err(ATM_E_INPUT, "%s: line %d: %s; not appending to a file that is not "
		               "results JSON", path, e.line, e.text);
	json_t *f = json_object_get(old, "format"), *v = json_object_get(old, "version");
	if (!json_is_string(f) || strcmp(json_string_value(f), RJ_FORMAT)) {
		json_decref(old);
		return atm_err(ATM_E_INPUT, "%s is not a results file (\"format\" is not \"" RJ_FORMAT
		               "\"); not appending to it", path);
	}
	if (!json_is_integer(v) || json_integer_value(v) != ATM_RESULTS_VERSION) {
		/* as the file has it: 2, "2", null, or nothing */
		char *said = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
		rc = atm_err(ATM_E_INPUT, "%s holds results of version %s; this autotm appends to "
		             "version %d only (write to a new file)", path, said ? said : "(none)",
		             ATM_RESULTS_VERSION);
		free(said);
		json_decref(old);
		return rc;
	}
	if (!json_is_array(json_object_get(old, "runs")) ||
	    !json_is_object(json_object_get(old, "workload"))) {
		json_decref(old);
		return atm_err(ATM_E_INPUT, "%s: a results file has a \"workload\" object and a "
		               "\"runs\" array; not appending to it", path);
	}
	if ((rc = check_comparisons(path, json_object_get(old, "runs"))) < 0) {
		json_decref(old);
		return rc;
	}
	*out = old;
	return ATM_OK;
}

/* holds_something -- path exists and is not empty: --append onto an empty file (made with
 * touch, or by a shell's redirection) starts it */
static bool holds_something(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && !(S_ISREG(st.st_mode) && st.st_size == 0);
}

/* other_workload -- ATM_E_INPUT (a file that does not fit, as one of another version):
 * old holds results of another workload than name/digest */
static atm_status other_workload(const char *path, json_t *old, const char *name, const char *digest)
{
	json_t *wl = json_object_get(old, "workload");
	json_t *n = json_object_get(wl, "name"), *d = json_object_get(wl, "digest");
	if (json_is_string(n) && json_is_string(d) && !strcmp(json_string_value(n), name) &&
	    !strcmp(json_string_value(d), digest))
		return ATM_OK;
	if (json_is_string(n) && strcmp(json_string_value(n), name))
		return atm_err(ATM_E_INPUT, "%s holds results of workload '%s', not of '%s'; not "
		               "appending to it (write to another file)", path, json_string_value(n), name);
	return atm_err(ATM_E_INPUT, "%s holds results of another version of '%s' (other sizes, "
	               "batch or structure); not appending to it (write to another file)", path, name);
}

atm_status atm_results_check(const char *path, const atm_graph *g, bool append)
{
	struct stat st;
	atm_status rc;
	if (!path || !path[0])
		return atm_err(ATM_E_USAGE, "the results path is empty; give -o FILE");
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return atm_err(ATM_E_USAGE, "%s is a folder; give a results file name in it", path);
	if ((rc = atm_check_writable(path)) < 0)
		return rc;
	if (!append || !holds_something(path))
		return ATM_OK;
	json_t *old = NULL;
	char digest[17];
	if ((rc = load_results(path, &old)) < 0)
		return rc;
	atm_graph_digest(g, digest);
	rc = other_workload(path, old, atm_graph_name(g), digest);
	json_decref(old);
	return rc;
}

atm_status atm_results_write_runs(const char *path, int n, const atm_plan *const *p,
                                  const atm_schedule *const *s, const atm_results_workload *w,
                                  const atm_run_measured *m, bool append)
{
	json_t *doc = NULL, *old = NULL;
	char *text = NULL, digest[17];
	int fd = -1;
	if (n < 1)
		return atm_err(ATM_E_USAGE, "no run to write to %s", path);
	atm_status rc = document(n, p, s, w, m, &doc);
	if (rc < 0)
		return rc;
	/* held from the read to the rename: a second appender reads what the first wrote */
	if (append && (rc = atm_file_lock(path, &fd)) < 0)
		goto fail;
	if (append && holds_something(path)) {
		if ((rc = load_results(path, &old)) < 0)
			goto fail;
		atm_graph_digest(atm_plan_graph(p[0]), digest);
		if ((rc = other_workload(path, old, atm_graph_name(atm_plan_graph(p[0])), digest)) < 0)
			goto fail;
		if (json_array_extend(json_object_get(old, "runs"), json_object_get(doc, "runs")) < 0 ||
		    (managed_of(n, m) && json_object_set(old, "gpu_managed_runtime",
		                                         json_object_get(doc, "gpu_managed_runtime")) < 0)) {
			rc = atm_err(ATM_E_NOMEM, "out of memory appending results to %s", path);
			goto fail;
		}
		json_decref(doc);
		doc = old;
		old = NULL;
	}
	rc = to_text(doc, &text);
	if (rc == ATM_OK)
		rc = atm_write_file_atomic(path, text, strlen(text));
fail:
	free(text);
	json_decref(old);
	json_decref(doc);
	atm_file_unlock(fd);
	return rc;
}

atm_status atm_results_write(const char *path, const atm_plan *p, const atm_schedule *s,
                             const atm_results_workload *w, const atm_run_measured *m,
                             bool append)
{
	return atm_results_write_runs(path, 1, &p, &s, w, m, append);
}
