#!/bin/sh
# The demo (make run): a rootless container gives a nested container an
# idmapped view of a tmpfs it mounted itself.
#
#   host       root of the guest: writes id maps, as newuidmap(1) would
#              (userns-run, tools/userns-run)
#   container  started by the unprivileged user 1000; its user namespace
#              maps container ids 0..65535 onto host ids 100000..165535;
#              it mounts a tmpfs and fills it
#   nested     started by the container's root; its user namespace maps
#              nested ids 0..1999 onto container ids 10000..11999. It sees
#              the container's tmpfs through an idmapped mount made by the
#              container (idmap-mount --map=b:0:10000:2000), so files keep
#              the owners they have in the container.
#
# Usage: demo.sh [host|container|nested]   (the roles call each other)
set -eu
DEMO=$(readlink -f "$0")
W=/tmp/demo            # shared scratch directory (guest tmpfs)
CTR=$W/ctr             # the container's mount points (its own namespace)
PATH=$(dirname "$DEMO")/../build/bin:$PATH   # idmap-mount, userns-run

say() { printf '\n### %s\n' "$*"; }

show() {  # show WHO DIR
	printf -- '--- seen from the %s: ls -ln %s\n' "$1" "$2"
	ls -ln "$2" | sed 1d | awk '{ printf "    %-6s %-6s %s\n", $3, $4, $NF }'
}

role=${1:-host}
case $role in
host)
	rm -rf "$W"
	mkdir -p "$CTR/fs" "$CTR/nested-view"
	chmod -R 0777 "$W"
	say "host: uname -r: $(uname -r)"
	echo "    series applied: tmpfs and ramfs accept idmapped mounts"
	mkfifo -m 0666 "$W/ctr-ready" "$W/ctr-done"
	say "host: user 1000 starts a rootless container (container 0..65535 = host 100000..165535)"
	{ userns-run --user=1000 "0 100000 65536" -- sh "$DEMO" container ||
		echo failed >"$W/ctr-ready"; } &
	read -r cpid <"$W/ctr-ready"
	[ "$cpid" != failed ] || { echo "demo: the container failed" >&2; exit 1; }
	say "host: the same files, through /proc/$cpid/root (the container's mounts)"
	show host "/proc/$cpid/root$CTR/fs"
	show host "/proc/$cpid/root$CTR/fs/shared"
	echo done >"$W/ctr-done"
	wait
	echo
	echo "demo: done"
	;;
container)
	mount -t tmpfs -o mode=0755 ctr-tmpfs "$CTR/fs"
	echo "root's file" >"$CTR/fs/by-root"
	echo "user's file" >"$CTR/fs/by-user"
	chown 1000:1000 "$CTR/fs/by-user"
	mkdir "$CTR/fs/shared"
	chmod 0777 "$CTR/fs/shared"
	say "container: mounted tmpfs at $CTR/fs (in its own user namespace) and filled it"
	show container "$CTR/fs"
	say "container: idmap-mount --map=b:0:10000:2000 $CTR/fs $CTR/nested-view"
	idmap-mount --map=b:0:10000:2000 "$CTR/fs" "$CTR/nested-view"
	grep " $CTR/" /proc/self/mountinfo | awk '{ print "    " $5 " " $6 }'
	show container "$CTR/nested-view"
	say "container: starts a nested container (nested 0..1999 = container 10000..11999)"
	userns-run "0 10000 2000" -- sh "$DEMO" nested
	say "container: what the nested container wrote, in the container's tmpfs"
	show container "$CTR/fs/shared"
	# Stay alive while the host looks at our mounts through /proc/PID/root.
	echo $$ >"$W/ctr-ready"
	read -r _ <"$W/ctr-done"
	;;
nested)
	show "nested container" "$CTR/nested-view"
	say "nested: writes $CTR/nested-view/shared/from-nested as its root"
	echo "hello from the nested container" >"$CTR/nested-view/shared/from-nested"
	show "nested container" "$CTR/nested-view/shared"
	;;
*)
	echo "usage: demo.sh [host|container|nested]" >&2
	exit 2
	;;
esac
