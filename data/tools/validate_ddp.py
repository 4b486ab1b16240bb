#!/usr/bin/env python3
"""Compares `perfcast-agent ddp` measurements with `perfcast predict --data-parallel N`.

  validate_ddp.py DDP_JSONL NODE [PERFCAST_CLI]

Needs a perfcastd ($PERFCAST_SERVER) holding the node's profiles (its single-GPU
run and the collectives store of data/tools/multi-gpu-run.sh) and a fitted model.
For each line of DDP_JSONL (one workload over N GPUs) it prints the measured
data-parallel step, the predicted one, and the prediction anchored on the
measured single-GPU step (measured alone x predicted N-GPU / predicted alone),
which isolates the communication model from the single-GPU error; then the
MAPE of both per GPU count.
"""
import json
import re
import subprocess
import sys
from collections import defaultdict

KEY = re.compile(r"^model/(\w+)(?:\{([^}]*)\})?/b(\d+)/([\w-]+)/(\w+)/(\w+)$")


def predict(cli, node, family, params, batch, precision, phase, optimizer, gpus):
    args = [cli, "--output", "json", "predict", "--family", family, "--batch", str(batch),
            "--precision", precision, "--phase", phase, "--optimizer", optimizer,
            "--node", node, "--iterations", "1"]
    for name, value in params:
        args += ["--param", f"{name}={value}"]
    if gpus > 1:
        args += ["--data-parallel", str(gpus)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    answer = json.loads(out)
    return float(answer.get("iteration_ms", answer.get("iterationMs")))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path, node = sys.argv[1], sys.argv[2]
    cli = sys.argv[3] if len(sys.argv) > 3 else "perfcast"
    errors = defaultdict(list)
    print(f"{'workload':70} {'gpus':>4} {'measured':>9} {'predicted':>9} {'anchored':>9}")
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            m = KEY.match(row["workload"])
            if not m:
                print("skipping", row["workload"])
                continue
            family, params, batch, precision, phase, optimizer = m.groups()
            params = [p.split("=") for p in params.split(",")] if params else []
            gpus = int(row["gpus"])
            together = predict(cli, node, family, params, int(batch), precision, phase,
                               optimizer, gpus)
            alone = predict(cli, node, family, params, int(row["per_gpu_batch"]), precision,
                            phase, optimizer, 1)
            anchored = row["single_step_ms"] * together / alone
            measured = row["ddp_step_ms"]
            errors[(gpus, "predicted")].append(abs(together - measured) / measured)
            errors[(gpus, "anchored")].append(abs(anchored - measured) / measured)
            print(f"{row['workload']:70} {gpus:4d} {measured:9.2f} {together:9.2f} {anchored:9.2f}")
    for (gpus, kind), values in sorted(errors.items()):
        print(f"MAPE over {gpus} GPUs, {kind}: {100 * sum(values) / len(values):.1f}% "
              f"({len(values)} workloads)")


if __name__ == "__main__":
    main()
