"""Overhead of ``dtype-lint confirm`` on a tiny GPT training loop, on the CPU.

Three runs of the same program, each timing its own steps after a warm-up (so interpreter and
torch start-up are not counted):

1. plain;
2. under ``torch.autograd.set_detect_anomaly(True)`` alone (what people reach for today);
3. under ``dtype-lint confirm --device cpu`` (anomaly mode + the CUDA emulation, the observer
   mode, the hooks and the line tracer).

Target: confirm at most 1.25x the anomaly-alone run (issue 23). Usage:

    python benchmarks/runtime_overhead.py [--steps 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The program under test: nanoGPT's shape at toy size, CUDA-written as real scripts are, trained
# with float16 autocast and a GradScaler (the path the companion observes most).
PROGRAM = textwrap.dedent(
    '''
    import json, math, os, sys, time
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
            mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
            att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self, vocab=128, dim=64, heads=4, layers=2, block=32):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(block, dim)
            self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(layers)])
            self.ln, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab, bias=False)

        def forward(self, idx):
            pos = torch.arange(idx.size(1), device=idx.device)
            return self.head(self.ln(self.blocks(self.tok(idx) + self.pos(pos))))

    def main(steps, warmup, out):
        if os.environ.get("BENCH_ANOMALY"):
            torch.autograd.set_detect_anomaly(True)
        torch.manual_seed(0)
        model = GPT().cuda() if torch.cuda.is_available() else GPT()
        device = next(model.parameters()).device
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        scaler = torch.amp.GradScaler(device.type)
        data = torch.randint(0, 128, (8, 33), device=device)
        for step in range(warmup + steps):
            if step == warmup:
                start = time.perf_counter()
            with torch.autocast(device.type, dtype=torch.float16):
                logits = model(data[:, :-1])
                loss = F.cross_entropy(logits.reshape(-1, 128), data[:, 1:].reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
        elapsed = time.perf_counter() - start
        with open(out, "w") as handle:
            json.dump({"ms_per_step": 1000 * elapsed / steps}, handle)

    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
    '''
)


def _run(mode: str, program: str, steps: int, warmup: int, workdir: str) -> float:
    out = os.path.join(workdir, f"{mode}.json")
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    args = [program, str(steps), str(warmup), out]
    if mode == "plain":
        command = [sys.executable, *args]
    elif mode == "anomaly":
        command = [sys.executable, *args]
        env["BENCH_ANOMALY"] = "1"
    else:
        # --steps above the program's own count: confirm must not stop the loop early.
        command = [sys.executable, "-m", "dtype_lint", "confirm", "--quiet", "--device", "cpu",
                   "--steps", str(steps + warmup + 10), "--timeout", "900", "--", *args]
    subprocess.run(command, cwd=ROOT, env=env, check=False, capture_output=True, timeout=1200)
    with open(out) as handle:
        return json.load(handle)["ms_per_step"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode; the median is kept")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        program = os.path.join(workdir, "tiny_gpt.py")
        with open(program, "w") as handle:
            handle.write(PROGRAM)
        results: dict[str, list[float]] = {"plain": [], "anomaly": [], "confirm": []}
        for _ in range(args.repeat):
            for mode in results:  # interleaved, so machine load drifts hit every mode alike
                results[mode].append(_run(mode, program, args.steps, args.warmup, workdir))
    median = {mode: sorted(times)[len(times) // 2] for mode, times in results.items()}
    print(f"tiny GPT (2 layers, dim 64, batch 8x32), fp16 autocast + GradScaler on the CPU, "
          f"{args.steps} timed steps, median of {args.repeat}")
    for mode, times in results.items():
        print(f"  {mode:8s} {median[mode]:8.1f} ms/step   runs: {', '.join(f'{t:.1f}' for t in times)}")
    print(f"  anomaly / plain   {median['anomaly'] / median['plain']:.2f}x")
    print(f"  confirm / plain   {median['confirm'] / median['plain']:.2f}x")
    print(f"  confirm / anomaly {median['confirm'] / median['anomaly']:.2f}x   (target <= 1.25x)")


if __name__ == "__main__":
    main()
