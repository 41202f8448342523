/* json.c - streaming JSON writer with RFC 8259 string escaping. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json.h"

void json_begin(struct json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
}

/* Called before every value and every key: places the separator and checks
 * that a value is allowed here. */
static bool before(struct json *j, bool is_key)
{
	if (j->failed)
		return false;
	if (j->done) {
		j->failed = true;
		return false;
	}
	char k = j->kind[j->depth];
	if (k == '{') {
		if (is_key == j->key_pending) {
			/* a key after a key, or a value without its key */
			j->failed = true;
			return false;
		}
		if (!is_key) {
			j->key_pending = false;
			return true;
		}
	} else if (is_key) {
		j->failed = true;
		return false;
	}
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
	return true;
}

/* Called after a complete value (scalar or closed container). */
static void after(struct json *j)
{
	if (j->depth == 0)
		j->done = true;
}

static void open_container(struct json *j, char kind)
{
	if (!before(j, false))
		return;
	if (j->depth >= JSON_MAXDEPTH) {
		j->failed = true;
		return;
	}
	fputc(kind, j->f);
	j->depth++;
	j->kind[j->depth] = kind;
	j->need_comma[j->depth] = false;
}

static void close_container(struct json *j, char kind)
{
	if (j->failed)
		return;
	if (j->depth == 0 || j->kind[j->depth] != kind || j->key_pending) {
		j->failed = true;
		return;
	}
	fputc(kind == '{' ? '}' : ']', j->f);
	j->depth--;
	after(j);
}

void json_obj_open(struct json *j) { open_container(j, '{'); }
void json_obj_close(struct json *j) { close_container(j, '{'); }
void json_arr_open(struct json *j) { open_container(j, '['); }
void json_arr_close(struct json *j) { close_container(j, '['); }

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid.
 * Rejects overlong forms, surrogates and code points above U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

void json_write_string(FILE *f, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	fputc('"', f);
	while (i < len) {
		unsigned c = s[i];
		switch (c) {
		case '"': fputs("\\\"", f); i++; continue;
		case '\\': fputs("\\\\", f); i++; continue;
		case '\n': fputs("\\n", f); i++; continue;
		case '\r': fputs("\\r", f); i++; continue;
		case '\t': fputs("\\t", f); i++; continue;
		case '\b': fputs("\\b", f); i++; continue;
		case '\f': fputs("\\f", f); i++; continue;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
			continue;
		}
		size_t n = utf8_len(s + i, len - i);
		if (n == 0) {
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		fwrite(s + i, 1, n, f);
		i += n;
	}
	fputc('"', f);
}

void json_key(struct json *j, const char *key)
{
	if (!before(j, true))
		return;
	json_write_string(j->f, key, strlen(key));
	fputc(':', j->f);
	j->key_pending = true;
}

void json_str_n(struct json *j, const char *s, size_t len)
{
	if (!before(j, false))
		return;
	json_write_string(j->f, s, len);
	after(j);
}

void json_str(struct json *j, const char *s)
{
	if (!s) {
		json_null(j);
		return;
	}
	json_str_n(j, s, strlen(s));
}

void json_int(struct json *j, int64_t v)
{
	if (!before(j, false))
		return;
	fprintf(j->f, "%" PRId64, v);
	after(j);
}

void json_uint(struct json *j, uint64_t v)
{
	if (!before(j, false))
		return;
	fprintf(j->f, "%" PRIu64, v);
	after(j);
}

void json_double(struct json *j, double v, int decimals)
{
	char buf[64];

	if (!isfinite(v)) {
		json_null(j);
		return;
	}
	if (!before(j, false))
		return;
	if (decimals < 0)
		decimals = 0;
	if (decimals > 17)
		decimals = 17;
	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	if (strchr(buf, '.')) {
		char *e = buf + strlen(buf) - 1;
		while (*e == '0')
			*e-- = 0;
		if (*e == '.')
			*e = 0;
	}
	if (!strcmp(buf, "-0"))
		strcpy(buf, "0");
	fputs(buf, j->f);
	after(j);
}

void json_bool(struct json *j, bool v)
{
	if (!before(j, false))
		return;
	fputs(v ? "true" : "false", j->f);
	after(j);
}

void json_null(struct json *j)
{
	if (!before(j, false))
		return;
	fputs("null", j->f);
	after(j);
}

void json_kv_str(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_str(j, s);
}

void json_kv_int(struct json *j, const char *key, int64_t v)
{
	json_key(j, key);
	json_int(j, v);
}

void json_kv_uint(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	json_uint(j, v);
}

void json_kv_double(struct json *j, const char *key, double v, int decimals)
{
	json_key(j, key);
	json_double(j, v, decimals);
}

void json_kv_bool(struct json *j, const char *key, bool v)
{
	json_key(j, key);
	json_bool(j, v);
}

int json_end(struct json *j)
{
	if (!j->failed && (!j->done || j->depth != 0))
		j->failed = true;
	if (j->failed)
		return -EINVAL;
	fputc('\n', j->f);
	if (fflush(j->f) != 0 || ferror(j->f))
		return -EIO;
	return 0;
}
