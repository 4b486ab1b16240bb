#!/usr/bin/env python3
"""Where the unseen GPUs' GEMM error sits: per test GPU and shape regime.

    python3 data/tools/neusight_gemm_regimes.py EVALUATION.json

EVALUATION.json: `perfcast evaluate ... --group-by gpu --output json` of
data/tools/neusight_protocol.sh. For every GPU of its GEMM points, one line per
regime: rows, MAPE, median signed bias ((predicted - measured) / measured),
10-90% coverage, and the share of the GPU's summed absolute error the regime
carries. Regimes: batched (batch > 1) or not; measured time; output tiles of
128 x 128 per SM (below 1: the GPU is not filled by one wave); smallest output
side 64 (a 64-wide output tile); memory-heavy (operand and result bytes per
FLOP above 1 / 32).
"""
import json
import math
import re
import sys

CATALOG = "models/gpu_catalog.json"


def gemm_points(report):
    """(gpu, m, n, k, batch, relative error, covered, measured ms) per GEMM point."""
    out = []
    for p in report["points"]:
        if p["op_class"] != "gemm":
            continue
        shape = dict(kv.split("=") for kv in re.search(r"\{(.*)\}", p["workload"]).group(1).split(","))
        m, n, k = (float(shape[s]) for s in "mnk")
        batch = float(shape.get("batch", 1))
        measured = p["measured_ms"]
        out.append({"gpu": p["gpu"], "m": m, "n": n, "k": k, "batch": batch,
                    "error": p["predicted_ms"] / measured - 1,
                    "covered": p["lo_ms"] <= measured <= p["hi_ms"], "ms": measured})
    return out


def regimes(sms):
    def tiles(p):
        return math.ceil(p["m"] / 128) * math.ceil(p["n"] / 128) * p["batch"] / sms
    return [
        ("all", lambda p: True),
        ("batched", lambda p: p["batch"] > 1),
        ("unbatched", lambda p: p["batch"] == 1),
        ("< 0.2 ms", lambda p: p["ms"] < 0.2),
        ("0.2-5 ms", lambda p: 0.2 <= p["ms"] < 5),
        (">= 5 ms", lambda p: p["ms"] >= 5),
        ("tiles/SM < 1", lambda p: tiles(p) < 1),
        ("tiles/SM 1-4", lambda p: 1 <= tiles(p) < 4),
        ("tiles/SM >= 4", lambda p: tiles(p) >= 4),
        ("output side 64", lambda p: min(p["m"], p["n"]) == 64),
        ("memory-heavy", lambda p: (p["m"] * p["k"] + p["k"] * p["n"] + p["m"] * p["n"]) * 4
         / (2 * p["m"] * p["n"] * p["k"]) > 1 / 32),
    ]


def median(values):
    v = sorted(values)
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def main(path):
    catalog = {g["model"]: g for g in json.load(open(CATALOG))["gpus"]}
    points = gemm_points(json.load(open(path)))
    print(f"{'gpu':16s} {'regime':15s} {'rows':>5s} {'MAPE':>6s} {'bias':>7s} {'cover':>6s} {'share':>6s}")
    for gpu in sorted({p["gpu"] for p in points}):
        rows = [p for p in points if p["gpu"] == gpu]
        total = sum(abs(p["error"]) for p in rows)
        for name, keep in regimes(catalog[gpu]["sm_count"]):
            sel = [p for p in rows if keep(p)]
            if not sel:
                continue
            absolute = sum(abs(p["error"]) for p in sel)
            print(f"{gpu:16s} {name:15s} {len(sel):5d} {100 * absolute / len(sel):5.1f}% "
                  f"{100 * median(p['error'] for p in sel):+6.1f}% "
                  f"{100 * sum(p['covered'] for p in sel) / len(sel):5.1f}% {100 * absolute / total:5.1f}%")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
