#!/usr/bin/env python3
"""Turn idmap-bench output into the table, build/bench.json and charts.

Usage: bench-report.py BUILD PATCHED.jsonl UNPATCHED.jsonl

Every figure is the median of the repetitions, with min and max. Ratios are
throughputs relative to plain tmpfs measured in the same guest run
(1.00 = as fast; 0.50 = half as fast), so they survive TCG's distortion of
absolute numbers better than the numbers themselves.
"""
import json
import os
import statistics
import subprocess
import sys

build, patched_path, unpatched_path = sys.argv[1:4]
METADATA = ["create", "stat", "readdir", "chown", "unlink"]
WORKLOADS = METADATA + ["write4k", "read4k"]
CONFIGS = [("idmapped", "(b) idmapped tmpfs"), ("nested", "(c) userns+nested"),
           ("ramfs", "(b') idmapped ramfs"), ("bindfs", "(d) bindfs --map")]


def load(path, kernel):
    rows, skipped = [], []
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        sys.exit(f"bench-report: {path}: {e.strerror} (did the guest run?)")
    for line in lines:
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        r["kernel"] = kernel
        if "skipped" in r:
            skipped.append(r)
            continue
        t = sorted(r["seconds"])
        r["median"], r["min"], r["max"] = statistics.median(t), t[0], t[-1]
        r["ops"] = r["n"] / r["median"] if r["median"] > 0 else float("inf")
        rows.append(r)
    return rows, skipped


rows, skipped = load(patched_path, "patched")
urows, uskipped = load(unpatched_path, "unpatched")
if not rows:
    sys.exit("bench-report: no measurements from the patched kernel")


def get(kernel_rows, config, layout, workload, n=None):
    for r in kernel_rows:
        if (r["config"], r["layout"], r["workload"]) == (config, layout, workload) and \
                (n is None or r["n"] == n):
            return r
    return None


def machine(name):
    try:
        return open(os.path.join(build, "vm", name, "machine.txt")).read().strip()
    except OSError:
        return "unknown"


out = {"machine": machine("bench-patched"), "results": [], "ratios": [], "view": [],
       "skipped": [{"kernel": s["kernel"], "config": s["config"], "reason": s["skipped"]}
                   for s in skipped + uskipped],
       "targets": []}
for r in rows + urows:
    out["results"].append({k: r[k] for k in ("kernel", "config", "layout", "workload", "n",
                                              "median", "min", "max", "ops", "seconds")})

print(f"\nidmap-bench on {out['machine']}")
if "clock=icount" in out["machine"]:
    print("clock=icount: QEMU -icount shift=0, guest time = guest instructions executed "
          "(1 ns per instruction);\n  ops/s are per 10^9 instructions: deterministic, "
          "no caches modelled")
n = next((r["n"] for r in rows if r["workload"] != "view"), None)
print(f"N = {n} files, median of {len(rows[0]['seconds'])} repetitions [min..max]; "
      "ratio = ops/s relative to (a) plain tmpfs in the same run\n")
hdr = f"{'layout':6} {'workload':8} {'(a) plain ops/s':>26} " + \
      " ".join(f"{c[1]:>19}" for c in CONFIGS) + f" {'patched/unpatched':>18}"
print(hdr)
print("-" * len(hdr))
for layout in ("flat", "tree"):
    for w in WORKLOADS:
        a = get(rows, "plain", layout, w)
        if not a:
            continue
        cells = []
        for c, _ in CONFIGS:
            r = get(rows, c, layout, w)
            if r:
                ratio = r["ops"] / a["ops"]
                spread = (a["median"] / r["max"], a["median"] / r["min"])
                out["ratios"].append({"config": c, "layout": layout, "workload": w,
                                      "ratio": ratio, "ratio_min": spread[0],
                                      "ratio_max": spread[1]})
                cells.append(f"{ratio:19.3f}")
            elif any(x["config"] == c for x in skipped):
                cells.append(f"{'skipped':>19}")
            else:
                cells.append(f"{'not run':>19}")
        u = get(urows, "plain", layout, w)
        pu = ""
        if u:
            pu = a["ops"] / u["ops"]
            out["ratios"].append({"config": "plain-patched/unpatched", "layout": layout,
                                  "workload": w, "ratio": pu})
            pu = f"{pu:18.3f}"
        ops = f"{a['ops']:10.0f} [{a['n'] / a['max']:.0f}..{a['n'] / a['min']:.0f}]"
        print(f"{layout:6} {w:8} {ops:>26} " + " ".join(cells) + f" {pu:>18}")

views = sorted({r["n"] for r in rows if r["workload"] == "view"})
if views:
    print(f"\nGiving a container a shifted view of a tree of N files (median [min..max])")
    print(f"{'N':>9} {'idmapped mount':>28} {'copy + chown':>30} {'speedup':>10}")
    for vn in views:
        i = get(rows, "idmapped", "tree", "view", vn)
        c = get(rows, "copychown", "tree", "view", vn)
        entry = {"n": vn}
        cols = []
        for name, r in (("idmapped", i), ("copychown", c)):
            if r:
                entry[name] = {"median": r["median"], "min": r["min"], "max": r["max"]}
                cols.append(f"{r['median'] * 1e3:10.3f} ms [{r['min'] * 1e3:.2f}..{r['max'] * 1e3:.2f}]")
            else:
                cols.append("skipped")
        speed = f"{c['median'] / i['median']:9.0f}x" if i and c else ""
        out["view"].append(entry)
        print(f"{vn:9} {cols[0]:>28} {cols[1]:>30} {speed:>10}")

for s in out["skipped"]:
    print(f"skipped: {s['kernel']} {s['config']}: {s['reason']}")


# Targets from the issue, checked against the numbers, misses stated.
def target(name, ok, detail):
    out["targets"].append({"target": name, "met": ok, "detail": detail})


for c in ("idmapped", "nested"):
    for w, limit in (("stat", 0.05), ("create", 0.05), ("chown", 0.10)):
        for layout in ("flat", "tree"):
            r = next((x for x in out["ratios"] if (x["config"], x["workload"], x["layout"]) ==
                      (c, w, layout)), None)
            if r:
                target(f"{c} {w} {layout} within {limit:.0%} of plain", r["ratio"] >= 1 - limit,
                       f"ratio {r['ratio']:.3f} ({abs(1 - r['ratio']):.1%} "
                       f"{'slower' if r['ratio'] < 1 else 'faster'})")
    for w in METADATA:
        for layout in ("flat", "tree"):
            r = get(rows, c, layout, w)
            d = get(rows, "bindfs", layout, w)
            if r and d:
                target(f"{c} {w} {layout} >= 10x bindfs", r["ops"] >= 10 * d["ops"],
                       f"{r['ops'] / d['ops']:.1f}x")
big = get(rows, "idmapped", "tree", "view", max(views)) if views else None
if big:
    target(f"idmapped view of {big['n']} files under 10 ms", big["median"] < 0.010,
           f"{big['median'] * 1e3:.3f} ms")
for x in out["ratios"]:
    if x["config"] == "plain-patched/unpatched":
        target(f"patched within 2% of unpatched: {x['workload']} {x['layout']}",
               x["ratio"] >= 0.98, f"ratio {x['ratio']:.3f}")
print("\nTargets:")
for t in out["targets"]:
    print(f"  {'met ' if t['met'] else 'MISS'} {t['target']}: {t['detail']}")

json_path = os.path.join(build, "bench.json")
with open(json_path, "w") as f:
    json.dump(out, f, indent=1)

# Charts (gnuplot): ratios to plain per workload, and the N-scaling.
dat = os.path.join(build, "bench-ratios.dat")
with open(dat, "w") as f:
    f.write("# workload " + " ".join(c for c, _ in CONFIGS) + "\n")
    for w in WORKLOADS:
        vals = []
        for c, _ in CONFIGS:
            r = next((x for x in out["ratios"] if (x["config"], x["workload"], x["layout"]) ==
                      (c, w, "flat")), None)
            vals.append(f"{r['ratio']:.4f}" if r else "NaN")
        f.write(w + " " + " ".join(vals) + "\n")
sdat = os.path.join(build, "bench-scaling.dat")
with open(sdat, "w") as f:
    for e in out["view"]:
        if "idmapped" in e and "copychown" in e:
            f.write(f"{e['n']} {e['idmapped']['median']} {e['copychown']['median']}\n")
gp = f"""
set terminal pngcairo size 1000,420 font ",10"
set output '{build}/bench-ratios.png'
set title "Throughput relative to plain tmpfs (flat directory, N={n}; 1.0 = as fast)"
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set yrange [0:*]
set grid ytics
set key outside right
set ylabel "ops/s ratio to (a)"
plot '{dat}' using 2:xtic(1) title "(b) idmapped tmpfs", '' using 3 title "(c) userns+nested", \
     '' using 4 title "(b') idmapped ramfs", '' using 5 title "(d) bindfs --map"
set output '{build}/bench-scaling.png'
set title "Time to give a container a shifted view of N files"
unset style
set autoscale y
set style data linespoints
set logscale xy
set xlabel "files in the tree (N)"
set ylabel "seconds (median)"
set key left top
plot '{sdat}' using 1:2 title "one idmapped mount", '' using 1:3 title "copy + chown"
"""
if not out["view"]:  # no scaling data: draw the ratio chart only
    gp = gp[:gp.index(f"set output '{build}/bench-scaling.png'")]
if not any(r["config"] in dict(CONFIGS) for r in out["ratios"]):  # no per-op ratios
    gp = gp[:gp.index(f"set output '{build}/bench-ratios.png'")] + \
        (gp[gp.index(f"set output '{build}/bench-scaling.png'"):] if out["view"] else "")
try:
    subprocess.run(["gnuplot"], input=gp, text=True, check=True)
    print(f"\ncharts: {build}/bench-ratios.png {build}/bench-scaling.png")
except (OSError, subprocess.CalledProcessError) as e:
    print(f"\ncharts not drawn: gnuplot failed ({e})")
print(f"json: {json_path}")
