// SPDX-License-Identifier: GPL-2.0
/*
 * Idmapped mounts of tmpfs and ramfs, in three configurations:
 *
 *  init    the filesystem is mounted in the initial user namespace; the
 *          test runs as real root.
 *  userns  the filesystem is mounted inside a user namespace U1 (0 ->
 *          100000, 65536 ids) created by an unprivileged user (uid 1000),
 *          whose root makes the idmapped mount, as a rootless container.
 *  nested  as userns, then the test moves into U2, a user namespace
 *          inside U1 (0 -> U1 10000, 10000 ids; 10000 -> U1 30000), and
 *          uses the idmapped mount from there, as a nested container.
 *
 * In every configuration the idmapped mount at $base/mnt maps the ids the
 * filesystem stores, 0..9999 in its own user namespace, onto U1/initial
 * ids 10000..19999. Seen from the test, a stored id X (< 10000) therefore
 * appears as X + shift, with shift 10000 for init and userns and 0 for
 * nested; ids >= 10000 appear as the overflow id. The test never computes
 * a translation from the kernel's answer: stored ids are read back by an
 * observer process that stays in the filesystem's own user namespace and
 * looks through the plain mount at $base/fs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/limits.h>
#include <linux/securebits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/xattr.h>

#include "userns.h"
#include "kselftest_harness.h"

#define OVERFLOW_ID 65534
#define FS_MAP "0 100000 65536\n"		/* U1, the container */
#define MNT_MAP "0 10000 10000\n"		/* the idmapped mount */
#define NESTED_MAP "0 10000 10000\n10000 30000 10000\n"	/* U2 */

enum cfg { CFG_INIT, CFG_USERNS, CFG_NESTED };

/* ---- observer: answers questions from the filesystem's own namespace ---- */

struct obs_req {
	char op;		/* 'S' stat, 'A' ACL ids, 'C' caps rootid */
	char path[PATH_MAX];
};

struct obs_reply {
	int err;
	uint32_t uid, gid, mode, rdev;
};

#define ACL_USER_TAG 0x02
#define ACL_GROUP_TAG 0x08

struct acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};

static void observe(int sock)
{
	struct obs_req req;
	struct obs_reply rep;

	while (read(sock, &req, sizeof(req)) == sizeof(req)) {
		struct stat st;
		char buf[256];
		ssize_t n;

		memset(&rep, 0, sizeof(rep));
		switch (req.op) {
		case 'S':
			if (lstat(req.path, &st))
				rep.err = errno;
			rep.uid = st.st_uid;
			rep.gid = st.st_gid;
			rep.mode = st.st_mode;
			rep.rdev = st.st_rdev;
			break;
		case 'A':
			n = getxattr(req.path, "system.posix_acl_access", buf, sizeof(buf));
			if (n < 4) {
				rep.err = n < 0 ? errno : EINVAL;
				break;
			}
			rep.uid = rep.gid = (uint32_t)-1;
			for (struct acl_entry *e = (void *)(buf + 4);
			     (char *)(e + 1) <= buf + n; e++) {
				if (e->tag == ACL_USER_TAG)
					rep.uid = e->id;
				if (e->tag == ACL_GROUP_TAG)
					rep.gid = e->id;
			}
			break;
		case 'C': {
			struct vfs_ns_cap_data cap;

			n = getxattr(req.path, "security.capability", &cap, sizeof(cap));
			if (n < 0)
				rep.err = errno;
			else if (n == XATTR_CAPS_SZ_3)
				rep.uid = cap.rootid;
			else
				rep.uid = 0;	/* v2: owned by our root */
			rep.mode = n;
			break;
		}
		default:
			rep.err = EINVAL;
		}
		if (write(sock, &rep, sizeof(rep)) != sizeof(rep))
			break;
	}
	_exit(0);
}

static struct obs_reply ask(int sock, char op, const char *path)
{
	struct obs_req req = { .op = op };
	struct obs_reply rep = { .err = EIO };

	snprintf(req.path, sizeof(req.path), "%s", path);
	if (write(sock, &req, sizeof(req)) == sizeof(req) &&
	    read(sock, &rep, sizeof(rep)) == sizeof(rep))
		return rep;
	rep.err = EIO;
	return rep;
}

/* ---- running an operation as another user (no capabilities) ---- */

/* Fork; become @uid/@gid (ids of the caller's namespace); run @fn. */
static int as_user(uid_t uid, gid_t gid, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return errno;
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(gid, gid, gid) ||
		    setresuid(uid, uid, uid))
			_exit(250);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 251;
	return WEXITSTATUS(status);
}

struct op {
	const char *path, *path2;
	mode_t mode;
};

#define OP(name, expr) \
	static int name(void *p) { struct op *o = p; (void)o; return (expr) < 0 ? errno : 0; }

OP(op_creat, ({ int fd = open(o->path, O_CREAT | O_EXCL | O_WRONLY, o->mode); \
		fd >= 0 ? close(fd) : -1; }))
OP(op_mkdir, mkdir(o->path, o->mode))
OP(op_mkfifo, mknod(o->path, S_IFIFO | o->mode, 0))
OP(op_symlink, symlink("target", o->path))
OP(op_unlink, unlink(o->path))
OP(op_rename, rename(o->path, o->path2))
OP(op_rename_whiteout, renameat2(AT_FDCWD, o->path, AT_FDCWD, o->path2, RENAME_WHITEOUT))
OP(op_utimes, utimensat(AT_FDCWD, o->path,
			(struct timespec[2]){ { 1, 0 }, { 1, 0 } }, 0))
OP(op_utimes_now, utimensat(AT_FDCWD, o->path, NULL, 0))
OP(op_read, ({ int fd = open(o->path, O_RDONLY); fd >= 0 ? close(fd) : -1; }))

static int op_tmpfile(void *p)
{
	struct op *o = p;
	char proc[64];
	int fd = open(o->path, O_TMPFILE | O_WRONLY, o->mode);

	if (fd < 0)
		return errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, o->path2, AT_SYMLINK_FOLLOW))
		return errno;
	close(fd);
	return 0;
}

/* ---- the fixture ---- */

FIXTURE(idmap) {
	char base[64], fs[96], mnt[96], mq[96];
	int obs;		/* socket to the observer */
	pid_t obs_pid;
	int init_userns;	/* fd of the initial user namespace */
	int fs_userns;		/* fd of the filesystem's user namespace */
	uid_t shift;		/* stored id X appears as X + shift */
	uid_t unmapped;		/* an id of ours the mount cannot map */
};

FIXTURE_VARIANT(idmap) {
	const char *fstype;
	enum cfg cfg;
};

FIXTURE_VARIANT_ADD(idmap, tmpfs_init) { .fstype = "tmpfs", .cfg = CFG_INIT };
FIXTURE_VARIANT_ADD(idmap, tmpfs_userns) { .fstype = "tmpfs", .cfg = CFG_USERNS };
FIXTURE_VARIANT_ADD(idmap, tmpfs_nested) { .fstype = "tmpfs", .cfg = CFG_NESTED };
FIXTURE_VARIANT_ADD(idmap, ramfs_init) { .fstype = "ramfs", .cfg = CFG_INIT };
FIXTURE_VARIANT_ADD(idmap, ramfs_userns) { .fstype = "ramfs", .cfg = CFG_USERNS };
FIXTURE_VARIANT_ADD(idmap, ramfs_nested) { .fstype = "ramfs", .cfg = CFG_NESTED };

static void path_in(char *buf, size_t len, const char *dir, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

FIXTURE_SETUP(idmap)
{
	static const unsigned int owners[] = { 0, 1000, 9999, 20000 };
	int sv[2], mntns;
	char p[PATH_MAX];

	snprintf(self->base, sizeof(self->base), "/tmp/idmap.XXXXXX");
	ASSERT_NE(mkdtemp(self->base), NULL);
	ASSERT_EQ(chmod(self->base, 0755), 0);
	path_in(self->fs, sizeof(self->fs), self->base, "fs");
	path_in(self->mnt, sizeof(self->mnt), self->base, "mnt");
	path_in(self->mq, sizeof(self->mq), self->base, "mq");
	ASSERT_EQ(mkdir(self->fs, 0755), 0);
	ASSERT_EQ(mkdir(self->mnt, 0755), 0);
	ASSERT_EQ(mkdir(self->mq, 0755), 0);
	self->init_userns = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(self->init_userns, 0);

	if (variant->cfg == CFG_INIT) {
		ASSERT_EQ(unshare(CLONE_NEWNS | CLONE_NEWIPC), 0);
	} else {
		ASSERT_EQ(become_root_in(FS_MAP, CLONE_NEWNS | CLONE_NEWIPC, 1000), 0);
	}
	ASSERT_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	ASSERT_EQ(mount("test", self->fs, variant->fstype, 0, "mode=0755"), 0);
	ASSERT_EQ(mount("mq", self->mq, "mqueue", 0, NULL), 0);
	self->fs_userns = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(self->fs_userns, 0);

	/* Stored owners, some mappable through the mount, one not. */
	for (unsigned int i = 0; i < sizeof(owners) / sizeof(owners[0]); i++) {
		snprintf(p, sizeof(p), "%s/own%u", self->fs, owners[i]);
		ASSERT_EQ(mknod(p, S_IFREG | 0644, 0), 0);
		ASSERT_EQ(chown(p, owners[i], owners[i]), 0);
	}
	path_in(p, sizeof(p), self->fs, "d");
	ASSERT_EQ(mkdir(p, 0777), 0);
	ASSERT_EQ(chmod(p, 0777), 0);
	path_in(p, sizeof(p), self->fs, "sticky");
	ASSERT_EQ(mkdir(p, 0777), 0);
	ASSERT_EQ(chmod(p, 01777), 0);
	path_in(p, sizeof(p), self->fs, "sgid");
	ASSERT_EQ(mkdir(p, 0777), 0);
	ASSERT_EQ(chown(p, 0, 600), 0);
	ASSERT_EQ(chmod(p, 02777), 0);

	/* The idmapped mount, made by the filesystem's owner. */
	mntns = userns_fd(MNT_MAP);
	ASSERT_GE(mntns, 0);
	ASSERT_EQ(idmap_mount(self->fs, self->mnt, mntns, 0), 0);
	close(mntns);

	ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	self->obs_pid = fork();
	ASSERT_GE(self->obs_pid, 0);
	if (self->obs_pid == 0) {
		close(sv[0]);
		observe(sv[1]);
	}
	close(sv[1]);
	self->obs = sv[0];

	self->shift = 10000;
	self->unmapped = 30000;
	if (variant->cfg == CFG_NESTED) {
		ASSERT_EQ(become_root_in(NESTED_MAP, 0, -1), 0);
		self->shift = 0;
		self->unmapped = 15000;
	}
}

FIXTURE_TEARDOWN(idmap)
{
	close(self->obs);
	waitpid(self->obs_pid, NULL, 0);
}

/* The id the test sees for stored id @x through the idmapped mount. */
static uid_t view(FIXTURE_DATA(idmap) *self, uid_t x)
{
	return x < 10000 ? x + self->shift : OVERFLOW_ID;
}

static struct obs_reply stored(FIXTURE_DATA(idmap) *self, const char *name)
{
	char p[PATH_MAX];

	path_in(p, sizeof(p), self->fs, name);
	return ask(self->obs, 'S', p);
}

#define IN_MNT(buf, name) path_in(buf, sizeof(buf), self->mnt, name)
#define IN_FS(buf, name) path_in(buf, sizeof(buf), self->fs, name)

/* stat through the mount: both idmappings applied; unmapped -> overflow */
TEST_F(idmap, stat_translates_through_both_idmappings)
{
	static const unsigned int owners[] = { 0, 1000, 9999, 20000 };
	char p[PATH_MAX], name[32];
	struct stat st;

	for (unsigned int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "own%u", owners[i]);
		ASSERT_EQ(stored(self, name).uid, owners[i]);
		IN_MNT(p, name);
		ASSERT_EQ(stat(p, &st), 0);
		EXPECT_EQ(st.st_uid, view(self, owners[i]));
		EXPECT_EQ(st.st_gid, view(self, owners[i]));
	}
	ASSERT_EQ(stat(self->mnt, &st), 0);
	EXPECT_EQ(st.st_uid, view(self, 0));
}

/* Every inode-creating path stores the caller's fsuid/fsgid mapped back. */
TEST_F(idmap, create_paths_store_mapped_owner)
{
	static const struct { const char *name; int (*fn)(void *); } ops[] = {
		{ "creat", op_creat }, { "mkdir", op_mkdir }, { "fifo", op_mkfifo },
		{ "symlink", op_symlink }, { "tmpfile", op_tmpfile },
	};
	uid_t me = view(self, 500);
	char p[PATH_MAX], p2[PATH_MAX], name[32];
	struct stat st;

	for (unsigned int i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct op o = { .path = p, .path2 = p2, .mode = 0644 };

		snprintf(name, sizeof(name), "d/%s", ops[i].name);
		if (ops[i].fn == op_tmpfile) {
			IN_MNT(p, "d");
			IN_MNT(p2, name);
		} else {
			IN_MNT(p, name);
		}
		ASSERT_EQ(as_user(me, me, ops[i].fn, &o), 0) TH_LOG("%s", ops[i].name);
		EXPECT_EQ(stored(self, name).uid, 500) TH_LOG("%s", ops[i].name);
		EXPECT_EQ(stored(self, name).gid, 500) TH_LOG("%s", ops[i].name);
		IN_MNT(p, name);
		ASSERT_EQ(lstat(p, &st), 0);
		EXPECT_EQ(st.st_uid, me);
		EXPECT_EQ(st.st_gid, me);
	}
}

/* A caller whose fsuid the mount cannot map gets EOVERFLOW; nothing made. */
TEST_F(idmap, unmapped_caller_cannot_create)
{
	static int (*const fns[])(void *) = { op_creat, op_mkdir, op_mkfifo,
					      op_symlink, op_tmpfile };
	char p[PATH_MAX], p2[PATH_MAX];
	struct op o = { .path = p, .path2 = p2, .mode = 0644 };

	for (unsigned int i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		IN_MNT(p, fns[i] == op_tmpfile ? "d" : "d/x");
		IN_MNT(p2, "d/x");
		EXPECT_EQ(as_user(self->unmapped, self->unmapped, fns[i], &o), EOVERFLOW)
			TH_LOG("operation %u", i);
		EXPECT_EQ(stored(self, "d/x").err, ENOENT);
	}
}

/*
 * RENAME_WHITEOUT leaves a whiteout (a 0:0 character device) at the old
 * name, owned by the mapped caller. No capability is involved:
 * vfs_mknod() exempts whiteouts from CAP_MKNOD, vfs_rename() checks
 * none, and shmem_whiteout() makes the whiteout with shmem_mknod(). So
 * an unprivileged user renames here, in every configuration, with and
 * without an existing target; an unmapped caller is refused (target
 * absent: may_create()'s EOVERFLOW) and nothing changes.
 */
/*
 * Is PATCH (NNNN of patches/series) one the kernel lacks? make
 * bisect-check runs this on prefixes of the series and names the patches
 * after the prefix in T_LACKS; make check never sets it.
 */
static bool lacks_patch(const char *patch)
{
	const char *l = getenv("T_LACKS");
	size_t n = strlen(patch);

	for (; l && *l; l += strcspn(l, ","), l += *l == ',')
		if (strncmp(l, patch, n) == 0 && (l[n] == ',' || !l[n]))
			return true;
	return false;
}

TEST_F(idmap, rename_whiteout_owner)
{
	uid_t me = view(self, 700), mg = view(self, 701);
	char a[PATH_MAX], b[PATH_MAX], from[32], to[32];
	struct op o = { .path = a, .path2 = b, .mode = 0644 };
	struct obs_reply r;
	struct stat st;

	if (strcmp(variant->fstype, "ramfs") == 0) {
		/* simple_rename() refuses RENAME_WHITEOUT: check that it does. */
		IN_MNT(a, "d/w");
		IN_MNT(b, "d/w.new");
		ASSERT_EQ(as_user(me, mg, op_creat, &o), 0);
		ASSERT_EQ(as_user(me, mg, op_rename_whiteout, &o), EINVAL);
		ASSERT_TRUE(S_ISREG(stored(self, "d/w").mode));
		ASSERT_EQ(stored(self, "d/w.new").err, ENOENT);
		SKIP(return, "ramfs does not implement RENAME_WHITEOUT (simple_rename() returns EINVAL)");
	}

	for (int target = 0; target < 2; target++) {
		snprintf(from, sizeof(from), "d/w%d", target);
		snprintf(to, sizeof(to), "d/w%d.new", target);
		IN_MNT(a, from);
		IN_MNT(b, to);
		ASSERT_EQ(as_user(me, mg, op_creat, &o), 0);
		if (target) {
			IN_MNT(a, to);
			ASSERT_EQ(as_user(me, mg, op_creat, &o), 0);
			IN_MNT(a, from);
		}
		ASSERT_EQ(as_user(me, mg, op_rename_whiteout, &o), 0)
			TH_LOG("%s target", target ? "existing" : "no");

		/* What the filesystem stored, seen from its own namespace. */
		r = stored(self, from);
		ASSERT_EQ(r.err, 0);
		EXPECT_TRUE(S_ISCHR(r.mode)) TH_LOG("mode %o", r.mode);
		EXPECT_EQ(r.rdev, 0);
		EXPECT_EQ(r.uid, 700);
		EXPECT_EQ(r.gid, 701);
		r = stored(self, to);
		ASSERT_EQ(r.err, 0);
		EXPECT_TRUE(S_ISREG(r.mode));
		EXPECT_EQ(r.uid, 700);

		/* And through the idmapped mount. */
		ASSERT_EQ(lstat(a, &st), 0);
		EXPECT_TRUE(S_ISCHR(st.st_mode));
		EXPECT_EQ(st.st_rdev, 0);
		EXPECT_EQ(st.st_uid, me);
		EXPECT_EQ(st.st_gid, mg);
	}

	/* An unmapped caller, target absent: EOVERFLOW, nothing renamed. */
	IN_MNT(a, "d/w0.new");
	IN_MNT(b, "d/w2");
	EXPECT_EQ(as_user(self->unmapped, self->unmapped, op_rename_whiteout, &o),
		  EOVERFLOW);
	EXPECT_TRUE(S_ISREG(stored(self, "d/w0.new").mode));
	EXPECT_EQ(stored(self, "d/w2").err, ENOENT);

	/* What follows is patch 0023's refusal. On a prefix of the series
	 * without it (make bisect-check) report a skip, unless something
	 * above failed (SKIP() would hide that).
	 */
	if (lacks_patch("0023")) {
		if (_metadata->passed)
			SKIP(return, "needs patch 0023, which this kernel lacks");
		return;
	}

	/* Target present: only the files go through may_delete(), but the
	 * whiteout left at d/w0.new would be created by the unmapped caller,
	 * with ids the filesystem cannot store (and nobody could remove it
	 * again): EOVERFLOW as well, both files as they were.
	 */
	IN_MNT(a, "d/w0.new");
	IN_MNT(b, "d/w1.new");
	EXPECT_EQ(as_user(self->unmapped, self->unmapped, op_rename_whiteout, &o),
		  EOVERFLOW);
	r = stored(self, "d/w0.new");
	EXPECT_TRUE(S_ISREG(r.mode)) TH_LOG("mode %o", r.mode);
	EXPECT_EQ(r.uid, 700);
	r = stored(self, "d/w1.new");
	EXPECT_TRUE(S_ISREG(r.mode)) TH_LOG("mode %o", r.mode);
	EXPECT_EQ(r.uid, 700);
}

/* chown through the mount writes mapped ids; unmappable ones fail. */
TEST_F(idmap, chown_writes_mapped_ids)
{
	char p[PATH_MAX];

	IN_MNT(p, "own1000");
	ASSERT_EQ(chown(p, view(self, 700), view(self, 701)), 0);
	EXPECT_EQ(stored(self, "own1000").uid, 700);
	EXPECT_EQ(stored(self, "own1000").gid, 701);

	EXPECT_NE(chown(p, self->unmapped, -1), 0);
	EXPECT_NE(chown(p, -1, self->unmapped), 0);
	EXPECT_EQ(stored(self, "own1000").uid, 700);
	EXPECT_EQ(stored(self, "own1000").gid, 701);
}

static void put_acl(char *buf, size_t *len, uint32_t uid, uint32_t gid)
{
	struct acl_entry e[] = {
		{ 0x01, 6, (uint32_t)-1 },	/* USER_OBJ rw */
		{ ACL_USER_TAG, 4, uid },	/* USER r */
		{ 0x04, 0, (uint32_t)-1 },	/* GROUP_OBJ */
		{ ACL_GROUP_TAG, 4, gid },	/* GROUP r */
		{ 0x10, 4, (uint32_t)-1 },	/* MASK r */
		{ 0x20, 0, (uint32_t)-1 },	/* OTHER */
	};
	uint32_t version = 2;

	memcpy(buf, &version, 4);
	memcpy(buf + 4, e, sizeof(e));
	*len = 4 + sizeof(e);
}

/* ACL_USER/ACL_GROUP are translated both ways and used for access. */
TEST_F(idmap, posix_acls_translated)
{
	char p[PATH_MAX], buf[256];
	struct op o = { .path = p };
	struct obs_reply r;
	size_t len;
	ssize_t n;

	if (strcmp(variant->fstype, "ramfs") == 0)
		SKIP(return, "ramfs has no POSIX ACL support");
	IN_MNT(p, "own0");
	ASSERT_EQ(chmod(p, 0600), 0);
	EXPECT_EQ(as_user(view(self, 800), view(self, 800), op_read, &o), EACCES);

	put_acl(buf, &len, view(self, 800), view(self, 801));
	ASSERT_EQ(setxattr(p, "system.posix_acl_access", buf, len, 0), 0);
	r = ask(self->obs, 'A', (snprintf(buf, sizeof(buf), "%s/own0", self->fs), buf));
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.uid, 800);
	EXPECT_EQ(r.gid, 801);

	/* Read back with a roomy buffer and with the exact size. */
	n = getxattr(p, "system.posix_acl_access", buf, sizeof(buf));
	ASSERT_EQ(n, (ssize_t)len);
	EXPECT_EQ(((struct acl_entry *)(buf + 4))[1].id, view(self, 800));
	EXPECT_EQ(((struct acl_entry *)(buf + 4))[3].id, view(self, 801));
	memset(buf, 0, sizeof(buf));
	n = getxattr(p, "system.posix_acl_access", buf, len);
	ASSERT_EQ(n, (ssize_t)len);
	EXPECT_EQ(((struct acl_entry *)(buf + 4))[1].id, view(self, 800));
	EXPECT_EQ(((struct acl_entry *)(buf + 4))[3].id, view(self, 801));

	/* The named user may read, by uid; a member of the named group too. */
	EXPECT_EQ(as_user(view(self, 800), view(self, 900), op_read, &o), 0);
	EXPECT_EQ(as_user(view(self, 900), view(self, 801), op_read, &o), 0);
	EXPECT_EQ(as_user(view(self, 900), view(self, 900), op_read, &o), EACCES);

	/* An ACL naming an id the mount cannot map is refused. */
	put_acl(buf, &len, self->unmapped, view(self, 801));
	EXPECT_NE(setxattr(p, "system.posix_acl_access", buf, len, 0), 0);
}

/* chmod through the mount updates the ACL mask, as on the plain mount. */
TEST_F(idmap, chmod_updates_acl)
{
	char p[PATH_MAX], buf[256];
	size_t len;

	if (strcmp(variant->fstype, "ramfs") == 0)
		SKIP(return, "ramfs has no POSIX ACL support");
	IN_MNT(p, "own0");
	put_acl(buf, &len, view(self, 800), view(self, 801));
	ASSERT_EQ(setxattr(p, "system.posix_acl_access", buf, len, 0), 0);
	ASSERT_EQ(chmod(p, 0640), 0);
	ASSERT_GT(getxattr(p, "system.posix_acl_access", buf, sizeof(buf)), 0);
	EXPECT_EQ(((struct acl_entry *)(buf + 4))[4].perm, 4);	/* mask r-- */
	ASSERT_EQ(chmod(p, 0600), 0);
	ASSERT_GT(getxattr(p, "system.posix_acl_access", buf, sizeof(buf)), 0);
	EXPECT_EQ(((struct acl_entry *)(buf + 4))[4].perm, 0);	/* mask --- */
}

/* A new file in a setgid directory takes its group; S_ISGID is stripped
 * from a file whose group the creator is not in. */
TEST_F(idmap, setgid_inheritance_and_stripping)
{
	char p[PATH_MAX];
	struct op o = { .path = p, .mode = 02755 };
	struct obs_reply r;

	IN_MNT(p, "sgid/f");
	ASSERT_EQ(as_user(view(self, 500), view(self, 500), op_creat, &o), 0);
	r = stored(self, "sgid/f");
	EXPECT_EQ(r.uid, 500);
	EXPECT_EQ(r.gid, 600);
	EXPECT_EQ(r.mode & S_ISGID, 0);

	/* A member of the directory's group (as mapped) keeps S_ISGID. */
	IN_MNT(p, "sgid/g");
	ASSERT_EQ(as_user(view(self, 500), view(self, 600), op_creat, &o), 0);
	r = stored(self, "sgid/g");
	EXPECT_EQ(r.gid, 600);
	EXPECT_EQ(r.mode & S_ISGID, S_ISGID);

	/* Subdirectories inherit the group and S_ISGID. */
	IN_MNT(p, "sgid/dir");
	o.mode = 0755;
	ASSERT_EQ(as_user(view(self, 500), view(self, 500), op_mkdir, &o), 0);
	r = stored(self, "sgid/dir");
	EXPECT_EQ(r.gid, 600);
	EXPECT_EQ(r.mode & S_ISGID, S_ISGID);
}

/* In a sticky directory only the (mapped) owner may remove an entry. */
TEST_F(idmap, sticky_directory_uses_mapped_owner)
{
	char p[PATH_MAX], p2[PATH_MAX];
	struct op o = { .path = p, .path2 = p2, .mode = 0644 };

	IN_MNT(p, "sticky/f");
	IN_MNT(p2, "sticky/g");
	ASSERT_EQ(as_user(view(self, 501), view(self, 501), op_creat, &o), 0);
	EXPECT_EQ(stored(self, "sticky/f").uid, 501);
	EXPECT_EQ(as_user(view(self, 502), view(self, 502), op_rename, &o), EPERM);
	EXPECT_EQ(as_user(view(self, 502), view(self, 502), op_unlink, &o), EPERM);
	EXPECT_EQ(as_user(view(self, 501), view(self, 501), op_unlink, &o), 0);
}

/* Setting explicit times needs ownership, judged through the mount. */
TEST_F(idmap, utimes_ownership)
{
	char p[PATH_MAX];
	struct op o = { .path = p };

	IN_MNT(p, "own1000");
	ASSERT_EQ(chmod(p, 0666), 0);
	EXPECT_EQ(as_user(view(self, 1000), view(self, 1000), op_utimes, &o), 0);
	EXPECT_EQ(as_user(view(self, 1001), view(self, 1001), op_utimes, &o), EPERM);
	/* "now" needs write access only. */
	EXPECT_EQ(as_user(view(self, 1001), view(self, 1001), op_utimes_now, &o), 0);
}

/* Link and rename between the idmapped mount and its source: EXDEV. */
TEST_F(idmap, cross_mount_link_rename_exdev)
{
	char a[PATH_MAX], b[PATH_MAX];

	IN_MNT(a, "own0");
	IN_FS(b, "d/link");
	EXPECT_EQ(link(a, b), -1);
	EXPECT_EQ(errno, EXDEV);
	EXPECT_EQ(rename(a, b), -1);
	EXPECT_EQ(errno, EXDEV);
	IN_FS(a, "own0");
	IN_MNT(b, "d/link");
	EXPECT_EQ(link(a, b), -1);
	EXPECT_EQ(errno, EXDEV);
	EXPECT_EQ(stored(self, "own0").err, 0);
}

static int exec_caps(const char *prog, uint64_t *prm)
{
	int pfd[2], status;
	char buf[64] = "";
	pid_t pid;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		if (setgroups(0, NULL) || setresgid(1234, 1234, 1234) ||
		    setresuid(1234, 1234, 1234))
			_exit(250);
		execl(prog, prog, NULL);
		_exit(251);
	}
	close(pfd[1]);
	if (read(pfd[0], buf, sizeof(buf) - 1) < 0)
		buf[0] = 0;
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	*prm = strtoull(buf, NULL, 16);
	return 0;
}

/*
 * Namespaced file capabilities: the rootid is translated through the
 * mount, and exec only grants the capabilities where the rootid is the
 * root of the executing namespace.
 */
TEST_F(idmap, file_caps_rootid_translated)
{
	struct vfs_ns_cap_data cap = {
		.magic_etc = VFS_CAP_REVISION_3 | VFS_CAP_FLAGS_EFFECTIVE,
		.data[0].permitted = 1U << CAP_NET_RAW,
	};
	char src[PATH_MAX], viamnt[PATH_MAX], viafs[PATH_MAX];
	uint64_t prm = ~0ULL;
	struct obs_reply r;
	int in, out;
	ssize_t n;
	char buf[65536];

	if (strcmp(variant->fstype, "ramfs") == 0)
		SKIP(return, "ramfs has no xattr support");
	/* Copy the capability reporter into the filesystem. */
	snprintf(src, sizeof(src), "%s/showcaps", getenv("T_BIN") ?: ".");
	IN_MNT(viamnt, "d/showcaps");
	IN_FS(viafs, "d/showcaps");
	in = open(src, O_RDONLY);
	ASSERT_GE(in, 0) TH_LOG("%s missing", src);
	/* Created by the user the mount shows as the filesystem's root. */
	ASSERT_EQ(prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP), 0);
	setfsuid(view(self, 0));
	setfsgid(view(self, 0));
	out = open(viamnt, O_CREAT | O_WRONLY, 0755);
	setfsuid(0);
	setfsgid(0);
	prctl(PR_SET_SECUREBITS, 0);
	ASSERT_GE(out, 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ASSERT_EQ(write(out, buf, n), n);
	close(in);
	close(out);
	ASSERT_EQ(chmod(viamnt, 0755), 0);

	/* Owned by the root of our namespace, as the mount shows it. */
	cap.rootid = 0;
	if (self->shift) {
		/* Our root (0) is not mapped by the mount: refused. */
		EXPECT_NE(setxattr(viamnt, "security.capability", &cap, sizeof(cap), 0), 0);
		cap.rootid = view(self, 0);
	}
	ASSERT_EQ(setxattr(viamnt, "security.capability", &cap, sizeof(cap), 0), 0);
	r = ask(self->obs, 'C', viafs);
	ASSERT_EQ(r.err, 0);
	EXPECT_EQ(r.uid, 0);	/* the filesystem's root owns it */

	/* Exec through the mount gains CAP_NET_RAW only if rootid is our root. */
	ASSERT_EQ(exec_caps(viamnt, &prm), 0);
	EXPECT_EQ(prm, self->shift ? 0 : 1ULL << CAP_NET_RAW);
	/* Through the plain mount, the filesystem's root owns the caps. */
	if (variant->cfg != CFG_NESTED) {
		ASSERT_EQ(exec_caps(viafs, &prm), 0);
		EXPECT_EQ(prm, 1ULL << CAP_NET_RAW);
	}
}

static int try_idmap(const char *path, int userns, unsigned int clone)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = userns };
	int tree = clone ? sys_open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)
			 : open(path, O_PATH | O_CLOEXEC);
	int ret;

	if (tree < 0)
		return -errno;
	ret = sys_mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr));
	ret = ret ? -errno : 0;
	close(tree);
	return ret;
}

/* Every refusal of mount_setattr(MOUNT_ATTR_IDMAP), and success. */
TEST_F(idmap, mount_setattr_rules)
{
	int ns;

	if (variant->cfg == CFG_NESTED)
		SKIP(return, "covered by the init and userns configurations; see nested_caller_cannot_idmap");
	/* The initial idmapping marks "not idmapped": EPERM. */
	EXPECT_EQ(try_idmap(self->fs, self->init_userns, 1), -EPERM);
	/* The filesystem's own idmapping: EINVAL (in init it is the initial one). */
	if (variant->cfg == CFG_USERNS)
		EXPECT_EQ(try_idmap(self->fs, self->fs_userns, 1), -EINVAL);
	/* An already idmapped mount: EPERM. */
	ns = userns_fd("0 20000 1000\n");
	ASSERT_GE(ns, 0);
	EXPECT_EQ(try_idmap(self->mnt, ns, 1), -EPERM);
	/* An attached mount: EINVAL. */
	EXPECT_EQ(try_idmap(self->fs, ns, 0), -EINVAL);
	/* A filesystem without idmapped mount support: EINVAL. */
	EXPECT_EQ(try_idmap(self->mq, ns, 1), -EINVAL);
	/* A distinct namespace, even with the filesystem's map: allowed. */
	EXPECT_EQ(try_idmap(self->fs, ns, 1), 0);
	close(ns);
	if (variant->cfg == CFG_USERNS) {
		ns = userns_fd(FS_MAP);
		EXPECT_LT(ns, 0);	/* U1 cannot map ids it does not have */
		ns = userns_fd("0 0 65536\n");
		ASSERT_GE(ns, 0);
		EXPECT_EQ(try_idmap(self->fs, ns, 1), 0);
		close(ns);
	}
}

/* Without CAP_SYS_ADMIN over the filesystem's user namespace: EPERM. */
TEST_F(idmap, nested_caller_cannot_idmap)
{
	int ns;

	/* Enter a namespace below ours (the nested config already is). */
	if (variant->cfg != CFG_NESTED) {
		ASSERT_EQ(become_root_in("0 10000 10000\n", 0, -1), 0);
	}
	ASSERT_EQ(unshare(CLONE_NEWNS), 0);
	ns = userns_fd("0 0 1000\n");
	ASSERT_GE(ns, 0);
	EXPECT_EQ(try_idmap(self->fs, ns, 1), -EPERM);
	close(ns);
}

/* mountinfo says "idmapped" for the idmapped mount only. */
TEST_F(idmap, mountinfo_marks_idmapped_only)
{
	char line[4096], mp[PATH_MAX];
	int seen_fs = 0, seen_mnt = 0;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	ASSERT_NE(f, NULL);
	while (fgets(line, sizeof(line), f)) {
		char opts[1024];

		if (sscanf(line, "%*d %*d %*s %*s %4095s %1023s", mp, opts) != 2)
			continue;
		if (strcmp(mp, self->fs) == 0) {
			seen_fs = 1;
			EXPECT_EQ(strstr(opts, "idmapped"), NULL) TH_LOG("%s", line);
		}
		if (strcmp(mp, self->mnt) == 0) {
			seen_mnt = 1;
			EXPECT_NE(strstr(opts, "idmapped"), NULL) TH_LOG("%s", line);
		}
	}
	fclose(f);
	EXPECT_TRUE(seen_fs);
	EXPECT_TRUE(seen_mnt);
}

TEST_HARNESS_MAIN
