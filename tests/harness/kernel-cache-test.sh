#!/bin/bash
# tests/harness/kernel-cache-test.sh: scripts/kernel-cache.sh on a tiny
# fake tree (a git repository with a .config in its obj-test, no kernel):
# the key follows every input and only the inputs, a stored build comes
# back as it was with the recorded paths made this clone's, and an entry
# that does not fit is refused with the object directory left alone.
# TAP on stdout. Runs as tests/harness's stream kernel-cache. The fake
# tree is under build/ (the cache keeps only trees inside the clone).
set -u
KC=$TOP/scripts/kernel-cache.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kernel-cache-test.XXXXXX")
trap 'rm -rf "$tmp" "$BUILD"' EXIT
export BUILD=$TOP/build/kernel-cache-test.$$ KERNEL_CACHE=$tmp/cache KERNEL_CACHE_MIN_FREE_MB=0
export TREE=$BUILD/linux
n=0
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}
echo 1..19

mkdir -p "$TREE/fs" "$BUILD/logs"
git -C "$TREE" init -q
git -C "$TREE" config user.email t@t && git -C "$TREE" config user.name t
echo '/obj-*' >"$TREE/.git/info/exclude"
echo 'int a;' >"$TREE/fs/a.c"
git -C "$TREE" add -A && git -C "$TREE" commit -q -m one
obj=$TREE/obj-test
mkdir -p "$obj"
echo CONFIG_X=y >"$obj/.config"
key() { "$KC" key test 2>/dev/null; }
k0=$(key) || k0=
[ -n "$k0" ] && [ "$k0" = "$(key)" ]
ok $? "the same inputs give the same key ($k0)"
git -C "$TREE" commit -q --amend -m "another message, the same files"
[ "$(key)" = "$k0" ]
ok $? "a commit of the same files (another clone's git am) keeps the key"
echo 'int b;' >>"$TREE/fs/a.c"
k1=$(key)
git -C "$TREE" checkout -q fs/a.c
echo 'int c;' >"$TREE/fs/new.c"
k2=$(key)
rm "$TREE/fs/new.c"
echo CONFIG_X=m >"$obj/.config"
k3=$(key)
echo CONFIG_X=y >"$obj/.config"
[ -n "$k1" ] && [ -n "$k2" ] && [ -n "$k3" ] && [ "$k1" != "$k0" ] && [ "$k2" != "$k0" ] && [ "$k3" != "$k0" ] &&
	[ "$(key)" = "$k0" ]
ok $? "an edited file ($k1), an untracked file ($k2), another .config ($k3) each change the key; undone, it is back"
KERNEL_CACHE=off "$KC" key test >/dev/null 2>&1
[ $? = 1 ]
ok $? "KERNEL_CACHE=off: no key (a cold build)"
"$KC" key mutant >/dev/null 2>&1
[ $? = 1 ]
ok $? "make mutants' variant is not cached: no key"

# config.sh's result, a .config, under its own key
# (config.sh takes the key only when config-key exits 0)
c0=$("$KC" config-key test 2>/dev/null) || c0=
echo 'int e;' >"$TREE/fs/e.c"
c1=$("$KC" config-key test 2>/dev/null) || c1=
rm "$TREE/fs/e.c"
[ -n "$c0" ] && [ -n "$c1" ] && [ "$c0" != "$c1" ] && [ "$c0" = "$("$KC" config-key test 2>/dev/null)" ] && [ "$c0" != "$k0" ]
ok $? "config-key follows the tree's files ($c0, $c1), exits 0, and is not the build's key"
echo CONFIG_Y=y >"$tmp/cfg"
"$KC" config-put test "$c0" "$tmp/cfg" && "$KC" config-get test "$c0" "$tmp/got" && cmp -s "$tmp/cfg" "$tmp/got" &&
	! "$KC" config-get test "$c1" "$tmp/none" 2>/dev/null && [ ! -e "$tmp/none" ]
ok $? "config-put then config-get gives the .config back; a key never put gives nothing"

# Another clone (another path) of the same files: the same keys.
top2=$tmp/clone2
mkdir -p "$top2"
cp -r "$TOP/scripts" "$TOP/kconfig" "$top2/"
b2=$top2/build/$(basename "$BUILD")
mkdir -p "$b2/logs"
cp -a "$TREE" "$b2/linux"
k2=$(BUILD=$b2 TREE=$b2/linux "$top2/scripts/kernel-cache.sh" key test 2>&1) || k2="exit $?"
c2=$(BUILD=$b2 TREE=$b2/linux "$top2/scripts/kernel-cache.sh" config-key test 2>&1) || c2="exit $?"
[ "$k2" = "$k0" ] && [ "$c2" = "$c0" ]
ok $? "another clone of the same files at another path has the same keys (build $k2, configuration $c2)"

# A "build": a kernel piggy.o holds, a .cmd naming the clone it was built
# in, the installed modules' build link.
old=/nonexistent/old-clone
mkdir -p "$obj/arch/x86/boot/compressed" "$obj/fs" "$obj/modroot/lib/modules/6.1.192"
head -c 4096 /dev/urandom >"$obj/arch/x86/boot/compressed/vmlinux.bin.lz4"
printf '\t.incbin "arch/x86/boot/compressed/vmlinux.bin.lz4"\n' >"$obj/arch/x86/boot/compressed/piggy.S"
cat "$obj/arch/x86/boot/compressed/vmlinux.bin.lz4" >"$obj/arch/x86/boot/compressed/piggy.o"
echo kernel >"$obj/arch/x86/boot/bzImage"
echo "cmd_fs/a.o := $old/scripts/kcc gcc -c -o fs/a.o ../fs/a.c" >"$obj/fs/.a.o.cmd"
ln -s "$old/build/linux/obj-test" "$obj/modroot/lib/modules/6.1.192/build"
"$KC" store test "$k0" >/dev/null 2>&1
# as if built in another clone, whose paths the build recorded
sed -i "s|^top .*|top $old|" "$KERNEL_CACHE/$k0/ORIGIN"
[ -f "$KERNEL_CACHE/$k0/ORIGIN" ] && [ "$(cut -d' ' -f1 "$obj/.pipeline-kernel")" = "$k0" ]
ok $? "store keeps the build under its key and stamps the object directory"

# This directory holds that build already: restore leaves it as it is.
touch "$obj/marker"
"$KC" restore test "$k0" >/dev/null 2>&1 && [ -f "$obj/marker" ]
ok $? "restore into the directory the stamp says holds that build: nothing copied"

rm -rf "$obj" && mkdir -p "$obj" && echo CONFIG_X=y >"$obj/.config"
"$KC" restore test "$k0" >"$tmp/restore.out" 2>&1
rc=$?
cmp -s "$obj/arch/x86/boot/compressed/piggy.o" "$KERNEL_CACHE/$k0/obj/arch/x86/boot/compressed/piggy.o" &&
	[ -f "$obj/arch/x86/boot/bzImage" ]
ok $(( rc | $? )) "restore into an empty object directory brings the build back (rc $rc: $(tail -n 1 "$tmp/restore.out"))"
grep -q "^cmd_fs/a.o := $TOP/scripts/kcc " "$obj/fs/.a.o.cmd" && ! grep -q "$old" "$obj/fs/.a.o.cmd"
ok $? "the compiler path recorded in the old clone is this clone's: $(cat "$obj/fs/.a.o.cmd")"
[ "$(readlink "$obj/modroot/lib/modules/6.1.192/build")" = "$TOP/build/linux/obj-test" ]
ok $? "the installed modules' build link points into this clone: $(readlink "$obj/modroot/lib/modules/6.1.192/build")"
[ "$(cut -d' ' -f1 "$obj/.pipeline-kernel")" = "$k0" ] && grep -q 'restored from the kernel cache' "$BUILD/logs/build-test.log"
ok $? "the restored directory is stamped and the build log says where it came from"
[ "$obj/fs/.a.o.cmd" -nt "$TREE/fs/a.c" ] && [ "$obj/arch/x86/boot/bzImage" -nt "$TREE/fs/a.c" ]
ok $? "the restored files are newer than the sources, so a later make rebuilds only what changes after"

# A make by hand in the directory changes its kernel: the stamp no longer
# holds, and restore copies the build again.
sleep 1
echo "made by hand" >"$obj/arch/x86/boot/bzImage"
"$KC" restore test "$k0" >/dev/null 2>&1 && [ "$(cat "$obj/arch/x86/boot/bzImage")" = kernel ]
ok $? "after a make by hand (bzImage changed) the stamp no longer holds: the build is copied again"

# Inputs that change while make runs: nothing is stored.
rm -rf "$KERNEL_CACHE"
echo 'int d;' >>"$TREE/fs/a.c"
out=$("$KC" store test "$k0" 2>&1)
git -C "$TREE" checkout -q fs/a.c
[ ! -e "$KERNEL_CACHE/$k0" ] && grep -q 'inputs changed' <<<"$out"
ok $? "a tree edited while the build ran: nothing stored ($out)"
"$KC" store test "$k0" >/dev/null 2>&1
# an entry missing a file (a copy cut short) is refused
rm "$KERNEL_CACHE/$k0/obj/fs/.a.o.cmd"
rm -f "$obj/.pipeline-kernel"
"$KC" restore test "$k0" >/dev/null 2>&1
[ $? = 1 ] && [ -f "$obj/fs/.a.o.cmd" ]
ok $? "an entry with fewer files than it recorded is refused, the object directory left as it was"
rm -rf "$KERNEL_CACHE/$k0" && "$KC" store test "$k0" >/dev/null 2>&1

# An entry whose configuration is not the one config.sh made is refused,
# and the object directory stays as it was.
rm -rf "$obj" && mkdir -p "$obj" && echo CONFIG_X=y >"$obj/.config"
echo CONFIG_X=m >"$KERNEL_CACHE/$k0/obj/.config"
echo mine >"$obj/mine"
"$KC" restore test "$k0" >/dev/null 2>&1
rc=$?
[ $rc = 1 ] && [ -f "$obj/mine" ] && [ ! -f "$obj/arch/x86/boot/bzImage" ] && [ ! -e "$obj.restore" ]
ok $? "an entry of another configuration is refused (rc $rc), the object directory left as it was"
