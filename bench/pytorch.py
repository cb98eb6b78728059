"""The comparison with PyTorch behind `make bench-pytorch` (bench/pytorch.sh runs it).

    pytorch.py train toy|medium            target tokens/s of training
    pytorch.py decode toy|medium BATCH     greedy sentences/s, BATCH sentences at a time

The model of docs/MODEL-SPEC.md written with PyTorch's own layers (nn.GRU, nn.GRUCell,
nn.Linear: PyTorch's gate order is the spec's), run as bin/bench runs it. Training (`bin/bench
--run 0 train toy`): one random batch of full-length sentences (no padding), teacher forcing,
the mean cross-entropy, gradients clipped to norm 1, Adam at 1e-4 (in PyTorch's faster forms:
gradients set to None, foreach Adam); warm-up steps, then the median of the timed steps;
target tokens count every position of the batch, as bin/bench's do. Decoding (`bin/bench
--run 0 decode toy 1 BATCH`): exactly 30 greedy steps from random sources. Not part of the
build or the tests: figures to set beside bin/bench's, on the same machine, with the same
number of threads.
"""

import argparse
import os
import resource
import statistics
import sys
import time

import torch
from torch import nn

# bench/bench.c's TOY and MEDIUM: vocabularies, E, H (bidirectional), D, A, O; B, S = T; steps
CONFIGS = {
    "toy": dict(V=1000, E=64, H=128, D=128, A=128, O=128, B=32, L=12, steps=60),
    "medium": dict(V=8000, E=256, H=256, D=512, A=256, O=256, B=64, L=30, steps=8),
}


class Seq2Seq(nn.Module):
    def __init__(self, V, E, H, D, A, O):
        super().__init__()
        K = 2 * H
        self.src_emb = nn.Embedding(V, E)
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
        h, keys, s = self.encode(src)
        y = torch.full((src.shape[0],), 2)  # <s>
        for _ in range(steps):
            u = self.tgt_emb(y)
            s, c = self.step(h, keys, s, u)
            y = self.readout(s, c, u).argmax(dim=1)
        return y


def blas_library():
    """The BLAS library this process loaded (Linux), e.g. openblas-openmp/libblas.so.3."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "blas" in line.split()[-1]}
    except OSError:
        return "unknown"
    return ", ".join("/".join(p.split("/")[-2:]) for p in sorted(paths)) or "none"


def train(c, args):
    """Target tokens/s and the median ms of a training step; as bin/bench --run 0 train."""
    B, L, V = c["B"], c["L"], c["V"]
    model = Seq2Seq(V, c["E"], c["H"], c["D"], c["A"], c["O"])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=True)
    src = torch.randint(4, V, (B, L))
    tgt = torch.randint(4, V, (B, L))
    tgt_in = torch.cat([torch.full((B, 1), 2), tgt[:, :-1]], dim=1)  # y_0 = <s>
    warmup = 2 if c["steps"] < 10 else 5
    ms = []
    for step in range(warmup + c["steps"]):
        t0 = time.perf_counter()
        loss = nn.functional.cross_entropy(model(src, tgt_in).reshape(-1, V), tgt.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step >= warmup:
            ms.append((time.perf_counter() - t0) * 1e3)
    median = statistics.median(ms)
    return f"{B * L / (median / 1e3):9.0f} tok/s {median:8.1f} ms/step"


def decode(c, args):
    """Greedy sentences/s of exactly 30 steps from random sources (S = L), the median of 3
    rounds of at least 0.4 s; as bin/bench --run 0 decode NAME 1 BATCH."""
    V, steps = c["V"], 30
    model = Seq2Seq(V, c["E"], c["H"], c["D"], c["A"], c["O"]).eval()
    src = torch.randint(4, V, (args.batch, c["L"]))
    rates = []
    with torch.inference_mode():
        model.greedy(src, steps)  # warm-up
        for _ in range(3):
            calls, t0 = 0, time.perf_counter()
            while calls == 0 or time.perf_counter() - t0 < 0.4:
                model.greedy(src, steps)
                calls += 1
            rates.append(calls * args.batch / (time.perf_counter() - t0))
    return f"greedy batch {args.batch:<3d} {statistics.median(rates):9.1f} sentences/s"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=["train", "decode"])
    parser.add_argument("what", choices=sorted(CONFIGS))
    parser.add_argument("batch", type=int, nargs="?", default=1, help="decode: sentences at a time")
    parser.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "2")))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    figures = (train if args.task == "train" else decode)(CONFIGS[args.what], args)
    blas = blas_library()
    if "pthread" in blas:  # two thread pools, each spinning while the other works
        print(f"pytorch.py: warning: OpenBLAS's pthread build is loaded ({blas}); PyTorch's "
              "threads then compete with its own (Debian: apt-get remove libopenblas0-pthread)",
              file=sys.stderr)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  {args.what:<8} {figures} {rss:6.0f} MB RSS  (PyTorch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, BLAS {blas})")


if __name__ == "__main__":
    main()
