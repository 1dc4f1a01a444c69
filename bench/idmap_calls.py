"""Count id-mapping calls per stat/chown with the function tracer (see idmap-calls-job.sh)."""
import os, sys, collections
T = "/sys/kernel/debug/tracing"
def w(f, v):
    with open(f"{T}/{f}", "w") as fh: fh.write(v)
funcs = sys.argv[2:]
path, op = sys.argv[1].split(":")
w("set_ftrace_filter", "\n".join(funcs) + "\n")
w("current_tracer", "function")
w("trace", "")
N = 1000
os.stat(path)
w("tracing_on", "1")
for i in range(N):
    if op == "stat":
        os.stat(path)
    else:
        os.chown(path, 101000 + (i & 1), -1) if "idm" in path else os.chown(path, 1000 + (i & 1), -1)
w("tracing_on", "0")
c = collections.Counter()
for line in open(f"{T}/trace"):
    if line.startswith("#"): continue
    parts = line.split()
    for p in parts:
        if p in funcs:
            c[p] += 1; break
print(path, op, "per op:", {f: round(c[f] / N, 2) for f in funcs})
w("current_tracer", "nop")
