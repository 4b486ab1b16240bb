#!/usr/bin/env python3
"""Prints the NeuSight protocol's figures beside NeuSight's own.

Reads the test points of a perfcast evaluation -- the JSON report of
`perfcast evaluate --train-gpu ... --test-gpu ... --output json`, or the CSV
of `transfer_bench --points` -- and NeuSight's end-to-end predictions
(neusight_e2e.csv from neusight_convert.py), and prints per test GPU and
class: rows, MAPE, signed bias (median and mean of (predicted - measured) /
measured) and 10-90% interval coverage; end to end the same beside
NeuSight's MAPE on the same rows.

With --summary LABEL it prints one line instead: the GEMMs' and the end-to-end
rows' MAPE, median signed bias and coverage over all test GPUs of all the
files given, then each test GPU's GEMM and end-to-end MAPE (the protocol
scripts' tables).

Usage: neusight_compare.py EVALUATION.json|POINTS.csv NEUSIGHT_E2E.csv
       neusight_compare.py --summary LABEL EVALUATION.json|POINTS.csv...
"""
import csv
import json
import statistics
import sys


def load_points(path):
    if path.endswith(".json"):
        with open(path) as f:
            rows = json.load(f)["points"]
    else:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    for r in rows:
        r["level"] = int(r["level"])
        for key in ("measured_ms", "predicted_ms", "lo_ms", "hi_ms"):
            r[key] = float(r[key])
    return rows


def stats(points):
    n = len(points)
    if n == 0:
        return "rows     0"
    errors = [(p["predicted_ms"] - p["measured_ms"]) / p["measured_ms"] for p in points]
    covered = sum(1 for p in points if p["lo_ms"] <= p["measured_ms"] <= p["hi_ms"])
    return "rows %5d  MAPE %5.1f%%  bias %+6.1f%% (mean %+6.1f%%)  coverage %5.1f%%" % (
        n, 100 * sum(abs(e) for e in errors) / n, 100 * statistics.median(errors),
        100 * sum(errors) / n, 100 * covered / n)


def mape_bias_coverage(points):
    if not points:
        return "     -        -        -"
    errors = [(p["predicted_ms"] - p["measured_ms"]) / p["measured_ms"] for p in points]
    covered = sum(1 for p in points if p["lo_ms"] <= p["measured_ms"] <= p["hi_ms"])
    return "%5.1f%% %+6.1f%% %5.1f%%" % (100 * sum(abs(e) for e in errors) / len(errors),
                                       100 * statistics.median(errors), 100 * covered / len(points))


def summary(label, points):
    gemm = [p for p in points if p["level"] == 1 and p["op_class"] == "gemm"]
    e2e = [p for p in points if p["level"] == 2]
    per_gpu = []
    for gpu in sorted({p["gpu"] for p in points}):
        g = [p for p in gemm if p["gpu"] == gpu]
        e = [p for p in e2e if p["gpu"] == gpu]
        mape = lambda sel: ("%.1f" % (100 * sum(abs(p["predicted_ms"] - p["measured_ms"]) /
                                                 p["measured_ms"] for p in sel) / len(sel))
                            if sel else "-")
        per_gpu.append("%s %s/%s" % (gpu, mape(g), mape(e)))
    print("%-30s gemm %s  e2e %s  | %s" % (label, mape_bias_coverage(gemm),
                                           mape_bias_coverage(e2e), "  ".join(per_gpu)))


def main():
    args = sys.argv[1:]
    if len(args) >= 3 and args[0] == "--summary":
        summary(args[1], [p for path in args[2:] for p in load_points(path)])
        return
    if len(args) != 2:
        sys.exit(__doc__)
    points = load_points(args[0])
    with open(args[1], newline="") as f:
        neusight = list(csv.DictReader(f))
    gpus = sorted({p["gpu"] for p in points})
    print("Operations (level 1), per test GPU and class:")
    classes = sorted({p["op_class"] for p in points if p["level"] == 1})
    for op_class in classes:
        for gpu in gpus + ["all"]:
            sel = [p for p in points if p["level"] == 1 and p["op_class"] == op_class and
                   (gpu == "all" or p["gpu"] == gpu)]
            if sel:
                print("  %-12s %-16s %s" % (op_class, gpu, stats(sel)))
    print("End to end (level 2), beside NeuSight on the same rows:")
    by_measured = {}
    for row in neusight:
        if row["neusight_ms"]:
            by_measured[(row["gpu"], round(float(row["measured_ms"]), 6))] = float(row["neusight_ms"])
    for phase in ("inference", "train", "all"):
        for gpu in gpus + ["all"]:
            sel = [p for p in points if p["level"] == 2 and (phase == "all" or p["phase"] == phase)
                   and (gpu == "all" or p["gpu"] == gpu)]
            if not sel:
                continue
            theirs = [abs(by_measured[k] - p["measured_ms"]) / p["measured_ms"]
                      for p in sel
                      for k in [(p["gpu"], round(p["measured_ms"], 6))] if k in by_measured]
            ns = ("NeuSight %5.1f%% on %d rows" % (100 * sum(theirs) / len(theirs), len(theirs))
                  if theirs else "NeuSight -")
            print("  %-9s %-16s %s   %s" % (phase, gpu, stats(sel), ns))


if __name__ == "__main__":
    main()
