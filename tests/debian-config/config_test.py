#!/usr/bin/env python3
"""make deb's configuration, checked on the host (no kernel build, no VM).

scripts/deb.sh config writes the package's .config the way `make deb`
does (Debian's config.amd64_none_amd64 of linux-config-6.1, the kconfig
fragments, olddefconfig, localmodconfig with the module list) into scratch
object directories of build/linux. Then, independently of deb.sh:

- MODULES=all: the configuration differs from Debian's in exactly the
  options kconfig/debian.config lists, each with the value it lists (an
  option Kconfig drops, e.g. for an unmet dependency, fails naming it),
  nothing else changed, nothing listed that Debian already has;
  FLAVOUR=test differs from that in exactly kconfig/debian-test.config.
- MODULES=vm: every name of kconfig/debian-vm.modules and
  kconfig/debian-series.modules is a module of the tree and is built;
  the configuration differs from MODULES=all's only in modules turned
  off and in options that cannot be set once they are off (each put back
  with olddefconfig, none comes back); no option is turned on, no
  built-in option becomes a module.
- MODULES=host on this machine keeps the series' modules.
- Bad input: a linux-config-6.1 of another version than linux-source-6.1,
  or none, and too little disk stop deb.sh with a message naming the
  cause, and nothing is written.

Output: TAP. Environment: TREE (default build/linux). To see it fail,
add an option with an unmet dependency to kconfig/debian.config
(CONFIG_MNT_IDMAPPING_KUNIT_TEST=y: KUNIT is off) or drop one it needs
(CONFIG_MCTP_FLOWS=y, which MCTP_TRANSPORT_I2C selects).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import kconfig_diff as kd

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
TREE = os.environ.get("TREE") or os.path.join(TOP, "build/linux")
DEB = os.path.join(TOP, "scripts/deb.sh")
FRAGMENT = os.path.join(TOP, "kconfig/debian.config")
TEST_FRAGMENT = os.path.join(TOP, "kconfig/debian-test.config")
DEBIAN_XZ = "/usr/src/linux-config-6.1/config.amd64_none_amd64.xz"
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
from host_tap import results, tap  # noqa: E402


def obj(name):
    # Inside the tree, as deb.sh's own object directories; kept between
    # runs (Kconfig's programs are built once), .config rewritten each time.
    return os.path.join(TREE, f"obj-debcfg-{name}")


def deb(args, env_extra=None, path_prefix=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    if path_prefix:
        env["PATH"] = path_prefix + ":" + env["PATH"]
    return subprocess.run([DEB] + args, capture_output=True, text=True, env=env)


def configure(name, modules, flavour="user", extra_env=None):
    """(config dict, completed process) of deb.sh config into obj(name)."""
    env = {"MODULES": modules, "FLAVOUR": flavour, "LOCALMODCONFIG_DEBUG": "1"}
    env.update(extra_env or {})
    d = obj(name)
    p = deb(["config", d], env)
    if p.returncode != 0:
        return None, p
    return kd.read(os.path.join(d, ".config")), p


def debian_config():
    path = os.path.join(tempfile.mkdtemp(prefix="debcfg-"), "debian.config")
    with open(path, "w") as f:
        subprocess.run(["xz", "-dc", DEBIAN_XZ], stdout=f, check=True)
    cfg = kd.read(path)
    shutil.rmtree(os.path.dirname(path))
    return cfg


def exactly(base, got, listed, what, against):
    """The three checks of 'got differs from base in exactly listed'."""
    dropped = [f"{s}: {what} sets {listed[s]}, Kconfig gives {kd.value(got, s)}"
               for s in sorted(listed) if kd.value(got, s) != listed[s]]
    tap(not dropped, f"{what}: every option it lists has its value after olddefconfig (none dropped)", dropped)
    ch = kd.changed(base, got)
    unlisted = [f"{s}: {kd.value(base, s)} in {against}, {kd.value(got, s)} here, not listed in {what}"
                for s in ch if s not in listed]
    tap(not unlisted, f"{what}: no option differs from {against} unless it lists it", unlisted)
    same = [f"{s}={listed[s]} is {against}'s value already" for s in sorted(listed)
            if listed[s] == kd.value(base, s)]
    tap(not same, f"{what}: every option it lists differs from {against}", same)


def modules_of(fname):
    with open(os.path.join(TOP, "kconfig", fname)) as f:
        names = [ln.split("#", 1)[0].strip() for ln in f]
    return [n.replace("-", "_") for n in names if n]


def direct_map(stderr):
    """localmodconfig's debug output: module -> the symbols of its obj- lines."""
    out = {}
    for m in re.finditer(r"^CONFIG_(\w+) added by direct \((\S+)\)$", stderr, re.M):
        out.setdefault(m.group(2), set()).add(m.group(1))
    return out


def main():
    debian = debian_config()
    listed = kd.read(FRAGMENT)
    tap(len(listed) > 0, f"{os.path.relpath(FRAGMENT, TOP)} lists options", [FRAGMENT])

    full, p = configure("all", "all")
    tap(full is not None, "deb.sh config MODULES=all writes a configuration", [p.stderr[-2000:]])
    if full is None:
        return
    exactly(debian, full, listed, os.path.relpath(FRAGMENT, TOP), "Debian's config.amd64_none_amd64")
    test, p = configure("all-test", "all", "test")
    tap(test is not None, "deb.sh config MODULES=all FLAVOUR=test writes a configuration", [p.stderr[-2000:]])
    if test is not None:
        exactly(full, test, kd.read(TEST_FRAGMENT), "kconfig/debian-test.config", "the user flavour")
        tap(kd.value(full, "DEBUG_INFO_BTF") == "y" and kd.value(test, "DEBUG_INFO_BTF") == "n",
            "the user flavour keeps Debian's BTF, the test flavour has none",
            [f"user {kd.value(full, 'DEBUG_INFO_BTF')}, test {kd.value(test, 'DEBUG_INFO_BTF')}"])

    # MODULES=vm
    vm, p = configure("vm", "vm")
    tap(vm is not None, "deb.sh config MODULES=vm writes a configuration", [p.stderr[-2000:]])
    if vm is None:
        return
    want = sorted(set(modules_of("debian-vm.modules") + modules_of("debian-series.modules")))
    found = direct_map(p.stderr)
    missing = [m for m in want if m not in found]
    tap(not missing, f"every one of the {len(want)} listed modules is a module of the tree (localmodconfig finds its obj- line)",
        [f"{m}: no Makefile builds {m}.o" for m in missing])
    off = [f"{m}: {', '.join(f'{s}={kd.value(vm, s)}' for s in sorted(found[m]))}"
           for m in want if m in found and not any(kd.value(vm, s) in ("m", "y") for s in found[m])]
    tap(not off, "every listed module is built (its symbol is m or y)", off)
    gained = [f"{s}: {kd.value(full, s)} with all modules, {kd.value(vm, s)} here"
              for s in kd.changed(full, vm)
              if kd.value(full, s) == "n" or (kd.value(full, s) == "y" and kd.value(vm, s) == "m")]
    tap(not gained, "MODULES=vm turns nothing on and no built-in option into a module", gained)
    # Every other change but m -> n must be an option that can no longer be
    # set: put them all back and olddefconfig must change nothing.
    back = {s: kd.value(full, s) for s in kd.changed(full, vm)
            if kd.value(full, s) != "m" and s not in dict.fromkeys(x.split(":")[0] for x in gained)}
    d = obj("vm-back")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(obj("vm"), ".config")) as src, open(os.path.join(d, ".config"), "w") as dst:
        dst.write(src.read())
        for s, v in sorted(back.items()):
            dst.write(f"# CONFIG_{s} is not set\n" if v == "n" else f"CONFIG_{s}={v}\n")
    p2 = deb(["make", d, "-s", "olddefconfig"])
    again = kd.read(os.path.join(d, ".config")) if p2.returncode == 0 else None
    came = [] if again is None else [f"{s}: {kd.value(vm, s)} -> {kd.value(again, s)}" for s in kd.changed(vm, again)]
    tap(again is not None and not came,
        f"the {len(back)} other options MODULES=vm loses cannot be set without the modules it turns off (put back, none returns)",
        [p2.stderr[-2000:]] if again is None else came)
    nmods = sum(1 for v in vm.values() if v == "m")
    tap(len(want) <= nmods < 300, f"MODULES=vm builds {nmods} modules (the {len(want)} listed and what they depend on)",
        [f"{nmods} modules"])

    # MODULES=host: this machine's modules plus the series'
    host, p = configure("host", "host")
    series = modules_of("debian-series.modules")
    hmap = direct_map(p.stderr) if host is not None else {}
    lost = [m for m in series if not any(kd.value(host or {}, s) in ("m", "y") for s in hmap.get(m, ()))]
    tap(host is not None and not lost, "MODULES=host keeps the series' modules whatever this machine has loaded",
        [p.stderr[-2000:]] if host is None else lost)

    bad_input()


def bad_input():
    scratch = tempfile.mkdtemp(prefix="debcfg-bad-")
    try:
        # A stand-in dpkg-query: linux-config-6.1 of another version, or none.
        fake = os.path.join(scratch, "bin")
        os.makedirs(fake)
        for case, body in (("other", 'printf 6.1.176-1; exit 0'), ("none", 'exit 1')):
            with open(os.path.join(fake, "dpkg-query"), "w") as f:
                f.write("#!/bin/sh\ncase \"$*\" in *linux-config-6.1*) %s ;; esac\nexec /usr/bin/dpkg-query \"$@\"\n" % body)
            os.chmod(os.path.join(fake, "dpkg-query"), 0o755)
            d = os.path.join(TREE, "obj-debcfg-bad")
            shutil.rmtree(d, ignore_errors=True)
            p = deb(["config", d], {"MODULES": "all"}, path_prefix=fake)
            want = ("linux-config-6.1 is 6.1.176-1 but linux-source-6.1 is" if case == "other"
                    else "linux-config-6.1 is not installed")
            tap(p.returncode != 0 and want in p.stderr and not os.path.exists(d),
                f"linux-config-6.1 {'of another version' if case == 'other' else 'missing'}: deb.sh stops, says so, writes nothing",
                [f"exit {p.returncode}", p.stderr[-1000:], f"{d} exists: {os.path.exists(d)}"])
        # Too little disk: a stand-in df with 1 GiB free, a stand-in make
        # that records being run, an empty package cache.
        os.remove(os.path.join(fake, "dpkg-query"))
        with open(os.path.join(fake, "df"), "w") as f:
            f.write("#!/bin/sh\necho 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n"
                    "echo 'fake 2097152 1048576 1048576 50% /'\n")
        with open(os.path.join(fake, "make"), "w") as f:
            f.write(f"#!/bin/sh\ntouch {scratch}/make-ran\nexit 1\n")
        for n in ("df", "make"):
            os.chmod(os.path.join(fake, n), 0o755)
        cache = os.path.join(scratch, "cache")
        out = os.path.join(TOP, "build/deb-test")  # FLAVOUR=test writes there
        before = sorted(os.listdir(out)) if os.path.isdir(out) else None
        p = deb(["build"], {"MODULES": "vm", "FLAVOUR": "test", "DEB_CACHE": cache}, path_prefix=fake)
        after = sorted(os.listdir(out)) if os.path.isdir(out) else None
        ran = os.path.exists(os.path.join(scratch, "make-ran"))
        tap(p.returncode != 0 and "MiB free" in p.stderr and not ran and before == after
            and not os.path.exists(cache),
            "too little disk: deb.sh stops before building, says how much is free, build/deb-test and the cache unchanged",
            [f"exit {p.returncode}", p.stderr[-1000:], f"make ran: {ran}", f"build/deb-test {before} -> {after}",
             f"cache made: {os.path.exists(cache)}"])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
    print(f"1..{len(results)}")
    sys.exit(0 if all(results) else 1)
