/* json_text.c -- what the JSON writers and readers share: a growing text for files written a line per element, the unknown-key check, JSON type names */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formats_internal.h"

/* atm_text_add -- append printf-style text */
void atm_text_add(atm_text *t, const char *fmt, ...)
{
	va_list ap;
	if (t->failed)
		return;
	for (;;) {
		size_t room = t->cap - t->len;
		va_start(ap, fmt);
		int n = vsnprintf(t->buf ? t->buf + t->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = true;
			return;
		}
		if ((size_t)n < room) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap ? t->cap : 4096;
		while (cap - t->len <= (size_t)n)
			cap *= 2;
		char *p = realloc(t->buf, cap);
		if (!p) {
			t->failed = true;
			return;
		}
		t->buf = p;
		t->cap = cap;
	}
}

/* atm_text_str -- append s as it is (it may hold '%') */
void atm_text_str(atm_text *t, const char *s)
{
	atm_text_add(t, "%s", s);
}

/* text_bytes -- json_dump_callback's sink: append n bytes of buf */
static int text_bytes(const char *buf, size_t n, void *data)
{
	atm_text *t = data;
	atm_text_add(t, "%.*s", (int)n, buf);
	return t->failed ? -1 : 0;
}

/* atm_text_json -- append v on one line. Through a callback rather than json_dumps: when an
 * allocation fails while it writes an object's key, jansson 2.14 carries on without the key's
 * text and returns the rest, while the callback's own record of the failure stays here. */
void atm_text_json(atm_text *t, const json_t *v, size_t flags)
{
	if (!v || t->failed || json_dump_callback(v, text_bytes, t, flags | JSON_ENCODE_ANY) < 0)
		t->failed = true;
}

/* atm_text_json_new -- append v on one line and release it */
void atm_text_json_new(atm_text *t, json_t *v, size_t flags)
{
	atm_text_json(t, v, flags);
	json_decref(v);
}

/* atm_text_finish -- hand out the text, or free it after a failed allocation */
atm_status atm_text_finish(atm_text *t, char **out, size_t *len, const char *what)
{
	*out = NULL;
	if (t->failed || !t->buf) {
		free(t->buf);
		*t = (atm_text){0};
		return atm_err(ATM_E_NOMEM, "out of memory writing %s", what);
	}
	*out = t->buf;
	if (len)
		*len = t->len;
	*t = (atm_text){0};
	return ATM_OK;
}

/* atm_json_set_new -- obj[key] = v (stolen), a failure remembered in *ok */
void atm_json_set_new(json_t *obj, const char *key, json_t *v, bool *ok)
{
	if (!obj || !v) {
		json_decref(v);
		*ok = false;
		return;
	}
	if (json_object_set_new(obj, key, v) < 0)
		*ok = false;
}

/* atm_json_text -- v as malloc'd text */
atm_status atm_json_text(const json_t *v, size_t flags, char **text)
{
	atm_text t = {0};
	atm_text_json(&t, v, flags);
	return atm_text_finish(&t, text, NULL, "JSON");
}

/* atm_json_unknown_key -- the first key of o not in keys, and the valid ones for the message */
const char *atm_json_unknown_key(const json_t *o, const char *const *keys, char *valid,
                                 size_t len)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)o, key, v) {
		bool known = false;
		for (const char *const *k = keys; *k && !known; k++)
			known = !strcmp(key, *k);
		if (known)
			continue;
		size_t used = 0;
		if (len)
			valid[0] = '\0';
		for (const char *const *k = keys; *k && used < len; k++)
			used += (size_t)snprintf(valid + used, len - used, "%s%s", k == keys ? "" : ", ", *k);
		return key;
	}
	return NULL;
}

struct json_t *atm_json_float(float f)
{
	char buf[32];
	if (!isfinite(f))
		return NULL;
	for (int p = 1; p <= 9; p++) {
		snprintf(buf, sizeof buf, "%.*g", p, (double)f);
		if (strtof(buf, NULL) == f)
			break;
	}
	return json_real(strtod(buf, NULL));
}

const char *atm_json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER:
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}
