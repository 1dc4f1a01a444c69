// SPDX-License-Identifier: GPL-2.0
/*
 * Mount, idmap, unmount and tear down namespaces many times (LEAK_CYCLES,
 * default 10000) and check that the number of live user namespaces and
 * tmpfs/ramfs inodes returns to where it started. kmemleak, scanned by the
 * guest init afterwards, catches what these counts cannot.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "userns.h"
#include "kselftest_harness.h"

/* Active objects of a slab cache, from /proc/slabinfo (slab_nomerge). */
static long slab_objects(const char *cache)
{
	char line[512], name[64];
	long active = -1, n;
	FILE *f = fopen("/proc/slabinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", name, &n) == 2 && strcmp(name, cache) == 0)
			active = n;
	fclose(f);
	return active;
}

/* Wait for deferred frees (user namespaces are freed from a workqueue). */
static long settle(const char *cache, long target)
{
	long n = slab_objects(cache);

	for (int i = 0; i < 100 && n > target; i++) {
		usleep(100000);
		n = slab_objects(cache);
	}
	return n;
}

static int cycles(int n, const char *dir)
{
	char fs[256], mnt[256];

	snprintf(fs, sizeof(fs), "%s/fs", dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	/* A rootless container: everything below happens inside it. */
	if (become_root_in("0 100000 65536\n", CLONE_NEWNS, 1000))
		return 1;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return 2;
	for (int i = 0; i < n; i++) {
		int ns;

		if (mount("c", fs, i % 2 ? "ramfs" : "tmpfs", 0, NULL))
			return 3;
		ns = userns_fd("0 1000 1000\n");
		if (ns < 0)
			return 4;
		if (idmap_mount(fs, mnt, ns, 0))
			return 5;
		close(ns);
		if (umount2(mnt, MNT_DETACH) || umount2(fs, MNT_DETACH))
			return 6;
	}
	return 0;
}

FIXTURE(leak) {};
FIXTURE_SETUP(leak) {}
FIXTURE_TEARDOWN(leak) {}

/* Under TCG and KASAN a cycle takes milliseconds: allow 25 minutes. */
TEST_F_TIMEOUT(leak, mount_idmap_umount_cycles_leak_nothing, 1500)
{
	const char *env = getenv("LEAK_CYCLES");
	int n = env ? atoi(env) : 10000, status;
	long ns_before, ns_after, shm_before, shm_after;
	char dir[] = "/tmp/leak.XXXXXX", sub[64];
	pid_t pid;

	if (slab_objects("user_namespace") < 0)
		SKIP(return, "no user_namespace line in /proc/slabinfo (needs SLUB_DEBUG, slab_nomerge)");
	ASSERT_NE(mkdtemp(dir), NULL);
	ASSERT_EQ(chmod(dir, 0777), 0);
	snprintf(sub, sizeof(sub), "%s/fs", dir);
	ASSERT_EQ(mkdir(sub, 0777), 0);
	snprintf(sub, sizeof(sub), "%s/mnt", dir);
	ASSERT_EQ(mkdir(sub, 0777), 0);

	/* Warm up caches, then count. */
	pid = fork();
	if (pid == 0)
		_exit(cycles(20, dir));
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_EQ(status, 0);
	ns_before = settle("user_namespace", 0);
	shm_before = settle("shmem_inode_cache", 0);

	pid = fork();
	if (pid == 0)
		_exit(cycles(n, dir));
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);

	ns_after = settle("user_namespace", ns_before);
	shm_after = settle("shmem_inode_cache", shm_before);
	TH_LOG("%d cycles: user_namespace %ld -> %ld, shmem_inode_cache %ld -> %ld",
	       n, ns_before, ns_after, shm_before, shm_after);
	EXPECT_LE(ns_after, ns_before);
	EXPECT_LE(shm_after, shm_before);
}

TEST_HARNESS_MAIN
