#!/bin/bash
# tests/debian/job/i2c-mctp.sh: test 6. i2c-crosswire from the package's
# modules: a pair of software adapters wired to each other. Debian's
# i2ctransfer writes a 255-byte SMBus 3.0 block (command, count 255, data)
# to slave-24c02 (i2c-slave-eeprom) registered as a target on the other
# adapter, and reads it back raw; tools/smbus3's smbus3-block reads it as
# an SMBus 3.0 block read; each checked against the eeprom's bytes as the
# kernel stored them. Then MCTP over the pair (mctp-i2c): links up with
# iproute2, MCTP addressing with tools/mctp's mctp-conf (Debian 12's
# iproute2 has no MCTP commands), an echo answered byte for byte.
. "$T_OUT/in/job/lib.sh"
echo 1..4
T=$IN/tools
modprobe -r i2c-crosswire 2>/dev/null
modprobe i2c-crosswire pairs=1 && modprobe i2c-dev && modprobe i2c-slave-eeprom && modprobe mctp-i2c
bus() { grep -lx "i2c-crosswire $1" /sys/bus/i2c/devices/i2c-*/name | sed 's|.*/i2c-\([0-9]*\)/name|\1|'; }
a=$(bus 0a) b=$(bus 0b)
echo "slave-24c02 0x1050" >"/sys/bus/i2c/devices/i2c-$b/new_device"
ee=/sys/bus/i2c/devices/$b-1050/slave-eeprom
data=$(for i in $(seq 0 254); do printf '0x%02x ' $(((i * 13 + 5) & 255)); done)
i2ctransfer -y "$a" w257@0x50 0x00 0xff $data
got=$(od -An -v -tx1 -N256 "$ee" | tr -s ' \n' '  ' | sed 's/^ //; s/ $//')
want=$(printf 'ff %s' "$(sed 's/0x//g; s/ $//' <<<"$data")")
[ "$got" = "$want" ]
ok $? "i2ctransfer -y $a w257@0x50: SMBus 3.0 block write of 255 bytes, stored in the target's eeprom as count 0xff and the data"
raw=$(i2ctransfer -y "$a" w1@0x50 0x00 r256)
[ "$raw" = "0xff $(sed 's/ $//' <<<"$data")" ]
ok $? "i2ctransfer -y $a w1@0x50 0x00 r256 reads the 255-byte block back (count first)"
blk=$("$T/smbus3-block" -3 "$a" 0x50 read 0x00 2>&1)
[ "$blk" = "255: $(sed 's/ $//' <<<"$data")" ]
ok $? "smbus3-block -3 $a 0x50 read 0x00: an SMBus 3.0 block read returns the 255 bytes (${blk:0:40}...)"
echo "mctp-i2c-interface 0x1010" >"/sys/bus/i2c/devices/i2c-$a/new_device"
echo "mctp-i2c-interface 0x1020" >"/sys/bus/i2c/devices/i2c-$b/new_device"
da=mctpi2c$a db=mctpi2c$b
for x in "$da 1 8 9 20" "$db 2 9 8 10"; do
	set -- $x
	ip link set "$1" mtu 68 up
	"$T/mctp-conf" link set "$1" net "$2"
	"$T/mctp-conf" addr add "$3" dev "$1"
	"$T/mctp-conf" route add "$4" via "$1"
	"$T/mctp-conf" neigh add "$4" dev "$1" lladdr "$5"
done
coproc SRV { "$T/mctp-echo" serve --net 2 --count 3; }
read -r -t 60 line <&"${SRV[0]}"
out=$("$T/mctp-echo" ping --net 1 --eid 9 --sizes 1,64,255 --count 1 --timeout 60000 2>&1); rc=$?
diag "server: $line" "$out"
[ $rc = 0 ] && [ "$(grep -c '^size=.* count=1 ' <<<"$out")" = 3 ]
ok $? "MCTP over the crosswire pair ($da EID 8 net 1 -> $db EID 9 net 2): echoes of 1, 64 and 255 bytes answered byte for byte (rc $rc)"
