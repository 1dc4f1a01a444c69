// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring through an idmapped mount of a tmpfs mounted in a user
 * namespace: the credentials a request runs with (the submitter's, or
 * ones registered with IORING_REGISTER_PERSONALITY) must go through both
 * idmappings exactly as a syscall's do.
 *
 * Layout, built by the fixture as root of a user namespace A (uid and gid
 * map "0 100000 65536", a mount namespace of its own):
 *
 *   fs/   tmpfs mounted in A (owned by A: the series' tmpfs patches)
 *   mnt/  fs/ idmapped with a namespace M mapping 0..999 to A's
 *         10000..10999 (so A-uid 10000+n writes as fs-uid n, and A's
 *         root, the unmapped caller, must get EOVERFLOW)
 *   dir   a 0777 directory in fs/, where every test creates its files
 *
 * Stored ids are read back through fs/, the filesystem's own view, never
 * from what the request returned.
 */
#define _GNU_SOURCE
#include <liburing.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include "../idmap/userns.h"
#include "kselftest_harness.h"

#define MAPPED 10500	/* A-uid/gid of the mapped caller: fs id 500 */
#define FS_ID 500

FIXTURE(uring) {
	char fs[64], mnt[64];
	struct io_uring ring;
};

FIXTURE_SETUP(uring)
{
	int userns, ret;

	ASSERT_EQ(become_root_in("0 100000 65536", CLONE_NEWNS, -1), 0);
	ASSERT_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	snprintf(self->fs, sizeof(self->fs), "/tmp/uring-fs.%d", getpid());
	snprintf(self->mnt, sizeof(self->mnt), "/tmp/uring-mnt.%d", getpid());
	ASSERT_EQ(mkdir(self->fs, 0755), 0);
	ASSERT_EQ(mkdir(self->mnt, 0755), 0);
	ASSERT_EQ(mount("none", self->fs, "tmpfs", 0, "mode=0755"), 0) {
		TH_LOG("tmpfs in a user namespace: %s", strerror(errno));
	}
	userns = userns_fd("0 10000 1000");
	ASSERT_GE(userns, 0);
	ret = idmap_mount(self->fs, self->mnt, userns, 0);
	ASSERT_EQ(ret, 0) {
		TH_LOG("idmapped mount of tmpfs mounted in a userns: %s", strerror(-ret));
	}
	close(userns);
	ASSERT_EQ(chdir(self->fs), 0);
	ASSERT_EQ(mkdir("dir", 0777), 0);
	ASSERT_EQ(chmod("dir", 0777), 0);
	ASSERT_EQ(chdir("/"), 0);
	ASSERT_EQ(io_uring_queue_init(8, &self->ring, 0), 0);
}

FIXTURE_TEARDOWN(uring)
{
	io_uring_queue_exit(&self->ring);
}

/* Switch the effective (and so the fs) ids; the saved ids stay 0. */
static void act_as(int id)
{
	if (setresgid(-1, id, -1) || setresuid(-1, id, -1))
		abort();
}

static int submit_wait(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	int res;

	if (io_uring_submit(ring) != 1 || io_uring_wait_cqe(ring, &cqe))
		return -EIO;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

static int uring_create(struct io_uring *ring, const char *path, int personality)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_openat(sqe, AT_FDCWD, path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	sqe->personality = personality;
	return submit_wait(ring);
}

/* The ids the filesystem stored for NAME in dir, seen from A through fs/. */
static int stored(const char *fs, const char *name, uid_t *uid, gid_t *gid)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/dir/%s", fs, name);
	if (stat(path, &st))
		return -errno;
	*uid = st.st_uid;
	*gid = st.st_gid;
	return 0;
}

static void path_in(char *buf, size_t len, const char *top, const char *name)
{
	snprintf(buf, len, "%s/dir/%s", top, name);
}

/* A mapped caller creates through io_uring as through openat(2). */
TEST_F(uring, openat_create_stores_the_callers_mapped_ids)
{
	char p[128];
	uid_t uid = -1;
	gid_t gid = -1;
	int fd;

	act_as(MAPPED);
	path_in(p, sizeof(p), self->mnt, "by-syscall");
	fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
	ASSERT_GE(fd, 0);
	close(fd);
	path_in(p, sizeof(p), self->mnt, "by-uring");
	fd = uring_create(&self->ring, p, 0);
	ASSERT_GE(fd, 0) {
		TH_LOG("IORING_OP_OPENAT: %s", strerror(-fd));
	}
	close(fd);
	act_as(0);
	ASSERT_EQ(stored(self->fs, "by-syscall", &uid, &gid), 0);
	EXPECT_EQ(uid, FS_ID);
	EXPECT_EQ(gid, FS_ID);
	ASSERT_EQ(stored(self->fs, "by-uring", &uid, &gid), 0);
	EXPECT_EQ(uid, FS_ID);
	EXPECT_EQ(gid, FS_ID);
}

/* IORING_OP_STATX reports the mount's view, as statx(2) does. */
TEST_F(uring, statx_reports_ids_through_the_mount)
{
	struct statx sys = {}, ring = {};
	struct io_uring_sqe *sqe;
	char p[128];
	int fd;

	path_in(p, sizeof(p), self->fs, "file");
	fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(fchown(fd, FS_ID, 7), 0);	/* fs ids 500:7 */
	close(fd);
	path_in(p, sizeof(p), self->mnt, "file");
	ASSERT_EQ(statx(AT_FDCWD, p, 0, STATX_UID | STATX_GID, &sys), 0);
	sqe = io_uring_get_sqe(&self->ring);
	io_uring_prep_statx(sqe, AT_FDCWD, p, 0, STATX_UID | STATX_GID, &ring);
	ASSERT_EQ(submit_wait(&self->ring), 0);
	EXPECT_EQ(sys.stx_uid, MAPPED);
	EXPECT_EQ(sys.stx_gid, 10007);
	EXPECT_EQ(ring.stx_uid, sys.stx_uid);
	EXPECT_EQ(ring.stx_gid, sys.stx_gid);
}

/*
 * The registered credentials, not the submitter's, decide: a personality
 * of A's root (unmapped in M) gets EOVERFLOW and creates nothing, even
 * when a mapped caller submits it; a mapped personality submitted by the
 * unmapped root creates with the personality's ids.
 */
TEST_F(uring, personality_of_unmapped_caller_gets_eoverflow)
{
	char p[128];
	uid_t uid = -1;
	gid_t gid = -1;
	int root_id, mapped_id, fd;

	root_id = io_uring_register_personality(&self->ring);
	ASSERT_GT(root_id, 0);
	act_as(MAPPED);
	mapped_id = io_uring_register_personality(&self->ring);
	ASSERT_GT(mapped_id, 0);

	/* syscall, unmapped caller: the reference */
	act_as(0);
	path_in(p, sizeof(p), self->mnt, "root-syscall");
	EXPECT_EQ(open(p, O_CREAT | O_EXCL | O_WRONLY, 0644), -1);
	EXPECT_EQ(errno, EOVERFLOW);

	act_as(MAPPED);
	path_in(p, sizeof(p), self->mnt, "root-personality");
	EXPECT_EQ(uring_create(&self->ring, p, root_id), -EOVERFLOW);
	act_as(0);
	EXPECT_EQ(stored(self->fs, "root-personality", &uid, &gid), -ENOENT);
	EXPECT_EQ(stored(self->fs, "root-syscall", &uid, &gid), -ENOENT);

	/* unmapped submitter, mapped personality */
	path_in(p, sizeof(p), self->mnt, "mapped-personality");
	EXPECT_EQ(uring_create(&self->ring, p, 0), -EOVERFLOW);
	fd = uring_create(&self->ring, p, mapped_id);
	ASSERT_GE(fd, 0) {
		TH_LOG("mapped personality: %s", strerror(-fd));
	}
	close(fd);
	ASSERT_EQ(stored(self->fs, "mapped-personality", &uid, &gid), 0);
	EXPECT_EQ(uid, FS_ID);
	EXPECT_EQ(gid, FS_ID);
}

TEST_HARNESS_MAIN
