#!/usr/bin/env python3
"""data/tools/vtrain_convert.py on a miniature vTrain checkout, and the
committed data/external/vtrain/steps.csv read as the protocol reads it.

The converter must keep every row, derive the micro-batch count, pad the
vocabulary as Megatron does, refuse a row that does not match its config file,
convert every 16th size of the all-reduce tables, and copy the licence. The committed file
must still have vTrain's 1,440 rows with the columns the protocol reads, each
a consistent layout on a catalog GPU, and split into one batch file per
layout by data/tools/parallel_summary.py.

Usage: vtrain_convert_test.py SOURCE_DIR
"""

import csv
import json
import os
import subprocess
import sys
import tempfile

HEADER = ["# GPUs", "global batch", "micro batch", "hidden size", "attention heads", "# layers",
          "sequence length", "tensor parallelism", "data parallelism", "pipeline parallelism",
          "iteration time (ms)"]
COLUMNS = ["gpu", "gpus", "data_parallel", "tensor_parallel", "pipeline_parallel", "micro_batch",
           "micro_batches", "global_batch", "layers", "hidden", "heads", "ffn", "seq_len",
           "vocab", "precision", "activation_checkpointing", "measured_ms", "config"]
# gpus, global, micro, hidden, heads, layers, seq, tp, dp, pp, ms
ROWS = [[2, 16, 8, 1024, 16, 24, 1024, 1, 1, 2, 372.160408],
        [8, 32, 4, 1024, 16, 24, 1024, 2, 2, 2, 219.732754],
        [4, 32, 2, 2048, 16, 16, 1024, 1, 4, 1, 406.355066]]


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def make_checkout(root, rows, config_rows=None):
    os.makedirs(os.path.join(root, "data"))
    os.makedirs(os.path.join(root, "config/validation/single"))
    with open(os.path.join(root, "data/ground_truth_single.csv"), "w", newline="",
              encoding="utf-8-sig") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        writer.writerows(rows)
    for i, row in enumerate(config_rows or rows):
        config = dict(zip(["num_gpus", "global_batch_size", "micro_batch_size", "hidden_size",
                           "num_attention_heads", "num_layers", "max_length",
                           "tensor_parallel_size", "data_parallel_size",
                           "pipeline_parallel_size"], row[:10]))
        config.update({"gpu_name": "A100", "use_checkpoint": True, "use_gradient_bucket": False,
                       "pipeline_scheduling": "1f1b"})
        with open(os.path.join(root, "config/validation/single/config_val_single_%04d.json" % i),
                  "w") as f:
            json.dump(config, f)
    with open(os.path.join(root, "LICENSE"), "w") as f:
        f.write("MIT License (miniature)\n")
    os.makedirs(os.path.join(root, "trace/a100"))
    for gpus in (2, 4, 8):
        with open(os.path.join(root, "trace/a100/AR_GPU%d_1M_1024M_LUT" % gpus), "w") as f:
            f.write("size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)\n")
            for i in range(1, 21):  # 20 sizes: every 16th (1st, 17th) and the last are kept
                size = i << 20
                f.write("%d,%d,float,%d,1.0,%d,1.0\n" % (size, size // 4, 40000 + 1000 * i,
                                                          41000 + 1000 * i))


def convert(source, checkout, out):
    return subprocess.run([sys.executable, os.path.join(source, "data/tools/vtrain_convert.py"),
                           checkout, out], capture_output=True, text=True)


def check_miniature(source, tmp):
    checkout, out = os.path.join(tmp, "vtrain"), os.path.join(tmp, "out")
    make_checkout(checkout, ROWS)
    result = convert(source, checkout, out)
    if result.returncode != 0:
        fail("converter: " + result.stderr)
    with open(os.path.join(out, "steps.csv"), newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    if reader.fieldnames != COLUMNS:
        fail("columns %s" % reader.fieldnames)
    if len(rows) != len(ROWS):
        fail("%d rows for %d" % (len(rows), len(ROWS)))
    first, last = rows[0], rows[2]
    # 16 samples in micro-batches of 8 on one replica: 2 micro-batches.
    if (first["micro_batches"], first["pipeline_parallel"], first["ffn"]) != ("2", "2", "4096"):
        fail("first row %s" % first)
    # 32 samples over 4 replicas in micro-batches of 2: 4 accumulated.
    if last["micro_batches"] != "4" or float(last["measured_ms"]) != 406.355066:
        fail("last row %s" % last)
    if first["config"] != "config_val_single_0000.json" or first["precision"] != "fp16-amp":
        fail("first row %s" % first)
    # Megatron's padded vocabulary: a multiple of 128 x TP (TP 1, then 2).
    if (first["vocab"], rows[1]["vocab"]) != ("50304", "50432"):
        fail("vocabularies %s, %s" % (first["vocab"], rows[1]["vocab"]))
    with open(os.path.join(out, "LICENSE")) as f:
        if "MIT" not in f.read():
            fail("licence not copied")
    with open(os.path.join(out, "allreduce.csv"), newline="") as f:
        links = list(csv.DictReader(f))
    if [(r["params"], r["mean_ms"]) for r in links[:3]] != [
            ("bytes=1048576;gpus=2", "0.041"), ("bytes=17825792;gpus=2", "0.057"),
            ("bytes=20971520;gpus=2", "0.06")]:
        fail("all-reduce rows %s" % links[:3])
    if len(links) != 9 or {r["node"] for r in links} != {"vtrain-a100"}:
        fail("all-reduce rows: %d, nodes %s" % (len(links), {r["node"] for r in links}))

    # A row whose config says another layout is refused.
    bad = os.path.join(tmp, "bad")
    swapped = [list(r) for r in ROWS]
    swapped[1][7], swapped[1][8] = 4, 1
    make_checkout(bad, ROWS, config_rows=swapped)
    result = convert(source, bad, os.path.join(tmp, "bad-out"))
    if result.returncode == 0 or "does not match" not in result.stderr + result.stdout:
        fail("a mismatched config was not refused: %s" % result.stderr)


def check_committed_links(source):
    with open(os.path.join(source, "data/external/vtrain/allreduce.csv"), newline="") as f:
        reader = csv.DictReader(f)
        links = list(reader)
    if reader.fieldnames[:4] != ["node", "kind", "family", "params"] or len(links) != 195:
        fail("committed all-reduce rows: %d, columns %s" % (len(links), reader.fieldnames))
    for gpus in (2, 4, 8):
        rows = [r for r in links if r["params"].endswith(";gpus=%d" % gpus)]
        if len(rows) != 65 or not all(float(r["mean_ms"]) > 0 for r in rows):
            fail("committed all-reduces over %d GPUs: %d rows" % (gpus, len(rows)))


def check_committed(source, tmp):
    steps = os.path.join(source, "data/external/vtrain/steps.csv")
    with open(steps, newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    if reader.fieldnames != COLUMNS:
        fail("committed columns %s" % reader.fieldnames)
    if len(rows) != 1440:
        fail("committed rows %d, expected 1440" % len(rows))
    with open(os.path.join(source, "models/gpu_catalog.json")) as f:
        catalog = {g["model"] for g in json.load(f)["gpus"]}
    layouts = set()
    for row in rows:
        n = {k: int(row[k]) for k in COLUMNS if k not in ("gpu", "precision", "measured_ms",
                                                          "config")}
        if row["gpu"] not in catalog:
            fail("GPU %s not in the catalog" % row["gpu"])
        if n["gpus"] != n["data_parallel"] * n["tensor_parallel"] * n["pipeline_parallel"]:
            fail("layout of %s" % row["config"])
        if n["global_batch"] != n["data_parallel"] * n["micro_batch"] * n["micro_batches"]:
            fail("batch of %s" % row["config"])
        if (n["heads"] % n["tensor_parallel"] or n["layers"] % n["pipeline_parallel"] or
                n["vocab"] % (128 * n["tensor_parallel"]) or not 50257 <= n["vocab"] < 51300):
            fail("split of %s" % row["config"])
        if not float(row["measured_ms"]) > 0:
            fail("time of %s" % row["config"])
        layouts.add((n["data_parallel"], n["tensor_parallel"], n["pipeline_parallel"],
                     n["micro_batches"]))
    out = os.path.join(tmp, "batches")
    listing = subprocess.run([sys.executable,
                              os.path.join(source, "data/tools/parallel_summary.py"), "batches",
                              steps, out], capture_output=True, text=True, check=True).stdout
    files = listing.split("\n")[:-1]
    if len(files) != len(layouts):
        fail("%d batch files for %d layouts" % (len(files), len(layouts)))
    total = 0
    for line in files:
        path = line.split()[0]
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            total += len(list(reader))
        if reader.fieldnames != ["family", "params", "batch_size", "precision", "phase",
                                 "optimizer", "gpu"]:
            fail("batch file columns %s" % reader.fieldnames)
    if total != len(rows):
        fail("batch files hold %d rows of %d" % (total, len(rows)))
    # The learning rows in the campaign's schema: 2 and 4 GPUs, as Megatron.
    jsonl = os.path.join(tmp, "learn.jsonl")
    subprocess.run([sys.executable, os.path.join(source, "data/tools/parallel_summary.py"),
                    "jsonl", steps, jsonl, "--gpus", "2,4"], capture_output=True, check=True)
    with open(jsonl) as f:
        learn = [json.loads(line) for line in f]
    if len(learn) != 720 or {r["gpus"] for r in learn} != {2, 4}:
        fail("jsonl rows: %d" % len(learn))
    needed = {"family", "params", "global_batch", "dp", "tp", "pp", "micro_batches", "zero",
              "activation_checkpointing", "framework", "precision", "optimizer", "step_ms"}
    if not needed <= set(learn[0]) or learn[0]["framework"] != "megatron":
        fail("jsonl row %s" % learn[0])


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    source = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        check_miniature(source, tmp)
        check_committed(source, tmp)
        check_committed_links(source)
    print("OK")


if __name__ == "__main__":
    main()
