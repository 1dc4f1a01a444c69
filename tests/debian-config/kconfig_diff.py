#!/usr/bin/env python3
"""Compare Kconfig .config files: the library of tests/debian-config.

read(path) -> {SYMBOL: value}: "CONFIG_X=v" gives v, "# CONFIG_X is not
set" gives "n". value(cfg, sym) reads an absent symbol as "n": for Kconfig
an invisible bool or tristate is n, and a fragment can only say "is not
set" for it.
"""
import re

SET = re.compile(r"^CONFIG_([A-Za-z0-9_]+)=(.*)$")
UNSET = re.compile(r"^# CONFIG_([A-Za-z0-9_]+) is not set$")


def read(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = SET.match(line) or UNSET.match(line)
            if m:
                out[m.group(1)] = m.group(2) if m.re is SET else "n"
    return out


def value(cfg, sym):
    return cfg.get(sym, "n")


def changed(a, b):
    """The symbols whose value differs between a and b (absent == n)."""
    return sorted(s for s in set(a) | set(b) if value(a, s) != value(b, s))
