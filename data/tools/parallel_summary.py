#!/usr/bin/env python3
"""Batch files for, and the figures of, the multi-GPU label protocols
(data/tools/vtrain_protocol.sh, data/tools/neusight_parallel_protocol.sh).

A steps file has one measured multi-GPU training step per row: the columns of
data/external/vtrain/steps.csv (data/tools/vtrain_convert.py), optionally with
an `optimizer` column (default adam).

  parallel_summary.py batches STEPS.csv OUT_DIR [--gpu GPU | --node NODE]
      Writes one `perfcast predict --batch-file` CSV per layout (data, tensor
      and pipeline parallel degrees and micro-batch count) into OUT_DIR and
      prints one line per file: "FILE DATA TENSOR PIPELINE MICRO_BATCHES".
      --gpu prices another catalog GPU than the file's, --node a registered
      node (whose measured all-reduces then price the collectives).

  parallel_summary.py summary STEPS.csv OUT_DIR [--points POINTS.csv]
      Reads each batch file's answers (FILE.json: `perfcast -o json predict
      --batch-file FILE`, one JSON line per row, in order) and prints rows,
      MAPE, signed bias (median and mean of (predicted - measured) /
      measured) and 10-90% interval coverage: overall, per GPU model and
      count, per TP/PP/DP layout, per model and micro-batch size, and, where
      8-GPU rows exist, for the rows of 2 and 4 GPUs against those of 8 (the
      split that anything learned from vTrain's rows must respect: learn on 2
      and 4, report on 8). --points writes each row with its prediction and
      the step's parts.

  parallel_summary.py jsonl STEPS.csv OUT.jsonl [--gpus 2,4] [--framework megatron]
      The rows (those of the given GPU counts) in the one-row-per-configuration
      schema of data/multi-gpu/h200x2-parallel.jsonl, which the fit of the
      learned multi-GPU terms reads: e.g. vTrain's 2- and 4-GPU rows as
      Megatron steps to learn from, its 8-GPU rows to check against.

  parallel_summary.py neusight-steps PARALLEL_E2E.csv OUT.csv
      NeuSight's 4-GPU labels (data/external/neusight/parallel_e2e.csv) as a
      steps file: the multi-GPU rows only, GPUs by catalog name, the models
      as data/tools/neusight_convert.py describes them, fp32, forward +
      backward (optimizer none).

Standard library only.
"""

import argparse
import csv
import json
import os
import statistics
import sys

STEP_COLUMNS = ["gpu", "gpus", "data_parallel", "tensor_parallel", "pipeline_parallel",
                "micro_batch", "micro_batches", "global_batch", "layers", "hidden", "heads", "ffn",
                "seq_len", "vocab", "precision", "activation_checkpointing", "measured_ms",
                "config"]
BATCH_COLUMNS = ["family", "params", "batch_size", "precision", "phase", "optimizer"]
LAYOUT = ("data_parallel", "tensor_parallel", "pipeline_parallel", "micro_batches")
PARTS = ("compute_ms", "recompute_ms", "bubble_ms", "tp_comm_ms", "pp_comm_ms",
         "dp_exposed_ms", "optimizer_ms", "implementation_ms", "launches", "units",
         "micro_batch_ms", "outside_layers_bubble_ms")
# The step's compute per operation class on the slowest stage (the answer's
# breakdown; the optimizer is optimizer_ms), written as "<class>_ms" columns of
# --points, and of it the work outside the layers (embeddings, final norm, LM
# head and loss: the answer's outside_layers_ms) as "outside_<class>_ms".
CLASSES = ("gemm", "attention", "elementwise", "norm", "softmax", "embedding",
           "host", "h2d")


def read_steps(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def layout_key(row):
    return tuple(int(row[k]) for k in LAYOUT)


def file_name(key):
    return "layout-dp%d-tp%d-pp%d-m%d.csv" % key


def groups(rows):
    out = {}
    for row in rows:
        out.setdefault(layout_key(row), []).append(row)
    return dict(sorted(out.items()))


def params(row):
    # GPT-2 style: learned positions as long as the sequence, tied LM head,
    # biases (the decoder family's defaults for the last two).
    return ";".join("%s=%s" % (k, row[v]) for k, v in (
        ("layers", "layers"), ("hidden", "hidden"), ("heads", "heads"), ("ffn", "ffn"),
        ("seq_len", "seq_len"), ("positions", "seq_len"), ("vocab", "vocab")))


def write_batches(args):
    rows = read_steps(args.steps)
    os.makedirs(args.out_dir, exist_ok=True)
    target = "node" if args.node else "gpu"
    for key, members in groups(rows).items():
        path = os.path.join(args.out_dir, file_name(key))
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=BATCH_COLUMNS + [target], lineterminator="\n")
            writer.writeheader()
            for row in members:
                writer.writerow({
                    "family": "decoder", "params": params(row),
                    "batch_size": row["global_batch"], "precision": row["precision"],
                    "phase": "train", "optimizer": row.get("optimizer") or "adam",
                    target: args.node or args.gpu or row["gpu"]})
        print(path, *key)


def stats(points):
    n = len(points)
    if n == 0:
        return "rows    0"
    errors = [(p["predicted_ms"] - p["measured_ms"]) / p["measured_ms"] for p in points]
    covered = sum(1 for p in points if p["lo_ms"] <= p["measured_ms"] <= p["hi_ms"])
    return "rows %4d  MAPE %5.1f%%  bias %+6.1f%% (mean %+6.1f%%)  coverage %5.1f%%" % (
        n, 100 * sum(abs(e) for e in errors) / n, 100 * statistics.median(errors),
        100 * sum(errors) / n, 100 * covered / n)


def load_points(args):
    rows = read_steps(args.steps)
    points, failed = [], 0
    for key, members in groups(rows).items():
        path = os.path.join(args.out_dir, file_name(key) + ".json")
        with open(path) as f:
            answers = [json.loads(line) for line in f if line.strip()]
        if len(answers) != len(members):
            sys.exit("%s: %d answers for %d rows" % (path, len(answers), len(members)))
        for row, answer in zip(members, answers):
            if answer.get("code", 0) != 0:
                failed += 1
                print("failed: %s %s: %s" % (row["config"], file_name(key), answer.get("error")))
                continue
            p = answer["prediction"]
            point = dict(row)
            point.update({
                "measured_ms": float(row["measured_ms"]),
                "predicted_ms": float(p["iteration_ms"]),
                "lo_ms": float(p.get("iteration_ms_low", 0)),
                "hi_ms": float(p.get("iteration_ms_high", 0)),
            })
            parallel = p.get("parallel", {})
            for part in PARTS:
                point[part] = float(parallel.get(part, 0))
            classes = {b["op_class"]: float(b["ms"]) for b in p.get("breakdown", [])}
            outside = parallel.get("outside_layers_ms", {})
            for name in CLASSES:
                point[name + "_ms"] = classes.get(name, 0.0)
                point["outside_" + name + "_ms"] = float(outside.get(name, 0))
            points.append(point)
    return points, failed


def line(name, points):
    print("  %-26s %s" % (name, stats(points)))


def composition(points, layout):
    """The composition's error apart from the single GPU's: each row's
    predicted / measured ratio over that of the data-parallel row (tp1 pp1
    dp2) of the same GPU, model, micro-batch size and count, which runs a
    replica's whole work on each GPU with little communication. The
    single-GPU level cancels; what is left is the split, the bubble and the
    collectives."""
    def same_work(p):
        return tuple(p[k] for k in ("gpu", "hidden", "layers", "heads", "seq_len", "micro_batch",
                                    "micro_batches"))
    anchors = {same_work(p): p for p in points if layout(p) == (1, 1, 2)}
    if not anchors:
        return
    rows = []
    for p in points:
        a = anchors.get(same_work(p))
        if a is None or a is p:
            continue
        ratio = (p["predicted_ms"] / p["measured_ms"]) / (a["predicted_ms"] / a["measured_ms"])
        rows.append((layout(p), ratio - 1))
    print("Composition apart from the single GPU (error of predicted / measured against the "
          "tp1 pp1 dp2 row of the same model and micro-batches):")
    print("  %-26s %s" % ("tp1 pp1 dp2 (the anchor)",
                          stats([a for a in anchors.values()])))
    for key in sorted({k for k, _ in rows}):
        errors = [e for k, e in rows if k == key]
        print("  %-26s rows %4d  MAPE %5.1f%%  bias %+6.1f%% (mean %+6.1f%%)" % (
            "tp%d pp%d dp%d" % key, len(errors), 100 * sum(abs(e) for e in errors) / len(errors),
            100 * statistics.median(errors), 100 * sum(errors) / len(errors)))


def summarize(args):
    points, failed = load_points(args)
    print("All rows (%d priced, %d failed):" % (len(points), failed))
    line("all", points)
    if any(p["gpus"] == "8" for p in points) and any(p["gpus"] != "8" for p in points):
        print("Learn-on subset against the held-out rows:")
        line("2 and 4 GPUs", [p for p in points if p["gpus"] != "8"])
        line("8 GPUs (held out)", [p for p in points if p["gpus"] == "8"])
    gpu_models = sorted({p["gpu"] for p in points})
    if len(gpu_models) > 1:
        print("Per GPU model:")
        for gpu in gpu_models:
            line(gpu, [p for p in points if p["gpu"] == gpu])
    print("Per GPU count:")
    for gpus in sorted({int(p["gpus"]) for p in points}):
        line("%d GPUs" % gpus, [p for p in points if int(p["gpus"]) == gpus])
    print("Per layout (TP / PP / DP):")
    def layout(p):
        return tuple(int(p[k]) for k in ("tensor_parallel", "pipeline_parallel", "data_parallel"))
    for tp, pp, dp in sorted({layout(p) for p in points}):
        sel = [p for p in points if layout(p) == (tp, pp, dp)]
        line("tp%d pp%d dp%d (%d GPUs)" % (tp, pp, dp, tp * pp * dp), sel)
        if len(gpu_models) > 1:
            for gpu in gpu_models:
                line("  " + gpu, [p for p in sel if p["gpu"] == gpu])
    print("Per strategy present (any GPU count):")
    for name, test in (("tp > 1", lambda p: int(p["tensor_parallel"]) > 1),
                       ("pp > 1", lambda p: int(p["pipeline_parallel"]) > 1),
                       ("dp > 1", lambda p: int(p["data_parallel"]) > 1),
                       ("tp only", lambda p: int(p["tensor_parallel"]) == int(p["gpus"])),
                       ("pp only", lambda p: int(p["pipeline_parallel"]) == int(p["gpus"])),
                       ("dp only", lambda p: int(p["data_parallel"]) == int(p["gpus"]))):
        line(name, [p for p in points if test(p)])
    print("Per model (hidden x layers) and micro-batch size:")
    for hidden in sorted({int(p["hidden"]) for p in points}):
        for layers in sorted({int(p["layers"]) for p in points}):
            sel = [p for p in points if int(p["hidden"]) == hidden and int(p["layers"]) == layers]
            if sel:
                line("h%d L%d" % (hidden, layers), sel)
    for micro in sorted({int(p["micro_batch"]) for p in points}):
        line("micro-batch %d" % micro, [p for p in points if int(p["micro_batch"]) == micro])
    composition(points, layout)
    if args.points:
        columns = list(read_steps(args.steps)[0].keys()) + [
            "predicted_ms", "lo_ms", "hi_ms"] + list(PARTS) + [c + "_ms" for c in CLASSES] + [
            "outside_" + c + "_ms" for c in CLASSES]
        with open(args.points, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore",
                                    lineterminator="\n")
            writer.writeheader()
            writer.writerows(points)
        print("points written to %s" % args.points)


# NeuSight's GPUs and models (scripts/asplos/data/DLmodel_configs), as
# data/tools/neusight_convert.py maps them.
NEUSIGHT_GPUS = {"NVIDIA_A100-SXM4-40GB": "A100-SXM4-40GB",
                 "NVIDIA_A100_80GB_PCIe": "A100-PCIE-80GB",
                 "NVIDIA_H100_80GB_HBM3": "H100-SXM5-80GB",
                 "NVIDIA_L4": "L4-24GB"}
NEUSIGHT_MODELS = {"gpt2_large": (36, 1280, 20, 5120), "gpt3_xl": (24, 3072, 24, 12288)}


def neusight_steps(args):
    with open(args.parallel_e2e, newline="") as f:
        rows = list(csv.DictReader(f))
    out = []
    for row in rows:
        dp, tp, pp, m = (int(row[k]) for k in ("data_parallel", "tensor_parallel",
                                               "pipeline_parallel", "micro_batches"))
        if dp * tp * pp == 1:
            continue
        layers, hidden, heads, ffn = NEUSIGHT_MODELS[row["model"]]
        batch = int(row["global_batch"])
        out.append({
            "gpu": NEUSIGHT_GPUS[row["gpu"]], "gpus": dp * tp * pp, "data_parallel": dp,
            "tensor_parallel": tp, "pipeline_parallel": pp, "micro_batch": batch // (dp * m),
            "micro_batches": m, "global_batch": batch, "layers": layers, "hidden": hidden,
            "heads": heads, "ffn": ffn, "seq_len": row["seq_len"], "vocab": 50257,
            "precision": "fp32", "activation_checkpointing": 0,
            "measured_ms": row["fwd_bwd_ms"], "config": row["source"], "optimizer": "none"})
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=STEP_COLUMNS + ["optimizer"], lineterminator="\n")
        writer.writeheader()
        writer.writerows(out)
    print("%s: %d multi-GPU rows" % (args.out, len(out)))


def write_jsonl(args):
    keep = {int(g) for g in args.gpus.split(",")} if args.gpus else None
    out = []
    for row in read_steps(args.steps):
        if keep is not None and int(row["gpus"]) not in keep:
            continue
        model_params = {k: int(row[k]) for k in ("layers", "hidden", "heads", "ffn", "vocab")}
        model_params["positions"] = int(row["seq_len"])
        out.append({
            "id": os.path.splitext(row["config"])[0] if row["config"].endswith(".json")
            else row["config"],
            "model": "gpt-h%s-l%s" % (row["hidden"], row["layers"]),
            "family": "decoder", "params": model_params, "seq_len": int(row["seq_len"]),
            "global_batch": int(row["global_batch"]), "gpus": int(row["gpus"]),
            "dp": int(row["data_parallel"]), "tp": int(row["tensor_parallel"]),
            "pp": int(row["pipeline_parallel"]), "micro_batches": int(row["micro_batches"]),
            "zero": 0, "activation_checkpointing": row["activation_checkpointing"] == "1",
            "framework": args.framework, "schedule": "1F1B", "precision": row["precision"],
            "optimizer": row.get("optimizer") or "adam", "step_ms": float(row["measured_ms"]),
            "oom": False, "error": None, "source_gpu": row["gpu"]})
    with open(args.out, "w") as f:
        for r in out:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    print("%s: %d rows" % (args.out, len(out)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    batches = sub.add_parser("batches")
    batches.add_argument("steps")
    batches.add_argument("out_dir")
    target = batches.add_mutually_exclusive_group()
    target.add_argument("--gpu", default="")
    target.add_argument("--node", default="")
    summary = sub.add_parser("summary")
    summary.add_argument("steps")
    summary.add_argument("out_dir")
    summary.add_argument("--points", default="")
    jsonl = sub.add_parser("jsonl")
    jsonl.add_argument("steps")
    jsonl.add_argument("out")
    jsonl.add_argument("--gpus", default="")
    jsonl.add_argument("--framework", default="megatron")
    neusight = sub.add_parser("neusight-steps")
    neusight.add_argument("parallel_e2e")
    neusight.add_argument("out")
    args = parser.parse_args()
    if args.command == "batches":
        write_batches(args)
    elif args.command == "summary":
        summarize(args)
    elif args.command == "jsonl":
        write_jsonl(args)
    else:
        neusight_steps(args)


if __name__ == "__main__":
    main()
