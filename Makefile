# The pipeline: patches/ -> build/linux (Debian 6.1 + series) -> kernel ->
# QEMU -> demo or tests. Every target installs what it needs.
# See README.md; the work is done by scripts/pipeline.sh.

PIPELINE := scripts/pipeline.sh

run:            ; @$(PIPELINE) run
check:          ; @$(PIPELINE) check
shell:          ; @$(PIPELINE) shell
bench:          ; @$(PIPELINE) bench
kernel:         ; @$(PIPELINE) kernel
deb:            ; @MODULES=$(MODULES) FLAVOUR=$(FLAVOUR) scripts/deb.sh
# tests/debian alone (make check runs it too): the test packages, then Debian 12 booted with them
debian-test:    ; @MODULES=vm FLAVOUR=test scripts/deb.sh && scripts/run-tests.sh debian
deps:           ; @scripts/deps.sh
tree:           ; @scripts/deps.sh && scripts/tree.sh
checkpatch:     ; @scripts/checkpatch.sh
mutants:        ; @scripts/mutants.sh
bisect-check:   ; @scripts/bisect-check.sh
export-patches: ; @scripts/export-patches.sh
outgoing:       ; @scripts/outgoing.sh
clean:          ; rm -rf build

# make deb MODULES=host|vm|all FLAVOUR=user|test: Debian packages, build/deb/
MODULES ?= host
FLAVOUR ?= user

.PHONY: run check shell bench kernel deb debian-test deps tree checkpatch export-patches outgoing mutants bisect-check clean
