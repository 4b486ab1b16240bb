#!/usr/bin/env python3
"""MAPE of `perfcast evaluate --output json` restricted to reproducible steps.

Issue 11 measures reproducibility as the spread of one configuration's median
step between runs (and machines); issue 12's accuracy goal applies to the steps
that repeat. A held-out workload counts as reproducible when at least two of
the given agent files measured it and every pair agrees within --tolerance
(default 2%, the reproducibility goal). Prints per family: rows, reproducible
rows, MAPE, signed median error and interval coverage on the reproducible ones.

  perfcast evaluate --split sizes --gpu H200-SXM-141GB --limit 0 --output json > ev.json
  data/tools/reproducible_mape.py ev.json data/h200-m*-*.sqlite
"""
import argparse
import json
import sqlite3
import statistics
from collections import defaultdict


def medians(files):
    out = defaultdict(list)
    for path in files:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        for key, median in db.execute(
                "SELECT w.key, p.median_ms FROM profiles p JOIN workloads w ON w.id = p.workload_id"):
            out[key].append(median)
        db.close()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("evaluation")
    parser.add_argument("stores", nargs="+")
    parser.add_argument("--tolerance", type=float, default=0.02)
    args = parser.parse_args()
    runs = medians(args.stores)

    def reproducible(key):
        times = runs.get(key, [])
        return len(times) >= 2 and max(times) / min(times) - 1 <= args.tolerance

    points = [p for p in json.load(open(args.evaluation))["points"] if p.get("level") == 2]
    by_family = defaultdict(list)
    for p in points:
        by_family[p["family"]].append(p)
        by_family["all"].append(p)
    print(f"{'family':16} {'rows':>5} {'repro':>6} {'MAPE':>7} {'bias':>7} {'coverage':>9}")
    for family in sorted(by_family, key=lambda f: (f == "all", f)):
        rows = by_family[family]
        kept = [p for p in rows if reproducible(p["workload"])]
        if not kept:
            print(f"{family:16} {len(rows):5d} {0:6d}")
            continue
        errors = [p["predicted_ms"] / p["measured_ms"] - 1 for p in kept]
        covered = [p["lo_ms"] <= p["measured_ms"] <= p["hi_ms"] for p in kept]
        print(f"{family:16} {len(rows):5d} {len(kept):6d} {100 * statistics.mean(map(abs, errors)):6.1f}% "
              f"{100 * statistics.median(errors):+6.1f}% {100 * sum(covered) / len(kept):8.1f}%")


if __name__ == "__main__":
    main()
