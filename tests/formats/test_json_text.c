/* test_json_text.c -- the JSON helpers the formats' readers and writers share: unknown keys, checked fields, whole texts */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "atm_core.h"
#include "atm_formats.h"
#include "common/alloc_fail.h"

/* test_json_text_unknown_key -- the first key not listed, and the list for the message */
static void test_json_text_unknown_key(void **state)
{
	static const char *const keys[] = {"name", "size", NULL};
	char valid[64];
	(void)state;
	json_t *o = json_pack("{s:s, s:i}", "name", "x", "size", 3);
	assert_null(atm_json_unknown_key(o, keys, valid, sizeof valid));
	json_object_set_new(o, "colour", json_string("red"));
	assert_string_equal(atm_json_unknown_key(o, keys, valid, sizeof valid), "colour");
	assert_string_equal(valid, "name, size");
	/* a short buffer is cut, not overrun */
	char tiny[5];
	assert_string_equal(atm_json_unknown_key(o, keys, tiny, sizeof tiny), "colour");
	assert_int_equal(strlen(tiny), 4);
	json_decref(o);
}

/* test_json_text_set_new -- a NULL object or value (an allocation that failed) is remembered,
 * and the value is released either way */
static void test_json_text_set_new(void **state)
{
	bool ok = true;
	(void)state;
	json_t *o = json_object();
	atm_json_set_new(o, "a", json_integer(1), &ok);
	assert_true(ok);
	atm_json_set_new(o, "b", NULL, &ok);
	assert_false(ok);
	ok = true;
	atm_json_set_new(NULL, "c", json_string("leaks nothing (ASan)"), &ok);
	assert_false(ok);
	assert_int_equal(json_object_size(o), 1);
	json_decref(o);
}

/* text_once -- an object of many keys as text: whole or nothing */
static atm_status text_once(void *arg)
{
	const char *want = arg;
	char *text = (char *)1;
	json_t *o = json_object();
	bool ok = true;
	for (int i = 0; i < 12; i++) {
		char key[32];
		snprintf(key, sizeof key, "key_number_%d", i);
		atm_json_set_new(o, key, json_integer(i), &ok);
	}
	atm_status rc = ok ? atm_json_text(o, JSON_COMPACT | JSON_PRESERVE_ORDER, &text)
	                   : ATM_E_NOMEM;
	json_decref(o);
	long left = alloc_fail_pause();
	if (rc == ATM_OK && want)
		assert_string_equal(text, want);
	free(rc == ATM_OK ? text : NULL);
	alloc_fail_resume(left);
	return rc;
}

/* test_json_text_whole_or_nothing -- with any allocation failing, the text is whole or
 * ATM_E_NOMEM: never one with a key's text left out, as json_dumps can give */
static void test_json_text_whole_or_nothing(void **state)
{
	char *want = NULL;
	(void)state;
	assert_int_equal(text_once(NULL), ATM_OK);
	json_t *o = json_object();
	for (int i = 0; i < 12; i++) {
		char key[32];
		snprintf(key, sizeof key, "key_number_%d", i);
		json_object_set_new(o, key, json_integer(i));
	}
	assert_int_equal(atm_json_text(o, JSON_COMPACT | JSON_PRESERVE_ORDER, &want), ATM_OK);
	assert_non_null(strstr(want, "\"key_number_11\":11"));
	json_decref(o);
	assert_true(alloc_fail_sweep("atm_json_text", text_once, want) > 12);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_text_unknown_key),
		cmocka_unit_test(test_json_text_set_new),
		cmocka_unit_test(test_json_text_whole_or_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
