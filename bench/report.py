#!/usr/bin/env python3
"""report.py - the markdown table and the plot data of a bench-redis run.

    bench/report.py DIR

Reads DIR/results.csv (bench-redis) and DIR/meta.txt (bench-redis.sh and
bench-redis), writes DIR/results.md (every row), DIR/summary.md (the part
the README shows) and the .dat files the plot-*.gp scripts draw.

Every ratio is a baseline's median over shmfilter's median for the same
filter, key length, operation and keys per call, from the same run.
"""
import csv
import os
import sys

BATCH = 100

# Baselines in the order of the table's columns: (system, transport, heading).
BASELINES = [
    ("redis-getbit", "tcp", "Redis GETBIT pipeline, TCP"),
    ("redis-getbit", "unix", "Redis GETBIT pipeline, unix socket"),
    ("redisbloom", "tcp", "RedisBloom, TCP"),
    ("redisbloom", "unix", "RedisBloom, unix socket"),
    ("redisbloom-standin", "unix", "RedisBloom verbs on shmd (test stand-in)"),
    ("shmd", "tcp", "shmd over TCP (BF.*/CF.*)"),
    ("shmd", "unix", "shmd socket (BF.*/CF.*)"),
]
# Redis round trips, what the targets are about (shmd's socket is shown, not targeted).
REDIS = [b for b in BASELINES if b[0] in ("redis-getbit", "redisbloom")]

# Throughput rows of 100 one-key requests in one pipeline ("check-pipelined")
# are kept under this keys-per-call value, beside 1 and BATCH (one request).
PIPELINED = -BATCH

# shmd's TCP listener against the Redis baselines over TCP, per command
# shape: what each system does for it, as (op, keys per call) of its rows.
SHAPES = [
    ("1 key a round trip", "BF.EXISTS / CF.EXISTS; GETBIT: the key's k GETBITs in one pipeline",
     ("check", 1), ("check", 1)),
    (f"{BATCH} keys a round trip, one request each", f"{BATCH} BF.EXISTS in one pipeline; GETBIT: {BATCH}·k GETBITs",
     ("check-pipelined", BATCH), ("check", BATCH)),
    (f"{BATCH} keys in one request", f"BF.MEXISTS / CF.MEXISTS of {BATCH}; GETBIT: {BATCH}·k GETBITs (no multi-key "
     "form)", ("check", BATCH), ("check", BATCH)),
]

TARGETS = {"check_1M": 900, "check_100M": 100, "batch_1M": 100, "scaling": 1.8}


def load(dirname):
    with open(os.path.join(dirname, "results.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    meta = {}
    with open(os.path.join(dirname, "meta.txt")) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    return rows, meta


def ns(v):
    """A duration in ns, with a unit that keeps three figures."""
    if v < 1000:
        return f"{v:.1f} ns" if v < 100 else f"{v:.0f} ns"
    if v < 1e6:
        return f"{v / 1e3:.1f} µs" if v < 1e5 else f"{v / 1e3:.0f} µs"
    return f"{v / 1e6:.2f} ms"


def times(r):
    return f"{r:,.0f}×" if r >= 10 else f"{r:.2f}×"


def rate(v):
    if v >= 1e6:
        return f"{v / 1e6:.1f} M/s"
    if v >= 1e3:
        return f"{v / 1e3:.0f} k/s"
    return f"{v:.0f}/s"


def count(n):
    n = int(n)
    for unit, div in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return f"{n:,}"


class Run:
    def __init__(self, rows, meta):
        self.meta = meta
        self.lat = {}
        self.thr = {}
        self.others = {}   # throughput key -> CPUs used by every other process meanwhile
        self.wcpu = {}     # throughput key -> CPUs the workers got
        self.filters = {}  # name -> first row (facts), in run order
        self.fpr = {}      # (filter, key bytes) -> measured FPR
        for r in rows:
            self.filters.setdefault(r["filter"], r)
            kb = int(r["key_bytes"])
            if r["keys_per_s"]:
                per_call = PIPELINED if r["op"] == "check-pipelined" else int(r["keys_per_call"])
                key = (r["filter"], r["system"], r["transport"], per_call, int(r["workers"]))
                self.thr[key] = float(r["keys_per_s"])
                self.others[key] = float(r["others_cpus"]) if r.get("others_cpus") else None
                self.wcpu[key] = float(r["workers_cpus"]) if r.get("workers_cpus") else None
            else:
                key = (r["filter"], kb, r["system"], r["transport"], r["op"], int(r["keys_per_call"]))
                self.lat[key] = (float(r["median_ns"]), float(r["p99_ns"]))
                if r["op"] == "check":
                    self.fpr[(r["filter"], kb)] = float(r["fpr_measured"])
        present = {(k[2], k[3]) for k in self.lat}
        self.baselines = [b for b in BASELINES if (b[0], b[1]) in present]

    def local(self, f, kb, op, per_call):
        return self.lat.get((f, kb, "shmfilter", "in-process", op, per_call))

    def ratio(self, f, kb, op, per_call, system, transport):
        base = self.lat.get((f, kb, system, transport, op, per_call))
        mine = self.local(f, kb, op, per_call)
        if base is None or mine is None or mine[0] <= 0:
            return None
        return base[0] / mine[0]

    def names(self, kind=None):
        return [n for n, r in self.filters.items() if kind is None or r["type"] == kind]


def describe(r):
    """'1M keys, 1%' or 'click-dedupe: 10M keys, m/n 50, k 16'."""
    keys = count(r["keys"])
    if "click" in r["filter"]:
        return f"click-dedupe: {keys} keys, m/n = 50, k = 16"
    return f"{keys} keys, 1%"


def machine(meta, run):
    lines = [
        f"Machine: {meta.get('cpu', '?')}, {meta.get('cores', '?')} cores, {meta.get('memory_gib', '?')} GiB; "
        f"Linux {meta.get('kernel', '?')}; gcc {meta.get('gcc', '?')}; redis-server {meta.get('redis', '?')}; "
        f"hiredis {meta.get('hiredis', '?')}; shmfilter {meta.get('shmfilter', '?')}.",
        f"{meta.get('mode', '?')} mode, {meta.get('date', '?')}, {meta.get('seconds', '?')} s; load average "
        f"{meta.get('load_before', '?')} before, {meta.get('load_after', '?')} after. Segments on 2 MiB pages: "
        f"{meta.get('huge_pages', '?')}; AVX-512 batch checks: {meta.get('avx512', '?')}.",
    ]
    shmf_others = [v for k, v in run.others.items() if k[1] == "shmfilter" and v is not None]
    if shmf_others and max(shmf_others) > 0.15:
        lines.append(f"**Other work was running on the machine**: during the throughput runs of shmfilter, other "
                     f"processes used up to {max(shmf_others):.2f} of the {meta.get('cores', '?')} CPUs "
                     "(/proc/stat, less the workers' own time); every figure of this run is noisier for it.")
    rb = meta.get("redisbloom", "skipped")
    if rb == "skipped":
        lines.append("RedisBloom: skipped (`SHMF_BENCH_REDISBLOOM` did not name the module's .so; "
                     "Debian does not package it).")
    elif rb == "standin":
        lines.append("RedisBloom: not loaded; its code path ran against shmd's socket as a stand-in "
                     "(test mode: those rows are shmd, not RedisBloom).")
    else:
        lines.append("RedisBloom: loaded; same capacity and error rate as the shmfilter filter "
                     "(its cuckoo filter has no error rate: buckets of 4, its own fingerprints).")
    if meta.get("shmd_tcp", "none") != "none":
        lines.append(f"shmd over TCP: {meta['shmd_tcp']} (its TCP listener on loopback, no password), the same "
                     "filters its unix socket serves.")
    return lines


def method(meta):
    g = meta.get("local_group", "32")
    return [
        f"Clock: {meta.get('timing', '?')}. shmfilter's one-key calls are timed in groups of {g} "
        f"(each sample is a group's time / {g}, so its p99 is that of groups, not of single calls); "
        f"every other sample is one call: one round trip for a baseline. Batch rows ({meta.get('batch', BATCH)} "
        "keys per call) give time per key (call / 100). About half of the checked keys are in the filter; "
        "filters are filled to just under their keys before the checks, and the adds (fresh keys) take them "
        "to at most their keys.",
        "Each baseline cell: median (p99), then shmfilter's speed-up: the baseline's median / shmfilter's "
        "median, same filter, key length, operation and keys per call, same run.",
    ]


def latency_table(run, names, kb):
    cols = run.baselines
    head = ["filter", "operation", "shmfilter (in process)"] + [c[2] for c in cols]
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    ops = [("check", 1, "check, 1 key per call"), ("check", BATCH, f"check, {BATCH} keys per call"),
           ("add", 1, "add, 1 key per call"), ("add", BATCH, f"add, {BATCH} keys per call")]
    for f in names:
        first = True
        for op, per_call, label in ops:
            mine = run.local(f, kb, op, per_call)
            if mine is None:
                continue
            cells = [describe(run.filters[f]) if first else "", label, f"{ns(mine[0])} ({ns(mine[1])})"]
            first = False
            for system, transport, _ in cols:
                base = run.lat.get((f, kb, system, transport, op, per_call))
                if base is None:
                    cells.append("n/a" if system == "redis-getbit" else "")
                    continue
                cells.append(f"{ns(base[0])} ({ns(base[1])}), **{times(base[0] / mine[0])}**")
            out.append("| " + " | ".join(cells) + " |")
    return out


def filters_table(run):
    out = ["| filter | type | keys | k (cuckoo: fingerprint bits) | bits per key | filled when checked | "
           "expected FPR | measured FPR, 16 / 64-byte keys |", "|" + " --- |" * 8]
    for f, r in run.filters.items():
        fp16, fp64 = run.fpr.get((f, 16), -1), run.fpr.get((f, 64), -1)
        out.append(f"| {f} | {r['type']} | {int(r['keys']):,} | {r['k']} | {float(r['bits_per_key']):.1f} | "
                   f"{100 * float(r['load']):.1f}% | {float(r['fpr_target']):.2g} | {fp16:.2g} / {fp64:.2g} |")
    return out


def per_cpu_scaling(run, f, system, transport, per_call):
    """What 2 workers would get over 1 with a free core each: 2 x (keys per worker
    CPU-second with 2 workers) / (the same with 1). None if unknown."""
    r1, r2 = run.thr.get((f, system, transport, per_call, 1)), run.thr.get((f, system, transport, per_call, 2))
    c1, c2 = run.wcpu.get((f, system, transport, per_call, 1)), run.wcpu.get((f, system, transport, per_call, 2))
    if not (r1 and r2 and c1 and c2):
        return None
    return 2 * (r2 / c2) / (r1 / c1)


def throughput_table(run):
    tf = sorted({k[0] for k in run.thr}, key=list(run.filters).index)
    workers = sorted({k[4] for k in run.thr})
    ws = " / ".join(str(w) for w in workers)
    out = ["| filter | system | keys per call | " + " | ".join(f"{w} worker{'s' if w > 1 else ''}" for w in workers)
           + f" | 2 vs 1 | 2 vs 1, per worker CPU-second × 2 | CPUs the workers got ({ws}) | "
           f"CPUs other processes used ({ws}) |", "|" + " --- |" * (7 + len(workers))]
    series = [("shmfilter", "in-process", "shmfilter (in process)")] + run.baselines

    def cpus(table, key):
        return " / ".join("?" if table.get(key + (w,)) is None else f"{table[key + (w,)]:.2f}" for w in workers)

    for f in tf:
        first = True
        for system, transport, label in series:
            for per_call in (1, BATCH, PIPELINED):
                v = [run.thr.get((f, system, transport, per_call, w)) for w in workers]
                if v[0] is None:
                    continue
                scale = f"{v[1] / v[0]:.2f}×" if len(v) > 1 and v[1] else ""
                proj = per_cpu_scaling(run, f, system, transport, per_call) if system == "shmfilter" else None
                key = (f, system, transport, per_call)
                calls = f"{BATCH}, pipelined" if per_call == PIPELINED else str(per_call)
                out.append(f"| {describe(run.filters[f]) + ' (' + f + ')' if first else ''} | {label} | {calls} | "
                           + " | ".join(rate(x) if x else "" for x in v)
                           + f" | {scale} | {'' if proj is None else f'{proj:.2f}×'} | {cpus(run.wcpu, key)} | "
                           f"{cpus(run.others, key)} |")
                first = False
    return out


def targets(run):
    """Rows of the targets table: (what, baseline, ratio, target)."""
    res = []
    b1m = "bloom-1M" if "bloom-1M" in run.filters else None
    b100m = "bloom-100M" if "bloom-100M" in run.filters else None
    for f, key, label in ((b1m, "check_1M", "single check, 1M keys"), (b100m, "check_100M", "single check, 100M keys")):
        for system, transport, name in REDIS:
            r = run.ratio(f, 16, "check", 1, system, transport) if f else None
            if r is not None:
                res.append((f"{label}: ≥ {TARGETS[key]}× a Redis round trip", name, r, TARGETS[key]))
    for system, transport, name in REDIS:
        r = run.ratio(b1m, 16, "check", BATCH, system, transport) if b1m else None
        if r is not None:
            res.append((f"batched ({BATCH} keys), 1M keys: ≥ {TARGETS['batch_1M']}× Redis pipelined", name, r,
                        TARGETS["batch_1M"]))
    for f in run.names():
        one, two = run.thr.get((f, "shmfilter", "in-process", 1, 1)), run.thr.get((f, "shmfilter", "in-process", 1, 2))
        if one and two:
            o1 = run.others.get((f, "shmfilter", "in-process", 1, 1))
            o2 = run.others.get((f, "shmfilter", "in-process", 1, 2))
            busy = f" (other processes used {o1:.2f} and {o2:.2f} CPUs meanwhile)" if o1 is not None and o2 is not None else ""
            res.append((f"throughput, 1 → 2 worker processes: ≥ {TARGETS['scaling']}×", f"shmf_check, {f}{busy}",
                        two / one, TARGETS["scaling"]))
            proj = per_cpu_scaling(run, f, "shmfilter", "in-process", 1)
            if proj is not None:
                res.append((f"the same, projected to a free core per worker (2 × keys per worker CPU-second, "
                             f"2 workers over 1)", f"shmf_check, {f}", proj, None))
    return res


def shape_ns(run, f, shape, system, transport, kb=16):
    """Median ns per key of @p system doing command shape @p shape, or None."""
    _, _, verbs, getbit = shape
    op, per_call = getbit if system == "redis-getbit" else verbs
    v = run.lat.get((f, kb, system, transport, op, per_call))
    return v[0] if v else None


def tcp_targets(run):
    """The TCP listener's target: shmd over TCP serves at least as many keys
    per second as each Redis baseline over TCP, for the same command shape
    (one connection)."""
    res = []
    for f in run.names("bloom"):
        for shape in SHAPES:
            mine = shape_ns(run, f, shape, "shmd", "tcp")
            for system, transport, name in REDIS:
                if transport != "tcp":
                    continue
                base = shape_ns(run, f, shape, system, transport)
                if mine and base:
                    res.append((f"shmd over TCP ≥ Redis, {shape[0]}, {f}", name, base / mine, 1.0))
    return res


def tcp_table(run, kb=16):
    """Keys per second of one connection, per command shape: shmd over TCP
    beside the Redis baselines over TCP (and shmd's unix socket)."""
    cols = [b for b in run.baselines if b[1] == "tcp" and b[0] != "shmd"]
    ref = [b for b in run.baselines if b[0] == "shmd" and b[1] == "unix"]
    head = ["filter", "command shape", "shmd over TCP"] + [c[2] for c in cols] + [r[2] for r in ref]
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for f in run.names():
        first = True
        for shape in SHAPES:
            mine = shape_ns(run, f, shape, "shmd", "tcp", kb)
            if mine is None:
                continue
            cells = [f"{describe(run.filters[f])} ({f})" if first else "", f"{shape[0]} ({shape[1]})",
                     f"{rate(1e9 / mine)} ({ns(mine)} a key)"]
            first = False
            for system, transport, _ in cols + ref:
                base = shape_ns(run, f, shape, system, transport, kb)
                if base is None:
                    cells.append("n/a" if system == "redis-getbit" else "")
                elif system == "shmd":
                    cells.append(f"{rate(1e9 / base)}")
                else:
                    cells.append(f"{rate(1e9 / base)}; shmd over TCP: **{times(base / mine)}**")
            out.append("| " + " | ".join(cells) + " |")
    return out


def targets_table(run):
    out = ["| target (16-byte keys) | against | measured | met |", "| --- | --- | --- | --- |"]
    for what, against, r, t in targets(run) + tcp_targets(run):
        met = "(a projection)" if t is None else "yes" if r >= t else "**no**"
        out.append(f"| {what} | {against} | {times(r)} | {met} |")
    return out


# One colour per system in every plot; dashes tell cuckoo from Bloom, or 100 keys per call from 1.
COLORS = {
    ("shmfilter", "in-process"): "#d62728",
    ("redis-getbit", "tcp"): "#1f77b4",
    ("redis-getbit", "unix"): "#17becf",
    ("redisbloom", "tcp"): "#2ca02c",
    ("redisbloom", "unix"): "#8fd175",
    ("redisbloom-standin", "unix"): "#9467bd",
    ("shmd", "unix"): "#ff7f0e",
    ("shmd", "tcp"): "#8c564b",
}


def write_dat(path, header, rows, styles=None):
    """A gnuplot data file with a header of column titles; with @p styles
    ((colour, dash type) per data column), a .style file beside it that
    the plot scripts load: lcs and dts, one word per column."""
    with open(path, "w") as f:
        f.write(" ".join(f'"{h}"' for h in header) + "\n")
        for row in rows:
            f.write(" ".join("?" if v is None else (v if isinstance(v, str) else f"{v:.6g}") for v in row) + "\n")
    if styles is not None:
        with open(path[:-4] + ".style", "w") as f:
            f.write('lcs = "' + " ".join(c for c, _ in styles) + '"\n')
            f.write('dts = "' + " ".join(str(d) for _, d in styles) + '"\n')


def plot_data(run, d):
    """latency-1.dat / latency-100.dat: ns per check against keys in the filter (1% filters, 16-byte keys);
    throughput-N.dat: keys/s against workers; ratios-1.dat / ratios-100.dat: speed-up per filter."""
    one_pct = [f for f in run.names() if "click" not in f]
    for per_call in (1, BATCH):
        series = []  # (title, filter type, system, transport)
        for kind in ("bloom", "cuckoo"):
            series.append((f"shmfilter {kind}", kind, "shmfilter", "in-process"))
            for system, transport, name in run.baselines:
                series.append((f"{name} ({kind})", kind, system, transport))
        sizes = sorted({int(run.filters[f]["keys"]) for f in one_pct})
        rows, used = [], [s for s in series if any(
            (f, 16, s[2], s[3], "check", per_call) in run.lat and run.filters[f]["type"] == s[1] for f in one_pct)]
        for n in sizes:
            row = [n]
            for _, kind, system, transport in used:
                f = next((f for f in one_pct if int(run.filters[f]["keys"]) == n and run.filters[f]["type"] == kind), None)
                v = run.lat.get((f, 16, system, transport, "check", per_call)) if f else None
                row.append(v[0] if v else None)
            rows.append(row)
        write_dat(os.path.join(d, f"latency-{per_call}.dat"), ["keys"] + [s[0] for s in used], rows,
                  [(COLORS[(s[2], s[3])], 1 if s[1] == "bloom" else 2) for s in used])

    tf = sorted({k[0] for k in run.thr}, key=list(run.filters).index)
    with open(os.path.join(d, "throughput-filters.txt"), "w") as f:
        f.write(" ".join(tf) + "\n")
    for f in tf:
        series = [("shmfilter", "in-process", "shmfilter")] + run.baselines
        cols, heads = [], []
        for system, transport, name in series:
            for per_call in (1, BATCH):
                if (f, system, transport, per_call, 1) in run.thr:
                    cols.append((system, transport, per_call))
                    heads.append(f"{name}, {per_call} key{'s' if per_call > 1 else ''}/call")
        workers = sorted({k[4] for k in run.thr if k[0] == f})
        rows = [[w] + [run.thr.get((f, s, t, p, w)) for s, t, p in cols] for w in workers]
        write_dat(os.path.join(d, f"throughput-{f}.dat"), ["workers"] + heads, rows,
                  [(COLORS[(s, t)], 1 if p == 1 else 2) for s, t, p in cols])

    for per_call in (1, BATCH):
        used = [b for b in run.baselines if any(run.ratio(f, 16, "check", per_call, b[0], b[1]) for f in run.names())]
        rows = [[f] + [run.ratio(f, 16, "check", per_call, s, t) for s, t, _ in used] for f in run.names()]
        write_dat(os.path.join(d, f"ratios-{per_call}.dat"), ["filter"] + [b[2] for b in used], rows,
                  [(COLORS[(b[0], b[1])], 1) for b in used])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report.py DIR (with results.csv and meta.txt from bench-redis.sh)")
    d = sys.argv[1]
    rows, meta = load(d)
    if not rows:
        sys.exit(f"report.py: {d}/results.csv has no rows")
    run = Run(rows, meta)

    head = [f"Benchmark: shmfilter against networked Redis ({meta.get('mode', '?')} run)", ""]
    head += machine(meta, run) + [""] + method(meta) + [""]
    full = list(head)
    full += ["Targets set for the comparison with networked Redis and for shmd's TCP listener, from this run:", ""] + targets_table(run) + [""]
    tcp = tcp_table(run)
    tcp_head = ["shmd over TCP against Redis over TCP, same command shapes: keys per second of one "
                "connection (1e9 / median ns per key), 16-byte keys; the ratio is shmd's keys per second over the "
                "baseline's:", ""]
    if len(tcp) > 2:
        full += tcp_head + tcp + [""]
    full += ["Filters:", ""] + filters_table(run) + [""]
    for kind in ("bloom", "cuckoo"):
        for kb in (16, 64):
            if run.names(kind):
                full += [f"{kind.capitalize()} filters, {kb}-byte keys, time per key, median (p99):", ""]
                full += latency_table(run, run.names(kind), kb) + [""]
    if run.thr:
        full += [f"Throughput: checks per second of 1, 2 and 4 worker processes together (16-byte keys, "
                 f"median of rounds of {meta.get('throughput_seconds', '?')} s, {meta.get('cores', '?')} cores; "
                 "Redis and shmd run on the same cores; the last column counts them among the other processes "
                 "in the baselines' rows; the CPU columns come from /proc/stat and the workers' rusage; "
                 "'per worker CPU-second × 2' is what two workers would get over one with a free core each):", ""] + throughput_table(run) + [""]
    with open(os.path.join(d, "results.md"), "w") as f:
        f.write("\n".join(full))

    summary = list(head)
    summary += targets_table(run) + [""]
    if len(tcp) > 2:
        summary += tcp_head + tcp + [""]
    for kind in ("bloom", "cuckoo"):
        if run.names(kind):
            summary += [f"{kind.capitalize()} filters, 16-byte keys, time per key, median (p99):", ""]
            summary += latency_table(run, run.names(kind), 16) + [""]
    if run.thr:
        summary += ["Throughput, checks per second, 16-byte keys:", ""] + throughput_table(run) + [""]
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write("\n".join(summary))
    plot_data(run, d)


if __name__ == "__main__":
    main()
