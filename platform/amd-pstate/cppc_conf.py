"""Read cppc.conf (KEY=VALUE lines, '#' comments, decimal or 0x numbers).

Shared by gen-ssdt.py (host, build time) and tests/pstate (guest)."""


def load_conf(path):
    conf = {}
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if line:
            key, value = line.split("=", 1)
            conf[key.strip()] = int(value.strip(), 0)
    return conf


def pstates(conf):
    """The P-states' frequencies in MHz (PSS_Pn_FREQ), P0 first."""
    out = []
    while f"PSS_P{len(out)}_FREQ" in conf:
        out.append(conf[f"PSS_P{len(out)}_FREQ"])
    return out
