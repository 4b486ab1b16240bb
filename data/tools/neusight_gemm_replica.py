#!/usr/bin/env python3
"""Level 1's GEMM model on NeuSight's protocol, replicated in numpy, to ask
which part of the spec-sheet transfer leans on which collection.

    /usr/bin/python3 data/tools/neusight_gemm_replica.py EVALUATION.json [--sustained]
        [--once] [--shared-lanes] [--wave-groups] [--board-power]

EVALUATION.json: `perfcast evaluate ... --output json` of
data/tools/neusight_protocol.sh on all rows (its model gives the training
GPUs' profile rates and the efficiencies a test GPU's spec rates are scaled
by). The replica fits t = b0 + b1 tile_compute_ms (+ b2 tile_memory_ms)
(+ wave_compute_ms) by relative-weighted least squares, as
predictor/features.cc and predictor/fit.cc do (no feature selection), on
every subset of neusight_collection_protocol.sh, and prints the three test
GPUs' GEMM MAPE per subset and the fitted coefficients (intercept left out):
unweighted, and with each training GPU's batched and unbatched GEMMs
weighing alike. --sustained prices the test GPUs at the
FP32 rate their own large GEMMs sustain (90th percentile of >= 10 GFLOP
GEMMs, RatesFromProfiles's rule) instead of spec x efficiency: an oracle
that separates the model from the rate. --once counts each operand read once
(tiles share their panels in L2) instead of a re-read per tile row and column.
--shared-lanes halves the spec FP32 rate of a GA10x / AD10x board (compute
capability 8.6, 8.7, 8.9: 64 of its 128 FP32 lanes per SM also issue INT32)
before the efficiency scales it. --wave-groups counts a re-read of A per
group of sqrt(SMs) tile columns and of B per group of sqrt(SMs) tile rows
(the tiles of one wave share their panels in L2) instead of per tile row and
column. --board-power scales the FP32 rate of a test GPU priced by its
architecture's efficiency by (its board power / that of its architecture's
training GPUs)^(1/3): a power-capped clock under a cube law of dynamic power.
"""
import collections
import functools
import csv
import json
import math
import sys

import numpy as np

DATA = "data/external/neusight/kernels.csv"
CATALOG = {g["model"]: g for g in json.load(open("models/gpu_catalog.json"))["gpus"]}
TRAIN = ["P4-8GB", "P100-PCIE-16GB", "V100-PCIE-32GB", "T4-16GB", "A100-PCIE-40GB"]
TEST = ["H100-SXM5-80GB", "L4-24GB", "A100-PCIE-80GB"]


def tile_edge(side):
    edge = 16
    while edge < side and edge < 128:
        edge *= 2
    return edge


def load_gemms():
    rows = []
    with open(DATA) as f:
        for r in csv.DictReader(f):
            if r["family"] != "gemm":
                continue
            p = dict(kv.split("=") for kv in r["params"].split(";"))
            m, n, k = float(p["m"]), float(p["n"]), float(p["k"])
            b = float(p.get("batch", 1))
            flops = 2 * m * n * k * b
            tm, tn = tile_edge(m), tile_edge(n)
            rt, ct = math.ceil(m / tm), math.ceil(n / tn)
            once = 4 * (m * k + k * n + m * n) * b
            groups = {}
            for gpu in TRAIN + TEST:
                g = max(1, math.floor(math.sqrt(CATALOG[gpu]["sm_count"])))
                grouped = m * k * math.ceil(ct / g) + k * n * math.ceil(rt / g) + m * n
                groups[gpu] = max(once, 4 * b * grouped)
            rows.append({
                "gpu": r["gpu"], "train": r["agent_version"].startswith("neusight-train-"),
                "batched": b > 1, "y": float(r["mean_ms"]), "flops": flops,
                "tile_flops": flops * rt * tm * ct * tn / (m * n),
                "tile_bytes": once if "--once" in sys.argv else max(once, 4 * b * (m * k * ct + k * n * rt + m * n)),
                "wave_bytes": groups[r["gpu"]] if r["gpu"] in groups else once,
                "tiles": math.ceil(m / 128) * math.ceil(n / 128) * b})
    return rows


def main():
    model = json.load(open(sys.argv[1]))["model"]
    sustained = "--sustained" in sys.argv
    catalog = {g["model"]: g for g in json.load(open("models/gpu_catalog.json"))["gpus"]}
    gemms = load_gemms()

    @functools.lru_cache(maxsize=None)
    def rates(gpu):
        if gpu in model["profile_rates"]:
            r = model["profile_rates"][gpu]
            return r["fp32"], r["memory"]
        spec = catalog[gpu]
        watts = spec["tdp_watts"]
        power = "<=100W" if watts <= 100 else "100-450W" if watts <= 450 else ">450W"
        eff = (model["efficiency_by_architecture"].get(spec["architecture"])
               or model["efficiency_by_class"].get("NVIDIA " + power) or model["efficiency_global"])
        shared = "--shared-lanes" in sys.argv and spec["compute_capability"] in ("8.6", "8.7", "8.9")
        fp32 = spec["fp32_tflops"] / (2 if shared else 1) * eff["fp32"]
        siblings = [catalog[t]["tdp_watts"] for t in TRAIN
                    if catalog[t]["architecture"] == spec["architecture"]]
        if "--board-power" in sys.argv and siblings:
            fp32 *= (watts / math.exp(np.mean(np.log(siblings)))) ** (1 / 3)
        if sustained:
            achieved = [g["flops"] / g["y"] / 1e9 for g in gemms if g["gpu"] == gpu and g["flops"] >= 1e10]
            fp32 = float(np.quantile(achieved, 0.9))
        return fp32, spec["memory_bandwidth_gbs"] * eff["memory"]

    def features(rows, traffic, wave):
        out = []
        for g in rows:
            fp32, memory = rates(g["gpu"])
            x = [g["tile_flops"] / fp32 / 1e9]
            if traffic:
                traffic_bytes = g["wave_bytes"] if "--wave-groups" in sys.argv else g["tile_bytes"]
                x.append(traffic_bytes / memory / 1e6)
            if wave:
                sms = catalog[g["gpu"]]["sm_count"]
                x.append(g["flops"] / fp32 / 1e9 * math.ceil(g["tiles"] / sms) * sms / g["tiles"])
            out.append(x + [1.0])
        return np.array(out)

    subsets = [("all rows", lambda g: True, TRAIN)]
    subsets += [(f"-{t} training coll.", (lambda t: lambda g: not (g["gpu"] == t and g["train"]))(t), TRAIN)
                for t in TRAIN]
    subsets += [(f"-{t} whole", lambda g: True, [o for o in TRAIN if o != t]) for t in TRAIN]
    subsets.append(("test collections only", lambda g: not g["train"], TRAIN))
    for traffic, wave in ((True, False), (True, True), (False, False)):
        for balanced in (False, True):
            print(f"features tile_compute_ms{', tile_memory_ms' if traffic else ''}"
                  f"{', wave_compute_ms' if wave else ''}; "
                  f"{'batched/unbatched per GPU balanced' if balanced else 'every row alike'}")
            for label, keep, train in subsets:
                rows = [g for g in gemms if g["gpu"] in train and keep(g)]
                y = np.array([g["y"] for g in rows])
                w = 1 / y
                if balanced:
                    count = collections.Counter((g["gpu"], g["batched"]) for g in rows)
                    w = w / np.sqrt([count[(g["gpu"], g["batched"])] for g in rows])
                coef, *_ = np.linalg.lstsq(features(rows, traffic, wave) * w[:, None], y * w, rcond=None)
                per_gpu, errors = [], []
                for gpu in TEST:
                    test = [g for g in gemms if g["gpu"] == gpu]
                    yt = np.array([g["y"] for g in test])
                    e = np.abs(features(test, traffic, wave) @ coef - yt) / yt
                    errors.append(e)
                    per_gpu.append(f"{gpu} {100 * e.mean():.1f}%")
                print(f"  {label:30s} {100 * np.concatenate(errors).mean():5.1f}%  " + "  ".join(per_gpu)
                      + "  coefficients " + " ".join(f"{c:.3f}" for c in coef[:-1]))


if __name__ == "__main__":
    main()
