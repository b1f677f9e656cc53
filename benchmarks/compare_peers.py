"""sparsecca next to its peers, side by side on the same data in one run.

Every fit runs in its own subprocess (same data, loaded the same way).  "fit peak MB" is the
peak RSS during the fit call (a 2 ms psutil sampler completed by ru_maxrss) minus the RSS
just before it, i.e. what the method itself allocates; times are wall seconds of the fit call
alone (for scikit-learn including the densification of X and Y it requires).

CCA (``--cca``)
    * ``SparseCCA``: sparsecca.linalg.SparseCCA(k, tau, center=True), solver 'auto' (what the
      engine picks) and, as separate rows, 'randomized' and 'iterative';
    * ``dense Eq. 14``: the paper's method written out below with NumPy/SciPy (dense centred
      Cxx, Cyy, Cholesky factors, the whitened reduced eigenproblem of Eq. 14, b and a from
      Eq. 15) -- the reference;
    * ``sklearn CCA``: sklearn.cross_decomposition.CCA(n_components=k, scale=False) (NIPALS
      with deflation; dense; a pseudo-inverse of X per component).

    Problem ("zipf" family): rows 0..n-1 of zipf-two-view X_50000_30000 restricted to its
    ``--d1`` most frequent columns (default 2,000) and Y_50000_300 (d2 = 300); k = 50.
    scikit-learn's CCA is unregularised, so the comparison is at a tiny tau (``--tau``,
    default 1e-3; n > d1 makes the problem well posed) with centring on; agreement is the
    largest difference of the top-k empirical canonical correlations (Pearson correlation of
    the training projections, sorted) from the dense reference's.
    scikit-learn is run at growing n until a run would exceed ``--sklearn-limit`` (600 s):
    the next size is run only when the time extrapolated linearly in n from the last one
    (its cost is a d1 x d1 pseudo-inverse per component, O(n d1^2)) fits the limit and the
    total sklearn budget (``--sklearn-budget``, 1500 s) -- and a running fit is killed at the
    limit.  The speed-up of SparseCCA at the largest size sklearn finished is the headline.
    A second table runs the paper's operating point (tau = 0.5, uncentred) on the full
    zipf 20K x 5K problem, SparseCCA against the dense reference (``--zipf50k`` adds 50K x
    30K, whose dense run takes minutes and ~7 GB).

Taggers (``--taggers``)
    TrigramHMM against NLTK's TnT (``nltk.tag.tnt.TnT``) and NLTK's supervised HMM
    (``HiddenMarkovModelTrainer.train_supervised`` with Lidstone(0.1) smoothing, else unseen
    words have probability 0) on en-wsj (train 188,059 tokens).  TrigramHMM and TnT tag the
    whole test set (47,377 tokens); NLTK's HMM decodes in Python and is slow, so all three are
    also run on the first ``--hmm-sentences`` (default 300) test sentences and the ratios
    against it use that subset (said in the table).

Peers are optional imports: a missing one is reported as skipped.

Usage::

    python benchmarks/compare_peers.py                       # both parts, ~30-40 min
    python benchmarks/compare_peers.py --cca --sizes 5000 10000 --sklearn-budget 300
    python benchmarks/compare_peers.py --taggers
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "memory"))

from _harness import machine_info, markdown_table, run_child  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ZIPF = SHARED_DATA / "zipf-two-view"
WSJ = SHARED_DATA / "en-wsj"


# -- the dense reference: the paper's equations, written out ------------------------------

def dense_cca(X, Y, k, tau, center):
    """Regularised CCA by the paper's Eq. 14-15 on dense matrices (the reference).

    Cxx = (1 - tau) Xc^T Xc + tau I, Cyy = (1 - tau) Yc^T Yc + tau I, Cxy = Xc^T Yc; with
    Cxx = Lx Lx^T and Cyy = Ly Ly^T, Eq. 14 (Cyy^-1 Cxy^T Cxx^-1 Cxy b = omega b) becomes the
    symmetric d2 x d2 problem  Ly^-1 Cxy^T Cxx^-1 Cxy Ly^-T v = omega v,  b = Ly^-T v, and
    Eq. 15 gives a = Cxx^-1 Cxy b / sqrt(omega).

    The covariances are dense d x d arrays, formed from sparse products (the data matrices
    are never densified; centring is the rank-one correction of the product).

    Returns A (d1, k), B (d2, k), omega (k,) descending.
    """
    import numpy as np
    import scipy.linalg as la
    import scipy.sparse as sp

    def cov(P, Q):
        # P^T Q (of the centred views) from the sparse products: (P - 1 mp^T)^T (Q - 1 mq^T)
        # = P^T Q - n mp mq^T; dense d x d' result, the inputs are never densified
        out = P.T @ Q
        out = out.toarray() if sp.issparse(out) else np.asarray(out, dtype=np.float64)
        if center:
            n = P.shape[0]
            out -= n * np.outer(np.asarray(P.mean(axis=0)).ravel(),
                                np.asarray(Q.mean(axis=0)).ravel())
        return out

    X = sp.csr_matrix(X, dtype=np.float64)
    Y = sp.csr_matrix(Y, dtype=np.float64)
    Cxx = (1 - tau) * cov(X, X)
    Cxx[np.diag_indices_from(Cxx)] += tau
    Cyy = (1 - tau) * cov(Y, Y)
    Cyy[np.diag_indices_from(Cyy)] += tau
    Cxy = cov(X, Y)
    Lx = la.cholesky(Cxx, lower=True, overwrite_a=True, check_finite=False)
    Ly = la.cholesky(Cyy, lower=True, overwrite_a=True, check_finite=False)
    Z = la.cho_solve((Lx, True), Cxy, check_finite=False)          # Cxx^-1 Cxy
    S = Cxy.T @ Z                                                   # Cxy^T Cxx^-1 Cxy
    W = la.solve_triangular(Ly, S, lower=True, check_finite=False)  # Ly^-1 S
    M = la.solve_triangular(Ly, W.T, lower=True, check_finite=False)  # Ly^-1 S Ly^-T
    M = (M + M.T) / 2
    d2 = M.shape[0]
    omega, V = la.eigh(M, subset_by_index=[d2 - k, d2 - 1], check_finite=False)
    omega, V = omega[::-1], V[:, ::-1]
    B = la.solve_triangular(Ly, V, lower=True, trans="T", check_finite=False)
    A = (Z @ B) / np.sqrt(np.maximum(omega, 1e-300))
    return A, B, omega


def pearson(P, Q):
    import numpy as np

    P = P - P.mean(axis=0)
    Q = Q - Q.mean(axis=0)
    den = np.sqrt((P * P).sum(0) * (Q * Q).sum(0))
    return np.divide((P * Q).sum(0), den, out=np.zeros(P.shape[1]), where=den > 0)


# -- data ----------------------------------------------------------------------------------

def load_cca(problem, n, d1):
    import numpy as np
    import scipy.sparse as sp

    if problem == "zipf-top":
        X = sp.load_npz(ZIPF / "X_50000_30000.npz").tocsc()
        Y = sp.load_npz(ZIPF / "Y_50000_300.npz").tocsr()
        freq = np.diff(X.indptr)  # nonzeros per column over all 50,000 rows
        cols = np.sort(np.argsort(-freq, kind="stable")[:d1])
        return X[:, cols].tocsr()[:n], Y[:n]
    if problem in ("zipf20k", "zipf50k"):
        size = "20000_5000" if problem == "zipf20k" else "50000_30000"
        m = size.split("_")[0]
        return (sp.load_npz(ZIPF / f"X_{size}.npz").tocsr(),
                sp.load_npz(ZIPF / f"Y_{m}_300.npz").tocsr())
    raise ValueError(problem)


# -- children ------------------------------------------------------------------------------

def child_cca(cfg):
    import warnings

    import numpy as np
    from _harness import StageRecorder

    X, Y = load_cca(cfg["problem"], cfg["n"], cfg["d1"])
    k, tau, center = cfg["k"], cfg["tau"], cfg["center"]
    method = cfg["method"]
    out = {"n": X.shape[0], "d1": X.shape[1], "d2": Y.shape[1], "nnz_x": int(X.nnz)}
    if method.startswith("sparsecca"):
        from sparsecca.linalg import SparseCCA

        solver = method.split(":")[1]
        SparseCCA(2, tau=tau, solver=solver, center=center,
                  random_state=0).fit(X[:300], Y[:300])  # numba / first-call warm-up
    elif method == "sklearn":
        from sklearn.cross_decomposition import CCA
    rec = StageRecorder()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with rec.stage("fit"):
            if method.startswith("sparsecca"):
                m = SparseCCA(k, tau=tau, solver=solver, center=center,
                              random_state=0).fit(X, Y)
            elif method == "dense":
                A, B, omega = dense_cca(X, Y, k, tau, center)
            else:
                # sklearn needs dense input: densifying is part of its cost
                Xd, Yd = X.toarray(), Y.toarray()
                m = CCA(n_components=k, scale=False).fit(Xd, Yd)
    if method.startswith("sparsecca"):
        out["solver"] = m.solver_
        PX, PY = m.transform(X, Y)
    elif method == "dense":
        PX, PY = np.asarray(X @ A), np.asarray(Y @ B)
        out["sqrt_omega"] = np.sqrt(omega).tolist()
    else:
        PX, PY = m.transform(Xd, Yd)
        out["sklearn_n_iter_max"] = int(max(m.n_iter_))
    st = rec.stages[0]
    out["fit_s"] = st["time_s"]
    out["fit_peak_mb"] = st["rss_peak_mb"] - st["rss_start_mb"]
    out["warnings"] = sorted({f"{w.category.__name__}: {str(w.message)[:80]}"
                              for w in caught})
    out["corr"] = np.sort(pearson(np.asarray(PX, float), np.asarray(PY, float)))[::-1].tolist()
    return out


def child_tagger(cfg):
    from _harness import StageRecorder

    from sparsecca.data import read_conllu

    train = read_conllu(WSJ / "train.conllu", tags="xpos")
    test = read_conllu(WSJ / "test.conllu", tags="xpos")
    if cfg["subset"]:
        test = test[:cfg["subset"]]
    sents = train.to_sentences()
    words = [[w for w, _ in s] for s in test.to_sentences()]
    gold = [t for s in test.to_sentences() for _, t in s]
    method = cfg["method"]
    if method == "TrigramHMM":
        from sparsecca.tagging import TrigramHMM

        TrigramHMM().fit(train[:200]).tag(test[:5])  # numba warm-up (cached kernels)
    elif method == "NLTK TnT":
        from nltk.tag.tnt import TnT
    else:
        from nltk.probability import LidstoneProbDist
        from nltk.tag.hmm import HiddenMarkovModelTrainer
    out = {"n_tokens": len(gold), "n_sentences": len(words)}
    rec = StageRecorder()
    if method == "TrigramHMM":
        with rec.stage("fit"):
            model = TrigramHMM().fit(train)
        with rec.stage("tag"):
            tagged = model.tag(test)
        pred = [tagged.tags[i] for i in tagged.tag_ids]
    elif method == "NLTK TnT":
        with rec.stage("fit"):
            tnt = TnT()
            tnt.train(sents)
        with rec.stage("tag"):
            pred = [tag for s in tnt.tagdata(words) for _, tag in s]
    else:
        with rec.stage("fit"):
            hmm = HiddenMarkovModelTrainer().train_supervised(
                sents, estimator=lambda fd, bins: LidstoneProbDist(fd, 0.1, bins))
        with rec.stage("tag"):
            pred = [tag for s in words for _, tag in hmm.tag(s)]
    fit, tag = rec.stages
    out["fit_s"], out["tag_s"] = fit["time_s"], tag["time_s"]
    out["fit_peak_mb"] = max(fit["rss_peak_mb"], tag["rss_peak_mb"]) - fit["rss_start_mb"]
    out["accuracy"] = sum(p == g for p, g in zip(pred, gold)) / len(gold)
    return out


# -- parent --------------------------------------------------------------------------------

def run_cfg(cfg, timeout=None):
    res = run_child([__file__, "--child", json.dumps(cfg)], timeout=timeout)
    res["load"] = os.getloadavg()[0]
    return res


def fmt_row(label, res, ref=None, base=None):
    """Row dict for the tables; ratios against ``base`` (our method's result)."""
    row = {"method": label}
    if "error" in res:
        row["note"] = res["error"]
        return row
    row["fit_s"] = res.get("fit_s")
    row["peak_mb"] = res["fit_peak_mb"]
    row["load"] = res.get("load")
    if base is not None and "fit_s" in base:
        row["time_ratio"] = res["fit_s"] / base["fit_s"]
        row["mem_ratio"] = row["peak_mb"] / max(base["fit_peak_mb"], 1.0)
    return row


def cca_part(args, report):
    import numpy as np

    try:
        import sklearn
        have_sklearn = sklearn.__version__
    except ImportError:
        have_sklearn = None
    print(f"\n== CCA: zipf-two-view top-{args.d1} columns, d2 = 300, k = {args.k}, "
          f"tau = {args.tau}, centred; sklearn {have_sklearn or 'not installed: skipped'}",
          flush=True)
    methods = ["sparsecca:auto", "sparsecca:randomized", "sparsecca:iterative", "dense"]
    sk_spent, sk_last = 0.0, None
    headline = None
    tables = []
    for n in args.sizes:
        results = {}
        for meth in methods:
            cfg = dict(task="cca", method=meth, problem="zipf-top", n=n, d1=args.d1,
                       k=args.k, tau=args.tau, center=True)
            results[meth] = run_cfg(cfg, timeout=args.timeout)
            r = results[meth]
            print(f"  n={n:,} {meth}: " + (r["error"] if "error" in r else
                  f"{r['fit_s']:.2f}s peak +{r['fit_peak_mb']:.0f} MB "
                  f"load {r['load']:.2f}"), flush=True)
        # sklearn: extrapolate before running
        sk_note = None
        if have_sklearn is None:
            sk_note = "skipped (scikit-learn not installed)"
        elif sk_last is not None and "fit_s" not in sk_last[1]:
            sk_note = "skipped (did not finish at a smaller size)"
        else:
            pred = None if sk_last is None else sk_last[1]["fit_s"] * n / sk_last[0]
            if pred is not None and pred > args.sklearn_limit:
                sk_note = (f"skipped: extrapolated {pred:.0f} s > {args.sklearn_limit:.0f} s "
                           f"(linear in n from {sk_last[1]['fit_s']:.0f} s at "
                           f"n={sk_last[0]:,})")
            elif pred is not None and sk_spent + pred > args.sklearn_budget:
                sk_note = (f"skipped: extrapolated {pred:.0f} s would exceed the "
                           f"{args.sklearn_budget:.0f} s sklearn budget ({sk_spent:.0f} s "
                           f"spent)")
        if sk_note is None:
            cfg = dict(task="cca", method="sklearn", problem="zipf-top", n=n, d1=args.d1,
                       k=args.k, tau=args.tau, center=True)
            r = run_cfg(cfg, timeout=args.sklearn_limit + 60)
            sk_spent += r.get("wall_s", args.sklearn_limit)
            results["sklearn"] = r
            if "error" in r and r["error"].startswith("timeout"):
                sk_note = f"did not finish within {args.sklearn_limit:.0f} s (killed)"
            elif "error" in r:
                sk_note = f"failed: {r['error']}"
            elif r["fit_s"] > args.sklearn_limit:
                sk_note = (f"did not finish within {args.sklearn_limit:.0f} s "
                           f"({r['fit_s']:.0f} s)")
            sk_last = (n, r)
            print(f"  n={n:,} sklearn: " + (r.get("error") or
                  f"{r['fit_s']:.1f}s peak +{r['fit_peak_mb']:.0f} MB"
                  f" (sklearn total {sk_spent:.0f} s)"), flush=True)
        ref = results["dense"]
        base = results["sparsecca:auto"]
        rows = []
        labels = {"sparsecca:auto": "SparseCCA (auto)", "sparsecca:randomized":
                  "SparseCCA (randomized)", "sparsecca:iterative": "SparseCCA (iterative)",
                  "dense": "dense Eq. 14 (reference)", "sklearn": "sklearn CCA (NIPALS)"}
        for meth, r in results.items():
            label = labels[meth] + (f" [{r['solver']}]" if meth == "sparsecca:auto"
                                    and "solver" in r else "")
            row = fmt_row(label, r, base=base)
            if "corr" in r and "corr" in ref:
                c, cr = np.array(r["corr"]), np.array(ref["corr"])
                row["agree"] = float(np.max(np.abs(c - cr)))
                row["sum_corr"] = float(c.sum())
            if meth == "sklearn" and "sklearn_n_iter_max" in r:
                row["note"] = (f"max NIPALS iterations {r['sklearn_n_iter_max']}"
                               + ("; " + r["warnings"][0] if r["warnings"] else ""))
            rows.append(row)
        if sk_note and "sklearn" not in results:
            rows.append({"method": labels["sklearn"], "note": sk_note})
        elif sk_note:
            rows[-1]["note"] = sk_note
        d1 = base.get("d1", args.d1)
        title = f"n = {n:,}, d1 = {d1:,}, nnz(X) = {base.get('nnz_x', 0):,}"
        tables.append((title, rows))
        if "sklearn" in results and "fit_s" in results["sklearn"] and \
                results["sklearn"]["fit_s"] <= args.sklearn_limit and "fit_s" in base:
            headline = (n, results["sklearn"]["fit_s"], base["fit_s"],
                        results["sklearn"]["fit_s"] / base["fit_s"], base.get("solver"),
                        rows[-1].get("agree"), rows[0].get("agree"))
    cols = [("method", "method", "s"), ("fit_s", "fit (s)", ".2f"),
            ("time_ratio", "time / SparseCCA(auto)", ".1f"),
            ("peak_mb", "fit peak MB", ".0f"), ("mem_ratio", "memory ratio", ".1f"),
            ("sum_corr", "sum of top-k corr.", ".4f"),
            ("agree", "max |corr - ref|", ".2g"), ("load", "load", ".2f"), ("note", "note", "s")]
    report.append(f"## CCA: zipf-two-view, top {args.d1:,} columns of X_50000_30000, "
                  f"Y_50000_300, k = {args.k}, tau = {args.tau}, centred\n")
    for title, rows in tables:
        report.append(f"### {title}\n")
        report.append(markdown_table(rows, cols) + "\n")
    if headline:
        n, sk, ours, ratio, solver, sk_agree, our_agree = headline
        report.append(
            f"**Headline**: largest size where scikit-learn's CCA finished within "
            f"{args.sklearn_limit:.0f} s: n = {n:,}; sklearn {sk:.1f} s vs SparseCCA "
            f"(auto -> {solver}) {ours:.2f} s at n_components = {args.k}: speed-up "
            f"**{ratio:.0f}x** (target >= 50x: {'met' if ratio >= 50 else 'NOT met'}); "
            f"max |corr - dense reference|: sklearn {sk_agree:.2g}, SparseCCA "
            f"{our_agree:.2g}.\n")
    else:
        report.append("**Headline**: scikit-learn's CCA finished at no size (or was "
                      "skipped).\n")
    report.append(f"sklearn time spent: {sk_spent:.0f} s.\n")

    # the paper's operating point: tau = 0.5, uncentred, SparseCCA vs dense reference
    problems = ["zipf20k"] + (["zipf50k"] if args.zipf50k else [])
    for prob in problems:
        rows = []
        res = {}
        for meth in ["sparsecca:auto", "sparsecca:randomized", "sparsecca:iterative", "dense"]:
            cfg = dict(task="cca", method=meth, problem=prob, n=0, d1=0, k=args.k, tau=0.5,
                       center=False)
            res[meth] = run_cfg(cfg, timeout=args.timeout)
            r = res[meth]
            print(f"  {prob} tau=0.5 {meth}: " + (r.get("error") or
                  f"{r['fit_s']:.2f}s peak +{r['fit_peak_mb']:.0f} MB"),
                  flush=True)
        for meth, r in res.items():
            row = fmt_row(meth.replace("sparsecca:", "SparseCCA ") + (
                f" [{r['solver']}]" if meth == "sparsecca:auto" and "solver" in r else ""),
                r, base=res["sparsecca:auto"])
            if "corr" in r and "corr" in res["dense"]:
                c, cr = np.array(r["corr"]), np.array(res["dense"]["corr"])
                row["agree"] = float(np.max(np.abs(c - cr)))
                row["sum_corr"] = float(c.sum())
            rows.append(row)
        size = "20,000 x 5,000" if prob == "zipf20k" else "50,000 x 30,000"
        report.append(f"### paper's operating point: zipf {size}, k = {args.k}, tau = 0.5, "
                      f"uncentred (sklearn cannot regularise: not run)\n")
        report.append(markdown_table(rows, cols) + "\n")


def tagger_part(args, report):
    print("\n== taggers: en-wsj (45 tags)", flush=True)
    avail = {}
    try:
        import nltk

        avail["nltk"] = nltk.__version__
    except ImportError:
        avail["nltk"] = None
    cols = [("method", "method", "s"), ("fit_s", "fit (s)", ".2f"),
            ("tag_s", "tag (s)", ".2f"), ("tok_s", "tokens/s", ",.0f"),
            ("tag_ratio", "tag time / TrigramHMM", ".1f"),
            ("peak_mb", "fit peak MB", ".0f"), ("mem_ratio", "memory ratio", ".1f"),
            ("accuracy", "accuracy (%)", ".2f"), ("load", "load", ".2f"),
            ("note", "note", "s")]
    for subset, methods, title in (
            (0, ["TrigramHMM", "NLTK TnT"], "whole test set (2,012 sentences, 47,377 tokens)"),
            (args.hmm_sentences, ["TrigramHMM", "NLTK TnT", "NLTK HMM"],
             f"first {args.hmm_sentences} test sentences (NLTK's HMM decoder is too slow for "
             f"the whole set)")):
        res = {}
        rows = []
        for meth in methods:
            if meth != "TrigramHMM" and avail["nltk"] is None:
                rows.append({"method": meth, "note": "skipped (nltk not installed)"})
                continue
            r = run_cfg(dict(task="tagger", method=meth, subset=subset), timeout=args.timeout)
            res[meth] = r
            print(f"  {meth} ({'all' if not subset else subset}): " + (r.get("error") or
                  f"fit {r['fit_s']:.1f}s tag {r['tag_s']:.1f}s acc {100 * r['accuracy']:.2f}%"),
                  flush=True)
            row = fmt_row(meth, r, base=res.get("TrigramHMM"))
            if "error" not in r:
                row.update(tag_s=r["tag_s"], tok_s=r["n_tokens"] / r["tag_s"],
                           accuracy=100 * r["accuracy"])
                b = res.get("TrigramHMM")
                if b and "tag_s" in b:
                    row["tag_ratio"] = r["tag_s"] / b["tag_s"]
                    row["time_ratio"] = r["fit_s"] / b["fit_s"]
            rows.append(row)
        report.append(f"## Taggers, en-wsj XPOS: {title}\n")
        report.append(markdown_table(rows, cols) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cca", action="store_true", help="only the CCA comparison")
    ap.add_argument("--taggers", action="store_true", help="only the tagger comparison")
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000, 10000, 20000, 50000])
    ap.add_argument("--d1", type=int, default=2000)
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--tau", type=float, default=1e-3)
    ap.add_argument("--sklearn-limit", type=float, default=600.0)
    ap.add_argument("--sklearn-budget", type=float, default=1500.0)
    ap.add_argument("--zipf50k", action="store_true")
    ap.add_argument("--hmm-sentences", type=int, default=300)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--out", type=Path, help="also write the Markdown report here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        cfg = json.loads(args.child)
        out = child_cca(cfg) if cfg["task"] == "cca" else child_tagger(cfg)
        with open(args.result, "w") as fh:
            json.dump(out, fh)
        return 0
    if not SHARED_DATA.is_dir():
        raise SystemExit(f"{SHARED_DATA} not found: the peer comparison needs ../shared/data")
    both = not (args.cca or args.taggers)
    info = machine_info()
    t0 = time.perf_counter()
    report = ["# sparsecca vs peers\n",
              f"Command: `python benchmarks/compare_peers.py {' '.join(sys.argv[1:])}`  ",
              f"Machine: {info['cpus']} CPUs, {info['mem_gib']} GiB, load average at start "
              f"{info['loadavg']}, Python {info['python']}, NumPy {info['numpy']}, "
              f"SciPy {info['scipy']}.  Each fit in its own process; fit peak MB = peak RSS "
              f"during the fit minus the RSS just before it.\n"]
    print(f"machine: {info}", flush=True)
    if both or args.cca:
        cca_part(args, report)
    if both or args.taggers:
        tagger_part(args, report)
    report.append(f"Total {time.perf_counter() - t0:.0f} s; load average at the end "
                  f"{[round(x, 2) for x in os.getloadavg()]}.")
    text = "\n".join(report)
    print("\n" + text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
