"""Where a tau grid's time goes: per-tau solve times of one engine and the stages behind them.

One :class:`~sparsecca.linalg.CCAEngine` (randomized solver) on zipf-two-view 20K x 5K
(k = 50, uncentred) solves the grid 0.1, 0.3, 0.5, 0.7, 0.9 in turn, as ``fit_path`` does;
the first solve pays the tau-independent work (the factor of X, X^T Y), the later ones
start LOBPCG from the previous block and its images (no product with X when no step
follows).  For the warm solves, cProfile's cumulative times of the stages are divided by
the number of warm solves, and the empirical correlations that ``SparseCCA`` adds per tau
(from the solve's moments, read from the profile of a ``SparseCCA.fit_path`` over the same
grid; and, for comparison, formed from X A and Y B) are timed separately.

``--orders`` instead solves the grid in every order and prints the LOBPCG steps of each
solve: whether another order than the ascending one would spare steps.

Usage::

    python benchmarks/profile_tau_grid.py [--repeat 3] [--orders]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data_check import require  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
TAUS = [0.1, 0.3, 0.5, 0.7, 0.9]
STAGES = {
    "C_xy W_y^T (whitened cross)": "_dense_whitened_cross",
    "final Rayleigh-Ritz (_finalize)": "_finalize",
    "LOBPCG Rayleigh-Ritz steps": "_rayleigh_ritz",
    "C_xx products": "gram_matmat",
}


def pearson(P, Q):
    """Column-wise Pearson correlations of P and Q, (n, k) each."""
    P = np.asarray(P, dtype=np.float64) - np.mean(P, axis=0)
    Q = np.asarray(Q, dtype=np.float64) - np.mean(Q, axis=0)
    return np.einsum("ij,ij->j", P, Q) / np.sqrt(np.einsum("ij,ij->j", P, P)
                                                 * np.einsum("ij,ij->j", Q, Q))


def cumulative(stats, func, module=None):
    """cProfile's cumulative seconds of the functions named ``func`` (in a file named
    ``module``, when given)."""
    return sum(v[3] for key, v in stats.stats.items()
               if key[2] == func and (module is None or Path(key[0]).name == module))


def _orders(CCAEngine, X, Y, k):
    """Warm LOBPCG steps of the grid solved in each of its 5! orders (steps are deterministic)."""
    from itertools import permutations

    rows = []
    for order in permutations(TAUS):
        engine = CCAEngine(X, Y, solver="randomized", random_state=0)
        steps = [engine.solve(engine.Y, tau, k).n_iter for tau in order]
        rows.append((sum(steps[1:]), order, steps))
    rows.sort()
    print(f"zipf 20K x 5K, k = {k}, randomized: LOBPCG steps per solve, every order of "
          f"{TAUS}\n")
    print("| order | steps per solve | warm steps |")
    print("|---|---|---:|")
    for warm, order, steps in rows[:5] + [r for r in rows if list(r[1]) == TAUS]:
        print(f"| {', '.join(f'{t:g}' for t in order)} | {steps} | {warm} |")
    print(f"\nfewest warm steps over all {len(rows)} orders: {rows[0][0]}; most: {rows[-1][0]}")


def main():
    import scipy.sparse as sp

    from sparsecca.linalg import CCAEngine, SparseCCA

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="grids timed (the best is shown)")
    ap.add_argument("--orders", action="store_true",
                    help="instead: LOBPCG steps of the warm solves for every order of the grid")
    args = ap.parse_args()
    d = SHARED_DATA / "zipf-two-view"
    require(d / "X_20000_5000.npz", d / "Y_20000_300.npz")  # exit 3, one line
    X = sp.load_npz(d / "X_20000_5000.npz").tocsr()
    Y = sp.load_npz(d / "Y_20000_300.npz").tocsr()
    k = 50
    if args.orders:
        _orders(CCAEngine, X, Y, k)
        return
    CCAEngine(X[:2000], Y[:2000], solver="randomized", random_state=0).solve(Y[:2000], 0.5, 2)

    best = None
    for _ in range(args.repeat):
        engine = CCAEngine(X, Y, solver="randomized", random_state=0)
        prof = cProfile.Profile()
        rows = []
        for i, tau in enumerate(TAUS):
            if i:
                prof.enable()
            t = time.perf_counter()
            res = engine.solve(engine.Y, tau, k)
            elapsed = time.perf_counter() - t
            prof.disable()
            rows.append((tau, elapsed, res.n_iter))
        if best is None or sum(r[1] for r in rows) < sum(r[1] for r in best[0]):
            best = (rows, prof, res)
    rows, prof, res = best
    print(f"zipf 20K x 5K, k = {k}, randomized; best of {args.repeat} grids\n")
    print("| tau | solve (s) | LOBPCG steps |")
    print("|---:|---:|---:|")
    for tau, elapsed, n_iter in rows:
        print(f"| {tau:g} | {elapsed:.3f} | {n_iter} |")
    n_warm = len(TAUS) - 1
    stats = pstats.Stats(prof)
    print(f"\nper warm solve (cProfile cumulative time / {n_warm}; C_xx products include "
          f"the Gram image of the final block after a step, for _finalize and the next "
          f"start):\n")
    print("| stage | ms |")
    print("|---|---:|")
    for label, func in STAGES.items():
        # C_xx products: the data-level product only (of the rows, in _centring.py; the
        # operators' own gram_matmat calls it, and cumulative times would count it twice)
        cum = cumulative(stats, func, "_centring.py" if func == "gram_matmat" else None)
        print(f"| {label} | {1e3 * cum / n_warm:.1f} |")
    path_prof = cProfile.Profile()
    path_prof.enable()
    SparseCCA(k, solver="randomized", random_state=0).fit_path(X, Y, TAUS)
    path_prof.disable()
    moments = cumulative(pstats.Stats(path_prof), "_training_correlations") / len(TAUS)
    A, B = res[0], res[1]
    direct = []
    for _ in range(5):
        t = time.perf_counter()
        pearson(X @ A, Y @ B)
        direct.append(time.perf_counter() - t)
    print(f"| empirical correlations (SparseCCA, per tau, from the moments) | "
          f"{1e3 * moments:.1f} |")
    print(f"| (the same formed from X A and Y B, for comparison) | {1e3 * min(direct):.1f} |")
    warm = np.array([r[1] for r in rows[1:]])
    print(f"\nwarm solves {warm.min():.3f}-{warm.max():.3f} s; the first {rows[0][1]:.3f} s")


if __name__ == "__main__":
    main()
