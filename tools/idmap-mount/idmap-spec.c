// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idmap-spec.h"

#define ID_LIMIT 4294967295ULL	/* (uid_t)-1 is never a valid id */

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* A decimal number in [0, 2^32-1] ending at @end; no sign, no spaces. */
static int parse_u32(const char **s, char end, uint32_t *out)
{
	unsigned long long v = 0;
	const char *p = *s;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > ID_LIMIT)
			return -1;
	}
	if (*p != end)
		return -1;
	*out = v;
	*s = end ? p + 1 : p;
	return 0;
}

static int overlaps(uint32_t a, uint32_t alen, uint32_t b, uint32_t blen)
{
	return (unsigned long long)a < (unsigned long long)b + blen &&
	       (unsigned long long)b < (unsigned long long)a + alen;
}

static int check_type(const struct idmap *map, int type,
		      const struct idmap_extent *e, char *err, size_t errlen)
{
	const char *name = type == IDMAP_UID ? "uid" : "gid";

	if (map->nr[type] >= IDMAP_MAX_EXTENTS)
		return fail(err, errlen, "more than %d %s extents", IDMAP_MAX_EXTENTS, name);
	for (int i = 0; i < map->nr[type]; i++) {
		const struct idmap_extent *o = &map->ext[type][i];

		if (overlaps(e->from, e->range, o->from, o->range))
			return fail(err, errlen, "%s FROM range overlaps the extent %u:%u:%u",
				    name, o->from, o->to, o->range);
		if (overlaps(e->to, e->range, o->to, o->range))
			return fail(err, errlen, "%s TO range overlaps the extent %u:%u:%u",
				    name, o->from, o->to, o->range);
	}
	return 0;
}

int idmap_add_spec(struct idmap *map, const char *spec, char *err, size_t errlen)
{
	struct idmap_extent e;
	const char *p = spec;
	int uid, gid;

	switch (*p) {
	case 'b': uid = gid = 1; break;
	case 'u': uid = 1; gid = 0; break;
	case 'g': uid = 0; gid = 1; break;
	default:
		return fail(err, errlen, "type must be b, u or g (TYPE:FROM:TO:RANGE)");
	}
	if (p[1] != ':')
		return fail(err, errlen, "expected TYPE:FROM:TO:RANGE");
	p += 2;
	if (parse_u32(&p, ':', &e.from) || parse_u32(&p, ':', &e.to) ||
	    parse_u32(&p, '\0', &e.range))
		return fail(err, errlen,
			    "expected TYPE:FROM:TO:RANGE with decimal numbers below 2^32");
	if (e.range == 0)
		return fail(err, errlen, "RANGE must be at least 1");
	if ((unsigned long long)e.from + e.range > ID_LIMIT ||
	    (unsigned long long)e.to + e.range > ID_LIMIT)
		return fail(err, errlen, "the extent runs past id 4294967294");
	if ((uid && check_type(map, IDMAP_UID, &e, err, errlen)) ||
	    (gid && check_type(map, IDMAP_GID, &e, err, errlen)))
		return -1;
	if (uid)
		map->ext[IDMAP_UID][map->nr[IDMAP_UID]++] = e;
	if (gid)
		map->ext[IDMAP_GID][map->nr[IDMAP_GID]++] = e;
	return 0;
}

char *idmap_format(const struct idmap *map, int type)
{
	size_t size = (size_t)map->nr[type] * 36 + 1, len = 0;
	char *buf = malloc(size);

	if (!buf)
		return NULL;
	buf[0] = '\0';
	for (int i = 0; i < map->nr[type]; i++) {
		const struct idmap_extent *e = &map->ext[type][i];

		len += snprintf(buf + len, size - len, "%u %u %u\n", e->from, e->to, e->range);
	}
	return buf;
}
