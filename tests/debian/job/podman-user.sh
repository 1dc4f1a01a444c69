#!/bin/bash
# tests/debian/job/podman-user.sh MODE: test 3's part as the test user,
# in its systemd --user (job/lib.sh podman_test). Podman with its own
# defaults imports an image made here (a tarball: no registry) and, in
# podman's user namespace (podman unshare), runs it with a tmpfs mounted
# there as an :idmap volume; then, without :idmap, when MODE is refused.
# Prints what podman and the container reported; the caller judges.
set -u
t=$(mktemp -d)
mkdir -p "$t/r"/{etc,usr,proc,sys,dev,tmp,data}
for l in bin lib lib64 sbin; do ln -s "usr/$l" "$t/r/$l"; done
echo 'root:x:0:0:root:/:/bin/sh' >"$t/r/etc/passwd"
echo 'root:x:0:' >"$t/r/etc/group"
tar -C "$t/r" -cf "$t/rootfs.tar" .
podman import -q "$t/rootfs.tar" localhost/debtest:1 >/dev/null && echo "imported: localhost/debtest:1"
echo "info: $(podman info --format '{{.Store.GraphDriverName}} {{.Host.OCIRuntime.Name}} {{.Store.GraphRoot}}')"
rm -rf "$t"
podman unshare bash -c '
v=$HOME/vol
mkdir -p $v
mountpoint -q $v || mount -t tmpfs -o mode=0755 debtest-vol $v
rm -rf $v/w $v/f0 $v/f1000
mkdir $v/w; chmod 0777 $v/w
touch $v/f0 $v/f1000; chown 1000:1000 $v/f1000
run() {
	podman run --rm --network none --uidmap 0:1:65536 --gidmap 0:1:65536 -v /usr:/usr:ro \
		-v "$v:/data$1" localhost/debtest:1 /bin/sh -c "
		echo \"uid_map: \$(cat /proc/self/uid_map)\"
		grep \" /data \" /proc/self/mountinfo | sed \"s/^/mountinfo: /\"
		stat -c \"seen %u:%g %n\" /data/f0 /data/f1000
		touch /data/w/byroot && setpriv --reuid 1000 --regid 1000 --clear-groups touch /data/w/by1000"
}
run :idmap 2>&1
echo "run-rc: $?"
if [ "$1" = refused ]; then
	run "" 2>&1
	echo "control-rc: $?"
fi
stat -c "stored %u:%g %n" $v/w/byroot $v/w/by1000 | sed "s| /.*/| |"
' sh "$1"
