#!/usr/bin/env python3
"""Validates perfcast-agent's steady-state step times against a plain PyTorch loop.

Reads an agent store (SQLite), picks model configurations across families,
batch sizes, precisions and phases, times each with an independently written
PyTorch training (or inference) loop on this machine, and prints agent vs
plain per configuration and the median |difference|; writes a CSV.

    python3 profiler/validation/plain_loop.py AGENT.sqlite --out plain.csv \
        [--count 36] [--deadline-s 240] [--families lstm,cnn] [--device cuda] [--rounds 2]

The plain loop is what a user's script would run: batches prepared ahead in
pinned host memory (a ring of 8, as a DataLoader with workers would), each
step copies its batch to the device with non_blocking=True, no host
synchronisation between steps, CUDA events around blocks of steps; warm-up
blocks until two consecutive ones agree within 2% (at most 6), then 5 timed
blocks of >= 100 ms and >= 3 steps; the step time is the median of the block
means. The agent's figure is the profile's median_ms (the store's newest
method). Right before each configuration the loop runs the agent's host probe
(500 tiny ops queued without a sync) from TorchScript and from Python; the CSV
keeps both next to the agent's own probe, and the summary adds the
configurations whose host state matched the agent's (see host_matched). It
also times the agent's Python probe's tiny model (LoopProbe: forward,
backward, optimizer and inference, host microseconds per kernel launch,
launches counted once by profiler/python_probe.py in a child process); the
CSV keeps the training step's and the inference forward's.
With --rounds 2 every configuration is timed twice (the second round in
reverse order) and the summary says how well the plain loop repeats itself:
on a virtual machine's host its host-bound steps do not (h100-sxm-14: median
11.8% between two runs minutes apart, the agent 0.8%), which bounds any
agreement with it there.

Builders (the contract for profiler/validation/real_models.py too)
------------------------------------------------------------------
BUILDERS maps a family name to a function

    build(params: dict[str, int], batch: int) -> Workload

where `params` are the workload's parameters exactly as in its key (all of
them, defaults filled in: "model/lstm{hidden=256,horizon=12,...}/b16/..."
gives {"hidden": 256, "horizon": 12, ...}) and `batch` its batch size. The
returned Workload holds:

    model:   torch.nn.Module on the CPU, fp32 parameters; model(*inputs)
             returns the output the loss takes.
    inputs:  a callable (generator: torch.Generator) -> list of CPU tensors,
             one batch of model inputs (random data of the right shapes and
             dtypes; the loop pins and prefetches them).
    target:  a callable (generator) -> CPU tensor, the batch's target.
    loss:    a callable (output, target) -> scalar tensor.

The loop moves the model to the device, applies the precision (fp32: no
TF32; tf32: TF32 matmuls and convolutions; bf16-amp / fp16-amp: autocast
around forward and loss, fp16 with a static loss scale as the agent), the
optimizer (adam: Adam(lr=1e-3); sgd: SGD(lr=1e-3, momentum=0.9); PyTorch's
default implementation, multi-tensor on CUDA as the agent's since method 4,
or one tensor at a time with --for-loop) and train/eval mode. If
profiler/validation/real_models.py exists, its BUILDERS are merged in.

Only the selection of configurations and the comparison statistics are
importable without torch (they are unit-tested on machines without it);
torch is imported when a loop runs.
"""

import argparse
import collections
import csv
import json
import math
import os
import sqlite3
import sys
import time

Config = collections.namedtuple(
    "Config", "key family params batch precision phase optimizer agent_ms agent_dispatch",
    defaults=(None,))
Workload = collections.namedtuple("Workload", "model inputs target loss")

PRECISIONS = ("fp32", "tf32", "bf16-amp", "fp16-amp")


# ---- Pure parts: keys, selection, statistics (no torch) ----

def parse_key(key):
    """'model/lstm{hidden=256,layers=1}/b16/fp32/train/adam' -> its parts."""
    head, rest = key.split("{", 1)
    inner, tail = rest.split("}", 1)
    kind, family = head.split("/")
    params = {}
    for item in filter(None, inner.split(",")):
        name, value = item.split("=")
        params[name] = int(value)
    _, batch, precision, phase, optimizer = tail.split("/")
    return {"kind": kind, "family": family, "params": params, "batch": int(batch[1:]),
            "precision": precision, "phase": phase, "optimizer": optimizer}


def select_configs(configs, count, families=None, precisions=PRECISIONS):
    """Picks about `count` configurations spread over families, precisions,
    phases and batch sizes: round-robin over the (family, precision, phase)
    groups, each group's configurations in order of batch and size, taken
    from its ends inwards so that small and large ones both appear.
    Deterministic: the same input gives the same selection."""
    groups = collections.OrderedDict()
    for c in sorted(configs, key=lambda c: (c.family, c.precision, c.phase, c.batch,
                                            sorted(c.params.items()), c.optimizer)):
        if families is not None and c.family not in families:
            continue
        if c.precision not in precisions:
            continue
        groups.setdefault((c.family, c.precision, c.phase), []).append(c)
    queues = []
    for members in groups.values():
        order, lo, hi = [], 0, len(members) - 1
        while lo <= hi:
            order.append(members[lo])
            if hi != lo:
                order.append(members[hi])
            lo, hi = lo + 1, hi - 1
        queues.append(collections.deque(order))
    picked = []
    while len(picked) < count and any(queues):
        for q in queues:
            if q and len(picked) < count:
                picked.append(q.popleft())
    return picked


def quantile(values, q):
    """Linear interpolation between order statistics (numpy's default)."""
    if not values:
        return float("nan")
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (pos - lo) * (s[hi] - s[lo])


def host_matched(rows, tolerance=0.05):
    """rows: [(agent_ms, plain_ms, agent_dispatch, plain_dispatch)] -> the
    (agent_ms, plain_ms) pairs whose host states agree: the ratio of the probe
    run right before the plain loop to the agent's probe stored with its
    profile lies within `tolerance` of the median ratio over all rows. On a VM
    whose host speed moves between minutes only these compare the two loops
    rather than two host states. The two probes run the same tiny ops through
    different interpreters (TorchScript here, C++ in the agent), so only their
    ratio relative to its median says that the host changed, not its value."""
    ratios = [rp / ra for _, _, ra, rp in rows if ra and rp and ra > 0 and rp > 0]
    if not ratios:
        return []
    typical = quantile(ratios, 0.5)
    return [(a, p) for a, p, ra, rp in rows
            if ra and rp and ra > 0 and rp > 0 and abs(rp / ra / typical - 1.0) <= tolerance]


def compare(pairs):
    """pairs: [(agent_ms, plain_ms)] -> n, median and p90 of |agent/plain - 1|
    and the median signed difference, in percent."""
    diffs = [100.0 * (a / p - 1.0) for a, p in pairs if a > 0 and p > 0]
    absolute = [abs(d) for d in diffs]
    return {"n": len(diffs), "median_abs_pct": quantile(absolute, 0.5),
            "p90_abs_pct": quantile(absolute, 0.9), "median_pct": quantile(diffs, 0.5)}


def self_agreement(rounds_per_config):
    """compare() of each configuration's first two rounds of the plain loop
    (lists of step times; configurations with fewer than two are left out):
    how well the reference repeats itself, the floor under any agreement
    with it."""
    return compare([(r[0], r[1]) for r in rounds_per_config if len(r) >= 2])


def read_agent_configs(path):
    """Model profiles of an agent store (the newest method where the store
    records one), one per workload key: the median of their median_ms."""
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    columns = [r[1] for r in db.execute("PRAGMA table_info(profiles)")]
    where = "WHERE w.kind = 'model'"
    if "method_version" in columns:
        newest = db.execute("SELECT MAX(method_version) FROM profiles").fetchone()[0]
        where += " AND p.method_version = %d" % int(newest or 1)
    dispatch = "p.dispatch_ops_per_s" if "dispatch_ops_per_s" in columns else "NULL"
    rows = db.execute("SELECT w.key, p.median_ms, " + dispatch + " FROM profiles p JOIN "
                      "workloads w ON p.workload_id = w.id " + where).fetchall()
    by_key = collections.defaultdict(list)
    rates = collections.defaultdict(list)
    for key, ms, rate in rows:
        by_key[key].append(ms)
        if rate:
            rates[key].append(rate)
    configs = []
    for key, values in by_key.items():
        k = parse_key(key)
        configs.append(Config(key, k["family"], k["params"], k["batch"], k["precision"],
                              k["phase"], k["optimizer"], quantile(values, 0.5),
                              quantile(rates[key], 0.5) if rates[key] else None))
    return configs


# ---- The proxies, written independently from models/torch/nets.cc ----

def _builders():
    import torch
    from torch import nn
    F = nn.functional

    def randn(shape):
        return lambda g: [torch.randn(*shape, generator=g)]

    class Lstm(nn.Module):
        def __init__(self, p):
            super().__init__()
            self.p = p
            self.lstm = nn.LSTM(p["nodes"], p["hidden"], num_layers=p["layers"],
                                batch_first=True)
            self.head = nn.Linear(p["hidden"], p["nodes"] * p["horizon"])

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out[:, -1]).view(-1, self.p["horizon"], self.p["nodes"])

    class Cnn(nn.Module):
        def __init__(self, p):
            super().__init__()
            self.p = p
            c, k = p["channels"], p["kernel"]
            self.convs = nn.ModuleList(
                nn.Conv1d(p["nodes"] if i == 0 else c, c, k, padding=(k - 1) // 2)
                for i in range(p["layers"]))
            self.head = nn.Linear(c * p["seq_len"], p["nodes"] * p["horizon"])

        def forward(self, x):
            x = x.transpose(1, 2).contiguous()
            for conv in self.convs:
                x = F.relu(conv(x))
            return self.head(x.flatten(1)).view(-1, self.p["horizon"], self.p["nodes"])

    class StBlock(nn.Module):
        def __init__(self, cin, c, kt):
            super().__init__()
            self.t1 = nn.Conv2d(cin, c, (kt, 1))
            self.theta = nn.Conv2d(c, c, 1)
            self.t2 = nn.Conv2d(c, c, (kt, 1))

        def forward(self, x, a):
            x = F.relu(self.t1(x))
            x = F.relu(self.theta(x @ a))
            return F.relu(self.t2(x))

    class Stgcn(nn.Module):
        def __init__(self, p):
            super().__init__()
            n, c, kt = p["nodes"], p["channels"], p["kernel_t"]
            a = torch.rand(n, n, generator=torch.Generator().manual_seed(3))
            a = (a + a.t()) / (2 * n)
            self.register_buffer("a", a)
            self.blocks = nn.ModuleList(
                StBlock(1 if b == 0 else c, c, kt) for b in range(p["blocks"]))
            steps = p["seq_len"] - 2 * p["blocks"] * (kt - 1)
            self.out = nn.Conv2d(c, p["horizon"], (steps, 1))

        def forward(self, x):
            x = x.unsqueeze(1)
            for block in self.blocks:
                x = block(x, self.a)
            return self.out(x).squeeze(2)

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.short = None
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False),
                                           nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
            return F.relu(y + (self.short(x) if self.short is not None else x))

    class ResNet(nn.Module):
        def __init__(self, p):
            super().__init__()
            w, n = p["width"], p["blocks"]
            self.stem = nn.Sequential(nn.Conv2d(3, w, 3, 1, 1, bias=False), nn.BatchNorm2d(w),
                                      nn.ReLU())
            blocks, cin, stage = [], w, 0
            for i in range(n):
                s = i * 3 // n
                stride = 2 if s != stage else 1
                stage = s
                blocks.append(Basic(cin, w << stage, stride))
                cin = w << stage
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(cin, p["classes"])

        def forward(self, x):
            return self.fc(self.blocks(self.stem(x)).mean((2, 3)))

    class Encoder(nn.Module):
        def __init__(self, h, heads, ffn):
            super().__init__()
            self.heads = heads
            self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
            self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.up, self.down = nn.Linear(h, ffn), nn.Linear(ffn, h)

        def forward(self, x):
            b, s, h = x.shape
            d = h // self.heads
            q, k, v = self.qkv(x).view(b, s, 3, self.heads, d).permute(2, 0, 3, 1, 4)
            att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), -1) @ v
            x = self.ln1(x + self.proj(att.transpose(1, 2).reshape(b, s, h)))
            return self.ln2(x + self.down(F.gelu(self.up(x))))

    class Transformer(nn.Module):
        def __init__(self, p):
            super().__init__()
            h = p["hidden"]
            self.tok = nn.Embedding(p["vocab"], h)
            self.pos = nn.Embedding(p["seq_len"], h)
            self.ln = nn.LayerNorm(h)
            self.layers = nn.Sequential(*[Encoder(h, p["heads"], p["ffn"])
                                          for _ in range(p["layers"])])
            self.pool = nn.Linear(h, h)
            self.cls = nn.Linear(h, p["classes"])

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.layers(self.ln(self.tok(ids) + self.pos(pos)))
            return self.cls(torch.tanh(self.pool(x[:, 0])))

    class Dlrm(nn.Module):
        def __init__(self, p):
            super().__init__()
            t, d = p["tables"], p["emb_dim"]
            nb, nt = p["bottom_layers"], p["top_layers"]
            self.bottom = nn.ModuleList(
                nn.Linear(p["dense"] if i == 0 else p["bottom_width"],
                          d if i == nb - 1 else p["bottom_width"]) for i in range(nb))
            self.tables = nn.ModuleList(nn.EmbeddingBag(p["rows"], d, mode="sum")
                                        for _ in range(t))
            features = (t + 1) * t // 2 + d
            self.top = nn.ModuleList(
                nn.Linear(features if i == 0 else p["top_width"],
                          1 if i == nt - 1 else p["top_width"]) for i in range(nt))
            iu = torch.triu_indices(t + 1, t + 1, 1)
            self.register_buffer("pairs", iu[0] * (t + 1) + iu[1])

        def forward(self, dense, ids):
            x = dense
            for layer in self.bottom:
                x = F.relu(layer(x))
            z = torch.stack([x] + [bag(ids[:, i]) for i, bag in enumerate(self.tables)], 1)
            dots = torch.bmm(z, z.transpose(1, 2)).flatten(1).index_select(1, self.pairs)
            y = torch.cat([x, dots], 1)
            for i, layer in enumerate(self.top):
                y = layer(y)
                if i + 1 < len(self.top):
                    y = F.relu(y)
            return y.squeeze(1)

    def forecaster(cls):
        def build(p, batch):
            return Workload(cls(p), randn((batch, p["seq_len"], p["nodes"])),
                            lambda g: torch.randn(batch, p["horizon"], p["nodes"], generator=g),
                            F.mse_loss)
        return build

    def resnet(p, batch):
        return Workload(ResNet(p), randn((batch, 3, p["image"], p["image"])),
                        lambda g: torch.randint(p["classes"], (batch,), generator=g),
                        F.cross_entropy)

    def transformer(p, batch):
        return Workload(Transformer(p),
                        lambda g: [torch.randint(p["vocab"], (batch, p["seq_len"]), generator=g)],
                        lambda g: torch.randint(p["classes"], (batch,), generator=g),
                        F.cross_entropy)

    def dlrm(p, batch):
        return Workload(Dlrm(p),
                        lambda g: [torch.randn(batch, p["dense"], generator=g),
                                   torch.randint(p["rows"], (batch, p["tables"], p["lookups"]),
                                                 generator=g)],
                        lambda g: torch.randint(2, (batch,), generator=g).float(),
                        F.binary_cross_entropy_with_logits)

    builders = {"lstm": forecaster(Lstm), "cnn": forecaster(Cnn), "stgcn": forecaster(Stgcn),
                "resnet": resnet, "transformer": transformer, "dlrm": dlrm}
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        from real_models import BUILDERS as real  # noqa: E402 (optional, see the docstring)
        builders.update(real)
    except ImportError:
        pass
    return builders


# ---- The plain loop ----

def make_step(workload, config, device, ring=8, foreach=None, matmul_tf32=None,
              cudnn_tf32=None, cudnn_benchmark=False):
    """The loop's step as a closure: one batch of the prefetch ring copied to
    the device, forward (+ loss, backward, optimizer step when training).
    TF32 follows the precision (tf32: matmuls and convolutions; otherwise
    neither) unless `matmul_tf32` / `cudnn_tf32` say otherwise;
    cudnn.benchmark is `cudnn_benchmark`."""
    import torch
    cuda = device.type == "cuda"
    g = torch.Generator().manual_seed(1)
    batches = []
    for _ in range(ring):
        inputs, target = workload.inputs(g), workload.target(g)
        if cuda:
            inputs, target = [t.pin_memory() for t in inputs], target.pin_memory()
        batches.append((inputs, target))
    model = workload.model.to(device)
    train = config.phase == "train"
    model.train(train)
    tf32 = config.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32 if matmul_tf32 is None else matmul_tf32
    torch.backends.cudnn.allow_tf32 = tf32 if cudnn_tf32 is None else cudnn_tf32
    torch.backends.cudnn.benchmark = cudnn_benchmark
    amp = {"bf16-amp": torch.bfloat16, "fp16-amp": torch.float16}.get(config.precision)
    opt = None
    if train:
        # foreach=None: PyTorch's default (multi-tensor kernels on CUDA), what
        # a user's loop runs and the agent mirrors (models/torch/optimizers.h).
        opt = (torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, foreach=foreach)
               if config.optimizer == "sgd"
               else torch.optim.Adam(model.parameters(), lr=1e-3, foreach=foreach))
    # fp16: a static loss scale with the unscale and overflow check a
    # GradScaler runs, without the GradScaler's per-step host sync.
    scale = None
    if amp == torch.float16 and train:
        scale = torch.full((), 65536.0, device=device)
        inverse = torch.full((), 1.0 / 65536.0, device=device)
        found_inf = torch.zeros(1, device=device)
    state = {"i": 0}

    def step():
        inputs, target = batches[state["i"] % ring]
        state["i"] += 1
        x = [t.to(device, non_blocking=True) for t in inputs]
        y = target.to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=amp or torch.bfloat16, enabled=amp is not None):
            if not train:
                with torch.no_grad():
                    model(*x)
                return
            loss = workload.loss(model(*x), y)
        opt.zero_grad()
        if scale is not None:
            (loss * scale).backward()
            grads = [q.grad for q in model.parameters() if q.grad is not None]
            found_inf.zero_()
            torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inverse)
        else:
            loss.backward()
        opt.step()

    return step


def _scripted_adds():
    import torch

    def adds(x: torch.Tensor, n: int) -> torch.Tensor:
        for _ in range(n):
            x.add_(1)
        return x
    return torch.jit.script(adds)


def dispatch_rates(device, scripted, ops=500, rounds=3):
    """Host probes right before a configuration, ops/s (median of `rounds`):
    the agent's probe (tiny in-place adds queued without a host sync, timed on
    the host) dispatched from C++ by TorchScript's interpreter (`scripted`,
    from _scripted_adds; None skips it), and the same loop from Python, which
    is what a user's script pays per operation on top."""
    import torch
    x = torch.zeros(1, device=device)

    def rate(run):
        run(50)
        if device.type == "cuda":
            torch.cuda.synchronize()
        values = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            run(ops)
            values.append(ops / max(time.perf_counter() - t0, 1e-9))
            if device.type == "cuda":
                torch.cuda.synchronize()
        return quantile(values, 0.5)

    def python_adds(n):
        for _ in range(n):
            x.add_(1)
    cpp = rate(lambda n: scripted(x, n)) if scripted is not None else None
    return cpp, rate(python_adds)


def _python_probe():
    """profiler/python_probe.py as a module (its TinyLoop and loop timing)."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import python_probe  # noqa: E402 (profiler/, beside this directory)
    return python_probe


def python_probe_line(device, timeout_s=300):
    """The agent's Python probe (profiler/python_probe.py) run on `device` in a
    child process: its JSON line as a dict, or None (and why, on stderr) when
    it fails. A child, because the probe ends by counting its tiny model's
    kernel launches with torch.profiler, whose session slows the Python that
    follows it in the same process."""
    import subprocess
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "python_probe.py")
    try:
        done = subprocess.run([sys.executable, script, "--device", device.type],
                              capture_output=True, text=True, timeout=timeout_s)
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        if done.returncode == 0 and lines:
            return json.loads(lines[-1])
        why = (done.stderr.strip().splitlines() or ["exit status %d" % done.returncode])[-1]
    except (OSError, ValueError, subprocess.TimeoutExpired) as e:
        why = str(e)
    print("python probe: not measured: %s" % why, file=sys.stderr, flush=True)
    return None


class LoopProbe:
    """What a training loop pays per kernel launch, right before a
    configuration, as dispatch_rates is: python_probe.py's tiny nn.Module
    model trained and run from Python on `device` (forward, backward, AdamW,
    inference forward), its host microseconds per step of each phase timed
    here and divided by the launches per step that `probe` (python_probe_line's
    dict, counted once in a child process) counted."""

    def __init__(self, device, probe):
        import torch
        self.module = _python_probe()
        self.loop = self.module.TinyLoop(torch, device)
        self.launches = {phase: (probe or {}).get("loop_%s_launches" % phase) or 0
                         for phase in self.module.PHASES}
        self.unit = (probe or {}).get("loop_launch_unit")

    def measure(self, steps=20, rounds=3):
        """The probe's loop_* keys (python_probe.loop_keys), timed now."""
        host_us = self.module.loop_host_us(self.loop, steps=steps, rounds=rounds)
        return self.module.loop_keys(host_us, self.launches, self.unit, self.loop.description,
                                     steps)


def time_plain(workload, config, device, ring=8, target_ms=100.0, blocks=5, tolerance=0.02,
               max_warmup_blocks=6, min_steps=3, foreach=None, step=None, record=None):
    """Median over `blocks` timed blocks of the mean step time, milliseconds
    (`step`: a closure from make_step to time instead of a new one; `record`:
    a dict that receives the timed blocks, the warm-up blocks and the steps
    per block)."""
    import torch
    cuda = device.type == "cuda"
    if step is None:
        step = make_step(workload, config, device, ring=ring, foreach=foreach)

    def block(n):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(n):
                step()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / n
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        return (time.perf_counter() - t0) * 1e3 / n

    step_ms = 0.0
    for _ in range(2):
        step_ms = block(1)
    warm = max(min_steps, int(math.ceil(target_ms / 2 / max(step_ms, 1e-3))))
    previous = block(warm)
    warmup = [previous]
    for _ in range(max_warmup_blocks - 1):
        step_ms = block(warm)
        warmup.append(step_ms)
        converged = abs(step_ms - previous) <= tolerance * previous
        previous = step_ms
        if converged:
            break
    n = max(min_steps, int(math.ceil(target_ms / max(step_ms, 1e-3))))
    timed = [block(n) for _ in range(blocks)]
    if record is not None:
        record.update(blocks_ms=timed, warmup_blocks_ms=warmup, steps_per_block=n)
    return quantile(timed, 0.5)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", help="agent SQLite store")
    parser.add_argument("--out", default="plain_loop.csv", help="CSV to write")
    parser.add_argument("--count", type=int, default=36, help="configurations to time")
    parser.add_argument("--families", default="", help="comma-separated; default: all built")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--deadline-s", type=float, default=0, help="stop starting new ones after")
    parser.add_argument("--rounds", type=int, default=1,
                        help="time every configuration this many times (odd rounds in "
                             "reverse order); the CSV keeps each round, the summary adds "
                             "round 1 vs 2")
    parser.add_argument("--for-loop", action="store_true",
                        help="optimizers one tensor at a time (foreach=False; the agent "
                             "before method 4) instead of PyTorch's default")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    start = time.time()

    import torch
    device = torch.device(args.device)
    builders = _builders()
    families = set(args.families.split(",")) if args.families else set(builders)
    precisions = PRECISIONS if device.type == "cuda" else ("fp32",)
    configs = [c for c in read_agent_configs(args.store) if c.family in builders]
    picked = select_configs(configs, args.count, families, precisions)
    print("plain_loop: %d of %d agent model configurations" % (len(picked), len(configs)),
          flush=True)
    try:
        scripted = _scripted_adds()
    except Exception as e:  # TorchScript missing or refused: the Python probe only
        print("plain_loop: no TorchScript probe: %s" % str(e).splitlines()[0], flush=True)
        scripted = None
    loop_probe = None
    probe = python_probe_line(device)
    if probe is not None:
        print("plain_loop: python probe %s" % json.dumps(probe), flush=True)
        loop_probe = LoopProbe(device, probe)
    # Each round times every configuration once, odd rounds in reverse order,
    # so that a host drifting during the run reaches every configuration in
    # every round's position; a configuration's figure is its rounds' median.
    # key -> (config, [plain_ms], [cpp rate], [python rate], [LoopProbe.measure()])
    timed = collections.OrderedDict()
    stop = False
    for round_index in range(args.rounds):
        order = picked if round_index % 2 == 0 else list(reversed(picked))
        for i, c in enumerate(order):
            if args.deadline_s and time.time() - start > args.deadline_s:
                print("plain_loop: deadline reached in round %d after %d configurations" %
                      (round_index + 1, i), flush=True)
                stop = True
                break
            try:
                cpp_rate, python_rate = dispatch_rates(device, scripted)
                loop_keys = loop_probe.measure() if loop_probe is not None else {}
                plain_ms = time_plain(builders[c.family](dict(c.params), c.batch), c, device,
                                      foreach=False if args.for_loop else None)
            except Exception as e:  # one failing configuration must not end the run
                print("[%d/%d] %s: failed: %s" % (i + 1, len(picked), c.key,
                                                 str(e).splitlines()[0]), flush=True)
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                continue
            entry = timed.setdefault(c.key, (c, [], [], [], []))
            entry[1].append(plain_ms)
            entry[2].append(cpp_rate)
            entry[3].append(python_rate)
            entry[4].append(loop_keys)
            print("[%d/%d] %s: agent %.4f ms, plain %.4f ms, %+.2f%%" %
                  (i + 1, len(picked), c.key, c.agent_ms, plain_ms,
                   100.0 * (c.agent_ms / plain_ms - 1.0)), flush=True)
            if device.type == "cuda":
                torch.cuda.empty_cache()
        if stop:
            break
    rows, pairs, probed = [], [], []
    for c, plain_rounds, cpp_rates, python_rates, loops in timed.values():
        plain_ms = quantile(plain_rounds, 0.5)
        known_cpp = [r for r in cpp_rates if r]
        cpp_rate = quantile(known_cpp, 0.5) if known_cpp else None
        python_rate = quantile(python_rates, 0.5)
        per_launch = {phase: [k["loop_%s_us_per_launch" % phase] for k in loops
                              if k.get("loop_%s_us_per_launch" % phase)]
                      for phase in ("train", "inference")}
        pairs.append((c.agent_ms, plain_ms))
        probed.append((c.agent_ms, plain_ms, c.agent_dispatch, cpp_rate))
        rows.append([c.key, c.family, c.batch, c.precision, c.phase,
                     "%.4f" % c.agent_ms, "%.4f" % plain_ms,
                     "%.2f" % (100.0 * (c.agent_ms / plain_ms - 1.0)),
                     "%.0f" % c.agent_dispatch if c.agent_dispatch else "",
                     "%.0f" % cpp_rate if cpp_rate else "", "%.0f" % python_rate,
                     ";".join("%.4f" % ms for ms in plain_rounds)] +
                    ["%.3f" % quantile(v, 0.5) if v else "" for v in per_launch.values()])
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["key", "family", "batch", "precision", "phase", "agent_ms", "plain_ms",
                    "diff_pct", "agent_dispatch_ops_per_s", "plain_dispatch_ops_per_s",
                    "python_dispatch_ops_per_s", "plain_ms_rounds",
                    "python_loop_train_us_per_launch", "python_loop_inference_us_per_launch"])
        w.writerows(rows)
    s = compare(pairs)
    print("plain_loop: n=%d median |agent-plain| %.2f%%, p90 %.2f%%, median signed %+.2f%% -> %s"
          % (s["n"], s["median_abs_pct"], s["p90_abs_pct"], s["median_pct"], args.out))
    m = compare(host_matched(probed))
    if m["n"]:
        print("plain_loop: host-matched (probe ratio within 5%% of its median) n=%d median "
              "|agent-plain| %.2f%%, p90 %.2f%%" % (m["n"], m["median_abs_pct"], m["p90_abs_pct"]),
              flush=True)
    own = self_agreement([entry[1] for entry in timed.values()])
    if own["n"]:
        print("plain_loop: the plain loop against itself (round 1 vs 2) n=%d median |diff| "
              "%.2f%%, p90 %.2f%%: the reference's own noise" %
              (own["n"], own["median_abs_pct"], own["p90_abs_pct"]), flush=True)
    return 0 if s["n"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
