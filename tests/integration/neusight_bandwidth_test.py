#!/usr/bin/env python3
"""data/tools/neusight_bandwidth.py --check on NeuSight's kernels.

The committed data must pass (no L2 residency on the A100-40GB; the L4 alone
runs layer norm and softmax at its element-wise bandwidth), and a copy whose
A100-40GB layer norms within 1.5 x L2 run 3x faster -- what L2 residency
would look like -- must fail.

Usage: neusight_bandwidth_test.py PROJECT_ROOT
"""
import csv
import os
import subprocess
import sys
import tempfile


def run(root, kernels):
    script = os.path.join(root, "data/tools/neusight_bandwidth.py")
    return subprocess.run([sys.executable, script, "--check", kernels,
                           os.path.join(root, "models/gpu_catalog.json")],
                          capture_output=True, text=True)


def main(root):
    kernels = os.path.join(root, "data/external/neusight/kernels.csv")
    ok = run(root, kernels)
    if ok.returncode != 0:
        print("committed data fails the check:", ok.stderr, file=sys.stderr)
        return 1
    with open(kernels, newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    doctored = 0
    for r in rows:
        if r["gpu"] != "A100-PCIE-40GB" or r["family"] != "layernorm":
            continue
        params = dict(kv.split("=") for kv in r["params"].split(";"))
        if int(params["rows"]) * int(params["cols"]) * 8 <= 1.5 * 40 * 2**20:
            r["mean_ms"] = str(float(r["mean_ms"]) / 3)
            doctored += 1
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernels.csv")
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            writer.writerows(rows)
        bad = run(root, path)
    if bad.returncode != 1 or "L2 residency shows" not in bad.stderr:
        print(f"L2-resident copy ({doctored} rows) not caught: rc {bad.returncode}",
              bad.stderr, file=sys.stderr)
        return 1
    print(f"ok: committed data passes; {doctored} L2-resident rows are caught")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
