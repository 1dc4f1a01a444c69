#!/bin/sh
# tests/pstate-nocpc, part 2, in the guest booted with amd_pstate=disable
# on the emulated CPPC platform (disable.conf; vm.conf's vm_pre boots it).
. "$TOP/tests/lib/tap.sh"
tap_run disable /usr/bin/python3 ./disable_test.py
tap_run acpi_cpufreq /usr/bin/python3 ../pstate/acpi_cpufreq_test.py
