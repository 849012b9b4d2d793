/* test_safetensors.c -- half-precision values: atm_st_narrow's rounding (ties to even, BF16 bit
 * for bit as PyTorch's .to(torch.bfloat16), F16's overflow, subnormals and NaNs), and a BF16 or
 * F16 file read back exactly as float32 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "atm_core.h"
#include "atm_formats.h"

/* bits -- f's bits */
static uint32_t bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

/* test_safetensors_bf16 -- the upper half, rounded to nearest, ties to even */
static void test_safetensors_bf16(void **state)
{
	(void)state;
	const float v[] = {1.0f, -2.5f, 0.0f, -0.0f, INFINITY, 3.4028235e38f,
	                   /* 1 + 2^-8: a tie, to the even 1.0; 1 + 3 * 2^-8: a tie, up to even */
	                   1.00390625f, 1.01171875f, /* just above the tie: up */ 0x1.010002p0f};
	uint16_t h[sizeof v / sizeof v[0]];
	atm_st_narrow(v, (int64_t)(sizeof v / sizeof v[0]), ATM_ST_BF16, h);
	const uint16_t want[] = {0x3f80, 0xc020, 0x0000, 0x8000, 0x7f80, 0x7f80, 0x3f80, 0x3f82,
	                         0x3f81};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		if (h[i] != want[i])
			fail_msg("%.9g (%#x) as BF16 %#x, want %#x", (double)v[i], bits(v[i]), h[i], want[i]);
	float nan = NAN;
	atm_st_narrow(&nan, 1, ATM_ST_BF16, h);
	assert_true((h[0] & 0x7f80) == 0x7f80 && (h[0] & 0x7f));
}

/* test_safetensors_f16 -- IEEE binary16: normals rounded to even, 65504 the largest, what
 * rounds past it an infinity, subnormals down to 2^-24, NaN kept */
static void test_safetensors_f16(void **state)
{
	(void)state;
	const float v[] = {1.0f,   -2.0f,     0.5f,    65504.0f, 65519.0f, 65520.0f, 1e6f,
	                   0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-14f, 0x1.ffcp-15f,
	                   /* 1 + 2^-11: a tie, to 1; 1 + 3 * 2^-11: a tie, up */
	                   1.00048828125f, 1.00146484375f, 0.0f, -0.0f};
	const uint16_t want[] = {0x3c00, 0xc000, 0x3800, 0x7bff, 0x7bff, 0x7c00, 0x7c00,
	                         0x0001, 0x0000, 0x0001, 0x0400, 0x0400,
	                         0x3c00, 0x3c02, 0x0000, 0x8000};
	uint16_t h[sizeof v / sizeof v[0]];
	atm_st_narrow(v, (int64_t)(sizeof v / sizeof v[0]), ATM_ST_F16, h);
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		if (h[i] != want[i])
			fail_msg("%.9g as F16 %#x, want %#x", (double)v[i], h[i], want[i]);
	float nan = NAN;
	atm_st_narrow(&nan, 1, ATM_ST_F16, h);
	assert_true((h[0] & 0x7c00) == 0x7c00 && (h[0] & 0x3ff));
}

/* test_safetensors_half_read_back -- a BF16 and an F16 tensor written by atm_st_dump read back
 * through a graph as the floats they hold, exactly; F64 is refused */
static void test_safetensors_half_read_back(void **state)
{
	(void)state;
	atm_graph *g = NULL;
	int32_t w, b;
	const int64_t wd[2] = {2, 3}, bd[1] = {3};
	assert_int_equal(atm_graph_new(&g, "half"), ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "w", ATM_F32, 2, wd, ATM_KIND_PARAM, ATM_LOC_ANY, &w),
	                 ATM_OK);
	assert_int_equal(atm_graph_add_tensor(g, "b", ATM_F32, 1, bd, ATM_KIND_PARAM, ATM_LOC_ANY, &b),
	                 ATM_OK);
	const float wv[6] = {0.1f, -3.0f, 1e-7f, 65504.0f, -0.0f, 0.333f};
	const float bv[3] = {1.5f, -1e-6f, 2.0f};
	uint16_t wh[6], bh[3];
	atm_st_narrow(wv, 6, ATM_ST_BF16, wh);
	atm_st_narrow(bv, 3, ATM_ST_F16, bh);
	atm_st_tensor t[2] = {
		{.name = "w", .dtype = ATM_ST_BF16, .ndim = 2, .dims = {2, 3}, .n_elems = 6, .data = wh,
		 .bytes = 12},
		{.name = "b", .dtype = ATM_ST_F16, .ndim = 1, .dims = {3}, .n_elems = 3, .data = bh,
		 .bytes = 6},
	};
	char *text = NULL;
	size_t len = 0;
	atm_st_file *f = NULL;
	assert_int_equal(atm_st_dump(t, 2, NULL, &text, &len), ATM_OK);
	assert_int_equal(atm_st_parse(&f, text, len, "half.safetensors"), ATM_OK);
	free(text);
	assert_int_equal(atm_st_check(f, g, ATM_KIND_PARAM), ATM_OK);
	float got_w[6], got_b[3];
	assert_true(atm_st_fill(f, g, w, got_w));
	assert_true(atm_st_fill(f, g, b, got_b));
	for (int i = 0; i < 6; i++) {
		uint32_t u = (uint32_t)wh[i] << 16;
		float want;
		memcpy(&want, &u, sizeof want);
		assert_true(bits(got_w[i]) == bits(want));
	}
	assert_true(got_b[0] == 1.5f && got_b[2] == 2.0f);
	assert_true(got_b[1] < 0 && fabsf(got_b[1] + 1e-6f) <= 0x1p-25f); /* a subnormal */
	atm_st_destroy(f);
	double dv[3] = {1, 2, 3};
	t[1] = (atm_st_tensor){.name = "b", .dtype = ATM_ST_F64, .ndim = 1, .dims = {3}, .n_elems = 3,
	                       .data = dv, .bytes = 24};
	assert_int_equal(atm_st_dump(t, 2, NULL, &text, &len), ATM_OK);
	assert_int_equal(atm_st_parse(&f, text, len, "half.safetensors"), ATM_OK);
	free(text);
	assert_int_equal(atm_st_check(f, g, ATM_KIND_PARAM), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "F64 would be rounded"));
	atm_st_destroy(f);
	atm_graph_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_safetensors_bf16),
		cmocka_unit_test(test_safetensors_f16),
		cmocka_unit_test(test_safetensors_half_read_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
