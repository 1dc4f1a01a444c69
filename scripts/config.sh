#!/bin/bash
# config.sh VARIANT: configure build/obj-VARIANT (see variant_obj) from the fragments that
# kconfig/variants lists for it, merged onto tinyconfig with the tree's
# merge_config.sh, then check that every option a fragment asks for really
# ended up set (merge_config.sh only warns). The object directory's
# .config is replaced only when the result differs, so an unchanged
# configuration never triggers a rebuild.
. "$(dirname "$0")/lib.sh"

variant=${1:?usage: config.sh VARIANT}
line=$(variant_line "$variant")
read -r _ which frags <<<"$line"
src=$(variant_tree "$which")
obj=$(variant_obj "$variant")
scratch=$BUILD/kconfig-$variant
mkdir -p "$obj" "$scratch"

# A tree that is the test kernel's with some patches reverted
# (without-SPEC, scripts/lib.sh), in the test kernel's configuration,
# starts from a copy of the test kernel's object directory: the sources
# it shares with the test tree keep their mtimes, the files the revert
# wrote are made newer than every object, and make rebuilds only what
# depends on them (tests/i2c-abi's kernel: 23 objects and the links, not
# 1,626 objects). Only while the test kernel's .config is what its
# fragments give on the test tree as it is now (the stamp written at the
# end: fragments, tree, .config) and the revert changed nothing the
# configuration is made from (Kconfig files, configs/ fragments);
# otherwise it is configured from the fragments like any other variant.
stamp=$obj/.pipeline-config
rm -f "$stamp"
# frag_key FRAGMENT...: a hash of the fragments' contents.
frag_key() { (cd "$TOP/kconfig" && for f in "$@"; do sha256sum "$f.config"; done) | sha256sum | cut -d' ' -f1; }
test_obj=$BUILD/obj-test
read -r _ _ test_frags < <(variant_line test)
# shellcheck disable=SC2086 # fragment names are words
if [[ $which == without-* ]] && [ "$frags" = "$test_frags" ] && [ -f "$test_obj/.config" ] &&
	[ "$(cat "$test_obj/.pipeline-config" 2>/dev/null)" = \
		"$(frag_key $frags) $(tree_key "$TREE") $(sha256sum <"$test_obj/.config" | cut -d' ' -f1)" ] &&
	! grep -q '\(^\|/\)\(Kconfig\|configs/\)' "$src.changed"; then
	rm -rf "$obj"
	test_real=$(readlink -f "$test_obj")
	cp -a "$test_real" "$obj" || die "cannot copy $test_obj to $obj"
	# Not the test kernel under this variant's name, should the build
	# stop early: the images and installed modules go.
	rm -rf "$obj/vmlinux" "$obj/arch/x86/boot/bzImage" "$obj/modroot" "$stamp" "$obj/.pipeline-kernel"
	# objtool is built by tools/'s own build system with absolute paths,
	# and each object depends on the objtool binary: let its recorded
	# commands name this tree, or it and then everything is rebuilt.
	{ grep -rlIZ -F "$TREE/" "$obj/tools" || true; } | xargs -0 -r sed -i -e "s|$test_real/|$obj/|g" -e "s|$TREE/|$src/|g"
	mapfile -t changed <"$src.changed"
	[ ${#changed[@]} -eq 0 ] || (cd "$src" && touch -c -- "${changed[@]}")
	info "$variant: the test kernel's configuration and objects; ${#changed[@]} file(s) differ: ${changed[*]}"
	exit 0
fi

files=()
for f in $frags; do
	[ -f "$TOP/kconfig/$f.config" ] || die "kconfig/$f.config (listed for $variant) does not exist"
	files+=("$TOP/kconfig/$f.config")
done

# Kconfig's own programs (conf, fixdep) are built in the fresh scratch
# directory of every fresh clone: with ccache, as the kernel's host tools.
# The result of the same fragments on the same tree, made before in any
# clone, comes from the kernel cache (scripts/kernel-cache.sh) instead.
kbuild_env
ckey=$("$TOP/scripts/kernel-cache.sh" config-key "$variant") || ckey=
ckey_new=
if [ -n "$ckey" ] && "$TOP/scripts/kernel-cache.sh" config-get "$variant" "$ckey" "$scratch/.config"; then
	echo "the configuration of key $ckey, from the kernel cache" >"$LOGS/config-$variant.log"
	info "$variant: the configuration of key $ckey (kernel cache)"
else
	ckey_new=$ckey
	logged "$LOGS/config-$variant.log" bash -c '
		make -C "$1" O="$2" HOSTCC="$3" tinyconfig &&
		"$1"/scripts/kconfig/merge_config.sh -m -O "$2" "$2/.config" "${@:4}" &&
		make -C "$1" O="$2" HOSTCC="$3" olddefconfig' _ "$src" "$scratch" "$KBUILD_HOSTCC" "${files[@]}" ||
		die "configuring $variant failed"
fi

# Every request of every fragment must hold in the final configuration.
bad=0
while IFS= read -r req; do
	case $req in
	CONFIG_*=*)
		grep -qxF "$req" "$scratch/.config" && continue
		# A prefix of the series (series-NNNN, make bisect-check) lacks
		# the options later patches add: no Kconfig of its tree has them.
		sym=${req%%=*}
		sym=${sym#CONFIG_}
		if [[ $variant == series-* ]] && ! grep -rqsE --include='Kconfig*' --exclude-dir='obj-*' \
			"^[[:space:]]*(menu)?config[[:space:]]+$sym\b" "$src"; then
			info "$variant: $sym is not in this tree (a later patch adds it)"
			continue
		fi
		got=$(grep -E "^(# )?${req%%=*}[= ]" "$scratch/.config" || echo "absent (unknown or unmet dependency)")
		;;
	'# CONFIG_'*' is not set')
		opt=${req#\# }
		opt=${opt%% *}
		grep -q "^$opt=" "$scratch/.config" || continue
		got=$(grep "^$opt=" "$scratch/.config")
		;;
	*) continue ;;
	esac
	printf 'error: %s asked for "%s", got "%s"\n' "$variant" "$req" "$got" >&2
	bad=$((bad + 1))
done < <(cat "${files[@]}")
[ $bad -eq 0 ] || die "$bad requested config option(s) did not end up set (fragments: $frags)"
# checked: kept for the next clone, unless the tree or a fragment
# changed while Kconfig ran (the key again)
if [ -n "$ckey_new" ] && [ "$("$TOP/scripts/kernel-cache.sh" config-key "$variant" || true)" = "$ckey_new" ]; then
	"$TOP/scripts/kernel-cache.sh" config-put "$variant" "$ckey_new" "$scratch/.config" || true
fi

if ! cmp -s "$scratch/.config" "$obj/.config"; then
	cp "$scratch/.config" "$obj/.config"
	info "$variant: configuration updated ($frags)"
else
	info "$variant: configuration unchanged ($frags)"
fi
# For the variants that start from this one's objects (above); written
# last, so that an interrupted run leaves none.
if [ "$which" = patched ]; then
	# shellcheck disable=SC2086
	echo "$(frag_key $frags) $(tree_key "$src") $(sha256sum <"$obj/.config" | cut -d' ' -f1)" >"$stamp.tmp"
	mv "$stamp.tmp" "$stamp"
fi
