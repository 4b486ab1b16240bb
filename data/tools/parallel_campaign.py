#!/usr/bin/env python3
"""Perfcast against the plain-PyTorch multi-GPU campaign (multi-gpu/h200x2-parallel.jsonl).

  parallel_campaign.py batch ROWS.jsonl OUT.csv NODE [--skip-model NAME]
  parallel_campaign.py probe ROWS.jsonl
  parallel_campaign.py summary ROWS.jsonl PREDICTIONS.json [--points CSV] [--skip-model NAME]

batch: one `perfcast predict --batch-file` row per measured configuration, the
layout in the file's columns (data_parallel, tensor_parallel, pipeline_parallel,
micro_batches, zero, activation_checkpointing; framework pytorch), priced on
the registered node NODE with the row's workload as the campaign ran it: a
Hugging Face model by its config.json (hf_config, seq_len), a torchvision
model by its name (torchvision, image), else family and parameters; one
iteration. GPipe rows are left out (perfcast prices 1F1B).
--skip-model leaves a model's rows out (summary: give the same).

probe: the campaign host's Python host cost per operation in microseconds as
the agent's probe would store it: the median over its rows of the campaign's
dispatch probe (host_python_ops_per_s, the probe the agent runs:
profiler/python_probe.py, but read inside the campaign's loaded process) over
predictor/python_loop_terms.json's probe_state_factor (what a loop's process
pays over the agent's fresh one; the predictor multiplies it back), what
`perfcast nodes register --python-op-us` gives the node.

summary: per strategy and all, over the rows that ran: MAPE and signed bias
((predicted - measured) / measured, median and mean) of the step, the share
inside the predicted 10-90% band, and the memory-per-GPU error (predicted
allocated peak against the measured peak allocated) with the share inside its
10-90% band; and whether every measured
out-of-memory was refused (FAILED_PRECONDITION) and no row that ran was.
"""
import csv
import json
import os
import statistics
import sys

COLUMNS = ["family", "params", "hf_config", "seq_len", "torchvision", "image", "batch_size",
           "precision", "optimizer", "node", "iterations", "data_parallel", "tensor_parallel", "pipeline_parallel", "micro_batches", "zero",
           "activation_checkpointing", "framework"]


def rows_of(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def kept(row, skip):
    return row.get("schedule") != "GPipe" and row["model"] not in skip


def strategy(row):
    name = row["strategy"]
    if name == "fsdp":
        name = "fsdp-z%d" % row["zero"]
    if row["activation_checkpointing"]:
        name += "+ac"
    return name


# The campaigns' torchvision models by perfcast's torchvision names.
TORCHVISION = {"resnet18": "resnet18", "resnet50": "resnet50", "resnet101": "resnet101",
               "vit-b16": "vit_b_16"}
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def workload_cells(r):
    """family, params, hf_config, seq_len, torchvision, image: the model as it ran."""
    if r.get("hf_config"):
        return ["", "", os.path.normpath(os.path.join(ROOT, r["hf_config"])),
                r["params"]["seq_len"], "", ""]
    if r["model"] in TORCHVISION:
        return ["", "", "", "", TORCHVISION[r["model"]], r["params"]["image"]]
    params = ";".join("%s=%d" % kv for kv in sorted(r["params"].items()))
    return [r["family"], params, "", "", "", ""]


def batch(rows_path, out_path, node, skip):
    with open(out_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in rows_of(rows_path):
            if not kept(r, skip):
                continue
            w.writerow(workload_cells(r) + [
                r["global_batch"], r["precision"], r["optimizer"], node, 1, r["dp"], r["tp"],
                r["pp"], r["micro_batches"], r["zero"],
                "true" if r["activation_checkpointing"] else "false", "pytorch"])


TERMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "predictor",
                     "python_loop_terms.json")


def probe_us(rows, terms):
    """The agent's probe's reading for a campaign's `rows` (see probe)."""
    rates = [r["host_python_ops_per_s"] for r in rows if r.get("host_python_ops_per_s")]
    if not rates:
        return None
    return 1e6 / statistics.median(rates) / terms["probe_state_factor"]


def probe(rows_path):
    with open(TERMS) as f:
        terms = json.load(f)
    us = probe_us(rows_of(rows_path), terms)
    if us is None:
        sys.exit("%s: no row carries the dispatch probe (host_python_ops_per_s)" % rows_path)
    print("%.4g" % us)


def pct(x):
    return "%+.1f%%" % (100 * x)


def summary(rows_path, predictions_path, points, skip):
    with open(predictions_path) as f:
        answers = [json.loads(line) for line in f if line.strip()]
    wanted = [r for r in rows_of(rows_path) if kept(r, skip)]
    if len(wanted) != len(answers):
        sys.exit("%d rows for %d answers" % (len(wanted), len(answers)))
    groups = {}
    oom_refused, oom_total, refused_ran = 0, 0, []
    out_points = []
    for r, a in zip(wanted, answers):
        p = a.get("prediction")
        if r["oom"]:
            oom_total += 1
            oom_refused += p is None and a.get("code") == 9
            continue
        if p is None:
            refused_ran.append("%s: %s" % (r["id"], a.get("error")))
            continue
        step = p["iteration_ms"]
        err = (step - r["step_ms"]) / r["step_ms"]
        inside = p["iteration_ms_low"] <= r["step_ms"] <= p["iteration_ms_high"]
        # Memory per GPU, one GPU or a layout's, with its 10-90% band.
        memory = p["memory"]
        mem = memory["peak_bytes"] / 2**30
        mem_low, mem_high = memory["peak_bytes_low"] / 2**30, memory["peak_bytes_high"] / 2**30
        mem_err = (mem - r["peak_allocated_gib"]) / r["peak_allocated_gib"]
        mem_inside = mem_low <= r["peak_allocated_gib"] <= mem_high
        for g in (strategy(r), "all"):
            groups.setdefault(g, []).append((err, inside, mem_err, mem_inside))
        out_points.append([r["id"], strategy(r), r["step_ms"], step, p["iteration_ms_low"],
                           p["iteration_ms_high"], r["peak_allocated_gib"], mem, mem_low,
                           mem_high])
    print("| strategy | rows | MAPE | bias (median / mean) | coverage | memory MAPE "
          "| memory bias (median) | memory coverage |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for g in sorted(groups, key=lambda k: (k == "all", k)):
        e = groups[g]
        errs = [x[0] for x in e]
        mems = [x[2] for x in e]
        print("| %s | %d | %.1f%% | %s / %s | %.0f%% | %.1f%% | %s | %.0f%% |" % (
            g, len(e), 100 * statistics.mean(abs(x) for x in errs), pct(statistics.median(errs)),
            pct(statistics.mean(errs)), 100 * sum(x[1] for x in e) / len(e),
            100 * statistics.mean(abs(x) for x in mems), pct(statistics.median(mems)),
            100 * sum(x[3] for x in e) / len(e)))
    print()
    print("measured out-of-memory refused: %d of %d" % (oom_refused, oom_total))
    print("rows that ran but were refused: %d%s" % (
        len(refused_ran), "".join("\n  " + x for x in refused_ran)))
    if points:
        with open(points, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "strategy", "measured_ms", "predicted_ms", "low_ms", "high_ms",
                        "measured_gib", "predicted_gib", "low_gib", "high_gib"])
            w.writerows(out_points)


def option(argv, name):
    return argv[argv.index(name) + 1] if name in argv else None


def main(argv):
    skip = {option(argv, "--skip-model")} - {None}
    if len(argv) >= 5 and argv[1] == "batch":
        batch(argv[2], argv[3], argv[4], skip)
    elif len(argv) >= 3 and argv[1] == "probe":
        probe(argv[2])
    elif len(argv) >= 4 and argv[1] == "summary":
        summary(argv[2], argv[3], option(argv, "--points"), skip)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
