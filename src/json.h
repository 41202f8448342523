/* json.h - a small streaming JSON writer: every -j document goes through it. */
#ifndef HEAPSNAP_JSON_H
#define HEAPSNAP_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAXDEPTH 32

/*
 * Values are written as they come; the writer adds commas and colons and
 * checks nesting.  Strings are escaped per RFC 8259 ('"', '\\', control
 * characters) and invalid UTF-8 bytes become U+FFFD, so any C string
 * (function names, paths) yields a valid document.  Misuse (a value where a
 * key is due, unbalanced ends, nesting deeper than JSON_MAXDEPTH) is
 * recorded and reported by json_end(), never aborts.
 */
struct json {
	FILE *f;
	int depth;
	bool failed;                       /* misuse seen */
	bool need_comma[JSON_MAXDEPTH + 1];
	char kind[JSON_MAXDEPTH + 1];      /* '{' or '[' per level, 0 at top */
	bool key_pending;                  /* a key was written, its value is due */
	bool done;                         /* the top-level value is complete */
};

/* Starts a document on f. */
void json_begin(struct json *j, FILE *f);
/* Finishes the document with a newline.  Returns 0 when the document is
 * complete and well formed and f had no write error, else -EINVAL (misuse)
 * or -EIO. */
int json_end(struct json *j);

void json_obj_open(struct json *j);
void json_obj_close(struct json *j);
void json_arr_open(struct json *j);
void json_arr_close(struct json *j);

/* The key of the next value inside an object. */
void json_key(struct json *j, const char *key);

/* Values.  json_str(NULL) writes null; json_double writes null for NaN and
 * infinities and at most `decimals` digits after the point (trailing zeros
 * trimmed). */
void json_str(struct json *j, const char *s);
void json_str_n(struct json *j, const char *s, size_t len);
void json_int(struct json *j, int64_t v);
void json_uint(struct json *j, uint64_t v);
void json_double(struct json *j, double v, int decimals);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);

/* Key plus value in one call, for the common object members. */
void json_kv_str(struct json *j, const char *key, const char *s);
void json_kv_int(struct json *j, const char *key, int64_t v);
void json_kv_uint(struct json *j, const char *key, uint64_t v);
void json_kv_double(struct json *j, const char *key, double v, int decimals);
void json_kv_bool(struct json *j, const char *key, bool v);

/* Writes s as a quoted, escaped JSON string to f (no structure checks). */
void json_write_string(FILE *f, const char *s, size_t len);

#endif
