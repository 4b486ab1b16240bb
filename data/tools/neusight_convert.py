#!/usr/bin/env python3
"""Converts NeuSight's public measurements into perfcast profile files.

NeuSight (sitar-lab/NeuSight, ASPLOS 2025, MIT licence) published per-kernel
latencies (FP32 linear / bmm GEMMs, element-wise, softmax, layer norm) and
end-to-end iteration latencies of transformer models on eight NVIDIA GPUs and
three AMD Instinct GPUs, with its own predictions beside them. This script
turns a checkout of that repository into:

  kernels.csv      operation profiles (gemm, elementwise, layernorm, softmax)
  e2e.csv          whole-model profiles (BERT-large, GPT-2 large, GPT-3 XL,
                   GPT-3 2.7B, OPT-1.3B; training and inference)
  neusight_e2e.csv NeuSight's own end-to-end predictions beside the labels
  amd_kernels.csv, amd_e2e.csv, amd_neusight_e2e.csv
                   the same for MI100 and MI210 (kernels) and MI100, MI210
                   and MI250 (end to end), from scripts/asplos/data/dataset_amd

The profile files import with `perfcast import` (the *neusight_e2e.csv files
are not: data/tools/neusight_protocol.sh and neusight_amd_protocol.sh read
them for the comparison). Standard library only; deterministic (a fixed
stride picks the subsample).

Usage: neusight_convert.py NEUSIGHT_DIR OUT_DIR [--models-as hf|transformer]
"""

import argparse
import csv
import json
import os
import sys

# NeuSight's device names -> perfcast catalog models (models/gpu_catalog.json).
GPUS = {
    "Tesla P4": "P4-8GB",
    "Tesla P100-PCIE-16GB": "P100-PCIE-16GB",
    "Tesla V100-PCIE-32GB": "V100-PCIE-32GB",
    "Tesla T4": "T4-16GB",
    "NVIDIA A100-PCIE-40GB": "A100-PCIE-40GB",
    "NVIDIA A100 80GB PCIe": "A100-PCIE-80GB",
    "NVIDIA H100 80GB HBM3": "H100-SXM5-80GB",
    "NVIDIA L4": "L4-24GB",
}
# PyTorch on ROCm names the device by its product; an MI250 is two GCDs and
# each is one device, so its rows are one GCD's.
AMD_GPUS = {
    "AMD Instinct MI100": "MI100-32GB",
    "AMD Instinct MI210": "MI210-64GB",
    "AMD Instinct MI250": "MI250-GCD-64GB",
}
# Label directories use underscores for spaces.
LABEL_DIRS = {name.replace(" ", "_"): model for name, model in GPUS.items()}
AMD_LABEL_DIRS = {name.replace(" ", "_"): model for name, model in AMD_GPUS.items()}

# Unary element-wise kernels only: perfcast's elementwise family reads one
# tensor and writes one; NeuSight's binary add/mul/div/pow read two and are
# left out rather than mispriced.
UNARY_OPS = {"addu", "mulu", "divu", "powu", "relu", "gelu", "tanh"}

# Per GPU and kernel class, at most this many training-set rows (every n-th);
# NeuSight's out-of-distribution test rows are all kept for linear and ln /
# softmax / element-wise, and subsampled for bmm.
TRAIN_ROWS = {"linear": 900, "bmm": 900, "elem": 210, "ln": 150, "softmax": 150}
TEST_ROWS = {"linear": 2000, "bmm": 900, "elem": 1000, "ln": 1000, "softmax": 1000}

COLUMNS = ["gpu", "kind", "family", "params", "batch_size", "precision", "phase", "mean_ms",
           "agent_version"]
# NeuSight's training label is forward + backward (scripts: measure_e2e times
# model(...) and loss.backward(), never an optimizer step): optimizer "none".
E2E_COLUMNS = COLUMNS[:7] + ["optimizer"] + COLUMNS[7:]
SOURCE = "neusight"


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def stride_pick(rows, limit):
    if len(rows) <= limit:
        return rows
    step = len(rows) / limit
    return [rows[int(i * step)] for i in range(limit)]


def kernel_record(kind, row, split, gpus=GPUS):
    gpu = gpus.get(row["Device"])
    if gpu is None:
        return None
    latency = float(row["Latency"])
    if not latency > 0:
        return None
    if kind in ("linear", "bmm"):
        # NeuSight multiplies (B, M, N) by (B, N, K) (torch.bmm, or
        # nn.Linear(N, K) on a (B, M, N) input): N is the reduction and the
        # output is M x K. The gemm family's output is m x n, reduced over k.
        b, m, n, k = (int(row[c]) for c in ("B", "M", "K", "N"))
        family, params = "gemm", {"batch": b, "m": m, "n": n, "k": k}
    elif kind == "elem":
        if row["OPName"] not in UNARY_OPS:
            return None
        family, params = "elementwise", {"numel": int(row["B"]) * int(row["H"])}
    elif kind == "ln":
        family, params = "layernorm", {"rows": int(row["B"]), "cols": int(row["H"])}
    else:
        family, params = "softmax", {"rows": int(row["B"]), "cols": int(row["H"])}
    return {
        "gpu": gpu,
        "kind": "operation",
        "family": family,
        "params": ";".join(f"{key}={value}" for key, value in sorted(params.items())),
        "batch_size": 1,
        "precision": "fp32",
        "phase": "inference",
        "mean_ms": repr(latency),
        "agent_version": f"{SOURCE}-{split}-{row['OPName']}",
    }


def kernels(root):
    data = os.path.join(root, "scripts/asplos/data/dataset")
    out = []
    # Training set: per-GPU collections for GEMMs, merged files for the rest.
    train_files = {"elem": ["train/elem.csv"], "ln": ["train/ln.csv"],
                   "softmax": ["train/softmax.csv"], "linear": [], "bmm": []}
    for kind in ("linear", "bmm"):
        folder = os.path.join(data, "train/collect", kind, "p2.1.0")
        for name in sorted(os.listdir(folder)):
            train_files[kind].append(os.path.join("train/collect", kind, "p2.1.0", name))
    for split, files, limits in (
            ("train", train_files, TRAIN_ROWS),
            ("test", {k: [f"test/{k}.csv"] for k in TRAIN_ROWS}, TEST_ROWS)):
        for kind, paths in files.items():
            by_gpu = {}
            for path in paths:
                for row in read_csv(os.path.join(data, path)):
                    record = kernel_record(kind, row, split)
                    if record is not None:
                        by_gpu.setdefault(record["gpu"], []).append(record)
            for gpu in sorted(by_gpu):
                out.extend(stride_pick(by_gpu[gpu], limits[kind]))
    return out


def amd_kernels(root):
    """MI100 and MI210 kernels of NeuSight's AMD set (ROCm, PyTorch 2.4.1).

    Upstream holds the AMD GEMMs only as the per-GPU test collections (the
    training collections are too large for the mirror); element-wise, layer
    norm and softmax come from the per-GPU training collections. The same
    limits as the NVIDIA training set pick every n-th row.
    """
    data = os.path.join(root, "scripts/asplos/data/dataset_amd")
    sources = [("linear", "test", "test/collect/linear/p2.4.1"),
               ("bmm", "test", "test/collect/bmm/p2.4.1"),
               ("ln", "train", "train/collect/ln/p2.4.1"),
               ("softmax", "train", "train/collect/softmax/p2.4.1")]
    sources += [("elem", "train", f"train/collect/{op}/p2.4.1") for op in sorted(UNARY_OPS)]
    by_key = {}
    for kind, split, folder in sources:
        for device in sorted(AMD_GPUS):
            path = os.path.join(data, folder, device + ".csv")
            if not os.path.exists(path):
                continue  # no MI250 kernels were published
            for row in read_csv(path):
                record = kernel_record(kind, row, split, AMD_GPUS)
                if record is not None:
                    by_key.setdefault((record["gpu"], kind), []).append(record)
    out = []
    for (gpu, kind) in sorted(by_key):
        out.extend(stride_pick(by_key[(gpu, kind)], TRAIN_ROWS[kind]))
    return out


def model_params(config, phase, models_as):
    """Architecture of a NeuSight model config as a perfcast family + params.

    NeuSight runs Hugging Face models in FP32 with eager attention: GPT-2/3
    and OPT as causal LMs (LM head over every position) in both phases; BERT
    as BertForPreTraining (masked-LM head) to train and as
    BertForSequenceClassification (pooler + classifier) for inference.
    `hf` maps them onto the decoder and bert families (models/families) and
    BERT inference onto the transformer classifier; `transformer` maps all
    onto the transformer classifier (no LM head), the approximation used
    before those families existed.
    """
    if "n_embd" in config:  # GPT-2 style
        layers, hidden, heads = config["n_layer"], config["n_embd"], config["n_head"]
        ffn = config.get("n_inner") or 4 * hidden
        positions = config.get("n_positions", 1024)
    else:  # BERT and OPT
        layers = config["num_hidden_layers"]
        hidden = config["hidden_size"]
        heads = config["num_attention_heads"]
        ffn = config.get("intermediate_size") or config.get("ffn_dim")
        positions = config.get("max_position_embeddings", 512)
    vocab = config["vocab_size"]
    classifier = ("transformer", {"layers": layers, "hidden": hidden, "heads": heads, "ffn": ffn,
                                  "vocab": vocab, "classes": 2})
    if models_as == "transformer":
        return classifier
    if config.get("model_type") == "bert":
        if phase == "inference":
            return classifier
        return "bert", {"layers": layers, "hidden": hidden, "heads": heads, "ffn": ffn,
                        "vocab": vocab, "positions": positions,
                        "type_vocab": config.get("type_vocab_size", 2)}
    return "decoder", {"layers": layers, "hidden": hidden, "heads": heads, "ffn": ffn,
                       "vocab": vocab, "positions": positions, "norm": 0, "mlp": 0, "bias": 1,
                       "tied": 1}


def e2e(root, models_as, label_dirs=LABEL_DIRS):
    labels = os.path.join(root, "scripts/asplos/label")
    configs = os.path.join(root, "scripts/asplos/data/DLmodel_configs")
    predictions = os.path.join(root, "scripts/asplos/results/prediction")
    records, compare = [], []
    for device in sorted(os.listdir(labels)):
        gpu = label_dirs.get(device)
        if gpu is None:
            continue
        for name in sorted(os.listdir(os.path.join(labels, device))):
            if not name.endswith(".json"):
                continue
            stem = name[:-5]
            parts = stem.split("-")
            # model-mode-seqlen-batch; fused (torch.compile) and multi-GPU runs are other work.
            if len(parts) != 4:
                continue
            model, mode, seq_len, batch = parts[0], parts[1], int(parts[2]), int(parts[3])
            config_path = os.path.join(configs, model + ".json")
            if not os.path.exists(config_path) or model.startswith("switch"):
                continue  # Switch (mixture of experts, encoder-decoder) has no descriptor
            with open(config_path) as f:
                config = json.load(f)
            with open(os.path.join(labels, device, name)) as f:
                label = json.load(f)
            phase = "train" if mode == "train" else "inference"
            family, params = model_params(config, phase, models_as)
            params["seq_len"] = seq_len
            records.append({
                "gpu": gpu,
                "kind": "model",
                "family": family,
                "params": ";".join(f"{k}={v}" for k, v in sorted(params.items())),
                "batch_size": batch,
                "precision": "fp32",
                "phase": phase,
                "optimizer": "none" if phase == "train" else "",
                "mean_ms": repr(float(label["e2e_latency"])),
                "agent_version": f"{SOURCE}-e2e-{model}",
            })
            predicted = os.path.join(predictions, device, "neusight", name)
            neusight = ""
            if os.path.exists(predicted):
                with open(predicted) as f:
                    neusight = repr(float(json.load(f)["e2e_latency"]))
            compare.append({"gpu": gpu, "model": model, "phase": phase, "seq_len": seq_len,
                            "batch_size": batch, "measured_ms": repr(float(label["e2e_latency"])),
                            "neusight_ms": neusight})
    return records, compare


def write(path, columns, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("neusight_dir", help="a checkout of sitar-lab/NeuSight")
    parser.add_argument("out_dir")
    parser.add_argument("--models-as", default="hf", choices=["hf", "transformer"],
                        help="perfcast families the end-to-end models are described by")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.neusight_dir, "scripts/asplos/label")):
        sys.exit(f"neusight_convert: {args.neusight_dir} is not a NeuSight checkout")
    os.makedirs(args.out_dir, exist_ok=True)
    kernel_rows = kernels(args.neusight_dir)
    write(os.path.join(args.out_dir, "kernels.csv"), COLUMNS, kernel_rows)
    e2e_rows, compare = e2e(args.neusight_dir, args.models_as)
    write(os.path.join(args.out_dir, "e2e.csv"), E2E_COLUMNS, e2e_rows)
    write(os.path.join(args.out_dir, "neusight_e2e.csv"),
          ["gpu", "model", "phase", "seq_len", "batch_size", "measured_ms", "neusight_ms"], compare)
    print(f"{len(kernel_rows)} kernel profiles, {len(e2e_rows)} end-to-end profiles")
    amd_kernel_rows = amd_kernels(args.neusight_dir)
    write(os.path.join(args.out_dir, "amd_kernels.csv"), COLUMNS, amd_kernel_rows)
    amd_e2e_rows, amd_compare = e2e(args.neusight_dir, args.models_as, AMD_LABEL_DIRS)
    write(os.path.join(args.out_dir, "amd_e2e.csv"), E2E_COLUMNS, amd_e2e_rows)
    write(os.path.join(args.out_dir, "amd_neusight_e2e.csv"),
          ["gpu", "model", "phase", "seq_len", "batch_size", "measured_ms", "neusight_ms"],
          amd_compare)
    print(f"AMD: {len(amd_kernel_rows)} kernel profiles, {len(amd_e2e_rows)} end-to-end profiles")


if __name__ == "__main__":
    main()
