/* SPDX-License-Identifier: GPL-2.0 */
/* Parsing and checking util-linux style idmapping specs (b|u|g:FROM:TO:RANGE). */
#ifndef IDMAP_SPEC_H
#define IDMAP_SPEC_H

#include <stddef.h>
#include <stdint.h>

/* The kernel's limit for one uid_map or gid_map (UID_GID_MAP_MAX_EXTENTS). */
#define IDMAP_MAX_EXTENTS 340

enum { IDMAP_UID, IDMAP_GID };

struct idmap_extent {
	uint32_t from, to, range;
};

struct idmap {
	struct idmap_extent ext[2][IDMAP_MAX_EXTENTS];
	int nr[2];
};

/*
 * Add SPEC to MAP. Returns 0, or -1 with a reason in ERR; MAP is unchanged
 * on error.
 */
int idmap_add_spec(struct idmap *map, const char *spec, char *err, size_t errlen);

/* The extents of one type in uid_map format ("FROM TO RANGE\n"...); free() it. */
char *idmap_format(const struct idmap *map, int type);

#endif
