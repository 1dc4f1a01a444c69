#!/usr/bin/env python3
"""Table and build/bench-mctp.json from bench/mctp_bench.py's output.

Usage: bench-mctp-report.py BUILD BENCH.jsonl MACHINE.txt

Per bus clock and message size: messages/s (median [min..max] over the
repetitions) at MTU 68 and 254, and the ratio 254/68 measured side by side
in the same guest run.
"""
import json
import statistics
import sys

build, path, machine = sys.argv[1:4]
rows = [json.loads(line) for line in open(path) if line.startswith("{")]
if not rows:
    sys.exit(f"bench-mctp-report: no measurements in {path}")
machine = open(machine).read().strip()
groups = {}
for r in rows:
    groups.setdefault((r["bus_hz"], r["size"], r["mtu"]), []).append(r)

out = {"machine": machine, "results": [], "ratios": []}
print(f"MCTP over I2C (i2c-crosswire), request/response round trips; {machine}")
print(f"{'bus clock':>10} {'size':>6} {'MTU 68 msgs/s':>28} {'MTU 254 msgs/s':>28} "
      f"{'254/68':>7} {'MTU 254 bytes/s':>16}")
for hz, size in sorted({(k[0], k[1]) for k in groups}):
    cells, med = [], {}
    for mtu in (68, 254):
        v = sorted(r["msgs_per_s"] for r in groups.get((hz, size, mtu), []))
        if not v:
            cells.append("not run")
            continue
        med[mtu] = statistics.median(v)
        b = statistics.median(r["bytes_per_s"] for r in groups[(hz, size, mtu)])
        out["results"].append({"bus_hz": hz, "size": size, "mtu": mtu, "msgs_per_s": v,
                               "median": med[mtu], "bytes_per_s_median": b})
        cells.append(f"{med[mtu]:.3f} [{v[0]:.3f}..{v[-1]:.3f}]")
    ratio = med[254] / med[68] if 68 in med and 254 in med else None
    if ratio:
        out["ratios"].append({"bus_hz": hz, "size": size, "mtu254_over_mtu68": ratio})
    b254 = next((r["bytes_per_s_median"] for r in out["results"]
                 if (r["bus_hz"], r["size"], r["mtu"]) == (hz, size, 254)), None)
    print(f"{hz // 1000:>7}kHz {size:>6} {cells[0]:>28} {cells[1]:>28} "
          f"{(f'{ratio:.2f}x' if ratio else '-'):>7} {(f'{b254:.0f}' if b254 else '-'):>16}")
json.dump(out, open(f"{build}/bench-mctp.json", "w"), indent=1)
print(f"written: {build}/bench-mctp.json")
