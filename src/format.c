/* format.c - choosing a profile format (name, file suffix, content) and reading/writing whole files. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"

/* Refuse to slurp anything bigger: no heap profile comes near it, and the
 * readers' own caps (pprof: 1 GiB decompressed) would reject it anyway. */
#define MAX_FILE_SIZE ((size_t)1 << 30)

static const char *const names[FMT_NFORMATS] = {
	[FMT_PPROF] = "pprof",
	[FMT_JEPROF] = "jeprof",
	[FMT_GPERF] = "gperf",
	[FMT_COLLAPSED] = "collapsed",
	[FMT_SPEEDSCOPE] = "speedscope",
	[FMT_SVG] = "svg",
};

const char *fmt_name(enum fmt f)
{
	return (f >= 0 && f < FMT_NFORMATS) ? names[f] : "unknown";
}

enum fmt fmt_parse(const char *name)
{
	for (int f = 0; name && f < FMT_NFORMATS; f++)
		if (strcasecmp(name, names[f]) == 0)
			return f;
	return FMT_UNKNOWN;
}

static const struct {
	const char *suffix;
	enum fmt f;
} suffixes[] = {
	/* Longest first where one suffix ends another. */
	{ ".speedscope.json", FMT_SPEEDSCOPE },
	{ ".pb.gz", FMT_PPROF },
	{ ".pb", FMT_PPROF },
	{ ".pprof", FMT_PPROF },
	{ ".heap", FMT_JEPROF },
	{ ".jeprof", FMT_JEPROF },
	{ ".hprof", FMT_GPERF },
	{ ".gperf", FMT_GPERF },
	{ ".folded", FMT_COLLAPSED },
	{ ".collapsed", FMT_COLLAPSED },
	{ ".txt", FMT_COLLAPSED },
	{ ".json", FMT_SPEEDSCOPE },
	{ ".svg", FMT_SVG },
};

enum fmt fmt_from_filename(const char *path)
{
	size_t n = path ? strlen(path) : 0;

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t sl = strlen(suffixes[i].suffix);
		if (n > sl && strcasecmp(path + n - sl, suffixes[i].suffix) == 0)
			return suffixes[i].f;
	}
	return FMT_UNKNOWN;
}

/* Reads a protobuf varint at *pos; false when it runs off the end or is too long. */
static bool sniff_varint(const unsigned char *b, size_t len, size_t *pos, uint64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64 && *pos < len; shift += 7) {
		unsigned char c = b[(*pos)++];
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return true;
		}
	}
	return false;
}

enum fmt fmt_sniff(const void *buf, size_t len)
{
	const unsigned char *b = buf;
	size_t i = 0;

	if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b)
		return FMT_PPROF;
	while (i < len && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'))
		i++;
	if (len - i >= 8 && memcmp(b + i, "heap_v2/", 8) == 0)
		return FMT_JEPROF;
	if (len - i >= 13 && memcmp(b + i, "heap profile:", 13) == 0)
		return FMT_GPERF;

	/* Raw protobuf: writers put sample_type (field 1) first, samples (2)
	 * next; then the following fields must parse as Profile fields with
	 * their wire types and lengths that fit.  Text fails that at once. */
	size_t pos = 0;
	for (int nfields = 0; pos < len && nfields < 16; nfields++) {
		uint64_t tag, v;
		if (!sniff_varint(b, len, &pos, &tag))
			return FMT_UNKNOWN;
		uint64_t field = tag >> 3, wt = tag & 7;
		if (nfields == 0 && field != 1 && field != 2)
			return FMT_UNKNOWN;
		if (field == 0 || field > 14)
			return FMT_UNKNOWN;
		bool varint_ok = field >= 7 && field != 11;   /* int64 fields, comment unpacked */
		bool len_ok = field <= 6 || field == 11 || field == 13;
		if (!sniff_varint(b, len, &pos, &v))
			return FMT_UNKNOWN;
		if (wt == 0 && varint_ok)
			continue;
		if (wt != 2 || !len_ok || v > len - pos)
			return FMT_UNKNOWN;
		pos += v;
	}
	return len ? FMT_PPROF : FMT_UNKNOWN;
}

bool fmt_can_read(enum fmt f)
{
	return f == FMT_PPROF || f == FMT_JEPROF || f == FMT_GPERF;
}

int fmt_read_buf(enum fmt f, const void *buf, size_t len, struct profile **out,
		 char err[FMT_ERRLEN])
{
	int rc;

	*out = NULL;
	err[0] = '\0';
	if (len == 0) {
		snprintf(err, FMT_ERRLEN, "empty file");
		return -EINVAL;
	}
	if (f == FMT_UNKNOWN)
		f = fmt_sniff(buf, len);
	switch (f) {
	case FMT_PPROF:
		rc = pprof_read(buf, len, out, err);
		break;
	case FMT_JEPROF:
		rc = jeprof_read(buf, len, out, err);
		break;
	case FMT_GPERF:
		rc = gperf_read(buf, len, out, err);
		break;
	case FMT_UNKNOWN:
		snprintf(err, FMT_ERRLEN,
			 "unrecognised format (not pprof, heap_v2 or gperftools heap profile)");
		return -EINVAL;
	default:
		snprintf(err, FMT_ERRLEN, "%s is a write-only format", fmt_name(f));
		return -EINVAL;
	}
	if (rc == 0 && !*out)
		rc = -EINVAL;
	if (rc == 0 && prof_validate(*out) != 0)
		rc = -EINVAL;
	if (rc < 0) {
		prof_free(*out);
		*out = NULL;
		if (!err[0])
			snprintf(err, FMT_ERRLEN, "%s reader failed: %s", fmt_name(f), strerror(-rc));
		return rc;
	}
	return 0;
}

/* Reads all of fd into a malloc'd buffer. */
static int slurp(int fd, char **bufp, size_t *lenp, char err[FMT_ERRLEN])
{
	struct stat st;
	size_t cap = 65536, len = 0;
	char *buf;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		if ((uint64_t)st.st_size > MAX_FILE_SIZE) {
			snprintf(err, FMT_ERRLEN, "file larger than 1 GiB");
			return -EFBIG;
		}
		cap = st.st_size + 1;
	}
	buf = malloc(cap);
	if (!buf)
		goto nomem;
	for (;;) {
		if (len == cap) {
			if (cap >= MAX_FILE_SIZE) {
				free(buf);
				snprintf(err, FMT_ERRLEN, "file larger than 1 GiB");
				return -EFBIG;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				goto nomem;
			buf = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			snprintf(err, FMT_ERRLEN, "%s", strerror(e));
			return -e;
		}
		if (n == 0)
			break;
		len += n;
	}
	*bufp = buf;
	*lenp = len;
	return 0;
nomem:
	free(buf);
	snprintf(err, FMT_ERRLEN, "%s", strerror(ENOMEM));
	return -ENOMEM;
}

int fmt_read_file(const char *path, struct profile **out, char err[FMT_ERRLEN])
{
	char *buf = NULL;
	size_t len = 0;
	int fd, rc;

	*out = NULL;
	err[0] = '\0';
	/* "-" is standard input, as for most tools. */
	if (strcmp(path, "-") == 0) {
		fd = STDIN_FILENO;
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
			snprintf(err, FMT_ERRLEN, "%s", strerror(-rc));
			return rc;
		}
	}
	rc = slurp(fd, &buf, &len, err);
	if (fd != STDIN_FILENO)
		close(fd);
	if (rc)
		return rc;
	rc = fmt_read_buf(FMT_UNKNOWN, buf, len, out, err);
	free(buf);
	return rc;
}

int fmt_write(const struct profile *p, FILE *out, enum fmt f, enum prof_type type,
	      char err[FMT_ERRLEN])
{
	int rc;

	err[0] = '\0';
	if ((unsigned)type >= PT_NTYPES) {
		snprintf(err, FMT_ERRLEN, "invalid sample type");
		return -EINVAL;
	}
	if ((type == PT_ALLOC_OBJECTS || type == PT_ALLOC_SPACE) && !p->has_alloc &&
	    (f == FMT_COLLAPSED || f == FMT_SPEEDSCOPE || f == FMT_SVG)) {
		snprintf(err, FMT_ERRLEN, "the profile has no %s values", prof_type_name(type));
		return -EINVAL;
	}
	switch (f) {
	case FMT_UNKNOWN:
	case FMT_PPROF:
		rc = pprof_write(p, out, err);
		break;
	case FMT_JEPROF:
		rc = jeprof_write(p, out, err);
		break;
	case FMT_GPERF:
		rc = gperf_write(p, out, err);
		break;
	case FMT_COLLAPSED:
		rc = collapsed_write(p, out, type, err);
		break;
	case FMT_SPEEDSCOPE:
		rc = speedscope_write(p, out, type, err);
		break;
	case FMT_SVG:
		rc = svg_write(p, out, type, err);
		break;
	default:
		snprintf(err, FMT_ERRLEN, "unknown format");
		return -EINVAL;
	}
	if (rc == 0 && (fflush(out) != 0 || ferror(out))) {
		rc = errno ? -errno : -EIO;
		snprintf(err, FMT_ERRLEN, "%s", strerror(-rc));
	}
	if (rc < 0 && !err[0])
		snprintf(err, FMT_ERRLEN, "%s", strerror(-rc));
	return rc;
}

int fmt_write_file(const struct profile *p, const char *path, enum fmt f,
		   enum prof_type type, char err[FMT_ERRLEN])
{
	struct stat st;
	char *tmp = NULL, *dcopy = NULL;
	FILE *fp = NULL;
	int fd = -1, rc;

	err[0] = '\0';
	if (f == FMT_UNKNOWN)
		f = fmt_from_filename(path);
	if (f == FMT_UNKNOWN)
		f = FMT_PPROF;

	/* "-", devices, pipes: write in place (renaming over them would be wrong). */
	if (strcmp(path, "-") == 0)
		return fmt_write(p, stdout, f, type, err);
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		fp = fopen(path, "w");
		if (!fp) {
			rc = -errno;
			snprintf(err, FMT_ERRLEN, "%s", strerror(-rc));
			return rc;
		}
		rc = fmt_write(p, fp, f, type, err);
		if (fclose(fp) != 0 && rc == 0) {
			rc = -errno;
			snprintf(err, FMT_ERRLEN, "%s", strerror(-rc));
		}
		return rc;
	}

	/* A temporary file beside the target, so rename(2) is atomic. */
	dcopy = strdup(path);
	if (!dcopy || asprintf(&tmp, "%s/.%s.XXXXXX", dirname(dcopy),
			       strrchr(path, '/') ? strrchr(path, '/') + 1 : path) < 0) {
		tmp = NULL;
		rc = -ENOMEM;
		goto fail;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		rc = -errno;
		free(tmp);
		tmp = NULL;
		goto fail;
	}
	/* mkstemp makes 0600; give the file the mode a plain creat would. */
	mode_t um = umask(0);
	umask(um);
	if (fchmod(fd, 0666 & ~um) != 0) {
		rc = -errno;
		goto fail;
	}
	fp = fdopen(fd, "w");
	if (!fp) {
		rc = -errno;
		goto fail;
	}
	fd = -1;
	rc = fmt_write(p, fp, f, type, err);
	if (rc)
		goto fail;
	if (fsync(fileno(fp)) != 0 && errno != EINVAL) {
		rc = -errno;
		goto fail;
	}
	int crc = fclose(fp);
	fp = NULL;
	if (crc != 0) {
		rc = -errno;
		goto fail;
	}
	if (rename(tmp, path) != 0) {
		rc = -errno;
		goto fail;
	}
	free(tmp);
	free(dcopy);
	return 0;
fail:
	if (fp)
		fclose(fp);
	if (fd >= 0)
		close(fd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	free(dcopy);
	if (!err[0])
		snprintf(err, FMT_ERRLEN, "%s", strerror(-rc));
	return rc;
}
