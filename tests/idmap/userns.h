/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the idmapped-mount tests, benchmark and demo: user
 * namespaces with a given idmapping, and the new mount API calls.
 */
#ifndef IDMAP_USERNS_H
#define IDMAP_USERNS_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static inline int sys_open_tree(int dfd, const char *path, unsigned int flags)
{
	return syscall(SYS_open_tree, dfd, path, flags);
}

static inline int sys_mount_setattr(int dfd, const char *path, unsigned int flags,
				    struct mount_attr *attr, size_t size)
{
	return syscall(SYS_mount_setattr, dfd, path, flags, attr, size);
}

static inline int sys_move_mount(int from_dfd, const char *from, int to_dfd,
				 const char *to, unsigned int flags)
{
	return syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

static inline int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t len = strlen(text);

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != len) {
		int err = -errno;

		close(fd);
		return err ? err : -EIO;
	}
	close(fd);
	return 0;
}

/* Write "FROM TO RANGE\n..." maps for @pid (both uid and gid). */
static inline int write_maps(pid_t pid, const char *map)
{
	char path[64];
	int err;

	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	err = write_file(path, map);
	if (err)
		return err;
	snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
	return write_file(path, map);
}

static int userns_child(void *arg)
{
	char c;

	/* Hold the namespace until the parent has opened it. */
	return read(*(int *)arg, &c, 1) < 0;
}

/*
 * An fd for a new user namespace, child of the caller's, with @map as
 * its uid and gid map. The caller must be allowed to write such maps.
 * The namespace's only task shares our memory (CLONE_VM) and lives just
 * long enough for us to open it: cheap enough to do thousands of times.
 */
static inline int userns_fd(const char *map)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	int pipefd[2], fd = -1, status;
	char path[64];
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	pid = clone(userns_child, stack + sizeof(stack),
		    CLONE_NEWUSER | CLONE_VM | SIGCHLD, &pipefd[0]);
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -errno;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
	if (write_maps(pid, map) == 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (write(pipefd[1], "x", 1) != 1)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(pipefd[0]);
	close(pipefd[1]);
	return fd;
}

/*
 * Move the calling process into a new user namespace (plus the namespaces
 * in @extra_flags) mapped by @map, and become its root. The map is written
 * by a helper forked first, with the caller's privileges, as newuidmap
 * would; with @drop_uid != -1 the caller first drops to that uid and gid
 * in its current namespace, so that the new namespace is created by an
 * unprivileged user.
 */
static inline int become_root_in(const char *map, int extra_flags, int drop_uid)
{
	int pipefd[2], status;
	pid_t self = getpid(), pid;
	char c;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) != 1)
			_exit(1);
		_exit(write_maps(self, map) ? 2 : 0);
	}
	close(pipefd[0]);
	if (drop_uid != -1) {
		if (setgroups(0, NULL) || setresgid(drop_uid, drop_uid, drop_uid) ||
		    setresuid(drop_uid, drop_uid, drop_uid))
			return -errno;
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	}
	if (unshare(CLONE_NEWUSER | extra_flags)) {
		int err = -errno;

		close(pipefd[1]);
		waitpid(pid, &status, 0);
		return err;
	}
	if (write(pipefd[1], "x", 1) != 1)
		return -EIO;
	close(pipefd[1]);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return -EPERM;
	if (setresgid(0, 0, 0) || setresuid(0, 0, 0))
		return -errno;
	if (setgroups(0, NULL) && errno != EPERM)
		return -errno;
	/*
	 * Changing ids made us non-dumpable, which hands our /proc files
	 * (uid_map of our children included) to the initial root.
	 */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	return 0;
}

/* Idmapped copy of @source at @target, idmapping of @userns (an fd). */
static inline int idmap_mount(const char *source, const char *target, int userns,
			      unsigned int tree_flags)
{
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_IDMAP,
		.userns_fd = userns,
	};
	int tree, err = 0;

	tree = sys_open_tree(AT_FDCWD, source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
			     tree_flags);
	if (tree < 0)
		return -errno;
	if (sys_mount_setattr(tree, "", AT_EMPTY_PATH | (tree_flags & AT_RECURSIVE),
			      &attr, sizeof(attr)) ||
	    sys_move_mount(tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH))
		err = -errno;
	close(tree);
	return err;
}

#endif
