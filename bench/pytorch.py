"""The comparison with PyTorch behind `make bench-pytorch` (bench/pytorch.sh runs it).

    pytorch.py train toy|medium            target tokens/s of training
    pytorch.py decode toy|medium BATCH     greedy sentences/s, BATCH sentences at a time

The model of docs/MODEL-SPEC.md written with PyTorch's own layers (nn.GRU, nn.GRUCell,
nn.Linear: PyTorch's gate order is the spec's), run as bin/bench runs it. Training (`bin/bench
--run 0 train toy`): one random batch of full-length sentences (no padding), teacher forcing,
the mean cross-entropy, gradients clipped to norm 1, Adam at 1e-4 (in PyTorch's faster forms:
gradients set to None, foreach Adam); warm-up steps, then the median of the timed steps; target
tokens count every position of the batch, as bin/bench's do. Decoding (`bin/bench --run 0 decode
toy 1 BATCH`): exactly as many greedy steps as bin/bench's, from random sources. Not part of the
build or the tests: figures to set beside bin/bench's, on the same machine, with the same number
of threads. The sizes, steps and rounds are bin/bench's own: `bin/bench --describe NAME` (run it
from the repository root, after `make bin/bench`).
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

import torch
from torch import nn

BOS = 2  # <s>


def bench_config(name):
    """bin/bench's configuration NAME (`bin/bench --describe NAME`) as a dict of its values."""
    try:
        described = subprocess.run(["bin/bench", "--describe", name], capture_output=True,
                                   text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"pytorch.py: cannot run bin/bench --describe {name} ({e}): run it from the "
                 "repository root, after make bin/bench")
    config = {key: int(value) if value.isdigit() else value
              for key, value in (pair.split("=", 1) for pair in described)}
    wanted = dict(score="additive", bidirectional=1, tie_embeddings=0, layer_norm=0)
    for key, value in wanted.items():
        if config[key] != value:
            sys.exit(f"pytorch.py: bin/bench's {name} has {key}={config[key]}; this model has "
                     f"{key}={value} only")
    return config


class Seq2Seq(nn.Module):
    """The spec's model, bidirectional with the additive score, from a bench_config."""

    def __init__(self, config):
        super().__init__()
        E, H, D, A, O = (config[key] for key in ("E", "H", "D", "A", "O"))
        K, V = 2 * H, config["Vt"]
        self.src_emb = nn.Embedding(config["Vs"], E)
        self.tgt_emb = nn.Embedding(V, E)
        self.encoder = nn.GRU(E, H, batch_first=True, bidirectional=True)
        self.init = nn.Linear(K, D)  # s_0 = tanh(W_init h_last + b_init)
        self.w_k = nn.Linear(K, A, bias=False)  # k_i = W_k h_i
        self.w_q = nn.Linear(D, A, bias=False)
        self.att_b = nn.Parameter(torch.zeros(A))
        self.att_v = nn.Parameter(torch.empty(A).uniform_(-0.1, 0.1))
        self.decoder = nn.GRUCell(E + K, D)  # s_t = GRU([u_t ; c_t], s_{t-1})
        self.w_o = nn.Linear(D + K + E, O)  # o_t = tanh(W_o [s_t ; c_t ; u_t] + b_o)
        self.out = nn.Linear(O, V)  # z_t = W_out o_t + b_out

    def encode(self, src):
        h, last = self.encoder(self.src_emb(src))  # h_i = [f_i ; g_i]; last: f_{L-1}, g_0
        s = torch.tanh(self.init(torch.cat([last[0], last[1]], dim=1)))
        return h, self.w_k(h) + self.att_b, s

    def step(self, h, keys, s, u):
        """One decoder step from s_{t-1} and u_t: (s_t, c_t)."""
        e = torch.tanh(self.w_q(s).unsqueeze(1) + keys) @ self.att_v  # e_ti, [B, S]
        alpha = torch.softmax(e, dim=1)
        c = torch.bmm(alpha.unsqueeze(1), h).squeeze(1)  # c_t = sum_i alpha_ti h_i
        return self.decoder(torch.cat([u, c], dim=1), s), c

    def readout(self, s, c, u):
        return self.out(torch.tanh(self.w_o(torch.cat([s, c, u], dim=-1))))

    def forward(self, src, tgt_in):
        h, keys, s = self.encode(src)
        u = self.tgt_emb(tgt_in)
        states, contexts = [], []
        for t in range(tgt_in.shape[1]):
            s, c = self.step(h, keys, s, u[:, t])
            states.append(s)
            contexts.append(c)
        return self.readout(torch.stack(states, 1), torch.stack(contexts, 1), u)

    def greedy(self, src, steps):
        """The argmax tokens of `steps` steps, [B, steps] (PyTorch's usual greedy: no softmax,
        which argmax does not need)."""
        h, keys, s = self.encode(src)
        y = torch.full((src.shape[0],), BOS)
        tokens = []
        for _ in range(steps):
            u = self.tgt_emb(y)
            s, c = self.step(h, keys, s, u)
            y = self.readout(s, c, u).argmax(dim=1)
            tokens.append(y)
        return torch.stack(tokens, 1)


def blas_library():
    """The BLAS this process loaded (Linux), e.g. openblas-openmp/libblas.so.3."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if line.split()[-1].count("/") > 0}
    except OSError:
        return "unknown"
    blas = [p for p in paths if "blas" in os.path.basename(p)]
    return ", ".join("/".join(p.split("/")[-2:]) for p in sorted(blas)) or "none"


def median_of_rounds(config, measure):
    """bin/bench's figure: the median of its rounds' measurements, each with a fresh model."""
    return statistics.median(measure() for _ in range(config["rounds"]))


def train(config):
    """Target tokens/s of training, as bin/bench --run 0 train NAME."""
    B, S, T, V = config["B"], config["S"], config["T"], config["Vt"]

    def round_ms():
        model = Seq2Seq(config)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=True)
        src = torch.randint(4, config["Vs"], (B, S))
        tgt = torch.randint(4, V, (B, T))
        tgt_in = torch.cat([torch.full((B, 1), BOS), tgt[:, :-1]], dim=1)
        ms = []
        for step in range(config["warmup"] + config["steps"]):
            t0 = time.perf_counter()
            logits = model(src, tgt_in)
            loss = nn.functional.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            if step >= config["warmup"]:
                ms.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ms)

    ms = median_of_rounds(config, round_ms)
    return f"{B * T / (ms / 1e3):9.0f} tok/s {ms:8.1f} ms/step"


def decode(config, batch):
    """Greedy sentences/s, batch sentences at a time, as bin/bench --run 0 decode NAME 1 BATCH:
    exactly its steps from random sources of its length, each round timing whole searches for
    at least 0.4 s."""
    steps = config["decode_steps"]

    def round_rate():
        model = Seq2Seq(config).eval()
        src = torch.randint(4, config["Vs"], (batch, config["S"]))
        with torch.inference_mode():
            model.greedy(src, steps)  # warm-up
            searches, t0 = 0, time.perf_counter()
            while searches == 0 or time.perf_counter() - t0 < 0.4:
                model.greedy(src, steps)
                searches += 1
            return searches * batch / (time.perf_counter() - t0)

    return f"greedy batch {batch:<3d} {median_of_rounds(config, round_rate):9.1f} sentences/s"


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=["train", "decode"])
    parser.add_argument("name", choices=["toy", "medium"])
    parser.add_argument("batch", type=positive_int, nargs="?", help="decode: sentences at a time")
    parser.add_argument("--threads", type=positive_int, default=None,
                        help="threads (default: OMP_NUM_THREADS, else PyTorch's own choice)")
    args = parser.parse_args()
    if (args.task == "decode") != (args.batch is not None):
        parser.error("decode takes a batch size, train none")
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    config = bench_config(args.name)
    figures = train(config) if args.task == "train" else decode(config, args.batch)
    blas = blas_library()
    if "pthread" in blas:  # two thread pools, each spinning while the other works
        print(f"pytorch.py: warning: OpenBLAS's pthread build is loaded ({blas}); PyTorch's "
              "threads then compete with its own (Debian: apt-get remove libopenblas0-pthread)",
              file=sys.stderr)
    # the interpreter and libtorch alone take about 240 MB of it
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  {args.name:<8} {figures} {rss:6.0f} MB RSS  (PyTorch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, BLAS {blas})")


if __name__ == "__main__":
    main()
