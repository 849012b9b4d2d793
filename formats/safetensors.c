/* safetensors.c -- tensors by name in the safetensors layout (docs/formats.md): read, checked
 * against a graph, and written atomically
 *
 * A file is an 8-byte little-endian header length N, N bytes of JSON
 * {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [BEGIN, END]}, ...,
 *  "__metadata__": {"key": "text"}}, then the tensors' bytes. Offsets count from the end of the
 * header; together the tensors cover those bytes whole, without a gap or an overlap. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "formats_internal.h"

#define ST_MAX_HEADER ((uint64_t)100 << 20) /* as the format's own reader allows */
#define ST_MAX_NAME 4096
#define ST_METADATA "__metadata__"

static const struct {
	const char *name;
	int size;
	bool integer;
} st_dtypes[ATM_ST_N_DTYPES] = {
	[ATM_ST_F32] = {"F32", 4, false}, [ATM_ST_F64] = {"F64", 8, false},
	[ATM_ST_F16] = {"F16", 2, false}, [ATM_ST_BF16] = {"BF16", 2, false},
	[ATM_ST_I64] = {"I64", 8, true},  [ATM_ST_I32] = {"I32", 4, true},
	[ATM_ST_I16] = {"I16", 2, true},  [ATM_ST_I8] = {"I8", 1, true},
	[ATM_ST_U8] = {"U8", 1, true},    [ATM_ST_U16] = {"U16", 2, true},
	[ATM_ST_U32] = {"U32", 4, true},  [ATM_ST_U64] = {"U64", 8, true},
	[ATM_ST_BOOL] = {"BOOL", 1, true},
};

struct atm_st_file {
	char *path;          /* for messages */
	void *map;           /* the file mapped, or a copy of the bytes parsed */
	size_t map_len;
	bool mapped;
	atm_st_tensor *t;    /* in offset order */
	int64_t n;
	json_t *names;       /* name -> index into t */
};

const char *atm_st_dtype_name(atm_st_dtype d)
{
	return d >= 0 && d < ATM_ST_N_DTYPES ? st_dtypes[d].name : "?";
}

int atm_st_dtype_size(atm_st_dtype d)
{
	return d >= 0 && d < ATM_ST_N_DTYPES ? st_dtypes[d].size : 0;
}

static int dtype_of(const char *s)
{
	for (int d = 0; d < ATM_ST_N_DTYPES; d++)
		if (!strcmp(s, st_dtypes[d].name))
			return d;
	return -1;
}

static atm_status bad(const atm_st_file *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static atm_status bad(const atm_st_file *f, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return atm_err(ATM_E_INPUT, "%s: %s", f->path, msg);
}

void atm_st_destroy(atm_st_file *f)
{
	if (!f)
		return;
	if (f->mapped)
		munmap(f->map, f->map_len);
	else
		free(f->map);
	for (int64_t i = 0; i < f->n; i++)
		free((char *)f->t[i].name);
	free(f->t);
	json_decref(f->names);
	free(f->path);
	free(f);
}

static int by_offset(const void *a, const void *b)
{
	const atm_st_tensor *x = a, *y = b;
	const uint8_t *p = x->data, *q = y->data;
	if (p != q)
		return p < q ? -1 : 1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	return strcmp(x->name, y->name); /* empty tensors at one offset: by name */
}

/* shape_text -- a header's shape as written ("[2147483648, 2147483648, ...]"), for messages
 * about sizes no dims array holds */
static const char *shape_text(json_t *shape, char *buf, size_t len)
{
	size_t at = 0;
	at += (size_t)snprintf(buf, len, "[");
	for (size_t i = 0; i < json_array_size(shape) && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? ", " : "",
		                       (long long)json_integer_value(json_array_get(shape, i)));
	if (at < len)
		snprintf(buf + at, len - at, "]");
	return buf;
}

/* parse_tensor -- one header entry into t, its offsets checked against the data's length */
static atm_status parse_tensor(atm_st_file *f, const char *name, json_t *o, const uint8_t *base,
                               uint64_t data_len, atm_st_tensor *t)
{
	char sh[160];
	if (!json_is_object(o))
		return bad(f, "tensor '%s': must be an object {\"dtype\", \"shape\", \"data_offsets\"}",
		           name);
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		if (strcmp(k, "dtype") && strcmp(k, "shape") && strcmp(k, "data_offsets"))
			return bad(f, "tensor '%s': unknown field '%s' (valid: dtype, shape, data_offsets)",
			           name, k);
	}
	json_t *dt = json_object_get(o, "dtype"), *shape = json_object_get(o, "shape"),
	       *off = json_object_get(o, "data_offsets");
	int d = json_is_string(dt) ? dtype_of(json_string_value(dt)) : -1;
	if (d < 0)
		return bad(f, "tensor '%s': dtype must be one of F32, F64, F16, BF16, I64, I32, I16, I8, "
		           "U8, U16, U32, U64, BOOL", name);
	if (!json_is_array(shape) || json_array_size(shape) > ATM_MAX_DIMS)
		return bad(f, "tensor '%s': shape must be an array of at most %d sizes", name,
		           ATM_MAX_DIMS);
	t->dtype = (atm_st_dtype)d;
	t->ndim = (int)json_array_size(shape);
	t->n_elems = 1;
	for (int i = 0; i < t->ndim; i++) {
		json_t *s = json_array_get(shape, (size_t)i);
		if (!json_is_integer(s) || json_integer_value(s) < 0 ||
		    json_integer_value(s) > ATM_MAX_DIM)
			return bad(f, "tensor '%s': shape[%d] must be a size from 0 to %lld", name, i,
			           (long long)ATM_MAX_DIM);
		t->dims[i] = json_integer_value(s);
		if (t->dims[i] && t->n_elems > ATM_MAX_BYTES / 8 / t->dims[i])
			return bad(f, "tensor '%s': shape %s has more elements than any file holds", name,
			           shape_text(shape, sh, sizeof sh));
		t->n_elems *= t->dims[i];
	}
	if (!json_is_array(off) || json_array_size(off) != 2 ||
	    !json_is_integer(json_array_get(off, 0)) || !json_is_integer(json_array_get(off, 1)))
		return bad(f, "tensor '%s': data_offsets must be [BEGIN, END], two byte offsets", name);
	json_int_t b = json_integer_value(json_array_get(off, 0)),
	           e = json_integer_value(json_array_get(off, 1));
	if (b < 0 || e < b || (uint64_t)e > data_len)
		return bad(f, "tensor '%s': data_offsets [%lld, %lld] are not within the %llu bytes "
		           "after the header%s", name, (long long)b, (long long)e,
		           (unsigned long long)data_len,
		           b >= 0 && e >= b ? " (is the file cut short?)" : "");
	t->bytes = t->n_elems * st_dtypes[d].size;
	if (e - b != t->bytes)
		return bad(f, "tensor '%s': data_offsets [%lld, %lld] hold %lld bytes, but %s %s takes "
		           "%lld", name, (long long)b, (long long)e, (long long)(e - b),
		           st_dtypes[d].name, atm_format_dims(t->ndim, t->dims, sh, sizeof sh),
		           (long long)t->bytes);
	t->data = base + b;
	return ATM_OK;
}

/* parse -- f->map holds the file's bytes: its header and tensors, every field checked */
static atm_status parse(atm_st_file *f)
{
	const uint8_t *p = f->map;
	size_t len = f->map_len;
	if (len < 8)
		return bad(f, "%zu bytes: too short for a safetensors file (an 8-byte header length, "
		           "a JSON header, the tensors' bytes)", len);
	uint64_t hlen = 0;
	for (int i = 7; i >= 0; i--)
		hlen = hlen << 8 | p[i];
	if (hlen > ST_MAX_HEADER)
		return bad(f, "the header length %llu exceeds the 100 MiB (%llu bytes) a header may take",
		           (unsigned long long)hlen, (unsigned long long)ST_MAX_HEADER);
	if (hlen > len - 8)
		return bad(f, "the header length %llu runs past the end of the file (%zu bytes)",
		           (unsigned long long)hlen, len);
	if (hlen < 2 || p[8] != '{')
		return bad(f, "the header must be a JSON object starting at byte 8");
	json_error_t je;
	json_t *h = json_loadb((const char *)p + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
	if (!h)
		return bad(f, "header: JSON error at byte %d: %s", je.position + 8, je.text);
	atm_status rc = ATM_OK;
	if (!json_is_object(h)) {
		rc = bad(f, "the header must be a JSON object");
		goto out;
	}
	size_t n = json_object_size(h);
	json_t *meta = json_object_get(h, ST_METADATA);
	if (meta) {
		const char *k;
		json_t *v;
		if (!json_is_object(meta)) {
			rc = bad(f, "__metadata__ must be an object of strings");
			goto out;
		}
		json_object_foreach(meta, k, v) {
			if (!json_is_string(v)) {
				rc = bad(f, "__metadata__ must be an object of strings ('%s' is not)", k);
				goto out;
			}
		}
		n--;
	}
	f->t = calloc(n ? n : 1, sizeof *f->t);
	f->names = json_object();
	if (!f->t || !f->names) {
		rc = atm_err(ATM_E_NOMEM, "out of memory reading %s", f->path);
		goto out;
	}
	const char *name;
	json_t *o;
	json_object_foreach(h, name, o) {
		if (!strcmp(name, ST_METADATA))
			continue;
		if (!name[0] || strlen(name) > ST_MAX_NAME) {
			rc = bad(f, "a tensor name must have 1 to %d bytes", ST_MAX_NAME);
			goto out;
		}
		atm_st_tensor *t = &f->t[f->n];
		if ((rc = parse_tensor(f, name, o, p + 8 + hlen, len - 8 - hlen, t)) < 0)
			goto out;
		if (!(t->name = strdup(name))) {
			rc = atm_err(ATM_E_NOMEM, "out of memory reading %s", f->path);
			goto out;
		}
		f->n++;
	}
	/* the tensors cover the bytes after the header whole, in offset order */
	qsort(f->t, (size_t)f->n, sizeof *f->t, by_offset);
	const uint8_t *at = p + 8 + hlen;
	for (int64_t i = 0; i < f->n; i++) {
		const atm_st_tensor *t = &f->t[i];
		if ((const uint8_t *)t->data != at) {
			long long b = (long long)((const uint8_t *)t->data - (p + 8 + hlen));
			rc = (const uint8_t *)t->data < at
			         ? bad(f, "tensor '%s' (bytes %lld to %lld) overlaps tensor '%s'", t->name,
			               b, b + (long long)t->bytes, f->t[i - 1].name)
			         : bad(f, "bytes %lld to %lld after the header belong to no tensor",
			               (long long)(at - (p + 8 + hlen)), b);
			goto out;
		}
		at += t->bytes;
	}
	if (at != p + len) {
		rc = bad(f, "bytes %lld to %zu after the header belong to no tensor",
		         (long long)(at - (p + 8 + hlen)), len - 8 - (size_t)hlen);
		goto out;
	}
	for (int64_t i = 0; i < f->n; i++)
		if (json_object_set_new(f->names, f->t[i].name, json_integer(i)) < 0) {
			rc = atm_err(ATM_E_NOMEM, "out of memory reading %s", f->path);
			goto out;
		}
out:
	json_decref(h);
	return rc;
}

static atm_status new_file(atm_st_file **out, const char *path)
{
	*out = calloc(1, sizeof **out);
	if (!*out || !((*out)->path = strdup(path ? path : "safetensors"))) {
		free(*out);
		*out = NULL;
		return atm_err(ATM_E_NOMEM, "out of memory reading %s", path ? path : "safetensors");
	}
	return ATM_OK;
}

atm_status atm_st_parse(atm_st_file **out, const void *buf, size_t len, const char *path)
{
	atm_st_file *f = NULL;
	atm_status rc = new_file(&f, path);
	*out = NULL;
	if (rc < 0)
		return rc;
	f->map = malloc(len ? len : 1);
	if (!f->map) {
		atm_st_destroy(f);
		return atm_err(ATM_E_NOMEM, "out of memory reading %s", path ? path : "safetensors");
	}
	memcpy(f->map, buf, len);
	f->map_len = len;
	if ((rc = parse(f)) < 0) {
		atm_st_destroy(f);
		return rc;
	}
	*out = f;
	return ATM_OK;
}

atm_status atm_st_read(atm_st_file **out, const char *path)
{
	atm_st_file *f = NULL;
	struct stat st;
	atm_status rc = new_file(&f, path);
	*out = NULL;
	if (rc < 0)
		return rc;
	/* never blocking: a pipe with no writer would hold open() forever (it is refused below) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		rc = atm_err(errno == ENOENT ? ATM_E_NOTFOUND : ATM_E_IO, "cannot open %s: %s", path,
		             strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = fstat(fd, &st) < 0
		         ? atm_err(ATM_E_IO, "cannot read %s: %s", path, strerror(errno))
		         : atm_err(ATM_E_INPUT, "cannot read %s: a safetensors file must be a regular "
		                   "file (it is mapped, not streamed)", path);
		goto fail;
	}
	if (st.st_size == 0) {
		rc = bad(f, "the file is empty");
		goto fail;
	}
	f->map_len = (size_t)st.st_size;
	f->map = mmap(NULL, f->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (f->map == MAP_FAILED) {
		f->map = NULL;
		rc = atm_err(errno == ENOMEM ? ATM_E_NOMEM : ATM_E_IO, "cannot map %s: %s", path,
		             strerror(errno));
		goto fail;
	}
	f->mapped = true;
	close(fd);
	fd = -1;
	if ((rc = parse(f)) < 0)
		goto fail;
	*out = f;
	return ATM_OK;
fail:
	if (fd >= 0)
		close(fd);
	atm_st_destroy(f);
	return rc;
}

const char *atm_st_path(const atm_st_file *f)
{
	return f->path;
}

int64_t atm_st_count(const atm_st_file *f)
{
	return f->n;
}

const atm_st_tensor *atm_st_at(const atm_st_file *f, int64_t i)
{
	return i >= 0 && i < f->n ? &f->t[i] : NULL;
}

const atm_st_tensor *atm_st_find(const atm_st_file *f, const char *name)
{
	json_t *i = json_object_get(f->names, name);
	return i ? &f->t[json_integer_value(i)] : NULL;
}

/* ---------------------------------------------------------------- writing */

atm_status atm_st_dump(const atm_st_tensor *t, int64_t n, const char *format, char **out,
                       size_t *out_len)
{
	json_t *h = json_object(), *meta = json_pack("{s:s}", "format", format ? format : "pt");
	atm_status rc = ATM_OK;
	char *text = NULL, *buf = NULL;
	uint64_t off = 0;
	*out = NULL;
	*out_len = 0;
	if (!h || !meta || json_object_set_new(h, ST_METADATA, meta) < 0) {
		rc = atm_err(ATM_E_NOMEM, "out of memory writing safetensors");
		goto out;
	}
	for (int64_t i = 0; i < n; i++) {
		if (!t[i].name || !t[i].name[0] || json_object_get(h, t[i].name) ||
		    !strcmp(t[i].name, ST_METADATA) || t[i].ndim < 0 || t[i].ndim > ATM_MAX_DIMS) {
			rc = atm_err(ATM_E_USAGE, "atm_st_dump: tensor %lld: its name is empty, reserved or "
			             "given twice ('%s'), or it has %d dimensions", (long long)i,
			             t[i].name ? t[i].name : "", t[i].ndim);
			goto out;
		}
		json_t *shape = json_array(), *o;
		for (int k = 0; shape && k < t[i].ndim; k++)
			json_array_append_new(shape, json_integer(t[i].dims[k]));
		o = json_pack("{s:s, s:o, s:[I, I]}", "dtype", atm_st_dtype_name(t[i].dtype), "shape",
		              shape, "data_offsets", (json_int_t)off, (json_int_t)(off + t[i].bytes));
		if (!o || json_object_set_new(h, t[i].name, o) < 0) {
			rc = atm_err(ATM_E_NOMEM, "out of memory writing safetensors");
			goto out;
		}
		off += (uint64_t)t[i].bytes;
	}
	if (!(text = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER))) {
		rc = atm_err(ATM_E_NOMEM, "out of memory writing safetensors");
		goto out;
	}
	/* the header padded with spaces so that the tensors start 8-byte aligned */
	size_t hlen = strlen(text), padded = (hlen + 7) / 8 * 8, total = 8 + padded + off;
	if (!(buf = malloc(total))) {
		rc = atm_err(ATM_E_NOMEM, "out of memory writing safetensors (%zu bytes)", total);
		goto out;
	}
	for (int i = 0; i < 8; i++)
		buf[i] = (char)(padded >> (8 * i) & 0xff);
	memcpy(buf + 8, text, hlen);
	memset(buf + 8 + hlen, ' ', padded - hlen);
	char *at = buf + 8 + padded;
	for (int64_t i = 0; i < n; i++) {
		if (t[i].bytes)
			memcpy(at, t[i].data, (size_t)t[i].bytes);
		at += t[i].bytes;
	}
	*out = buf;
	*out_len = total;
	buf = NULL;
out:
	free(buf);
	free(text);
	json_decref(h);
	return rc;
}

atm_status atm_st_write(const char *path, const atm_st_tensor *t, int64_t n, const char *format)
{
	char *buf = NULL;
	size_t len = 0;
	atm_status rc = atm_st_dump(t, n, format, &buf, &len);
	if (rc == ATM_OK)
		rc = atm_write_file_atomic(path, buf, len);
	free(buf);
	return rc;
}

/* ---------------------------------------------------------------- against a graph */

/* loss_labels -- a loss reads g's tensor t as its labels: one-hot (or class) rows, or a
 * language model's class per position */
static bool loss_labels(const atm_graph *g, int32_t t)
{
	if (atm_tensor_is_labels(g, t))
		return true;
	for (int32_t k = 0; k < atm_graph_n_nodes(g); k++) {
		const atm_node *n = atm_graph_node(g, k);
		if (n->op == ATM_OP_TOKEN_XENT_FWD && n->in[1] == t)
			return true;
	}
	return false;
}

/* alias -- the other name f may give g's input t: "labels" for the one labels input, "input"
 * for the one other input; NULL when g has more than one of its kind */
static const char *alias(const atm_graph *g, int32_t t)
{
	bool lab = loss_labels(g, t);
	for (int32_t u = 0; u < atm_graph_n_tensors(g); u++)
		if (u != t && atm_graph_tensor(g, u)->kind == ATM_KIND_INPUT && loss_labels(g, u) == lab)
			return NULL;
	return lab ? "labels" : "input";
}

/* source -- f's tensor for g's tensor t: by its name, or an input's alias */
static const atm_st_tensor *source(const atm_st_file *f, const atm_graph *g, int32_t t,
                                   const char **as)
{
	const atm_tensor *x = atm_graph_tensor(g, t);
	const atm_st_tensor *s = atm_st_find(f, x->name);
	*as = x->name;
	if (!s && x->kind == ATM_KIND_INPUT && (*as = alias(g, t)))
		s = atm_st_find(f, *as);
	return s;
}

/* class_indices -- s holds class indices for labels x: integers, one per row of x (x's shape
 * without its last dimension, or those elements in any shape) */
static bool class_indices(const atm_st_tensor *s, const atm_tensor *x)
{
	int64_t rows = x->ndim ? x->n_elems / (x->dims[x->ndim - 1] ? x->dims[x->ndim - 1] : 1) : 0;
	return st_dtypes[s->dtype].integer && s->dtype != ATM_ST_BOOL && x->ndim >= 1 &&
	       s->n_elems == rows;
}

/* exact_float -- s's values are floats that float32 holds exactly: F32, and the half-width
 * BF16 (what LLaMA's checkpoints and torch.autocast's bf16 are) and F16, widened on reading;
 * F64 would be rounded, and is refused */
static bool exact_float(const atm_st_tensor *s)
{
	return s->dtype == ATM_ST_F32 || s->dtype == ATM_ST_BF16 || s->dtype == ATM_ST_F16;
}

/* half_to_float -- IEEE binary16 h as a float (exact: subnormals, infinities and NaNs too) */
static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = h >> 10 & 0x1f, man = h & 0x3ff;
	uint32_t bits;
	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | man << 13;
	} else if (exp) {
		bits = sign | (exp + 112) << 23 | man << 13;
	} else {
		float f = ldexpf((float)man, -24); /* subnormal (or zero) */
		memcpy(&bits, &f, sizeof bits);
		bits |= sign;
	}
	float f;
	memcpy(&f, &bits, sizeof f);
	return f;
}

/* float_at -- element i of an exact_float tensor as a float */
static float float_at(const atm_st_tensor *s, int64_t i)
{
	const uint8_t *p = (const uint8_t *)s->data + i * st_dtypes[s->dtype].size;
	float f;
	if (s->dtype == ATM_ST_F32) {
		memcpy(&f, p, sizeof f);
		return f;
	}
	uint16_t h = (uint16_t)(p[0] | p[1] << 8);
	if (s->dtype == ATM_ST_F16)
		return half_to_float(h);
	uint32_t bits = (uint32_t)h << 16; /* BF16: float32's upper half */
	memcpy(&f, &bits, sizeof f);
	return f;
}

/* bf16_of -- f's nearest BF16, ties to even; a NaN stays a (quiet) NaN */
static uint16_t bf16_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	if (isnan(f))
		return (uint16_t)(u >> 16 | 0x40);
	u += 0x7fffu + (u >> 16 & 1);
	return (uint16_t)(u >> 16);
}

/* f16_of -- f's nearest IEEE binary16, ties to even: past 65504 an infinity, below 2^-14 a
 * subnormal; a NaN stays a (quiet) NaN */
static uint16_t f16_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	uint16_t sign = (uint16_t)(u >> 16 & 0x8000);
	float a = fabsf(f);
	if (isnan(f))
		return (uint16_t)(sign | 0x7e00);
	if (a >= 65520.0f) /* rounds past the largest finite half */
		return (uint16_t)(sign | 0x7c00);
	if (a < 6.103515625e-05f) /* subnormal: a count of 2^-24, rounded to even */
		return (uint16_t)(sign | (uint16_t)lrintf(a * 16777216.0f));
	uint32_t exp = (u >> 23 & 0xff) - 112, man = u & 0x7fffff;
	uint32_t h = exp << 10 | man >> 13, rest = man & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
		h++; /* a carry into the exponent is right: the next binade, or 65504's neighbour */
	return (uint16_t)(sign | h);
}

void atm_st_narrow(const float *src, int64_t n, atm_st_dtype to, void *dst)
{
	uint16_t *h = dst;
	if (to == ATM_ST_F32) {
		memcpy(dst, src, (size_t)n * sizeof *src);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		h[i] = to == ATM_ST_BF16 ? bf16_of(src[i]) : f16_of(src[i]);
}

static int64_t index_at(const atm_st_tensor *s, int64_t i)
{
	const uint8_t *p = (const uint8_t *)s->data + i * st_dtypes[s->dtype].size;
	uint64_t u = 0;
	int size = st_dtypes[s->dtype].size;
	for (int b = size - 1; b >= 0; b--)
		u = u << 8 | p[b];
	bool is_signed = s->dtype == ATM_ST_I64 || s->dtype == ATM_ST_I32 || s->dtype == ATM_ST_I16 ||
	                 s->dtype == ATM_ST_I8;
	if (is_signed && size < 8 && (u >> (8 * size - 1) & 1))
		u |= ~(uint64_t)0 << (8 * size);
	if (!is_signed && u > (uint64_t)INT64_MAX)
		return -1;
	return (int64_t)u;
}

/* check_one -- s fits g's tensor x (as): F32 of x's shape, or class indices in range */
/* check_state -- optimizer state x given as s (F32, its shape checked): every value finite, and
 * AdamW's step count ("W.step") a whole number of steps from 0, so that a run resumes from a
 * state a run could have written */
static atm_status check_state(const atm_st_file *f, const atm_tensor *x, const atm_st_tensor *s,
                              const char *as)
{
	const char *dot = strrchr(x->name, '.');
	bool step = dot && !strcmp(dot, ".step");
	if (!exact_float(s))
		return ATM_OK;
	for (int64_t i = 0; i < s->n_elems; i++) {
		float v = float_at(s, i);
		if (!isfinite(v))
			return bad(f, "optimizer state '%s' holds %s at element %lld: a run resumes only "
			           "from finite states", as, isnan(v) ? "NaN" : "an infinity", (long long)i);
		if (step && (v < 0 || v != floorf(v) || v > 16777216.0f))
			return bad(f, "optimizer state '%s' is AdamW's count of steps taken, which must be a "
			           "whole number from 0 to 16777216, not %g", as, (double)v);
	}
	return ATM_OK;
}

static atm_status check_one(const atm_st_file *f, const atm_graph *g, int32_t t,
                            const atm_st_tensor *s, const char *as)
{
	const atm_tensor *x = atm_graph_tensor(g, t);
	char a[160], b[160];
	if (x->dtype == ATM_I32) {
		/* token ids or labels per position: integers, as many as the graph's, in range */
		int64_t limit = atm_tensor_token_limit(g, t);
		atm_format_dims(x->ndim, x->dims, a, sizeof a);
		atm_format_dims(s->ndim, s->dims, b, sizeof b);
		if (!st_dtypes[s->dtype].integer || s->dtype == ATM_ST_BOOL || s->n_elems != x->n_elems)
			return bad(f, "tensor '%s' is %s %s; the graph's '%s' takes %lld integers (I32 or "
			           "I64 %s)", as, atm_st_dtype_name(s->dtype), b, x->name,
			           (long long)x->n_elems, a);
		for (int64_t i = 0; i < s->n_elems; i++) {
			int64_t c = index_at(s, i);
			if (c < 0 || c > INT32_MAX || (limit > 0 && c >= limit))
				return bad(f, "tensor '%s': id %lld at element %lld is outside 0 to %lld (what "
				           "'%s' indexes has %lld rows or classes)", as, (long long)c,
				           (long long)i, (long long)limit - 1, x->name, (long long)limit);
		}
		return ATM_OK;
	}
	if (x->kind == ATM_KIND_INPUT && atm_tensor_is_labels(g, t) && class_indices(s, x)) {
		int64_t classes = x->dims[x->ndim - 1];
		for (int64_t i = 0; i < s->n_elems; i++) {
			int64_t c = index_at(s, i);
			if (c < 0 || c >= classes)
				return bad(f, "tensor '%s': class index %lld at element %lld is outside 0 to "
				           "%lld ('%s' has %lld classes)", as, (long long)c, (long long)i,
				           (long long)classes - 1, x->name, (long long)classes);
		}
		return ATM_OK;
	}
	bool same = exact_float(s) && s->ndim == x->ndim;
	for (int i = 0; same && i < x->ndim; i++)
		same = s->dims[i] == x->dims[i];
	/* torch.optim's step is a scalar, autotm's one element */
	if (same || (exact_float(s) && s->ndim == 0 && x->n_elems == 1))
		return ATM_OK;
	atm_format_dims(x->ndim, x->dims, a, sizeof a);
	atm_format_dims(s->ndim, s->dims, b, sizeof b);
	if (x->kind == ATM_KIND_INPUT && atm_tensor_is_labels(g, t))
		return bad(f, "tensor '%s' is %s %s; labels '%s' must be F32 %s (one-hot rows) or "
		           "integer class indices, %lld of them", as, atm_st_dtype_name(s->dtype), b,
		           x->name, a, (long long)(x->n_elems / (x->dims[x->ndim - 1] ? x->dims[x->ndim - 1] : 1)));
	return bad(f, "tensor '%s' is %s %s; the graph's '%s' is F32 %s (BF16 and F16 are read "
	           "too, widened exactly; F64 would be rounded)", as, atm_st_dtype_name(s->dtype), b,
	           x->name, a);
}

/* names_of -- the first few names of g's tensors of kind, for a message */
static const char *names_of(const atm_graph *g, atm_tensor_kind kind, char *buf, size_t len)
{
	size_t k = 0;
	int shown = 0;
	buf[0] = '\0';
	for (int32_t t = 0; t < atm_graph_n_tensors(g) && k < len; t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (x->kind != kind)
			continue;
		if (shown == 4) {
			snprintf(buf + k, len - k, ", ...");
			break;
		}
		k += (size_t)snprintf(buf + k, len - k, "%s'%s'", shown++ ? ", " : "", x->name);
	}
	return buf;
}

atm_status atm_st_check(const atm_st_file *f, const atm_graph *g, atm_tensor_kind kind)
{
	char names[320];
	int64_t used = 0;
	const char *what = kind == ATM_KIND_PARAM ? "parameter" : "input";
	for (int32_t t = 0; t < atm_graph_n_tensors(g); t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (x->kind != kind)
			continue;
		const char *as;
		const atm_st_tensor *s = source(f, g, t, &as);
		if (!s) {
			const char *al = kind == ATM_KIND_INPUT ? alias(g, t) : NULL;
			return bad(f, "the graph's %s '%s'%s%s%s is missing", what, x->name,
			           al ? " (or '" : "", al ? al : "", al ? "')" : "");
		}
		atm_status rc = check_one(f, g, t, s, as);
		if (rc < 0)
			return rc;
		used++;
	}
	/* with the weights, the optimizer's states: all of them (a run that resumes) or none (a
	 * fresh optimizer, its states zero) */
	int64_t states = 0, given = 0;
	const char *missing = NULL;
	for (int32_t t = 0; kind == ATM_KIND_PARAM && t < atm_graph_n_tensors(g); t++) {
		const atm_tensor *x = atm_graph_tensor(g, t);
		if (x->kind != ATM_KIND_OPTIMIZER_STATE)
			continue;
		const char *as;
		const atm_st_tensor *s = source(f, g, t, &as);
		states++;
		if (!s) {
			missing = missing ? missing : x->name;
			continue;
		}
		atm_status rc = check_one(f, g, t, s, as);
		if (rc < 0 || (rc = check_state(f, x, s, as)) < 0)
			return rc;
		given++;
	}
	if (given && given < states)
		return bad(f, "it holds %lld of the graph's %lld optimizer states ('%s' is missing): give "
		           "all of them, to resume a run, or none, to start the optimizer afresh",
		           (long long)given, (long long)states, missing);
	used += given;
	if (used == f->n)
		return ATM_OK;
	/* a tensor the graph does not take: named, with what it takes */
	for (int64_t i = 0; i < f->n; i++) {
		bool taken = false;
		for (int32_t t = 0; !taken && t < atm_graph_n_tensors(g); t++) {
			const char *as;
			atm_tensor_kind k = atm_graph_tensor(g, t)->kind;
			taken = (k == kind || (kind == ATM_KIND_PARAM && k == ATM_KIND_OPTIMIZER_STATE)) &&
			        source(f, g, t, &as) == &f->t[i];
		}
		if (!taken)
			return bad(f, "tensor '%s' is not a%s %s of graph '%s' (it has %lld %ss: %s)",
			           f->t[i].name, kind == ATM_KIND_INPUT ? "n" : "", what, atm_graph_name(g),
			           (long long)used, what, used ? names_of(g, kind, names, sizeof names) : "none");
	}
	return bad(f, "a graph tensor's name is another input's alias ('input' or 'labels'): give "
	           "the inputs by their own names");
}

bool atm_st_fill(const atm_st_file *f, const atm_graph *g, int32_t t, float *data)
{
	const atm_tensor *x = atm_graph_tensor(g, t);
	const char *as;
	const atm_st_tensor *s = f ? source(f, g, t, &as) : NULL;
	if (!s)
		return false;
	if (x->dtype == ATM_I32) { /* integers atm_st_check took */
		int32_t *ids = (int32_t *)data;
		for (int64_t i = 0; i < x->n_elems; i++)
			ids[i] = (int32_t)index_at(s, i);
		return true;
	}
	if (s->dtype == ATM_ST_F32) {
		memcpy(data, s->data, (size_t)x->bytes);
		return true;
	}
	if (exact_float(s) && s->n_elems == x->n_elems) { /* BF16 or F16, widened */
		for (int64_t i = 0; i < x->n_elems; i++)
			data[i] = float_at(s, i);
		return true;
	}
	/* class indices made one-hot rows (atm_st_check took them) */
	int64_t classes = x->dims[x->ndim - 1];
	memset(data, 0, (size_t)x->bytes);
	for (int64_t i = 0; i < s->n_elems; i++)
		data[i * classes + index_at(s, i)] = 1.0f;
	return true;
}
