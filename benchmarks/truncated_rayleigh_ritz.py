"""Why the randomized solver refines on the exact pencil: a truncated SVD is not enough.

On en-brown with its 8,000 most frequent input features (``bench_linalg.py``'s ``brown8k``:
X = SuffixView(1-4) + WordView, Y = TagNgramView(XPOS, 1-2), k = 75, tau = 0.5) this takes
the exact Rayleigh-Ritz step of Eq. 11 on the top-r singular directions of X and of Y
(the eigenvectors of X^T X and Y^T Y from dense ``eigh``) -- the best a rank-r
truncated-SVD method can do with those subspaces -- and prints how far its top-k
correlations are from the dense solver's, for several r.  The randomized solver's target
is 1e-3 relative; the canonical directions of rare, deterministic features lie in the
tail of the spectrum, so the error falls slowly with r.

Within span(V_x) x span(V_y) the regularised covariances are diagonal, (1 - tau) s^2 + tau,
so the step is one SVD of the whitened r x r cross-covariance.

Usage::

    python benchmarks/truncated_rayleigh_ritz.py [--ranks 500 1000 2000 3000 4000]
        [--case brown8k] [--rows N]

``--rows N`` keeps the first N sentences (smoke tests); a rank at or above min(d1, d2)
spans the whole space, so its error is rounding only.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg as la

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data_check import require  # noqa: E402
from bench_linalg import data_paths, load  # noqa: E402

from sparsecca.linalg import CCAEngine  # noqa: E402


def top_eigenvectors(M):
    """Eigenvalues (descending) and eigenvectors of the dense Gram M^T M."""
    G = (M.T @ M).toarray()
    lam, V = la.eigh(G, overwrite_a=True, check_finite=False)
    return np.maximum(lam[::-1], 0.0), V[:, ::-1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", nargs="+", type=int, default=[500, 1000, 2000, 3000, 4000])
    ap.add_argument("--case", default="brown8k",
                    help="a bench_linalg.py case of en-brown (default brown8k)")
    ap.add_argument("--rows", type=int, default=None,
                    help="keep the first N sentences (default: all)")
    args = ap.parse_args(argv)
    if any(r < 1 for r in args.ranks):
        ap.error(f"--ranks must be >= 1, got {args.ranks}")
    if args.rows is not None and args.rows < 1:
        ap.error(f"--rows must be >= 1, got {args.rows}")
    require(*data_paths(args.case))  # exit 3 with one line (see _data_check.py)
    X, Y, k, tau = load(args.case, n_rows=args.rows)
    print(f"{args.case}: X {X.shape[0]:,} x {X.shape[1]:,} (nnz {X.nnz:,}), "
          f"Y d2 = {Y.shape[1]:,}, k = {k}, tau = {tau}")
    t0 = time.perf_counter()
    ref = CCAEngine(X, Y, solver="dense").solve(Y, tau, k).correlations
    print(f"dense solver: {time.perf_counter() - t0:.1f} s, correlations "
          f"{ref[0]:.6f} .. {ref[-1]:.6f}")
    t0 = time.perf_counter()
    lx, Vx = top_eigenvectors(X)
    ly, Vy = top_eigenvectors(Y)
    cross = (X.T @ Y).toarray()
    print(f"eigenvectors of X^T X and Y^T Y, X^T Y: {time.perf_counter() - t0:.1f} s")
    print(f"{'rank r':>8} {'max rel. error (top k)':>24} {'k-th correlation':>18}")
    for r in args.ranks:
        rx, ry = min(r, Vx.shape[1]), min(r, Vy.shape[1])
        if min(rx, ry) < k:
            print(f"{r:>8} (fewer than k = {k} directions)")
            continue
        wx = 1.0 / np.sqrt((1.0 - tau) * lx[:rx] + tau)
        wy = 1.0 / np.sqrt((1.0 - tau) * ly[:ry] + tau)
        T = (Vx[:, :rx].T @ (cross @ Vy[:, :ry])) * wx[:, None] * wy[None, :]
        rho = la.svd(T, compute_uv=False, check_finite=False)[:k]
        err = np.max(np.abs(rho - ref) / ref)
        print(f"{r:>8} {err:>24.2e} {rho[-1]:>18.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
