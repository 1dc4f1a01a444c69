#!/bin/sh
# Guest job: how many id-mapping calls one stat and one chown make on
# plain tmpfs and through an idmapped mount of it (function tracer on
# the non-inlined helpers). Explains the instruction-count overhead that
# make bench reports. Run on the host:
#   scripts/vm.sh --variant bench idmap-calls bench/idmap-calls-job.sh
# vm.sh runs a copy in build/vm/NAME: the repository is three levels up.
TOP=${TOP:-$(cd "$(dirname "$0")/../../.." && pwd)}
here=$TOP/bench
mkdir -p /tmp/p /tmp/idm
mount -t tmpfs -o mode=0777 t /tmp/p
mkdir /tmp/p/d && touch /tmp/p/d/f && chown 1000:1000 /tmp/p/d/f
"$TOP/build/bin/idmap-mount" --map=b:0:100000:65536 /tmp/p /tmp/idm || exit 1
F="map_id_range_down map_id_up make_kuid from_kuid make_kgid from_kgid generic_permission inode_permission"
for op in stat chown; do
	/usr/bin/python3 "$here/idmap_calls.py" /tmp/p/d/f:$op $F || exit 1
	/usr/bin/python3 "$here/idmap_calls.py" /tmp/idm/d/f:$op $F || exit 1
done
