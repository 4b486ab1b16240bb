#!/usr/bin/env python3
"""The headline tables of the plain-PyTorch campaigns, as data/README.md quotes them.

  pytorch_report.py parallel SUMMARY.jsonl [COLLECTIVES.jsonl]
  pytorch_report.py plain PLAIN.jsonl

parallel: per model and global batch, each layout's step and peak memory per
GPU, and its ratio to the single-GPU step and to DDP (the same global batch:
an ideal 2-GPU data-parallel step is 0.5 of the single one); the collectives'
bus bandwidth at a few sizes. plain: per model and phase the median step of
each precision over its rounds, the ratios fp32 / strict-fp32, tf32 /
strict-fp32 and bf16-amp / fp32, and the loop's own noise (round 1 vs 2);
the host-cost probe's rows.
"""
import collections
import json
import statistics
import sys


def rows_of(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def layout(r):
    """A short name of a summary row's layout: single, ddp, fsdp-z3, tp2, pp2-1f1b-m4, ...-ac."""
    strategy = r.get("strategy")
    if strategy == "tp":
        name = "tp%d" % r["tp"]
    elif strategy == "pp":
        name = "pp%d-%s-m%d" % (r["pp"], (r.get("schedule") or "").lower(), r["micro_batches"])
    elif strategy == "fsdp":
        name = "fsdp-z%d" % r["zero"] + ("-fp32" if r.get("fsdp_params") == "fp32" else "")
    else:
        name = strategy or "?"
    if r["activation_checkpointing"]:
        name += "-ac"
    return name


def parallel(summary_path, collectives_path=None):
    rows = rows_of(summary_path)
    groups = collections.OrderedDict()
    for r in rows:
        groups.setdefault((r["model"], r["global_batch"], r["seq_len"]), []).append(r)
    print("| model | global batch | layout | step ms | vs single | vs DDP | peak alloc GiB/GPU "
          "| W/GPU |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for (model, batch, seq), members in groups.items():
        by = {layout(r): r for r in members}
        single = by.get("single", {}).get("step_ms")
        ddp = by.get("ddp", {}).get("step_ms")
        for name, r in by.items():
            step = r.get("step_ms")
            cell = ("OOM" if r.get("oom") else "failed" if step is None else "%.1f" % step)
            vs_single = "%.2f" % (step / single) if step and single else "-"
            vs_ddp = "%.2f" % (step / ddp) if step and ddp and r["gpus"] > 1 else "-"
            mem = r.get("peak_allocated_gib")
            power = r.get("power_w_per_gpu")
            print("| %s | %d%s | %s | %s | %s | %s | %s | %s |" % (
                model, batch, " x %d" % seq if seq else "", name, cell, vs_single, vs_ddp,
                "%.1f" % mem if mem is not None else "-", "%.0f" % power if power else "-"))
    if collectives_path:
        coll = rows_of(collectives_path)
        print()
        print("| op | dtype | 1 MiB | 16 MiB | 256 MiB | 1 GiB (busbw GB/s; time at 1 GiB) |")
        print("| --- | --- | --- | --- | --- | --- |")
        table = collections.OrderedDict()
        for c in coll:
            if c.get("kind") == "collective":
                table.setdefault((c["op"], c["dtype"]), {})[c["bytes"]] = c
        for (op, dtype), sizes in table.items():
            cells = []
            for b in (1 << 20, 16 << 20, 256 << 20, 1 << 30):
                c = sizes.get(b)
                cells.append("%.0f" % c["busbw_gbps"] if c else "-")
            big = sizes.get(1 << 30)
            if big:
                cells[-1] += " (%.2f ms)" % (big["time_us"] / 1e3)
            print("| %s | %s | %s |" % (op, dtype, " | ".join(cells)))


def plain(path):
    rows = rows_of(path)
    steps = collections.defaultdict(dict)  # (model, phase) -> precision -> [ms per round]
    rounds = collections.defaultdict(dict)
    for r in rows:
        if r.get("kind") == "plain_loop" and r.get("step_ms"):
            steps[(r["model"], r["phase"])].setdefault(r["precision"], []).append(r["step_ms"])
            rounds[r["key"]][r["round"]] = r["step_ms"]
    print("| model | phase | strict-fp32 | fp32 | tf32 | bf16-amp | fp32/strict | tf32/strict "
          "| bf16/fp32 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    ratios = collections.defaultdict(list)
    for (model, phase), by in steps.items():
        m = {p: statistics.median(v) for p, v in by.items()}

        def ratio(a, b, name):
            if a in m and b in m:
                ratios[name].append(m[a] / m[b])
                return "%.2f" % (m[a] / m[b])
            return "-"
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            model, phase, *("%.2f" % m[p] if p in m else "-" for p in
                            ("strict-fp32", "fp32", "tf32", "bf16-amp")),
            ratio("fp32", "strict-fp32", "fp32/strict"), ratio("tf32", "strict-fp32",
                                                               "tf32/strict"),
            ratio("bf16-amp", "fp32", "bf16/fp32")))
    for name, values in ratios.items():
        print("%s: median %.2f over %d (min %.2f, max %.2f)" % (
            name, statistics.median(values), len(values), min(values), max(values)))
    diffs = sorted(abs(v[2] / v[1] - 1) * 100 for v in rounds.values() if 1 in v and 2 in v)
    if diffs:
        p90 = diffs[min(len(diffs) - 1, int(round(0.9 * (len(diffs) - 1))))]
        print("loop noise, round 1 vs 2: n=%d median %.2f%% p90 %.2f%% max %.2f%%" % (
            len(diffs), statistics.median(diffs), p90, diffs[-1]))
    for r in rows:
        if r.get("kind") == "host_cost":
            print("host cost %-24s python %7.2f us  torchscript %s  (valid %s/%s)" % (
                r["op"], r["python_us"], "%7.2f us" % r["torchscript_us"]
                if r.get("torchscript_us") else "-", r["python_valid"], r["torchscript_valid"]))
        elif r.get("kind") == "host_cost_kernels":
            print("kernels per call: %s" % json.dumps(r["kernels_per_call"]))


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("parallel", "plain"):
        sys.exit(__doc__)
    if sys.argv[1] == "parallel":
        parallel(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        plain(sys.argv[2])
