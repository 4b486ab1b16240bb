#!/usr/bin/env python3
"""Converts vTrain's public single-node measurements into a perfcast label file.

vTrain (VIA-Research/vTrain, MICRO 2024, MIT licence) published 1,440
measured Megatron-DeepSpeed training iterations of GPT-style models on one
node of 2, 4 and 8 A100 SXM GPUs (data/ground_truth_single.csv), with one
simulation config per row (config/validation/single/config_val_single_NNNN.json,
in the CSV's row order) that names what the CSV leaves out: activation
checkpointing, 1F1B scheduling, no DDP gradient buckets. This script turns a
checkout of that repository into:

  steps.csv   one row per measured iteration: GPU, layout (data, tensor and
              pipeline parallel degrees, micro-batch size and count), the
              model (decoder parameters as perfcast's `decoder` family takes
              them), precision, activation checkpointing, measured ms, and
              the config file the row was checked against
  allreduce.csv  vTrain's all-reduce tables of the same A100 node
              (trace/a100/AR_GPU{2,4,8}_1M_1024M_LUT: fp32 all-reduces of
              1 MiB to 1 GiB over 2, 4 and 8 GPUs, every 16th size) as
              perfcast `allreduce` operation profiles of node `vtrain-a100`
              (register it first: perfcast nodes register --name vtrain-a100
              --gpu A100-SXM4-40GB --count 8); they give perfcast the node's
              measured link instead of the catalog's
  LICENSE     vTrain's licence, copied

steps.csv is not a profile file (a multi-GPU step is not a one-GPU profile):
data/tools/vtrain_protocol.sh reads it and asks `perfcast predict` for each
row. Standard library only; deterministic.

Usage: vtrain_convert.py VTRAIN_DIR OUT_DIR
"""

import argparse
import csv
import json
import os
import shutil
import sys

# vTrain's model (src/model/gpt_model.py, src/config.py): GPT-2 style blocks
# with a 4h MLP, learned positions, the LM head tied to the token embedding,
# GPT-2's vocabulary, fp16 (torch.set_default_dtype(torch.float16) in
# src/predictor.py; Megatron's fp16 with fp32 master weights).
VOCAB = 50257
# Megatron pads the vocabulary to a multiple of this times the tensor-parallel
# degree (--make-vocab-size-divisible-by, _vocab_size_with_padding): the
# embedding and LM head that ran were that wide, with GEMM sides a multiple
# of 128 instead of GPT-2's odd 50257.
VOCAB_DIVISIBLE_BY = 128
PRECISION = "fp16-amp"
# The A100 board: the all-reduce tables vTrain took on the same node
# (trace/a100/AR_GPU8_*: 229 GB/s bus bandwidth at 1 GiB over 8 GPUs) are
# NVLink 3 through NVSwitch, an SXM4 board; vTrain does not say 40 or 80 GB.
# The 40 GB board is the DGX/HGX A100 as first shipped; the protocol script
# can price the other (VTRAIN_GPU).
GPU = "A100-SXM4-40GB"

CSV_COLUMNS = ["# GPUs", "global batch", "micro batch", "hidden size", "attention heads",
               "# layers", "sequence length", "tensor parallelism", "data parallelism",
               "pipeline parallelism", "iteration time (ms)"]
CONFIG_FIELDS = ["num_gpus", "global_batch_size", "micro_batch_size", "hidden_size",
                 "num_attention_heads", "num_layers", "max_length", "tensor_parallel_size",
                 "data_parallel_size", "pipeline_parallel_size"]
# The all-reduce tables: GPU counts the layouts use, every n-th message size.
ALLREDUCE_GPUS = (2, 4, 8)
ALLREDUCE_STRIDE = 16
NODE = "vtrain-a100"
ALLREDUCE_COLUMNS = ["node", "kind", "family", "params", "batch_size", "precision", "phase",
                     "mean_ms", "agent_version"]
COLUMNS = ["gpu", "gpus", "data_parallel", "tensor_parallel", "pipeline_parallel", "micro_batch",
           "micro_batches", "global_batch", "layers", "hidden", "heads", "ffn", "seq_len",
           "vocab", "precision", "activation_checkpointing", "measured_ms", "config"]


def padded_vocab(tensor_parallel):
    multiple = VOCAB_DIVISIBLE_BY * tensor_parallel
    return -(-VOCAB // multiple) * multiple


def read_rows(path):
    # The upstream file starts with a UTF-8 byte-order mark.
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] != CSV_COLUMNS:
        sys.exit(f"{path}: unexpected header {rows[0] if rows else '(empty)'}")
    return rows[1:]


def convert(root):
    rows = read_rows(os.path.join(root, "data/ground_truth_single.csv"))
    config_dir = os.path.join(root, "config/validation/single")
    out = []
    for index, row in enumerate(rows):
        values = [int(v) for v in row[:10]]
        gpus, global_batch, micro, hidden, heads, layers, seq, tp, dp, pp = values
        measured = float(row[10])
        name = f"config_val_single_{index:04d}.json"
        with open(os.path.join(config_dir, name)) as f:
            config = json.load(f)
        if [config[k] for k in CONFIG_FIELDS] != values:
            sys.exit(f"row {index + 1} does not match {name}")
        if config.get("gpu_name") != "A100" or config.get("pipeline_scheduling") != "1f1b":
            sys.exit(f"{name}: not an A100 1F1B run")
        if gpus != dp * tp * pp or global_batch % (dp * micro) != 0:
            sys.exit(f"row {index + 1}: inconsistent layout {values}")
        out.append({
            "gpu": GPU,
            "gpus": gpus,
            "data_parallel": dp,
            "tensor_parallel": tp,
            "pipeline_parallel": pp,
            "micro_batch": micro,
            # Megatron runs global / (dp * micro) micro-batches per replica,
            # pipelined over the stages or, without stages, accumulated.
            "micro_batches": global_batch // (dp * micro),
            "global_batch": global_batch,
            "layers": layers,
            "hidden": hidden,
            "heads": heads,
            "ffn": 4 * hidden,
            "seq_len": seq,
            "vocab": padded_vocab(tp),
            "precision": PRECISION,
            "activation_checkpointing": 1 if config.get("use_checkpoint", True) else 0,
            "measured_ms": repr(measured),
            "config": name,
        })
    return out


def allreduce(root):
    """nccl-tests style tables: size (B), count, type, then time (ns) and bus
    bandwidth out of place and in place; the out-of-place time is kept."""
    out = []
    for gpus in ALLREDUCE_GPUS:
        path = os.path.join(root, "trace/a100/AR_GPU%d_1M_1024M_LUT" % gpus)
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        if rows[0][:4] != ["size(B)", "count", "type", "time(ns)"]:
            sys.exit(f"{path}: unexpected header {rows[0]}")
        data = rows[1:]
        for row in data[::ALLREDUCE_STRIDE] + ([data[-1]] if (len(data) - 1) % ALLREDUCE_STRIDE
                                                else []):
            if row[2] != "float":
                sys.exit(f"{path}: not an fp32 table: {row}")
            out.append({
                "node": NODE, "kind": "operation", "family": "allreduce",
                "params": "bytes=%d;gpus=%d" % (int(row[0]), gpus), "batch_size": 1,
                "precision": "fp32", "phase": "inference",
                "mean_ms": repr(float(row[3]) / 1e6), "agent_version": "vtrain-a100-lut"})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vtrain_dir", help="a checkout of VIA-Research/vTrain")
    parser.add_argument("out_dir")
    args = parser.parse_args()
    rows = convert(args.vtrain_dir)
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "steps.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    links = allreduce(args.vtrain_dir)
    with open(os.path.join(args.out_dir, "allreduce.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=ALLREDUCE_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(links)
    shutil.copyfile(os.path.join(args.vtrain_dir, "LICENSE"),
                    os.path.join(args.out_dir, "LICENSE"))
    print(f"steps.csv: {len(rows)} rows; allreduce.csv: {len(links)} rows")


if __name__ == "__main__":
    main()
