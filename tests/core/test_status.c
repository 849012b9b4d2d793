/* test_status.c -- error messages, status names, exit codes, byte sizes and atomic files */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "atm_core.h"
#include "atm_formats.h"

static void test_status_message_and_prefix(void **state)
{
	(void)state;
	atm_err_clear();
	assert_string_equal(atm_errmsg(), "");
	assert_int_equal(atm_err(ATM_E_INPUT, "tensor %d is bad", 7), ATM_E_INPUT);
	assert_string_equal(atm_errmsg(), "tensor 7 is bad");
	assert_int_equal(atm_err_prefix(ATM_E_INPUT, "%s: ", "g.json"), ATM_E_INPUT);
	assert_string_equal(atm_errmsg(), "g.json: tensor 7 is bad");
}

static void test_status_long_messages_truncate(void **state)
{
	(void)state;
	char big[5000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	atm_err(ATM_E_INPUT, "%s", big);
	atm_err_prefix(ATM_E_INPUT, "%s", big);
	assert_true(strlen(atm_errmsg()) < 4096);
}

static void test_status_exit_codes_are_distinct(void **state)
{
	(void)state;
	const atm_status codes[] = {ATM_E_USAGE,  ATM_E_INPUT, ATM_E_INFEASIBLE,  ATM_E_UNSUPPORTED,
	                            ATM_E_IO,     ATM_E_NOMEM, ATM_E_INTERRUPTED, ATM_E_NOTFOUND,
	                            ATM_E_INTERNAL, ATM_E_OVER_LIMIT};
	int n = (int)(sizeof codes / sizeof codes[0]);
	assert_int_equal(atm_exit_code(ATM_OK), 0);
	for (int i = 0; i < n; i++) {
		assert_int_not_equal(atm_exit_code(codes[i]), 0);
		for (int j = i + 1; j < n; j++)
			assert_int_not_equal(atm_exit_code(codes[i]), atm_exit_code(codes[j]));
	}
	assert_int_equal(atm_exit_code(ATM_E_USAGE), 2);
	assert_int_equal(atm_exit_code(ATM_E_INPUT), 3);
	assert_string_equal(atm_status_name(ATM_E_INFEASIBLE), "infeasible");
	assert_int_equal(atm_exit_code(ATM_E_OVER_LIMIT), 9);
	assert_string_equal(atm_status_name(ATM_E_OVER_LIMIT), "over-limit");
}

static void test_status_names_round_trip(void **state)
{
	(void)state;
	for (int op = 0; op < ATM_N_OPS; op++) {
		atm_op back;
		assert_int_equal(atm_op_from_name(atm_op_name((atm_op)op), &back), ATM_OK);
		assert_int_equal(back, op);
	}
	atm_op op;
	assert_int_equal(atm_op_from_name("convolution", &op), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "unknown op 'convolution'"));
	assert_non_null(strstr(atm_errmsg(), "conv_fwd"));
	atm_tensor_kind k;
	assert_int_equal(atm_kind_from_name("weights", &k), ATM_E_INPUT);
	assert_non_null(strstr(atm_errmsg(), "param"));
	atm_dtype d;
	assert_int_equal(atm_dtype_from_name("f32", &d), ATM_OK);
	assert_int_equal(d, ATM_F32);
	assert_int_equal(atm_dtype_bytes(ATM_U8), 1);
}

static void test_status_parse_bytes(void **state)
{
	(void)state;
	int64_t b;
	assert_int_equal(atm_parse_bytes("4096", &b), ATM_OK);
	assert_int_equal(b, 4096);
	assert_int_equal(atm_parse_bytes("12G", &b), ATM_OK);
	assert_int_equal(b, 12LL << 30);
	assert_int_equal(atm_parse_bytes("1.5g", &b), ATM_OK);
	assert_int_equal(b, 3LL << 29);
	assert_int_equal(atm_parse_bytes("512MiB", &b), ATM_OK);
	assert_int_equal(b, 512LL << 20);
	assert_int_equal(atm_parse_bytes("64KB", &b), ATM_OK);
	assert_int_equal(b, 64LL << 10);
	const char *bad[] = {"", "-1G", "G", "12X", "0", "1e300", "nan", " 5", "5 G", "0x10M", "1e3",
	                     "inf"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(atm_parse_bytes(bad[i], &b), ATM_E_USAGE);
		assert_non_null(strstr(atm_errmsg(), "is not a byte size"));
	}
	char buf[32];
	assert_string_equal(atm_format_bytes(1536, buf, sizeof buf), "1.50 KiB");
	assert_string_equal(atm_format_bytes(100, buf, sizeof buf), "100 B");
}

static void test_status_atomic_write_replaces_whole_file(void **state)
{
	(void)state;
	char dir[] = "/tmp/atm_test_files_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof path, "%s/out.json", dir);
	assert_int_equal(atm_write_file_atomic(path, "first", 5), ATM_OK);
	assert_int_equal(atm_write_file_atomic(path, "second!", 7), ATM_OK);
	char *data = NULL;
	size_t len = 0;
	assert_int_equal(atm_read_file(path, &data, &len), ATM_OK);
	assert_int_equal(len, 7);
	assert_string_equal(data, "second!");
	free(data);
	/* no temporary file is left behind */
	char cmd[512];
	snprintf(cmd, sizeof cmd, "test $(ls %s | wc -l) -eq 1", dir);
	assert_int_equal(system(cmd), 0);

	char missing[300];
	snprintf(missing, sizeof missing, "%s/nope/out.json", dir);
	assert_int_equal(atm_write_file_atomic(missing, "x", 1), ATM_E_IO);
	assert_non_null(strstr(atm_errmsg(), missing));
	assert_int_equal(atm_read_file(missing, &data, &len), ATM_E_NOTFOUND);
	assert_null(data);
	assert_int_equal(atm_read_file(dir, &data, &len), ATM_E_IO);
	assert_non_null(strstr(atm_errmsg(), "directory"));
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_message_and_prefix),
		cmocka_unit_test(test_status_long_messages_truncate),
		cmocka_unit_test(test_status_exit_codes_are_distinct),
		cmocka_unit_test(test_status_names_round_trip),
		cmocka_unit_test(test_status_parse_bytes),
		cmocka_unit_test(test_status_atomic_write_replaces_whole_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
