#!/usr/bin/env python3
"""data/tools/neusight_convert.py on a miniature NeuSight checkout.

The shipped data/external/neusight files were converted from the real
checkout, which is too large to keep; this builds a few rows of each of its
inputs (kernel collections, end-to-end labels, model configs, NeuSight's
predictions), runs the converter, checks what it keeps and drops, and imports
the output through a real perfcastd: every converted row must be a valid
profile.

Usage: neusight_convert_test.py SOURCE_DIR PERFCASTD PERFCAST
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
import time

H100 = "NVIDIA H100 80GB HBM3"


def write_csv(path, columns, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(value, f)


def make_checkout(root):
    data = os.path.join(root, "scripts/asplos/data/dataset")
    gemm = ["Device", "OPName", "B", "M", "N", "K", "Latency"]
    for kind in ("linear", "bmm"):
        write_csv(os.path.join(data, "train/collect", kind, "p2.1.0", "a.csv"), gemm, [
            {"Device": "Tesla P4", "OPName": kind, "B": 1, "M": 256, "N": 512, "K": 1024,
             "Latency": 0.25},
            {"Device": "Tesla K80", "OPName": kind, "B": 1, "M": 256, "N": 512, "K": 1024,
             "Latency": 0.5},  # not a NeuSight GPU of the protocol: dropped
            {"Device": "Tesla T4", "OPName": kind, "B": 2, "M": 64, "N": 64, "K": 64,
             "Latency": 0},  # no time: dropped
        ])
        write_csv(os.path.join(data, "test", kind + ".csv"), gemm, [
            {"Device": H100, "OPName": kind, "B": 4, "M": 128, "N": 256, "K": 512,
             "Latency": 0.125}])
    vector = ["Device", "OPName", "B", "H", "Latency"]
    for split, device in (("train", "Tesla V100-PCIE-32GB"), ("test", "NVIDIA L4")):
        write_csv(os.path.join(data, split, "elem.csv"), vector, [
            {"Device": device, "OPName": "relu", "B": 8, "H": 1024, "Latency": 0.01},
            {"Device": device, "OPName": "add", "B": 8, "H": 1024, "Latency": 0.02},  # binary
        ])
        for kind in ("ln", "softmax"):
            write_csv(os.path.join(data, split, kind + ".csv"), vector, [
                {"Device": device, "OPName": kind, "B": 16, "H": 768, "Latency": 0.03}])

    amd = os.path.join(root, "scripts/asplos/data/dataset_amd")
    write_csv(os.path.join(amd, "test/collect/linear/p2.4.1/AMD Instinct MI210.csv"), gemm, [
        {"Device": "AMD Instinct MI210", "OPName": "linear", "B": 1, "M": 512, "N": 1024,
         "K": 2048, "Latency": 0.5}])
    write_csv(os.path.join(amd, "train/collect/gelu/p2.4.1/AMD Instinct MI100.csv"), vector, [
        {"Device": "AMD Instinct MI100", "OPName": "gelu", "B": 8, "H": 1024, "Latency": 0.02}])

    configs = os.path.join(root, "scripts/asplos/data/DLmodel_configs")
    write_json(os.path.join(configs, "gpt2_large.json"),
               {"model_type": "gpt2", "n_layer": 36, "n_embd": 1280, "n_head": 20,
                "n_positions": 1024, "vocab_size": 50257})
    write_json(os.path.join(configs, "bert_large.json"),
               {"model_type": "bert", "num_hidden_layers": 24, "hidden_size": 1024,
                "num_attention_heads": 16, "intermediate_size": 4096,
                "max_position_embeddings": 512, "vocab_size": 30522})
    write_json(os.path.join(configs, "switchxl4.json"), {"model_type": "switch_transformers"})
    labels = os.path.join(root, "scripts/asplos/label", H100.replace(" ", "_"))
    write_json(os.path.join(labels, "gpt2_large-train-1024-2.json"), {"e2e_latency": 400.0})
    write_json(os.path.join(labels, "bert_large-inf-512-8.json"), {"e2e_latency": 90.0})
    write_json(os.path.join(labels, "switchxl4-train-512-2.json"), {"e2e_latency": 70.0})
    write_json(os.path.join(labels, "gpt2_large-train-1024-2-fusion.json"), {"e2e_latency": 1.0})
    write_json(os.path.join(root, "scripts/asplos/label/AMD_Instinct_MI250",
                            "bert_large-inf-512-8.json"), {"e2e_latency": 120.0})
    write_json(os.path.join(root, "scripts/asplos/results/prediction", H100.replace(" ", "_"),
                            "neusight", "gpt2_large-train-1024-2.json"), {"e2e_latency": 380.0})


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def check(condition, message):
    if not condition:
        sys.exit(f"FAIL: {message}")


def import_files(perfcastd, perfcast, work, files):
    port_file = os.path.join(work, "port")
    server = subprocess.Popen(
        [perfcastd, "--listen=127.0.0.1:0", "--db=" + os.path.join(work, "perfcast.db"),
         "--port-file=" + port_file, "--log-level=error"])
    try:
        for _ in range(200):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.05)
        port = open(port_file).read().strip()
        result = subprocess.run([perfcast, "--server", "127.0.0.1:" + port, "-o", "json",
                                 "import"] + files, capture_output=True, text=True)
        check(result.returncode == 0, f"import failed: {result.stderr}")
        return json.loads(result.stdout)
    finally:
        server.terminate()
        server.wait()


def main():
    source, perfcastd, perfcast = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as work:
        checkout = os.path.join(work, "NeuSight")
        out = os.path.join(work, "out")
        make_checkout(checkout)
        converter = os.path.join(source, "data/tools/neusight_convert.py")
        subprocess.run([sys.executable, converter, checkout, out], check=True)

        kernels = read_rows(os.path.join(out, "kernels.csv"))
        gpus = sorted({row["gpu"] for row in kernels})
        check(gpus == ["H100-SXM5-80GB", "L4-24GB", "P4-8GB", "V100-PCIE-32GB"],
              f"kernel GPUs {gpus}")
        families = sorted(row["family"] for row in kernels)
        # 2 train + 2 test GEMMs, the unary relu of each split, ln and softmax.
        check(families == ["elementwise"] * 2 + ["gemm"] * 4 + ["layernorm"] * 2 +
              ["softmax"] * 2, f"kernel families {families}")
        gemm = [r for r in kernels if r["gpu"] == "H100-SXM5-80GB"][0]
        # NeuSight's N (256) is the reduction: the gemm family's k.
        check(gemm["params"] == "batch=4;k=256;m=128;n=512", f"GEMM params {gemm['params']}")
        check(gemm["agent_version"].startswith("neusight-test-"), gemm["agent_version"])

        e2e = read_rows(os.path.join(out, "e2e.csv"))
        by_family = {row["family"]: row for row in e2e}
        check(sorted(by_family) == ["decoder", "transformer"],
              f"end-to-end families {sorted(by_family)} (Switch and fused runs are left out)")
        decoder = by_family["decoder"]
        check("seq_len=1024" in decoder["params"] and "layers=36" in decoder["params"],
              decoder["params"])
        check(decoder["phase"] == "train" and decoder["batch_size"] == "2", str(decoder))
        check(by_family["transformer"]["phase"] == "inference", "BERT inference")
        # NeuSight times forward + backward, never an optimizer step.
        check(decoder["optimizer"] == "none" and by_family["transformer"]["optimizer"] == "",
              f"optimizers {decoder['optimizer']!r}, {by_family['transformer']['optimizer']!r}")
        compare = read_rows(os.path.join(out, "neusight_e2e.csv"))
        check(any(r["neusight_ms"] == "380.0" for r in compare), f"comparison {compare}")

        amd = read_rows(os.path.join(out, "amd_kernels.csv"))
        check(sorted((r["gpu"], r["family"]) for r in amd) ==
              [("MI100-32GB", "elementwise"), ("MI210-64GB", "gemm")], f"AMD kernels {amd}")
        check(all(r["gpu"] not in ("MI100-32GB", "MI210-64GB") for r in kernels),
              "AMD rows stay out of kernels.csv")
        amd_e2e = read_rows(os.path.join(out, "amd_e2e.csv"))
        # PyTorch sees one GCD of an MI250 as a device.
        check([r["gpu"] for r in amd_e2e] == ["MI250-GCD-64GB"], f"AMD end to end {amd_e2e}")

        # The AMD rows name catalog GPUs too.
        report = import_files(perfcastd, perfcast, work,
                              [os.path.join(out, name) for name in
                               ("kernels.csv", "e2e.csv", "amd_kernels.csv", "amd_e2e.csv")])
        expected = len(kernels) + len(e2e) + len(amd) + len(amd_e2e)
        check(report["rejected"] == 0 and report["accepted"] == expected, f"import {report}")
    print("neusight_convert: ok")


if __name__ == "__main__":
    main()
