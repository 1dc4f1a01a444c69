// SPDX-License-Identifier: GPL-2.0
/*
 * userns-run: run a command as root of a new user and mount namespace
 * with a full id map, as rootless container engines do.
 *
 *   userns-run [--user=UID] MAP -- COMMAND [ARG...]
 *
 * MAP is uid_map text ("0 100000 65536", extents separated by ","),
 * used for uids and gids. A helper forked first, with the caller's
 * privileges, writes the maps once the child has unshared (the job of
 * newuidmap/newgidmap); with --user the child first drops to UID, so the
 * namespace belongs to an unprivileged user. The command runs as the
 * namespace's root, with its capabilities: unshare(1) cannot do this, as
 * it execs before the map exists and so loses them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_map(pid_t pid, const char *file, const char *map)
{
	char path[64];
	int fd, ok;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, map, strlen(map)) == (ssize_t)strlen(map);
	close(fd);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	int pipefd[2], status, user = -1, i = 1;
	char map[4096], c;
	pid_t self = getpid(), helper;

	if (i < argc && !strncmp(argv[i], "--user=", 7))
		user = atoi(argv[i++] + 7);
	if (argc - i < 3 || strcmp(argv[i + 1], "--")) {
		fprintf(stderr, "usage: userns-run [--user=UID] MAP -- COMMAND [ARG...]\n");
		return 2;
	}
	snprintf(map, sizeof(map), "%s\n", argv[i]);
	for (char *p = map; *p; p++)
		if (*p == ',')
			*p = '\n';
	if (pipe2(pipefd, O_CLOEXEC))
		return 1;
	helper = fork();
	if (helper == 0) {
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) != 1)
			_exit(1);
		if (write_map(self, "uid_map", map) || write_map(self, "gid_map", map)) {
			perror("userns-run: writing the id maps");
			_exit(1);
		}
		_exit(0);
	}
	close(pipefd[0]);
	if (user >= 0 && (setgroups(0, NULL) || setresgid(user, user, user) ||
			  setresuid(user, user, user))) {
		perror("userns-run: dropping to --user");
		return 1;
	}
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) {
		perror("userns-run: unshare");
		return 1;
	}
	if (write(pipefd[1], "x", 1) != 1 || waitpid(helper, &status, 0) != helper ||
	    !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	if (setresgid(0, 0, 0) || setresuid(0, 0, 0)) {
		perror("userns-run: becoming root of the namespace");
		return 1;
	}
	setgroups(0, NULL);
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		perror("userns-run: making mounts private");
		return 1;
	}
	execvp(argv[i + 2], argv + i + 2);
	perror("userns-run: exec");
	return 127;
}
