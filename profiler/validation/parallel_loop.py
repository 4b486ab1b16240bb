#!/usr/bin/env python3
"""Plain PyTorch distributed training loops on one host: step time, memory per GPU, power.

Times the layouts people run with PyTorch's own parallelism (single GPU, DDP,
FSDP2 ZeRO-3 / ZeRO-2, per-layer activation checkpointing, DTensor tensor
parallelism, torch.distributed.pipelining) on Llama-style decoders,
Hugging Face GPT-2 and BERT, torchvision ResNet-50 and ViT-B/16, and the bus
bandwidth of NCCL's all-reduce, all-gather and reduce-scatter; one JSONL row
per configuration, written as soon as it is measured.

    python3 profiler/validation/parallel_loop.py --plan h200x2 --out rows.jsonl \
        --collectives-out collectives.jsonl [--deadline-s 540] [--only REGEX]
    python3 profiler/validation/parallel_loop.py --summarize rows.jsonl > summary.jsonl

The loop
--------
One process per GPU, forked from this driver for every configuration (the
driver imports torch, transformers and torchvision but never touches CUDA), so
that each configuration starts with an empty GPU and an out-of-memory or a
hung collective costs only that configuration: a rank that runs out of memory
writes its row with oom=true and exits; its peers are killed after a grace
period. NCCL, one communicator over all ranks (init_process_group with
device_id); NVLink multicast stays off (NCCL_NVLS_ENABLE=0 and friends are
forced into every process).

Each rank's batches are generated on its GPU before timing (two batches used
in turn; DP ranks get different data, TP ranks the same). A step is forward
and loss under torch.autocast(bfloat16), backward, AdamW(lr=1e-4, PyTorch's
default foreach implementation) and zero_grad(set_to_none). No host sync
inside a step. Timing: two single steps, then blocks of n steps (n such that a
block lasts about --block-ms, agreed between ranks) until two consecutive
blocks agree within 3% (at most 4 warm-up blocks), then 3 timed blocks; CUDA
events around each block, the rank's step is the median of its block means
and the row's step_ms the slowest rank's. Peak memory per rank is
torch.cuda.max_memory_allocated / max_memory_reserved since the model was in
place (optimizer states and the first steps included); nvml_used_gib adds the
CUDA context and NCCL's buffers. Power: pynvml samples every 50 ms during the
timed blocks (mean and max W; energy per step = mean W x step), and the
board's energy counter over the same window where it lasts a second or more.

Strategies (the row's fields in perfcast's layout vocabulary)
-------------------------------------------------------------
  single   one GPU, the global batch;                       dp=1 tp=1 pp=1 zero=0
  ddp      DistributedDataParallel(device_ids=[rank]), 25 MiB buckets, default
           broadcast_buffers;                               dp=N zero=0
  fsdp     fully_shard on every layer then on the root, MixedPrecisionPolicy(
           param_dtype=bf16, reduce_dtype=fp32) with fp32 master weights (and
           autocast around forward as for the others);
           reshard_after_forward=True -> zero=3, False -> zero=2
  ac       activation checkpointing of every layer: checkpoint_wrapper
           (non-reentrant torch.utils.checkpoint) around each block, applied
           before DDP / fully_shard; combines with single, ddp and fsdp
  tp       DTensor tensor parallelism over all ranks: parallelize_module with
           ColwiseParallel on q/k/v/gate/up and RowwiseParallel on o/down of
           every block; embedding, norms and the LM head replicated (no
           SequenceParallel, no loss parallel); decoders only;   tp=N
  pp       torch.distributed.pipelining, one stage per rank (layers split
           evenly; the first stage holds the embedding, the last the final
           norm and the head, untied), Schedule1F1B or ScheduleGPipe over
           micro_batches micro-batches of the global batch;      pp=N

Models
------
Decoders ("llama-1b", "llama-3b", "llama-8b") are a plain nn.Module written
here (Decoder below): Llama's architecture as perfcast's decoder family
describes it (norm=1: RMSNorm computed in fp32 as Hugging Face's
LlamaRMSNorm; mlp=1: SwiGLU; rotary positions; GQA by repeating K/V heads;
scaled_dot_product_attention, causal; no biases), with the shapes of
Llama-3.2-1B, Llama-3.2-3B and Llama-3-8B. A plain module rather than
transformers' LlamaForCausalLM so that TP and PP split the same code the
other strategies run. GPT-2 medium and BERT-large are Hugging Face
GPT2LMHeadModel / BertForMaskedLM from real_models.py (random weights,
dropout off, sdpa attention, GPT-2 with gelu_pytorch_tanh), ResNet-50 and
ViT-B/16 torchvision's, weights=None. Each row describes its model in
perfcast's terms: family and parameters as models/descriptor.h, the exact
parameter count, and the Hugging Face config file where one applies.

Only the plans, the descriptions, the collectives' formulas and the summary
are importable without torch (parallel_loop_test.py).
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import socket
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}
GIB = float(1 << 30)

# ---- Models, in perfcast's terms (no torch) ----

LLAMA = {
    # Llama-3.2-1B, Llama-3.2-3B, Llama-3-8B shapes; "tiny" for smoke tests.
    "llama-1b": dict(layers=16, hidden=2048, heads=32, kv_heads=8, ffn=8192, vocab=128256, tied=1),
    "llama-3b": dict(layers=28, hidden=3072, heads=24, kv_heads=8, ffn=8192, vocab=128256, tied=1),
    "llama-8b": dict(layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256,
                     tied=0),
    "llama-tiny": dict(layers=4, hidden=256, heads=8, kv_heads=4, ffn=512, vocab=1024, tied=1),
}
HF_TEXT = {
    "gpt2-medium": ("decoder", dict(layers=24, hidden=1024, heads=16, kv_heads=0, ffn=4096,
                                    vocab=50257, positions=1024, norm=0, mlp=0, bias=1, tied=1),
                    "tests/models/hf_configs/gpt2-medium.json"),
    "bert-large": ("bert", dict(layers=24, hidden=1024, heads=16, ffn=4096, vocab=30522,
                                positions=512, type_vocab=2),
                   "tests/models/hf_configs/bert-large-uncased.json"),
    "gpt2-tiny": ("decoder", dict(layers=2, hidden=128, heads=4, kv_heads=0, ffn=512, vocab=1024,
                                  positions=256, norm=0, mlp=0, bias=1, tied=1), None),
    "bert-tiny": ("bert", dict(layers=2, hidden=128, heads=4, ffn=512, vocab=1024, positions=256,
                               type_vocab=2), None),
}
VISION = {
    "resnet50": ("resnet_imagenet", dict(depth=50, image=224, classes=1000)),
    "vit-b16": ("vit", dict(layers=12, hidden=768, heads=12, ffn=3072, patch=16, image=224,
                            classes=1000)),
    "resnet18": ("resnet_imagenet", dict(depth=18, image=224, classes=1000)),
    "resnet101": ("resnet_imagenet", dict(depth=101, image=224, classes=1000)),
    "resnet18-tiny": ("resnet_imagenet", dict(depth=18, image=64, classes=10)),
    "vit-tiny": ("vit", dict(layers=2, hidden=128, heads=4, ffn=256, patch=16, image=64,
                             classes=10)),
}


def decoder_parameters(p):
    """Exact parameter count of Decoder (and of perfcast's norm=1 mlp=1
    decoder without biases)."""
    h, heads = p["hidden"], p["heads"]
    d = h // heads
    kv = p["kv_heads"] or heads
    layer = h * heads * d + 2 * h * kv * d + heads * d * h + 3 * h * p["ffn"] + 2 * h
    return p["vocab"] * h * (1 if p["tied"] else 2) + p["layers"] * layer + h


def describe(model, seq_len=None, pp=1):
    """{"name", "family", "params" (perfcast's, seq_len filled in),
    "parameters" (exact, where computed here), "hf_config", "implementation"}.
    Pipeline stages cannot share the tied embedding, so pp > 1 unties it."""
    if model in LLAMA:
        p = dict(LLAMA[model], seq_len=seq_len, positions=0, norm=1, mlp=1, bias=0)
        if pp > 1:
            p["tied"] = 0
        return {"name": model, "family": "decoder", "params": p,
                "parameters": decoder_parameters(p), "hf_config": None,
                "implementation": "parallel_loop.Decoder (plain nn.Module, Llama architecture)"}
    if model in HF_TEXT:
        family, params, config = HF_TEXT[model]
        p = dict(params, seq_len=seq_len)
        impl = ("transformers GPT2LMHeadModel (gelu_pytorch_tanh, sdpa, dropout 0)"
                if family == "decoder" else "transformers BertForMaskedLM (sdpa, dropout 0)")
        return {"name": model, "family": family, "params": p, "parameters": None,
                "hf_config": config, "implementation": impl}
    if model in VISION:
        family, params = VISION[model]
        impl = ("torchvision resnet%d(weights=None)" % params["depth"]
                if family == "resnet_imagenet" else "torchvision VisionTransformer")
        return {"name": model, "family": family, "params": dict(params), "parameters": None,
                "hf_config": None, "implementation": impl}
    raise ValueError("unknown model %r" % model)


def workload_key(description, batch, precision="bf16-amp", optimizer="adamw"):
    """perfcast's workload key: model/FAMILY{sorted params}/bBATCH/PRECISION/train/OPT."""
    params = ",".join("%s=%d" % (k, v) for k, v in sorted(description["params"].items()))
    return "model/%s{%s}/b%d/%s/train/%s" % (description["family"], params, batch, precision,
                                             optimizer)


# ---- Plans (no torch) ----

def config(model, strategy, gpus, batch, seq=None, zero=0, ac=False, micro=1, schedule=None,
           tag="", fsdp_params="bf16"):
    """One configuration; `batch` is the global batch."""
    dp = gpus if strategy in ("ddp", "fsdp") else 1
    tp = gpus if strategy == "tp" else 1
    pp = gpus if strategy == "pp" else 1
    name = {"single": "single", "ddp": "ddp", "tp": "tp%d" % tp, "pp": "pp%d" % pp,
            "fsdp": "fsdp-z%d" % zero}[strategy]
    if strategy == "pp":
        name += "-%s-m%d" % (schedule.lower(), micro)
    if strategy == "fsdp" and fsdp_params != "bf16":
        name += "-" + fsdp_params
    if ac:
        name += "-ac"
    ident = "%s-b%d%s-%s%s" % (model, batch, "-s%d" % seq if seq else "", name, tag)
    return {"id": ident, "model": model, "strategy": strategy, "gpus": gpus,
            "global_batch": batch, "seq_len": seq, "dp": dp, "tp": tp, "pp": pp,
            "micro_batches": micro if strategy == "pp" else 1, "zero": zero,
            "activation_checkpointing": ac, "schedule": schedule, "fsdp_params": fsdp_params}


def _layouts(model, batch, seq, gpus, full):
    """The layouts of one decoder at one global batch, most informative first."""
    rows = [config(model, "single", 1, batch, seq), config(model, "ddp", gpus, batch, seq),
            config(model, "fsdp", gpus, batch, seq, zero=3),
            config(model, "fsdp", gpus, batch, seq, zero=2),
            config(model, "tp", gpus, batch, seq),
            config(model, "pp", gpus, batch, seq, micro=4, schedule="1F1B")]
    if full:
        rows += [config(model, "ddp", gpus, batch, seq, ac=True),
                 config(model, "fsdp", gpus, batch, seq, zero=3, ac=True)]
    return rows


def plan(name, gpus=2):
    """The configurations of a plan, in the order they run (a deadline cuts the tail)."""
    if name == "smoke":
        rows = []
        for m in ("llama-tiny",):
            rows += [config(m, "single", 1, 4, 128), config(m, "single", 1, 4, 128, ac=True),
                     config(m, "ddp", gpus, 4, 128), config(m, "ddp", gpus, 4, 128, ac=True),
                     config(m, "fsdp", gpus, 4, 128, zero=3),
                     config(m, "fsdp", gpus, 4, 128, zero=2, ac=True),
                     config(m, "fsdp", gpus, 4, 128, zero=3, fsdp_params="fp32"),
                     config(m, "tp", gpus, 4, 128),
                     config(m, "pp", gpus, 4, 128, micro=2, schedule="1F1B"),
                     config(m, "pp", gpus, 4, 128, micro=4, schedule="GPipe")]
        for m, seq in (("gpt2-tiny", 128), ("bert-tiny", 128)):
            rows += [config(m, "single", 1, 4, seq), config(m, "ddp", gpus, 4, seq),
                     config(m, "fsdp", gpus, 4, seq, zero=3, ac=True)]
        for m in ("resnet18-tiny", "vit-tiny"):
            rows += [config(m, "single", 1, 8), config(m, "ddp", gpus, 8),
                     config(m, "fsdp", gpus, 8, zero=2,
                            fsdp_params="fp32" if m.startswith("resnet") else "bf16")]
        # An out-of-memory row: far beyond any GPU at this batch.
        rows.append(config("llama-tiny", "single", 1, 4096, 4096, tag="-oom"))
        return rows
    if name == "h200x2-sizes":
        return _sizes_plan(gpus)
    if name == "h200x2-host":
        return _host_plan(gpus)
    if name == "h200x2-spread":
        return _spread_plan(gpus)
    if name != "h200x2":
        raise ValueError("unknown plan %r" % name)
    rows = _layouts("llama-1b", 8, 2048, gpus, full=True)
    for m, b, s in (("gpt2-medium", 16, 1024), ("bert-large", 32, 512)):
        rows += [config(m, "single", 1, b, s), config(m, "ddp", gpus, b, s),
                 config(m, "fsdp", gpus, b, s, zero=3), config(m, "fsdp", gpus, b, s, zero=2)]
    for m, b in (("resnet50", 256), ("vit-b16", 128)):
        rows += [config(m, "single", 1, b), config(m, "ddp", gpus, b)]
    rows += _layouts("llama-3b", 4, 2048, gpus, full=False)
    # Out of memory on one GPU, fits sharded (or not: the row says).
    rows += [config("llama-3b", "single", 1, 16, 2048),
             config("llama-3b", "fsdp", gpus, 16, 2048, zero=3, ac=True),
             config("llama-3b", "ddp", gpus, 16, 2048),
             config("llama-8b", "single", 1, 4, 2048),
             config("llama-8b", "fsdp", gpus, 4, 2048, zero=3, ac=True),
             config("llama-3b", "fsdp", gpus, 16, 2048, zero=3)]
    # Second tier: more micro-batch counts, the other schedule, checkpointing alone.
    rows += [config("llama-1b", "pp", gpus, 8, 2048, micro=2, schedule="1F1B"),
             config("llama-1b", "pp", gpus, 8, 2048, micro=8, schedule="1F1B"),
             config("llama-1b", "pp", gpus, 8, 2048, micro=4, schedule="GPipe"),
             config("llama-1b", "single", 1, 8, 2048, ac=True),
             config("llama-1b", "fsdp", gpus, 8, 2048, zero=3, fsdp_params="fp32"),
             config("llama-1b", "fsdp", gpus, 8, 2048, zero=2, ac=True)]
    for m, b, s in (("gpt2-medium", 16, 1024), ("bert-large", 32, 512)):
        rows += [config(m, "ddp", gpus, b, s, ac=True), config(m, "fsdp", gpus, b, s, zero=3,
                                                               ac=True)]
    # BatchNorm's running statistics stay fp32, which FSDP's bf16 parameters
    # refuse (seen: "Expected running_mean to have type BFloat16"): ResNet's
    # FSDP gathers fp32 parameters under autocast.
    rows += [config("resnet50", "fsdp", gpus, 256, zero=3, fsdp_params="fp32"),
             config("resnet50", "fsdp", gpus, 256, zero=2, fsdp_params="fp32"),
             config("vit-b16", "fsdp", gpus, 128, zero=3), config("vit-b16", "fsdp", gpus, 128,
                                                                  zero=2)]
    rows += [config("llama-3b", "ddp", gpus, 4, 2048, ac=True),
             config("llama-3b", "fsdp", gpus, 4, 2048, zero=3, ac=True),
             config("llama-3b", "pp", gpus, 4, 2048, micro=2, schedule="1F1B")]
    return rows


def _sizes_plan(gpus):
    """Held-out configurations for the h200x2 plan's fitted terms: the same models at other
    global batches and sequence lengths, the 8B under every layout that fits two GPUs, and
    short-sequence BERT, where the host bounds the step."""
    rows = []
    for model, batch, seq in (("llama-1b", 16, 1024), ("llama-3b", 8, 1024)):
        rows += _layouts(model, batch, seq, gpus, full=model == "llama-1b")
    rows += [config("llama-3b", "pp", gpus, 8, 1024, micro=8, schedule="1F1B"),
             config("llama-8b", "fsdp", gpus, 4, 1024, zero=3),
             config("llama-8b", "tp", gpus, 2, 2048),
             config("llama-8b", "pp", gpus, 4, 2048, micro=4, schedule="1F1B"),
             config("llama-8b", "fsdp", gpus, 8, 1024, zero=3, ac=True),
             config("llama-8b", "fsdp", gpus, 4, 2048, zero=2)]
    for m, b, s in (("gpt2-medium", 32, 1024), ("bert-large", 64, 512)):
        rows += [config(m, "single", 1, b, s), config(m, "ddp", gpus, b, s),
                 config(m, "fsdp", gpus, b, s, zero=3 if m.startswith("gpt2") else 2)]
    rows += [config("bert-large", "single", 1, 16, 128), config("bert-large", "ddp", gpus, 16, 128),
             config("resnet50", "single", 1, 128), config("resnet50", "ddp", gpus, 128),
             config("resnet50", "fsdp", gpus, 128, zero=2, fsdp_params="fp32"),
             config("vit-b16", "single", 1, 64), config("vit-b16", "ddp", gpus, 64)]
    rows += [config("llama-1b", "single", 1, 4, 4096), config("llama-1b", "ddp", gpus, 4, 4096),
             config("llama-1b", "tp", gpus, 4, 4096),
             config("llama-1b", "fsdp", gpus, 4, 4096, zero=3)]
    return rows


def _host_plan(gpus):
    """Where the host binds a data-parallel step: each model from a few images or sequences per
    GPU, where the Python host sets the step, to where the GPU does, on one GPU at the global
    batch and at the per-GPU batch, under DDP, and a few sharded and TP rows. None of these is
    in the h200x2 or h200x2-sizes plans."""
    rows = []
    for model, batches, seq in (("resnet50", (32, 64), None), ("vit-b16", (16, 48), None),
                                ("bert-large", (32, 96), 128), ("gpt2-medium", (8, 24), 512),
                                ("llama-1b", (8, 24), 512)):
        for b in batches:
            rows += [r for r in (config(model, "single", 1, b // gpus, seq, tag="-host"),
                                 config(model, "single", 1, b, seq, tag="-host"),
                                 config(model, "ddp", gpus, b, seq, tag="-host"))
                     if r["id"] not in {seen["id"] for seen in rows}]
        small = batches[0]
        if model == "resnet50":
            rows.append(config(model, "fsdp", gpus, small, zero=2, fsdp_params="fp32",
                               tag="-host"))
        elif model == "llama-1b":
            rows += [config(model, "fsdp", gpus, small, seq, zero=3, tag="-host"),
                     config(model, "tp", gpus, small, seq, tag="-host")]
        else:
            rows.append(config(model, "fsdp", gpus, small, seq, zero=2, tag="-host"))
    return rows


def _spread_plan(gpus):
    """Where the fitted terms had few rows: DTensor TP across the decoders' sizes, batches,
    sequence lengths and with checkpointing (one GPU at the same batch where it fits), and DDP
    on CNNs beside ResNet-50 and ViT-B/16 at more batches, each DDP row with its one-GPU steps
    at the global and the per-GPU batch. Every configuration is new to the other plans."""
    rows = []
    for model, batch, seq, ac in (("llama-1b", 2, 512, False), ("llama-1b", 32, 512, False),
                                  ("llama-1b", 4, 2048, False), ("llama-1b", 16, 2048, False),
                                  ("llama-1b", 8, 1024, True), ("llama-3b", 2, 1024, False),
                                  ("llama-3b", 16, 1024, False), ("llama-3b", 2, 4096, False),
                                  ("llama-3b", 4, 2048, True), ("llama-8b", 1, 2048, False),
                                  ("llama-8b", 4, 2048, False), ("llama-8b", 1, 4096, False),
                                  ("llama-8b", 8, 1024, True)):
        rows.append(config(model, "tp", gpus, batch, seq, ac=ac, tag="-spread"))
        if model != "llama-8b":  # its AdamW states alone leave no room on one H200
            rows.append(config(model, "single", 1, batch, seq, ac=ac, tag="-spread"))
    for model, batches in (("resnet18", (64, 256)), ("resnet101", (32, 128)),
                           ("vit-b16", (32, 256))):
        for b in batches:
            rows += [r for r in (config(model, "single", 1, b // gpus, tag="-spread"),
                                 config(model, "single", 1, b, tag="-spread"),
                                 config(model, "ddp", gpus, b, tag="-spread"))
                     if r["id"] not in {seen["id"] for seen in rows}]
    return rows


# ---- Collectives: nccl-tests' bus bandwidth (no torch) ----

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


def bus_factor(op, ranks):
    """nccl-tests PERFORMANCE.md: busbw = algbw x factor, where algbw is the
    operation's size (all-reduce: the buffer; all-gather: the gathered output;
    reduce-scatter: the input) over its time."""
    if op == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if op in ("all_gather", "reduce_scatter"):
        return (ranks - 1) / float(ranks)
    raise ValueError("unknown collective %r" % op)


def message_sizes(lo=4 << 10, hi=1 << 30):
    sizes, s = [], lo
    while s <= hi:
        sizes.append(s)
        s *= 2
    return sizes


def bandwidths(op, nbytes, seconds, ranks):
    algbw = nbytes / seconds / 1e9
    return algbw, algbw * bus_factor(op, ranks)


# ---- Statistics and the summary (no torch) ----

def median(values):
    s = sorted(values)
    if not s:
        return float("nan")
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else 0.5 * (s[mid - 1] + s[mid])


SUMMARY_FIELDS = ("id", "model", "family", "params", "parameters", "hf_config", "key",
                  "gpus", "dp", "tp", "pp", "micro_batches", "zero", "activation_checkpointing",
                  "framework", "strategy", "implementation", "schedule", "fsdp_params", "global_batch", "seq_len", "precision",
                  "optimizer", "oom", "error", "step_ms", "peak_allocated_gib",
                  "peak_reserved_gib", "nvml_used_gib", "power_w_per_gpu", "energy_j_per_step")


def summarize(rows):
    """One compact row per configuration (the newest of each id) for the
    modelling helpers: layout, model, step, the largest rank's memory, the
    mean GPU power, and the host's Python dispatch rate at the time."""
    newest = {}
    for r in rows:
        if r.get("kind") == "parallel_step":
            newest[r["id"]] = r
    out = []
    for r in newest.values():
        s = {k: r.get(k) for k in SUMMARY_FIELDS}
        m = r.get("model_description") or {}
        s.update(model=m.get("name"), family=m.get("family"), params=m.get("params"),
                 parameters=m.get("parameters"), hf_config=m.get("hf_config"))
        for k in ("peak_allocated_gib", "peak_reserved_gib", "nvml_used_gib"):
            values = [v for v in (r.get(k) or []) if v is not None]
            s[k] = max(values) if values else None
        powers = [v for v in (r.get("power_w") or []) if v is not None]
        s["power_w_per_gpu"] = sum(powers) / len(powers) if powers else None
        s["energy_j_per_step"] = r.get("energy_j_per_step_total")  # all GPUs together
        probe = r.get("host_probe") or {}
        s["host_python_ops_per_s"] = probe.get("python_ops_per_s")
        s["host_cpu"] = (r.get("host") or {}).get("cpu_model")
        out.append(s)
    return out


# ---- Everything below needs torch ----

def _decoder_classes():
    import torch
    from torch import nn
    import torch.nn.functional as F

    class RMSNorm(nn.Module):
        def __init__(self, h, eps=1e-5):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(h))
            self.eps = eps

        def forward(self, x):
            x32 = x.float()
            y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
            return self.weight * y.to(x.dtype)

    def rotate(x, cos, sin):
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos.to(x.dtype) + rotated * sin.to(x.dtype)

    class Attention(nn.Module):
        def __init__(self, h, heads, kv):
            super().__init__()
            self.d = h // heads
            self.wq = nn.Linear(h, heads * self.d, bias=False)
            self.wk = nn.Linear(h, kv * self.d, bias=False)
            self.wv = nn.Linear(h, kv * self.d, bias=False)
            self.wo = nn.Linear(heads * self.d, h, bias=False)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            # -1 heads: under tensor parallelism each rank holds a slice.
            q = self.wq(x).view(b, s, -1, self.d).transpose(1, 2)
            k = self.wk(x).view(b, s, -1, self.d).transpose(1, 2)
            v = self.wv(x).view(b, s, -1, self.d).transpose(1, 2)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            groups = q.shape[1] // k.shape[1]
            if groups > 1:
                k = k.repeat_interleave(groups, dim=1)
                v = v.repeat_interleave(groups, dim=1)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.wo(o.transpose(1, 2).reshape(b, s, -1))

    class Mlp(nn.Module):
        def __init__(self, h, ffn):
            super().__init__()
            self.w1 = nn.Linear(h, ffn, bias=False)
            self.w3 = nn.Linear(h, ffn, bias=False)
            self.w2 = nn.Linear(ffn, h, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class Block(nn.Module):
        def __init__(self, p):
            super().__init__()
            self.norm1 = RMSNorm(p["hidden"])
            self.attn = Attention(p["hidden"], p["heads"], p["kv_heads"] or p["heads"])
            self.norm2 = RMSNorm(p["hidden"])
            self.mlp = Mlp(p["hidden"], p["ffn"])

        def forward(self, x, cos, sin):
            x = x + self.attn(self.norm1(x), cos, sin)
            return x + self.mlp(self.norm2(x))

    class Decoder(nn.Module):
        """Layers [first, last) of a Llama-style decoder; the embedding when
        first == 0, the final norm and the head when last == layers."""

        def __init__(self, p, first=0, last=None, theta=500000.0):
            super().__init__()
            last = p["layers"] if last is None else last
            h, d = p["hidden"], p["hidden"] // p["heads"]
            self.embed = nn.Embedding(p["vocab"], h) if first == 0 else None
            self.layers = nn.ModuleList(Block(p) for _ in range(first, last))
            self.norm = RMSNorm(h) if last == p["layers"] else None
            self.head = nn.Linear(h, p["vocab"], bias=False) if self.norm is not None else None
            if p["tied"] and self.embed is not None and self.head is not None:
                self.head.weight = self.embed.weight
            inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
            freqs = torch.outer(torch.arange(p["seq_len"], dtype=torch.float32), inv)
            angles = torch.cat((freqs, freqs), dim=-1)
            self.register_buffer("cos", angles.cos(), persistent=False)
            self.register_buffer("sin", angles.sin(), persistent=False)

        def forward(self, x):
            if self.embed is not None:
                x = self.embed(x)
            s = x.shape[1]
            cos, sin = self.cos[:s], self.sin[:s]
            for layer in self.layers:
                x = layer(x, cos, sin)
            if self.head is not None:
                x = self.head(self.norm(x))
            return x

    return Decoder


class Built:
    """A model on its device with what the loop needs around it."""

    def __init__(self, model, blocks, make_batch, loss, block_owner=None):
        self.model = model              # nn.Module: model(x) -> output for loss
        self.blocks = blocks            # nn.ModuleList (or list) of the repeated layers
        self.block_owner = block_owner  # (module, attribute name, index) per block, to wrap
        self.make_batch = make_batch    # (batch, generator) -> (input, target) on the device
        self.loss = loss                # (output, target) -> scalar


def build(model_name, seq, device, first=0, last=None, untie=False):
    """Builds a model directly on `device` (random weights)."""
    import torch
    import torch.nn.functional as F

    def lm_loss(out, target):
        return F.cross_entropy(out.flatten(0, 1), target.flatten())

    def tokens(vocab):
        def make(batch, g):
            x = torch.randint(vocab, (batch, seq), generator=g, device=device)
            y = torch.randint(vocab, (batch, seq), generator=g, device=device)
            return x, y
        return make

    with torch.device(device):
        if model_name in LLAMA:
            p = dict(LLAMA[model_name], seq_len=seq)
            if untie:
                p["tied"] = 0
            model = _decoder_classes()(p, first, last)
            return Built(model, model.layers, tokens(p["vocab"]), lm_loss)
        if model_name in HF_TEXT:
            sys.path.insert(0, HERE)
            import real_models
            family, params, _ = HF_TEXT[model_name]
            p = dict(params, seq_len=seq)
            workload = (real_models.decoder if family == "decoder" else real_models.bert)(p, 1)
            model = workload.model
            inner = model.inner
            blocks = inner.transformer.h if family == "decoder" else inner.bert.encoder.layer
            return Built(model, blocks, tokens(p["vocab"]), lm_loss)
        if model_name in VISION:
            family, p = VISION[model_name]
            if family == "resnet_imagenet":
                import torchvision
                model = getattr(torchvision.models, "resnet%d" % p["depth"])(
                    weights=None, num_classes=p["classes"])
                blocks = [b for stage in (model.layer1, model.layer2, model.layer3, model.layer4)
                          for b in stage]
            else:
                from torchvision.models.vision_transformer import VisionTransformer
                sys.path.insert(0, HERE)
                import real_models
                model = VisionTransformer(**real_models.vit_kwargs(p))
                blocks = model.encoder.layers

            def images(batch, g):
                x = torch.randn(batch, 3, p["image"], p["image"], generator=g, device=device)
                y = torch.randint(p["classes"], (batch,), generator=g, device=device)
                return x, y
            return Built(model, blocks, images, F.cross_entropy)
    raise ValueError("unknown model %r" % model_name)


def wrap_checkpointing(blocks):
    """Replaces every block, in its parent container, by checkpoint_wrapper(block)."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch import nn
    wrapped = []
    if isinstance(blocks, nn.ModuleList) or isinstance(blocks, nn.Sequential):
        for i in range(len(blocks)):
            blocks[i] = checkpoint_wrapper(blocks[i])
            wrapped.append(blocks[i])
        return wrapped
    raise TypeError("checkpointing needs the blocks' container")


def checkpoint_blocks(built):
    """Per-layer activation checkpointing; returns the wrapped blocks."""
    from torch import nn
    if isinstance(built.blocks, (nn.ModuleList, nn.Sequential)):
        return wrap_checkpointing(built.blocks)
    # torchvision ResNet stages: wrap inside each Sequential stage.
    wrapped = []
    m = built.model
    for stage in (m.layer1, m.layer2, m.layer3, m.layer4):
        wrapped += wrap_checkpointing(stage)
    return wrapped


def host_info():
    """The host, as far as the process can see it (no CUDA)."""
    cpu = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = None
    return {"hostname": socket.gethostname(), "cpu_model": cpu, "cpu_count": os.cpu_count(),
            "cpu_affinity": affinity, "kernel": platform.release(),
            "python": platform.python_version()}


def versions_info():
    import torch
    v = {"torch": torch.__version__, "cuda": torch.version.cuda,
         "cudnn": None, "nccl": None, "driver": None, "gpu": None}
    for module in ("transformers", "torchvision"):
        try:
            v[module] = __import__(module).__version__
        except ImportError:
            v[module] = None
    try:
        import pynvml
        pynvml.nvmlInit()
        v["driver"] = _text(pynvml.nvmlSystemGetDriverVersion())
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        v["gpu"] = _text(pynvml.nvmlDeviceGetName(h))
        v["gpu_memory_gib"] = pynvml.nvmlDeviceGetMemoryInfo(h).total / GIB
        v["gpus_visible"] = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()  # the ranks, forked later, open their own
    except Exception as e:  # no NVML: the rows say so
        v["nvml_error"] = str(e).splitlines()[0] if str(e) else type(e).__name__
    return v


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _nccl_version():
    import torch
    try:
        v = torch.cuda.nccl.version()
        return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception:
        return None


class PowerMeter:
    """pynvml on one GPU: power samples every `period_s` from a thread
    (nvmlDeviceGetPowerUsage, which Hopper averages over the last second:
    the warm-up right before runs the same steps) and the energy counter
    across the window (its updates are too coarse for windows under a
    second: seen here, 0 J over a few hundred ms)."""

    def __init__(self, index, period_s=0.05):
        import threading
        self.samples, self.period_s, self.handle = [], period_s, None
        self.stop_flag = threading.Event()
        self.thread = None
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        except Exception:
            self.handle = None

    def _energy_mj(self):
        try:
            return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        except Exception:
            return None

    def _run(self):
        while not self.stop_flag.is_set():
            try:
                self.samples.append(self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0)
            except Exception:
                pass
            self.stop_flag.wait(self.period_s)

    def start(self):
        import threading
        if self.handle is None:
            return
        self.e0, self.t0 = self._energy_mj(), time.perf_counter()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def stop(self):
        """-> {"power_w": mean sample, "power_max_w", "power_samples",
        "power_energy_w": energy counter / window (windows of 1 s or more)}."""
        if self.handle is None or self.thread is None:
            return {}
        e1, t1 = self._energy_mj(), time.perf_counter()
        self.stop_flag.set()
        self.thread.join()
        window = t1 - self.t0
        energy = (e1 - self.e0) / 1000.0 if e1 is not None and self.e0 is not None else None
        return {"power_w": sum(self.samples) / len(self.samples) if self.samples else None,
                "power_max_w": max(self.samples) if self.samples else None,
                "power_samples": len(self.samples), "power_window_s": window,
                "power_energy_w": energy / window if energy and window >= 1.0 else None}

    def used_gib(self):
        if self.handle is None:
            return None
        try:
            return self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used / GIB
        except Exception:
            return None


def host_probe(device):
    """plain_loop's dispatch probe (500 tiny adds queued without a sync) from
    TorchScript and from Python, ops/s."""
    sys.path.insert(0, HERE)
    import plain_loop
    try:
        scripted = plain_loop._scripted_adds()
    except Exception:
        scripted = None
    cpp, python = plain_loop.dispatch_rates(device, scripted)
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {"torchscript_ops_per_s": cpp, "python_ops_per_s": python, "loadavg_1m": load}


def _agree(value, world, device):
    """The largest value over ranks, so that every rank runs the same steps."""
    if world == 1:
        return value
    import torch
    import torch.distributed as dist
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def time_step(step, device, world, block_ms, budget_s, timed_blocks=3, max_warm=4, tol=0.03,
              meter=None):
    """Warm-up until two blocks agree, then `timed_blocks` blocks; the rank's
    block means (ms) and the figures that led there."""
    import torch

    def block(n):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            step()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / n

    t0 = time.perf_counter()
    first = [_agree(block(1), world, device) for _ in range(2)]
    n = max(1, min(64, int(round(block_ms / max(first[1], 1e-3)))))
    per_block_s = n * first[1] / 1e3
    # Fewer blocks where a step is long and the budget short (decided on
    # agreed figures: every rank must run the same steps).
    spent = _agree(time.perf_counter() - t0, world, device)
    available = int((budget_s - spent) / max(per_block_s, 1e-3))
    if available < max_warm + timed_blocks:
        timed_blocks = 3 if available >= 5 else 2
        max_warm = max(1, min(max_warm, available - timed_blocks))
    warm = [_agree(block(n), world, device)]
    for _ in range(max_warm - 1):
        warm.append(_agree(block(n), world, device))
        if abs(warm[-1] - warm[-2]) <= tol * warm[-2]:
            break
    if meter is not None:
        meter.start()
    timed = [block(n) for _ in range(timed_blocks)]
    power = meter.stop() if meter is not None else {}
    return {"first_steps_ms": first, "steps_per_block": n, "warmup_blocks_ms": warm,
            "blocks_ms": timed, "step_ms": median(timed), "power": power}


def _optimizer(model):
    import torch
    from torch.distributed.tensor import DTensor
    params = [p for p in model.parameters() if p.requires_grad]
    sharded = [p for p in params if isinstance(p, DTensor)]
    plain = [p for p in params if not isinstance(p, DTensor)]
    # Separate groups: foreach kernels take DTensors or plain tensors, not a mix.
    groups = [{"params": g} for g in (sharded, plain) if g]
    return torch.optim.AdamW(groups, lr=1e-4)


def run_config(cfg, rank, world, device, budget_s, block_ms):
    """Builds, lays out and times one configuration on this rank."""
    import torch
    import torch.distributed as dist
    from torch import nn

    strategy = cfg["strategy"]
    result = {"rank": rank}
    if rank == 0:
        result["host_probe"] = host_probe(device)
        result["nccl"] = _nccl_version()
    data_rank = rank if strategy in ("ddp", "fsdp") else 0
    torch.manual_seed(1234)  # the same initial weights on every rank
    torch.backends.cudnn.benchmark = True
    mesh = None
    if world > 1:
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cuda", (world,))
    seq = cfg["seq_len"]
    local_batch = cfg["global_batch"] // cfg["dp"]
    meter = PowerMeter(device.index)

    if strategy == "pp":
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
        layers = LLAMA[cfg["model"]]["layers"]
        per = layers // world
        first, last = rank * per, layers if rank == world - 1 else (rank + 1) * per
        built = build(cfg["model"], seq, device, first, last, untie=True)
        if cfg["activation_checkpointing"]:
            checkpoint_blocks(built)
        model = built.model
        stage = PipelineStage(model, rank, world, device)
        schedule_cls = Schedule1F1B if cfg["schedule"] == "1F1B" else ScheduleGPipe
        schedule = schedule_cls(stage, n_microbatches=cfg["micro_batches"], loss_fn=built.loss)
        g = torch.Generator(device=device).manual_seed(99)
        batches = [built.make_batch(local_batch, g) for _ in range(2)]
        opt = _optimizer(model)
        state = {"i": 0}

        def step():
            x, y = batches[state["i"] % 2]
            state["i"] += 1
            with torch.autocast("cuda", dtype=torch.bfloat16):
                if rank == 0:
                    schedule.step(x)
                elif rank == world - 1:
                    schedule.step(target=y, losses=[])
                else:
                    schedule.step()
            opt.step()
            opt.zero_grad(set_to_none=True)
    else:
        built = build(cfg["model"], seq, device)
        model = built.model
        if cfg["activation_checkpointing"]:
            checkpoint_blocks(built)
        if strategy == "ddp":
            from torch.nn.parallel import DistributedDataParallel as DDP
            model = DDP(model, device_ids=[device.index])
        elif strategy == "fsdp":
            from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
            kwargs = {"mesh": mesh, "reshard_after_forward": cfg["zero"] == 3}
            if cfg["fsdp_params"] == "bf16":
                kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                                           reduce_dtype=torch.float32)
            for block in _current_blocks(built):
                fully_shard(block, **kwargs)
            fully_shard(model, **kwargs)
        elif strategy == "tp":
            from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                           parallelize_module)
            if cfg["model"] not in LLAMA:
                raise ValueError("tensor parallelism is written for the decoders only")
            layer_plan = {"attn.wq": ColwiseParallel(), "attn.wk": ColwiseParallel(),
                          "attn.wv": ColwiseParallel(), "attn.wo": RowwiseParallel(),
                          "mlp.w1": ColwiseParallel(), "mlp.w3": ColwiseParallel(),
                          "mlp.w2": RowwiseParallel()}
            for block in _current_blocks(built):
                target = getattr(block, "_checkpoint_wrapped_module", block)
                parallelize_module(target, mesh, layer_plan)
        g = torch.Generator(device=device).manual_seed(99 + data_rank)
        batches = [built.make_batch(local_batch, g) for _ in range(2)]
        opt = _optimizer(model)
        loss_fn = built.loss
        state = {"i": 0}

        def step():
            x, y = batches[state["i"] % 2]
            state["i"] += 1
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

    # The peak counts from here: the model laid out (FSDP's full-size build
    # freed), optimizer states and activations to come.
    torch.cuda.synchronize(device)
    result["build_peak_allocated_gib"] = torch.cuda.max_memory_allocated(device) / GIB
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    result["setup_allocated_gib"] = torch.cuda.memory_allocated(device) / GIB
    result["parameters_on_rank"] = sum(
        (p.to_local() if hasattr(p, "to_local") else p).numel() for p in model.parameters())
    timing = time_step(step, device, world, block_ms, budget_s, meter=meter)
    torch.cuda.synchronize(device)
    power = timing.pop("power")
    result.update(timing)
    result.update(power)
    result.update(peak_allocated_gib=torch.cuda.max_memory_allocated(device) / GIB,
                  peak_reserved_gib=torch.cuda.max_memory_reserved(device) / GIB,
                  nvml_used_gib=meter.used_gib(),
                  energy_j_per_step=(power["power_w"] * timing["step_ms"] / 1e3
                                     if power.get("power_w") else None))
    if world > 1:
        dist.barrier()
    return result


def _current_blocks(built):
    """The blocks as they are now in their containers (wrapped or not)."""
    from torch import nn
    if isinstance(built.blocks, (nn.ModuleList, nn.Sequential)):
        return list(built.blocks)
    m = built.model
    return [b for stage in (m.layer1, m.layer2, m.layer3, m.layer4) for b in stage]


def run_collectives(rank, world, device, sizes, out_rows, deadline):
    import torch
    import torch.distributed as dist
    ops = {"all_reduce": lambda t, o: dist.all_reduce(t),
           "all_gather": lambda t, o: dist.all_gather_into_tensor(o, t),
           "reduce_scatter": lambda t, o: dist.reduce_scatter_tensor(o, t)}
    for dtype in (torch.float32, torch.bfloat16):
        esize = torch.tensor([], dtype=dtype).element_size()
        for op in COLLECTIVES:
            for nbytes in sizes:
                if time.time() > deadline:
                    return
                count = nbytes // esize
                # nccl-tests' sizes: all-gather's output and reduce-scatter's input are `nbytes`.
                if op == "all_reduce":
                    t, o = torch.ones(count, dtype=dtype, device=device), None
                elif op == "all_gather":
                    t = torch.ones(count // world, dtype=dtype, device=device)
                    o = torch.empty(count, dtype=dtype, device=device)
                else:
                    t = torch.ones(count, dtype=dtype, device=device)
                    o = torch.empty(count // world, dtype=dtype, device=device)
                iters = max(5, min(200, int(2e9 / max(nbytes, 1))))
                for _ in range(3):
                    ops[op](t, o)
                dist.barrier()
                torch.cuda.synchronize(device)
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(iters):
                    ops[op](t, o)
                end.record()
                end.synchronize()
                us = _agree(start.elapsed_time(end) * 1e3 / iters, world, device)
                algbw, busbw = bandwidths(op, nbytes, us / 1e6, world)
                if rank == 0:
                    out_rows.append({"kind": "collective", "op": op,
                                     "dtype": str(dtype).replace("torch.", ""), "bytes": nbytes,
                                     "gpus": world, "iters": iters, "time_us": us,
                                     "algbw_gbps": algbw, "busbw_gbps": busbw})
                del t, o


def worker(rank, world, cfg, port, result_dir, budget_s, block_ms, deadline):
    """One rank of one configuration (or of the collectives sweep): writes
    result_dir/rankR.json and exits without tearing NCCL down."""
    os.environ.update(NO_MULTICAST)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    import torch
    import torch.distributed as dist
    device = torch.device("cuda", rank)
    result = {"rank": rank, "oom": False, "error": None}
    t0 = time.time()
    try:
        torch.cuda.set_device(device)
        if world > 1:
            dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device,
                                    timeout=datetime.timedelta(seconds=180))
        if cfg.get("kind") == "collectives":
            rows = []
            run_collectives(rank, world, device, cfg["sizes"], rows, deadline)
            result["rows"] = rows
            result["nccl"] = _nccl_version()
        else:
            result.update(run_config(cfg, rank, world, device, budget_s, block_ms))
    except torch.cuda.OutOfMemoryError as e:
        result.update(oom=True, error=str(e).splitlines()[0][:400],
                      peak_allocated_gib=torch.cuda.max_memory_allocated(device) / GIB,
                      peak_reserved_gib=torch.cuda.max_memory_reserved(device) / GIB)
    except Exception as e:  # the row records it; the campaign goes on
        lines = traceback.format_exc().strip().splitlines()
        result["error"] = " | ".join(lines[-3:])[:600]
        if "out of memory" in str(e).lower():
            result["oom"] = True
    result["wall_s"] = time.time() - t0
    path = os.path.join(result_dir, "rank%d.json" % rank)
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def launch(cfg, gpus, port, budget_s, block_ms, timeout_s, deadline, grace_s=15.0):
    """Forks `gpus` ranks, waits (killing stragglers), returns their results."""
    import multiprocessing
    import shutil
    import tempfile
    ctx = multiprocessing.get_context("fork")
    result_dir = tempfile.mkdtemp(prefix="parallel_loop_")
    procs = [ctx.Process(target=worker, args=(r, gpus, cfg, port, result_dir, budget_s,
                                              block_ms, deadline)) for r in range(gpus)]
    for p in procs:
        p.start()
    t0 = time.time()
    first_done = None
    killed = None
    while any(p.is_alive() for p in procs):
        time.sleep(0.1)
        done = [os.path.exists(os.path.join(result_dir, "rank%d.json" % r)) for r in range(gpus)]
        if any(done) and first_done is None:
            first_done = time.time()
        if first_done is not None and time.time() - first_done > grace_s:
            killed = "peers of a finished rank did not finish within %.0f s" % grace_s
        elif time.time() - t0 > timeout_s:
            killed = "timeout after %.0f s" % timeout_s
        if killed:
            for p in procs:
                if p.is_alive():
                    p.kill()
            break
    for p in procs:
        p.join(timeout=10)
    results = []
    for r in range(gpus):
        path = os.path.join(result_dir, "rank%d.json" % r)
        if os.path.exists(path):
            with open(path) as f:
                results.append(json.load(f))
        else:
            results.append({"rank": r, "oom": False, "error": killed or "no result (exit code %s)"
                            % procs[r].exitcode, "killed": True})
    shutil.rmtree(result_dir, ignore_errors=True)
    return results


def assemble(cfg, results, host, versions, wall_s):
    """The row of one configuration from its ranks' results."""
    d = describe(cfg["model"], cfg["seq_len"], cfg["pp"])
    impl = {"single": "torch (one process)", "ddp": "torch.nn.parallel.DistributedDataParallel",
            "fsdp": "torch.distributed.fsdp.fully_shard (FSDP2)",
            "tp": "torch.distributed.tensor.parallel.parallelize_module (DTensor)",
            "pp": "torch.distributed.pipelining.Schedule%s" % (cfg["schedule"] or "")}
    row = {"kind": "parallel_step", "id": cfg["id"], "date": datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec="seconds"),
        "model_description": d, "key": workload_key(d, cfg["global_batch"]),
        "gpus": cfg["gpus"], "dp": cfg["dp"], "tp": cfg["tp"], "pp": cfg["pp"],
        "micro_batches": cfg["micro_batches"], "zero": cfg["zero"],
        "activation_checkpointing": cfg["activation_checkpointing"], "framework": "pytorch",
        "implementation": impl[cfg["strategy"]], "strategy": cfg["strategy"],
        "global_batch": cfg["global_batch"], "seq_len": cfg["seq_len"],
        "precision": "bf16-amp", "optimizer": "adamw",
        "precision_detail": ("autocast(bfloat16), fp32 parameters and AdamW states" +
                             (", FSDP MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)"
                              if cfg["strategy"] == "fsdp" and cfg["fsdp_params"] == "bf16"
                              else "")),
        "activation_checkpointing_detail": ("checkpoint_wrapper (non-reentrant) per layer"
                                            if cfg["activation_checkpointing"] else None)}
    if cfg["strategy"] == "ddp":
        row["ddp_bucket_mib"] = 25
    if cfg["strategy"] == "fsdp":
        row["fsdp_params"] = cfg["fsdp_params"]  # bf16: MixedPrecisionPolicy; fp32: autocast only
    if cfg["strategy"] == "pp":
        row["schedule"] = cfg["schedule"]
    row["oom"] = any(r.get("oom") for r in results)
    row["oom_ranks"] = [r["rank"] for r in results if r.get("oom")]
    errors = [r.get("error") for r in results if r.get("error")]
    row["error"] = errors[0] if errors else None
    ok = not row["oom"] and not errors
    per_rank = [r.get("step_ms") for r in results]
    row["step_ms"] = max(per_rank) if ok and all(v is not None for v in per_rank) else None
    row["step_ms_per_rank"] = per_rank
    for k in ("blocks_ms", "warmup_blocks_ms", "first_steps_ms", "steps_per_block",
              "peak_allocated_gib", "peak_reserved_gib", "setup_allocated_gib",
              "build_peak_allocated_gib", "nvml_used_gib",
              "power_w", "power_max_w", "power_energy_w", "power_samples", "power_window_s",
              "energy_j_per_step", "parameters_on_rank"):
        row[k] = [r.get(k) for r in results]
    energy = [e for e in row["energy_j_per_step"] if e is not None]
    row["energy_j_per_step_total"] = sum(energy) if len(energy) == len(results) else None
    rank0 = results[0] if results else {}
    row["host_probe"] = rank0.get("host_probe")
    row["host"] = host
    row["versions"] = dict(versions, nccl=rank0.get("nccl") or versions.get("nccl"))
    row["wall_s"] = wall_s
    return row


def _append(path, row):
    with open(path, "a") as f:
        f.write(json.dumps(row, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plan", default="h200x2", help="smoke, h200x2, h200x2-sizes, h200x2-host or h200x2-spread")
    parser.add_argument("--out", default="parallel.jsonl", help="JSONL, appended per configuration")
    parser.add_argument("--collectives-out", default="", help="JSONL of the collectives sweep")
    parser.add_argument("--collective-sizes", default="4K:1G", help="LO:HI, doubling")
    parser.add_argument("--gpus", type=int, default=2, help="GPUs of the multi-GPU layouts")
    parser.add_argument("--only", default="", help="regex on configuration ids")
    parser.add_argument("--deadline-s", type=float, default=540.0,
                        help="start nothing after this; stop what runs at this")
    parser.add_argument("--config-budget-s", type=float, default=20.0,
                        help="a configuration's timing budget (warm-up shortened to fit)")
    parser.add_argument("--config-timeout-s", type=float, default=120.0)
    parser.add_argument("--block-ms", type=float, default=250.0, help="a timed block's length")
    parser.add_argument("--port", type=int, default=29600)
    parser.add_argument("--list", action="store_true", help="print the plan's ids and exit")
    parser.add_argument("--summarize", metavar="ROWS", help="print summarize() of a rows file")
    args = parser.parse_args(argv)
    if args.summarize:
        with open(args.summarize) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        for s in summarize(rows):
            print(json.dumps(s, sort_keys=True))
        return 0
    configs = plan(args.plan, args.gpus)
    if args.only:
        configs = [c for c in configs if re.search(args.only, c["id"])]
    if args.list:
        for c in configs:
            print(c["id"])
        return 0
    start = time.time()
    deadline = start + args.deadline_s
    os.environ.update(NO_MULTICAST)
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # CUDA's index = NVML's
    import torch
    # Imported here, before forking, so that each rank finds them loaded.
    import torch.distributed  # noqa: F401
    for module in ("transformers", "torchvision", "pynvml"):
        try:
            __import__(module)
        except ImportError:
            pass
    try:
        from transformers import BertForMaskedLM, GPT2LMHeadModel  # noqa: F401
    except ImportError:
        pass
    sys.path.insert(0, HERE)
    import plain_loop  # noqa: F401
    import real_models  # noqa: F401
    if torch.cuda.is_initialized():
        print("parallel_loop: CUDA initialised before forking; cannot run", flush=True)
        return 1
    host, versions = host_info(), versions_info()
    print("parallel_loop: %s, %s cores; %s x %s, driver %s; torch %s" % (
        host["cpu_model"], host["cpu_count"], versions.get("gpus_visible"), versions.get("gpu"),
        versions.get("driver"), versions["torch"]), flush=True)
    port = args.port
    if args.collectives_out and args.gpus > 1:
        lo, hi = (_size(s) for s in args.collective_sizes.split(":"))
        t0 = time.time()
        results = launch({"kind": "collectives", "sizes": message_sizes(lo, hi)}, args.gpus,
                         port, 0, 0, min(240.0, deadline - time.time()), deadline)
        port += 1
        rows = results[0].get("rows") or []
        for row in rows:
            row.update(host=host, versions=dict(versions, nccl=results[0].get("nccl")),
                       date=datetime.datetime.now(datetime.timezone.utc).isoformat(
                           timespec="seconds"))
            _append(args.collectives_out, row)
        big = [r for r in rows if r["bytes"] == max(x["bytes"] for x in rows)] if rows else []
        print("collectives: %d rows in %.1f s%s %s" % (
            len(rows), time.time() - t0, "" if not results[0].get("error") else
            " (error: %s)" % results[0]["error"],
            "; ".join("%s %s %.1f GB/s" % (r["op"], r["dtype"], r["busbw_gbps"]) for r in big)),
            flush=True)
    done = 0
    for i, cfg in enumerate(configs):
        left = deadline - time.time()
        if left < 15:
            print("parallel_loop: deadline: %d of %d configurations not run: %s" % (
                len(configs) - i, len(configs), " ".join(c["id"] for c in configs[i:])),
                flush=True)
            break
        t0 = time.time()
        results = launch(cfg, cfg["gpus"], port, min(args.config_budget_s, left - 10),
                         args.block_ms, min(args.config_timeout_s, left - 5), deadline)
        port += 1
        row = assemble(cfg, results, host, versions, time.time() - t0)
        _append(args.out, row)
        done += 1
        print("[%d/%d] %s: %s  peak %s GiB  %s W  (%.1f s)" % (
            i + 1, len(configs), cfg["id"],
            "OOM" if row["oom"] else ("%.2f ms" % row["step_ms"] if row["step_ms"] else
                                      "failed: %s" % row["error"]),
            "/".join("%.1f" % v for v in row["peak_allocated_gib"] if v is not None),
            "/".join("%.0f" % v for v in row["power_w"] if v is not None), row["wall_s"]),
            flush=True)
    print("parallel_loop: %d configurations in %.0f s -> %s" % (done, time.time() - start,
                                                                 args.out), flush=True)
    return 0


def _size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    if text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


if __name__ == "__main__":
    sys.exit(main())
