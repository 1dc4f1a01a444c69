# tests/lib/tap.sh: sourced by a test area's guest.sh (POSIX sh, dash).
# Every program an area runs is a stream of its own: scripts/results.py
# checks each one alone (one plan, results numbered 1..N, as many as
# planned, exit status 0, no "Bail out!", no failing subtest), so one
# program's plan can never cover another's missing results.
#
#   tap_run NAME CMD...      run CMD (a program or a shell function, in a
#                            subshell, stdin from /dev/null): its stdout
#                            goes to $T_OUT/streams/NAME.tap, its stderr to
#                            NAME.err, its exit status to NAME.rc, and NAME
#                            to the list of streams (streams/order). NAME
#                            prefixes the program's results.
#   tap_tdc_ids NAME ID...   the stream NAME is tdc.py's output, which must
#                            report each of these test ids once
#
# Nothing else a guest.sh prints is a result: under scripts/run-tests.sh
# (T_STREAMS=1) a TAP line outside tap_run fails the area. Otherwise (by
# hand in `make shell`: streams in /tmp/streams without T_OUT) each
# stream is also shown on stdout.

tap_dir() {
	_tap_d=${T_OUT:-/tmp}/streams
	mkdir -p "$_tap_d"
}

tap_run() {
	_tap_name=$1
	shift
	tap_dir
	case $_tap_name in
	'' | */* | .* | *[!A-Za-z0-9_.-]*)
		echo "tap_run: bad stream name '$_tap_name'" >&2
		return 2
		;;
	esac
	if grep -qx "$_tap_name" "$_tap_d/order" 2>/dev/null; then
		echo "tap_run: stream $_tap_name used twice" >&2
		return 2
	fi
	echo "$_tap_name" >>"$_tap_d/order"
	("$@") >"$_tap_d/$_tap_name.tap" 2>"$_tap_d/$_tap_name.err" </dev/null
	echo $? >"$_tap_d/$_tap_name.rc"
	[ "${T_STREAMS:-}" = 1 ] || cat "$_tap_d/$_tap_name.tap"
	return 0
}

tap_tdc_ids() {
	_tap_name=$1
	shift
	tap_dir
	printf '%s\n' "$@" >"$_tap_d/$_tap_name.tdc-ids"
}
