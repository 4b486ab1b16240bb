#!/usr/bin/env python3
"""How fast NeuSight's memory-bound kernels move their bytes, per GPU and size.

For every GPU in NeuSight's kernel set (kernels.csv from neusight_convert.py)
and each memory-bound class (elementwise, layernorm, softmax), per working-set
bin (bytes read and written, 8 per FP32 element, over the GPU's L2 size from
models/gpu_catalog.json) it prints: rows, the median achieved bandwidth as a
share of the GPU's element-wise bandwidth (the median over its element-wise
rows of at least 8 x L2), and the marginal bandwidth of a least-squares line
time = floor + bytes / rate within the bin.

It answers whether a norm or softmax that NeuSight times repeatedly on the
same tensors runs from the L2 instead of DRAM (it does not: see --check) and
shows that the L4 alone runs layer norm and softmax at its element-wise
bandwidth where every other GPU reaches 0.5-0.85 of it.

Usage: neusight_bandwidth.py [--check] [KERNELS.csv [GPU_CATALOG.json]]
--check exits 1 unless the two findings data/external/neusight/README.md
states still hold on the data.
"""
import csv
import json
import os
import statistics
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CLASSES = ("elementwise", "layernorm", "softmax")
BINS = (0, 0.5, 1.5, 4, 16, float("inf"))  # working set / L2
BYTES_PER_ELEMENT = 8  # FP32: one read and one write
TRAINING = ("P4-8GB", "P100-PCIE-16GB", "V100-PCIE-32GB", "T4-16GB", "A100-PCIE-40GB")


def load(kernels_path, catalog_path):
    with open(catalog_path) as f:
        l2 = {g["model"]: g["l2_cache_mib"] * 2**20 for g in json.load(f)["gpus"]}
    rows = []
    with open(kernels_path, newline="") as f:
        for r in csv.DictReader(f):
            if r["family"] not in CLASSES:
                continue
            params = dict(kv.split("=") for kv in r["params"].split(";"))
            elements = (int(params["numel"]) if "numel" in params
                        else int(params["rows"]) * int(params["cols"]))
            ws = elements * BYTES_PER_ELEMENT
            rows.append({"gpu": r["gpu"], "class": r["family"], "bytes": ws,
                         "ms": float(r["mean_ms"]), "l2_share": ws / l2[r["gpu"]]})
    return rows


def line(points):
    """Least squares ms = floor + bytes / rate; returns (floor_ms, GB/s) or None."""
    n = len(points)
    if n < 4:
        return None
    sx = sum(b for b, _ in points)
    sy = sum(t for _, t in points)
    sxx = sum(b * b for b, _ in points)
    sxy = sum(b * t for b, t in points)
    det = n * sxx - sx * sx
    if det <= 0:
        return None
    slope = (n * sxy - sx * sy) / det
    if slope <= 0:
        return None
    return (sy - slope * sx) / n, 1e-6 / slope


def summarize(rows):
    """{(gpu, class, bin index): (rows, median share, marginal rate)}, {gpu: GB/s}."""
    dram = {}
    for gpu in {r["gpu"] for r in rows}:
        big = [r["bytes"] / r["ms"] / 1e6 for r in rows
               if r["gpu"] == gpu and r["class"] == "elementwise" and r["l2_share"] >= 8]
        if big:
            dram[gpu] = statistics.median(big)
    out = {}
    for gpu in dram:
        for cls in CLASSES:
            for i in range(len(BINS) - 1):
                sel = [r for r in rows if r["gpu"] == gpu and r["class"] == cls
                       and BINS[i] <= r["l2_share"] < BINS[i + 1]]
                if not sel:
                    continue
                share = statistics.median(r["bytes"] / r["ms"] / 1e6 / dram[gpu] for r in sel)
                fit = line([(r["bytes"], r["ms"]) for r in sel])
                out[(gpu, cls, i)] = (len(sel), share, fit[1] if fit else None)
    return out, dram


def check(rows, summary, dram):
    """The README's two findings; returns the failures."""
    failures = []
    # 1. No L2 residency where it could show: the A100-40GB (40 MB of L2, the
    #    one large-L2 training GPU) moves norm/softmax working sets of at most
    #    1.5 x L2 no faster than DRAM.
    for cls in ("layernorm", "softmax"):
        got = [summary.get(("A100-PCIE-40GB", cls, i)) for i in (0, 1)]
        rates = [g[2] for g in got if g and g[2]]
        if not rates:
            failures.append(f"A100-PCIE-40GB {cls}: no rows of at most 1.5 x L2")
        elif max(rates) > dram["A100-PCIE-40GB"]:
            failures.append(f"A100-PCIE-40GB {cls}: marginal {max(rates):.0f} GB/s above its "
                            f"element-wise {dram['A100-PCIE-40GB']:.0f}: L2 residency shows")
    # 2. Beyond 4 x L2 (median over those rows) the L4 runs layer norm and
    #    softmax at >= 0.95 of its element-wise bandwidth, every training GPU
    #    at < 0.9.
    for cls in ("layernorm", "softmax"):
        for gpu in ("L4-24GB",) + TRAINING:
            shares = [r["bytes"] / r["ms"] / 1e6 / dram[gpu] for r in rows
                      if r["gpu"] == gpu and r["class"] == cls and r["l2_share"] >= 4]
            if not shares:
                failures.append(f"{gpu} {cls}: no rows beyond 4 x L2")
                continue
            share = statistics.median(shares)
            if (share >= 0.95) != (gpu == "L4-24GB") or (gpu != "L4-24GB" and share >= 0.9):
                failures.append(f"{gpu} {cls}: median share of element-wise bandwidth "
                                f"{share:.2f} beyond 4 x L2")
    return failures


def main(argv):
    do_check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    kernels = args[0] if args else os.path.join(ROOT, "data/external/neusight/kernels.csv")
    catalog = args[1] if len(args) > 1 else os.path.join(ROOT, "models/gpu_catalog.json")
    rows = load(kernels, catalog)
    summary, dram = summarize(rows)
    print(f"{'gpu':15} {'class':11} {'ws/L2':>9} {'rows':>5} {'share':>6} {'marginal GB/s':>14}"
          f"   (share: median bytes/s over the GPU's element-wise GB/s)")
    for (gpu, cls, i), (n, share, rate) in sorted(summary.items()):
        label = f"{BINS[i]:g}-{BINS[i + 1]:g}"
        marginal = f"{rate:14.0f}" if rate else f"{'-':>14}"
        print(f"{gpu:15} {cls:11} {label:>9} {n:5d} {share:6.2f} {marginal}   "
              f"(element-wise {dram[gpu]:.0f} GB/s)")
    if do_check:
        failures = check(rows, summary, dram)
        for f in failures:
            print("FAIL:", f, file=sys.stderr)
        if failures:
            return 1
        print("check: no L2 residency on the A100-40GB; the L4 alone runs norm/softmax at "
              "element-wise bandwidth")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
