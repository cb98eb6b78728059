"""The comparison with PyTorch behind `make bench-pytorch` (bench/pytorch.sh runs it).

The model of docs/MODEL-SPEC.md written with PyTorch's own layers (nn.GRU, nn.GRUCell,
nn.Linear: PyTorch's gate order is the spec's), trained as `bin/bench --run 0 train toy` (or
medium) trains it: one random batch of full-length sentences (no padding), teacher forcing,
the mean cross-entropy, gradients clipped to norm 1, Adam at 1e-4 (PyTorch's faster forms:
gradients set to None, foreach Adam); warm-up steps, then the median of the timed steps.
Target tokens count every position of the batch, as bin/bench's do. Not part of the build or
the tests: a figure to set beside bin/bench's, on the same machine, with the same number of
threads.
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

    def forward(self, src, tgt_in):
        h, last = self.encoder(self.src_emb(src))  # h_i = [f_i ; g_i]; last: f_{L-1}, g_0
        s = torch.tanh(self.init(torch.cat([last[0], last[1]], dim=1)))
        keys = self.w_k(h) + self.att_b
        u = self.tgt_emb(tgt_in)
        states, contexts = [], []
        for t in range(tgt_in.shape[1]):
            e = torch.tanh(self.w_q(s).unsqueeze(1) + keys) @ self.att_v  # e_ti, [B, S]
            alpha = torch.softmax(e, dim=1)
            c = torch.bmm(alpha.unsqueeze(1), h).squeeze(1)  # c_t = sum_i alpha_ti h_i
            s = self.decoder(torch.cat([u[:, t], c], dim=1), s)
            states.append(s)
            contexts.append(c)
        readout_in = torch.cat([torch.stack(states, 1), torch.stack(contexts, 1), u], dim=2)
        return self.out(torch.tanh(self.w_o(readout_in)))


def blas_library():
    """The BLAS library this process loaded (Linux), e.g. openblas-openmp/libblas.so.3."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "blas" in line.split()[-1]}
    except OSError:
        return "unknown"
    return ", ".join("/".join(p.split("/")[-2:]) for p in sorted(paths)) or "none"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=sorted(CONFIGS))
    parser.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "2")))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    c = CONFIGS[args.what]
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
    blas = blas_library()
    if "pthread" in blas:  # two thread pools, each spinning while the other works
        print(f"pytorch.py: warning: OpenBLAS's pthread build is loaded ({blas}); PyTorch's "
              "threads then compete with its own (Debian: apt-get remove libopenblas0-pthread)",
              file=sys.stderr)
    median = statistics.median(ms)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  {args.what:<8} {B * L / (median / 1e3):9.0f} tok/s {median:8.1f} ms/step "
          f"{rss:6.0f} MB RSS  (PyTorch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"BLAS {blas})")


if __name__ == "__main__":
    main()
