"""sparsecca next to its peers, side by side on the same data in one run; prints ratio tables.

Every fit runs in its own fresh subprocess (``memory/_harness.run_child``), so each peak RSS
is that implementation's own.  The parent builds each problem once and saves it as .npz, so
all implementations read the very same matrices.  Per run: wall seconds of the fit call
alone; "fit MB" = peak RSS during the fit (2 ms psutil sampler completed by the process's
high-water mark, ``_harness.StageRecorder``) minus the RSS just before it, i.e. what the
method itself allocates (for scikit-learn including the densification of X and Y it
requires); "child MB" = the child's whole-run peak RSS, its own ``VmHWM`` (interpreter,
libraries and the loaded data included; ``os.wait4``'s ru_maxrss only if the child wrote
nothing, see ``_harness.run_child``).  Each child has a
``--timeout`` (default 600 s): a killed run is reported as 'timeout' and that implementation
stops climbing the ladder.

CCA (``--cca``), equal n_components (``--k``, default 50) for every implementation
    * ``SparseCCA``: sparsecca.linalg.SparseCCA(k, tau, center=True, solver=...), one row per
      ``--solvers`` value (default auto, randomized, iterative; 'auto' is what a user gets);
    * ``dense Eq. 14``: the paper's equations written out with NumPy/SciPy (``dense_cca``
      below: dense regularised Cxx, Cyy, Cxy; ``cho_factor`` of Cxx; the reduced problem
      Cyy^-1 Cxy^T Cxx^-1 Cxy b = omega b as the symmetric-definite ``eigh(S, Cyy)``;
      a = Cxx^-1 Cxy b / sqrt(omega)) -- the reference;
    * ``sklearn CCA``: sklearn.cross_decomposition.CCA(n_components=k, scale=False), NIPALS on
      dense centred data (a pseudo-inverse of the deflated X and Y per component), no
      regularisation.  ``scale=False`` so both sides see the same matrices (the canonical
      correlations of unregularised CCA do not depend on column scaling anyway).

    Because scikit-learn cannot regularise, the comparison runs at a tiny ``--tau`` (1e-3)
    with centring on; "max |dcorr|" is the largest difference between the sorted top-k
    empirical canonical correlations (Pearson correlation of the training projections) and
    the dense reference's (or, where the reference did not run, SparseCCA 'iterative').

    Problems:
    * ladder ``brown`` (the paper's views): first n sentences of en-brown train (one row per
      sentence), X = SuffixView(2, 3, 4), Y = TagNgramView(XPOS unigrams + bigrams), as in
      benchmarks/benchmarks/_common.py.  n < d1 up to n ~ 15K sentences, where unregularised
      CCA is degenerate (many canonical correlations are 1): there the agreement column only
      checks that both find those; the zipf problems are well posed;
    * ladder ``zipf-top``: rows 0..n-1 of zipf-two-view X_50000_30000 restricted to its
      ``--zipf-d1`` (2,000) most frequent columns, with Y_50000_300 (n > d1: well posed);
    * fixed ``zipf20k`` (20,000 x 5,000) and ``zipf50k`` (50,000 x 30,000) of
      ../shared/data/zipf-two-view; on these a second table runs the paper's operating point
      (tau = 0.5, uncentred; scikit-learn cannot express it) for SparseCCA and the reference.

    The dense reference and scikit-learn run only where they fit: a run whose estimated
    memory (dense: 8 (d1^2 + 2 d1 d2 + 4 d2^2) bytes; scikit-learn: 5 dense copies of X and Y)
    exceeds ``--max-dense-gb`` (10) is skipped.  scikit-learn is not started at a size where
    its time extrapolated linearly in n from the previous size (a lower bound: its cost is
    O(n d1^2) per component and d1 grows with n) already exceeds the timeout.  The headline
    is the speed-up of SparseCCA('auto') over scikit-learn at the largest ladder size where
    scikit-learn finished within the timeout (the issue's target: >= 50x).

Taggers (``--taggers``), en-wsj XPOS (45 tags), train 188,059 tokens, test 47,377 tokens
    TrigramHMM against NLTK's TnT (``nltk.tag.tnt.TnT``) and NLTK's supervised HMM
    (``HiddenMarkovModelTrainer.train_supervised`` with Lidstone(0.1) smoothing; with the
    default MLE every unseen word has probability 0): train time, tagging tokens/s, test
    accuracy, peak memory.  NLTK's HMM decodes in Python (~600 tokens/s here): it tags the
    first ``--hmm-sentences`` test sentences (default 0 = all), and when that is a subset, a
    second table runs all three on it so its ratios compare like with like.

Peers are optional imports: a missing one is reported as 'skipped (not installed)'.
Exit status (benchmarks/_data_check.py): 1 when a run failed (its child died or raised),
after the tables and the report; a timeout is a result, not a failure (the ladder stops
there).  3, with one line, when the data is missing.
``--quick`` is a smoke run (en-brown 200 and 500 sentences, k = 10, solver auto, no zipf
problems; taggers on 1,000 training and 50 test sentences; 60 s timeout), ~30 s.

Usage::

    python benchmarks/compare_peers.py --out peers.md            # everything, ~1-1.5 h
    python benchmarks/compare_peers.py --cca --ladders brown --sizes 1000,2000,5000
    python benchmarks/compare_peers.py --taggers --out taggers.json
    python benchmarks/compare_peers.py --quick
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "memory"))

from _data_check import EXIT_FAILED, require  # noqa: E402  (benchmarks/ is the script's dir)
from _harness import (  # noqa: E402
    MB,
    machine_info,
    markdown_table,
    parse_sizes,
    peak_rss_bytes,
    run_child,
    write_report,
)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ZIPF = SHARED_DATA / "zipf-two-view"
WSJ = SHARED_DATA / "en-wsj"
BROWN = SHARED_DATA / "en-brown"

LABELS = {"dense": "dense Eq. 14 (reference)", "sklearn": "sklearn CCA (NIPALS)"}


def label(method):
    if method.startswith("sparsecca:"):
        return f"SparseCCA ({method.split(':')[1]})"
    return LABELS.get(method, method)


# -- the dense reference: the paper's equations, written out ------------------------------

def dense_cca(X, Y, k, tau, center):
    """Regularised CCA by the paper's Eq. 14-15 with dense NumPy/SciPy (the reference).

    Cxx = (1 - tau) Xc^T Xc + tau I, Cyy = (1 - tau) Yc^T Yc + tau I, Cxy = Xc^T Yc
    (Xc = X - column means when ``center``, else X).  Eq. 14, Cyy^-1 Cxy^T Cxx^-1 Cxy b =
    omega b, is solved as the symmetric-definite problem S b = omega Cyy b with
    S = Cxy^T Cxx^-1 Cxy (``eigh(S, Cyy)``, which also normalises b^T Cyy b = 1); Eq. 15
    gives a = Cxx^-1 Cxy b / sqrt(omega).

    The covariances are formed from sparse products and densified (the d x d results are
    dense anyway); centring is the rank-one correction P^T Q - n mp mq^T.

    Returns A (d1, k), B (d2, k), omega (k,) descending.
    """
    import contextlib

    import numpy as np
    import scipy.linalg as la
    import scipy.sparse as sp

    def cov(P, Q):
        out = P.T @ Q
        out = out.toarray() if sp.issparse(out) else np.asarray(out, dtype=np.float64)
        if center:
            n = P.shape[0]
            out -= n * np.outer(np.asarray(P.mean(axis=0)).ravel(),
                                np.asarray(Q.mean(axis=0)).ravel())
        return out

    def regularised(C):
        C *= 1.0 - tau
        C[np.diag_indices_from(C)] += tau
        return C

    # OpenBLAS 0.3.x's threaded Cholesky crashed on 30,000 x 30,000 covariances with two
    # threads (see sparsecca.linalg._inverse.DENSE_SINGLE_THREAD_MIN): one thread there
    one_thread = contextlib.nullcontext()
    if X.shape[1] >= 16_000:
        with contextlib.suppress(ImportError):
            from threadpoolctl import threadpool_limits

            one_thread = threadpool_limits(1, user_api="blas")
    X = sp.csr_matrix(X, dtype=np.float64)
    Y = sp.csr_matrix(Y, dtype=np.float64)
    Cxy = cov(X, Y)
    with one_thread:
        cxx = la.cho_factor(regularised(cov(X, X)), lower=True, overwrite_a=True,
                            check_finite=False)
    Z = la.cho_solve(cxx, Cxy, check_finite=False)          # Cxx^-1 Cxy
    del cxx
    S = Cxy.T @ Z                                           # Cxy^T Cxx^-1 Cxy
    del Cxy
    S = (S + S.T) / 2
    Cyy = regularised(cov(Y, Y))
    d2 = S.shape[0]
    omega, B = la.eigh(S, Cyy, subset_by_index=[d2 - k, d2 - 1], overwrite_a=True,
                       overwrite_b=True, check_finite=False)
    omega, B = omega[::-1], B[:, ::-1]
    A = (Z @ B) / np.sqrt(np.maximum(omega, 1e-300))
    return A, B, omega


def pearson(P, Q):
    import numpy as np

    P = P - P.mean(axis=0)
    Q = Q - Q.mean(axis=0)
    den = np.sqrt((P * P).sum(0) * (Q * Q).sum(0))
    return np.divide((P * Q).sum(0), den, out=np.zeros(P.shape[1]), where=den > 0)


# -- problems (built once in the parent, read by every child) -----------------------------

class Problems:
    """Builds each CCA problem once, saves X and Y as .npz in a temporary directory."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="sparsecca-peers-"))
        self._brown = None
        self._zipf = {}
        self.cache = {}

    def cleanup(self):
        for p in self.dir.glob("*"):
            p.unlink()
        self.dir.rmdir()

    def get(self, name, n=None, d1=None):
        key = (name, n, d1)
        if key not in self.cache:
            X, Y, desc = self._build(name, n, d1)
            import scipy.sparse as sp

            stem = self.dir / "_".join(str(x) for x in key if x is not None)
            sp.save_npz(f"{stem}_X.npz", X.tocsr(), compressed=False)
            sp.save_npz(f"{stem}_Y.npz", Y.tocsr(), compressed=False)
            self.cache[key] = dict(x=f"{stem}_X.npz", y=f"{stem}_Y.npz", n=X.shape[0],
                                   d1=X.shape[1], d2=Y.shape[1], nnz_x=int(X.nnz),
                                   nnz_y=int(Y.nnz), desc=desc)
        return self.cache[key]

    def _zipf_file(self, name):
        import scipy.sparse as sp

        if name not in self._zipf:
            self._zipf[name] = sp.load_npz(ZIPF / name)
        return self._zipf[name]

    def _build(self, name, n, d1):
        import numpy as np

        if name == "brown":
            from sparsecca.data import read_conllu
            from sparsecca.features import SuffixView, TagNgramView

            if self._brown is None:
                self._brown = read_conllu(BROWN / "train.conllu.gz", tags="xpos")
            if n > self._brown.n_sentences:
                raise SystemExit(f"en-brown train has {self._brown.n_sentences:,} sentences "
                                 f"< {n:,}")
            c = self._brown[:n]
            return (SuffixView(lengths=(2, 3, 4)).fit_transform(c),
                    TagNgramView(orders=(1, 2)).fit_transform(c),
                    f"en-brown first {n:,} sentences, SuffixView(2-4) / TagNgramView(XPOS 1-2)")
        if name == "zipf-top":
            X = self._zipf_file("X_50000_30000.npz").tocsc()
            Y = self._zipf_file("Y_50000_300.npz").tocsr()
            if n > X.shape[0]:
                raise SystemExit(f"zipf-top has {X.shape[0]:,} rows < {n:,}")
            freq = np.diff(X.indptr)  # nonzeros per column over all 50,000 rows
            cols = np.sort(np.argsort(-freq, kind="stable")[:d1])
            return (X[:, cols].tocsr()[:n], Y[:n],
                    f"zipf X_50000_30000 rows 0..{n - 1:,}, top {d1:,} columns / Y_50000_300")
        if name in ("zipf20k", "zipf50k"):
            size = "20000_5000" if name == "zipf20k" else "50000_30000"
            m = size.split("_")[0]
            return (self._zipf_file(f"X_{size}.npz").tocsr(),
                    self._zipf_file(f"Y_{m}_300.npz").tocsr(),
                    f"zipf-two-view X_{size} / Y_{m}_300")
        raise ValueError(name)


def est_gb(method, p):
    """Estimated peak memory (GB) of the dense methods on problem ``p`` (None: not dense)."""
    n, d1, d2 = p["n"], p["d1"], p["d2"]
    if method == "dense":
        return 8.0 * (d1 * d1 + 2.0 * d1 * d2 + 4.0 * d2 * d2) / 1e9
    if method == "sparsecca:dense":
        m = min(n, d1)
        return 8.0 * (2.0 * m * m + 2.0 * d1 * d2 + 4.0 * d2 * d2) / 1e9
    if method == "sklearn":
        return 8.0 * 5.0 * n * (d1 + d2) / 1e9
    return None


# -- children ------------------------------------------------------------------------------

def child_cca(cfg):
    import warnings

    import numpy as np
    import scipy.sparse as sp
    from _harness import StageRecorder

    X, Y = sp.load_npz(cfg["x"]).tocsr(), sp.load_npz(cfg["y"]).tocsr()
    k, tau, center = cfg["k"], cfg["tau"], cfg["center"]
    method = cfg["method"]
    out = {}
    if method.startswith("sparsecca"):
        from sparsecca.linalg import SparseCCA

        solver = method.split(":")[1]
        SparseCCA(2, tau=0.5, solver=solver, center=center,
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
                Xd, Yd = X.toarray(), Y.toarray()  # sklearn needs dense input: part of its cost
                m = CCA(n_components=k, scale=False).fit(Xd, Yd)
    if method.startswith("sparsecca"):
        out.update(solver=m.solver_, error_estimate=float(m.error_estimate_),
                   rank=int(m.rank_), n_iter=int(m.n_iter_))
        PX, PY = m.transform(X, Y)
    elif method == "dense":
        PX, PY = np.asarray(X @ A), np.asarray(Y @ B)
        out["sqrt_omega"] = np.sqrt(np.maximum(omega, 0)).tolist()
    else:
        PX, PY = m.transform(Xd, Yd)
        out["sklearn_n_iter_max"] = int(max(m.n_iter_))
    st = rec.stages[0]
    out["fit_s"] = st["time_s"]
    out["fit_peak_mb"] = st["rss_peak_mb"] - st["rss_start_mb"]
    out["warnings"] = sorted({f"{w.category.__name__}: {str(w.message)[:100]}"
                              for w in caught})
    out["n_warnings"] = len(caught)
    out["corr"] = np.sort(pearson(np.asarray(PX, float), np.asarray(PY, float)))[::-1].tolist()
    return out


def child_tagger(cfg):
    from _harness import StageRecorder

    from sparsecca.data import read_conllu

    train = read_conllu(WSJ / "train.conllu", tags="xpos")
    test = read_conllu(WSJ / "test.conllu", tags="xpos")
    if cfg["train_sentences"]:
        train = train[:cfg["train_sentences"]]
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
    out = {"n_tokens": len(gold), "n_sentences": len(words), "n_train_tokens": train.n_tokens}
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

def run_cfg(cfg, timeout):
    res = run_child([__file__, "--child", json.dumps(cfg)], timeout=timeout)
    res["load"] = os.getloadavg()[0]
    if "error" in res and res["error"].startswith("timeout"):
        res["status"] = "timeout"
    elif "error" in res:
        res["status"] = f"failed ({res['error']})"
    else:
        res["status"] = "ok"
    return res


def have(module):
    try:
        mod = __import__(module)
        return getattr(mod, "__version__", "installed")
    except ImportError:
        return None


def agreement(res, ref):
    import numpy as np

    if "corr" not in res or ref is None or "corr" not in ref:
        return None
    c, cr = np.array(res["corr"]), np.array(ref["corr"])
    return float(np.max(np.abs(c - cr)))


CCA_COLS = [("method", "method", "s"), ("status", "status", "s"), ("fit_s", "fit (s)", ".2f"),
            ("time_ratio", "time / SparseCCA(auto)", ".3g"),
            ("fit_mb", "fit MB", ".0f"), ("mem_ratio", "fit MB / SparseCCA(auto)", ".3g"),
            ("child_mb", "child MB", ".0f"), ("sum_corr", "sum top-k corr.", ".4f"),
            ("agree", "max |dcorr| vs ref", ".2g"), ("err", "err. est.", ".2g"),
            ("load", "load", ".2f"), ("note", "note", "s")]


class CCAPart:
    def __init__(self, args, problems, ratio_rows, data):
        self.args, self.problems = args, problems
        self.ratio_rows, self.data = ratio_rows, data
        self.methods = ([f"sparsecca:{s}" for s in args.solvers] + ["dense"] + ["sklearn"])
        self.sklearn = have("sklearn")

    def run_one(self, prob, meth, tau, center, stopped, done, last_sklearn=None):
        """Result dict of one (problem, method), or a skip note; ``done``: the results of
        the methods already run on this problem."""
        args = self.args
        skip = None
        gb = est_gb(meth, prob)
        auto = done.get("sparsecca:auto", {})
        if meth.startswith("sparsecca:") and auto.get("solver") == meth.split(":")[1]:
            print(f"    {label(meth):<28} = the 'auto' run", flush=True)
            return {**auto, "note": "the 'auto' run (it picked this solver)"}
        if meth in stopped:
            skip = {"status": "skipped", "note": stopped[meth]}
        elif meth == "sklearn" and not self.sklearn:
            skip = {"status": "skipped (not installed)", "note": "scikit-learn not installed"}
        elif gb is not None and gb > args.max_dense_gb:
            skip = {"status": "skipped", "note": f"needs ~{gb:.0f} GB > --max-dense-gb "
                                                 f"{args.max_dense_gb:g}"}
        elif meth == "sklearn" and last_sklearn is not None:
            n0, t0 = last_sklearn
            pred = t0 * prob["n"] / n0
            if pred > args.timeout:
                skip = {"status": "skipped", "note": f"extrapolated >= {pred:.0f} s > "
                                                     f"timeout (linear in n from {t0:.0f} s "
                                                     f"at n = {n0:,})"}
        if skip is not None:
            print(f"    {label(meth):<28} {skip['status']}: {skip['note']}", flush=True)
            return skip
        cfg = dict(task="cca", method=meth, x=prob["x"], y=prob["y"], k=args.k, tau=tau,
                   center=center)
        r = run_cfg(cfg, timeout=args.timeout)
        print(f"    {label(meth):<28} " + (
            f"{r['fit_s']:8.2f} s  fit +{r['fit_peak_mb']:6.0f} MB  child "
            f"{r['child_maxrss_mb']:6.0f} MB" + (f"  [{r['solver']}]" if "solver" in r else "")
            if r["status"] == "ok" else r["status"]) + f"  load {r['load']:.2f}", flush=True)
        return r

    def table(self, prob, results, title):
        base = results.get("sparsecca:auto")
        ref_key = "dense" if results.get("dense", {}).get("status") == "ok" else (
            "sparsecca:iterative" if results.get("sparsecca:iterative", {}).get("status")
            == "ok" else None)
        ref = results.get(ref_key) if ref_key else None
        rows = []
        for meth, r in results.items():
            row = {"method": label(meth) + (f" -> {r['solver']}" if meth == "sparsecca:auto"
                                            and "solver" in r else ""),
                   "status": r["status"], "note": r.get("note"), "load": r.get("load")}
            if r["status"] == "ok":
                row.update(fit_s=r["fit_s"], fit_mb=r["fit_peak_mb"], child_mb=r["child_maxrss_mb"],
                           sum_corr=sum(r["corr"]), agree=agreement(r, ref),
                           err=r.get("error_estimate"))
                if base and base.get("status") == "ok":
                    row["time_ratio"] = r["fit_s"] / base["fit_s"]
                    row["mem_ratio"] = max(r["fit_peak_mb"], 1.0) / max(base["fit_peak_mb"], 1.0)
                notes = [r["note"]] if r.get("note") else []
                if meth == "sklearn":
                    notes.append(f"max NIPALS iterations {r['sklearn_n_iter_max']}")
                if r.get("n_warnings"):
                    notes.append(f"{r['n_warnings']} warnings, e.g. {r['warnings'][0]}")
                row["note"] = "; ".join(notes) or None
            rows.append(row)
        self.data["cca"].append({"problem": title, "shape": {k: prob[k] for k in (
            "n", "d1", "d2", "nnz_x")}, "reference": ref_key, "results": results})
        return rows, ref_key

    def ratios(self, problem_label, results):
        base = results.get("sparsecca:auto")
        ok_base = base is not None and base.get("status") == "ok"
        for meth in ("sklearn", "dense"):
            r = results.get(meth)
            if r is None:
                continue
            row = {"part": "CCA", "problem": problem_label, "ours": "SparseCCA (auto)",
                   "peer": label(meth), "status": r["status"] if r["status"] != "skipped"
                   else f"skipped: {r.get('note')}"}
            if ok_base and r["status"] == "ok":
                row.update(time_ratio=r["fit_s"] / base["fit_s"],
                           mem_ratio=max(r["fit_peak_mb"], 1.0) / max(base["fit_peak_mb"], 1.0),
                           agree=f"max |dcorr| {agreement(r, base):.2g}")
            self.ratio_rows.append(row)

    def ladder(self, name, report):
        args = self.args
        tau = args.tau
        zd1 = args.zipf_d1 if name == "zipf-top" else None
        report.append(f"## CCA ladder `{name}`: k = {args.k}, tau = {tau:g}, centred\n")
        print(f"\n== CCA ladder {name}: k = {args.k}, tau = {tau:g}, centred; scikit-learn "
              f"{self.sklearn or 'not installed: skipped'}", flush=True)
        stopped, last_sklearn, headline = {}, None, None
        for n in args.sizes:
            prob = self.problems.get(name, n, zd1)
            print(f"  n = {n:,}: {prob['n']:,} x {prob['d1']:,} (nnz {prob['nnz_x']:,}), "
                  f"d2 = {prob['d2']:,}", flush=True)
            results = {}
            for meth in self.methods:
                r = self.run_one(prob, meth, tau, True, stopped, results, last_sklearn)
                results[meth] = r
                if r["status"] == "ok":
                    if meth == "sklearn":
                        last_sklearn = (prob["n"], r["fit_s"])
                elif meth not in stopped and r["status"] != "skipped (not installed)":
                    stopped[meth] = (f"{r['status'] if r['status'] != 'skipped' else r['note']}"
                                     f" at n = {n:,}")
            rows, ref_key = self.table(prob, results, f"{name} n={n}")
            report.append(f"### {prob['desc']}: {prob['n']:,} x {prob['d1']:,}, nnz(X) = "
                          f"{prob['nnz_x']:,}, d2 = {prob['d2']:,} (reference: "
                          f"{label(ref_key) if ref_key else 'none'})\n")
            report.append(markdown_table(rows, CCA_COLS) + "\n")
            self.ratios(f"{name} n = {n:,}", results)
            sk, ours = results.get("sklearn", {}), results.get("sparsecca:auto", {})
            if sk.get("status") == "ok" and ours.get("status") == "ok":
                headline = dict(n=n, sklearn_s=sk["fit_s"], ours_s=ours["fit_s"],
                                ratio=sk["fit_s"] / ours["fit_s"], solver=ours.get("solver"),
                                sklearn_agree=agreement(sk, results.get("dense")),
                                ours_agree=agreement(ours, results.get("dense")),
                                sk_vs_ours=agreement(sk, ours))
        self.data["headlines"][name] = headline
        report.append(headline_text(args, name, headline) + "\n")

    def fixed(self, name, report):
        args = self.args
        prob = self.problems.get(name)
        for tau, center, methods, what in (
                (args.tau, True, self.methods, "agreement setting"),
                (0.5, False, [m for m in self.methods if m != "sklearn"],
                 "the paper's operating point (scikit-learn cannot regularise: not run)")):
            print(f"\n== CCA fixed {name}: {prob['n']:,} x {prob['d1']:,}, tau = {tau:g}, "
                  f"{'centred' if center else 'uncentred'}", flush=True)
            results = {}
            for m in methods:
                results[m] = self.run_one(prob, m, tau, center, {}, results)
            rows, ref_key = self.table(prob, results, f"{name} tau={tau}")
            report.append(f"## CCA fixed problem `{name}` ({prob['desc']}): {prob['n']:,} x "
                          f"{prob['d1']:,}, nnz(X) = {prob['nnz_x']:,}, d2 = {prob['d2']:,}; "
                          f"k = {args.k}, tau = {tau:g}, {'centred' if center else 'uncentred'}"
                          f": {what} (reference: {label(ref_key) if ref_key else 'none'})\n")
            report.append(markdown_table(rows, CCA_COLS) + "\n")
            self.ratios(f"{name}, tau = {tau:g}{', centred' if center else ''}", results)


def tagger_part(args, report, ratio_rows, data):
    nltk = have("nltk")
    print(f"\n== taggers: en-wsj XPOS; nltk {nltk or 'not installed: skipped'}", flush=True)
    cols = [("method", "method", "s"), ("status", "status", "s"),
            ("n_tokens", "test tokens", ",d"), ("fit_s", "train (s)", ".2f"),
            ("tag_s", "tag (s)", ".2f"), ("tok_s", "tokens/s", ",.0f"),
            ("tag_ratio", "tag time / TrigramHMM", ".3g"),
            ("fit_ratio", "train time / TrigramHMM", ".3g"),
            ("fit_mb", "fit+tag MB", ".0f"), ("mem_ratio", "MB / TrigramHMM", ".3g"),
            ("child_mb", "child MB", ".0f"), ("accuracy", "accuracy (%)", ".2f"),
            ("load", "load", ".2f"), ("note", "note", "s")]
    test_n, hmm_n = args.test_sentences, args.hmm_sentences
    subset_run = bool(hmm_n) and (not test_n or hmm_n < test_n)
    what = "all 2,012 test sentences" if not test_n else f"first {test_n:,} test sentences"
    tables = [(test_n, ["TrigramHMM", "NLTK TnT"] + ([] if subset_run else ["NLTK HMM"]),
               what)]
    if subset_run:
        tables.append((hmm_n, ["TrigramHMM", "NLTK TnT", "NLTK HMM"],
                       f"first {hmm_n:,} test sentences (NLTK's HMM decoder tags only these: "
                       f"--hmm-sentences)"))
    train_what = ("all 7,936 training sentences" if not args.train_sentences
                  else f"first {args.train_sentences:,} training sentences")
    for subset, methods, title in tables:
        res, rows = {}, []
        for meth in methods:
            if meth != "TrigramHMM" and nltk is None:
                r = {"status": "skipped (not installed)", "note": "nltk not installed"}
            else:
                r = run_cfg(dict(task="tagger", method=meth, subset=subset,
                                 train_sentences=args.train_sentences), timeout=args.timeout)
                print(f"  {meth:<11} ({title}): " + (
                    f"train {r['fit_s']:.2f} s, tag {r['tag_s']:.2f} s "
                    f"({r['n_tokens'] / r['tag_s']:,.0f} tok/s), acc "
                    f"{100 * r['accuracy']:.2f}%, +{r['fit_peak_mb']:.0f} MB"
                    if r["status"] == "ok" else r["status"]), flush=True)
            res[meth] = r
            row = {"method": meth, "status": r["status"], "note": r.get("note"),
                   "load": r.get("load")}
            b = res.get("TrigramHMM")
            if r["status"] == "ok":
                row.update(n_tokens=r["n_tokens"], fit_s=r["fit_s"], tag_s=r["tag_s"],
                           tok_s=r["n_tokens"] / r["tag_s"], fit_mb=r["fit_peak_mb"],
                           child_mb=r["child_maxrss_mb"], accuracy=100 * r["accuracy"])
                if b and b.get("status") == "ok":
                    row.update(tag_ratio=r["tag_s"] / b["tag_s"],
                               fit_ratio=r["fit_s"] / b["fit_s"],
                               mem_ratio=max(r["fit_peak_mb"], 1.0) /
                               max(b["fit_peak_mb"], 1.0))
            rows.append(row)
            if meth != "TrigramHMM":
                rr = {"part": "tagger", "problem": f"en-wsj, {title}", "ours": "TrigramHMM",
                      "peer": meth, "status": r["status"]}
                if r["status"] == "ok" and b and b.get("status") == "ok":
                    rr.update(time_ratio=(r["fit_s"] + r["tag_s"]) / (b["fit_s"] + b["tag_s"]),
                              mem_ratio=row["mem_ratio"],
                              agree=f"accuracy {100 * b['accuracy']:.2f} vs "
                                    f"{100 * r['accuracy']:.2f} "
                                    f"({100 * (b['accuracy'] - r['accuracy']):+.2f} pts)")
                ratio_rows.append(rr)
        data["taggers"].append({"test": title, "train": train_what, "results": res})
        report.append(f"## Taggers, en-wsj XPOS: trained on {train_what}, tagging {title}\n")
        report.append(markdown_table(rows, cols) + "\n")


def headline_text(args, name, h):
    """The issue's CCA target, stated for ladder ``name``."""
    if h is None:
        return (f"**Headline ({name})**: scikit-learn's CCA finished at no size within "
                f"{args.timeout:.0f} s (or was skipped): no speed-up measured.")

    def g(x):
        return "-" if x is None else f"{x:.2g}"

    return (f"**Headline ({name})**: largest size where scikit-learn's CCA finished "
            f"within {args.timeout:.0f} s: n = {h['n']:,}; scikit-learn {h['sklearn_s']:.1f} "
            f"s vs SparseCCA (auto -> {h['solver']}) {h['ours_s']:.2f} s at n_components "
            f"= {args.k}: SparseCCA is **{h['ratio']:.0f}x faster** (target >= 50x: "
            f"{'met' if h['ratio'] >= 50 else 'NOT met'}).  max |dcorr| vs the dense "
            f"reference: scikit-learn {g(h['sklearn_agree'])}, SparseCCA "
            f"{g(h['ours_agree'])}; scikit-learn vs SparseCCA {g(h['sk_vs_ours'])}.")


def failed_runs(data):
    """'<problem>: <method>' of every run whose child died or raised (not a timeout, which
    is a result: the implementation stops climbing the ladder there)."""
    return [f"{entry[key]}: {label(meth)}"
            for part, key in (("cca", "problem"), ("taggers", "test"))
            for entry in data[part] for meth, r in entry["results"].items()
            if r["status"].startswith("failed")]


RATIO_COLS = [("part", "part", "s"), ("problem", "problem", "s"), ("ours", "ours", "s"),
              ("peer", "peer", "s"), ("status", "peer status", "s"),
              ("time_ratio", "peer time / ours", ".3g"),
              ("mem_ratio", "peer peak MB / ours", ".3g"), ("agree", "agreement", "s")]


def _data_files(args, both):
    """Every data file the chosen parts will read, checked before the first run."""
    files = []
    if both or args.cca:
        if "brown" in args.ladders:
            files.append(BROWN / "train.conllu.gz")
        if "zipf-top" in args.ladders or "zipf50k" in args.fixed:
            files += [ZIPF / "X_50000_30000.npz", ZIPF / "Y_50000_300.npz"]
        if "zipf20k" in args.fixed:
            files += [ZIPF / "X_20000_5000.npz", ZIPF / "Y_20000_300.npz"]
    if both or args.taggers:
        files += [WSJ / "train.conllu", WSJ / "test.conllu"]
    return files


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--cca", action="store_true", help="only the CCA comparison")
    ap.add_argument("--taggers", action="store_true", help="only the tagger comparison")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: small sizes, k = 10, no zipf problems, small tagger sets")
    ap.add_argument("--sizes", nargs="+", default=None,
                    help="ladder sizes (sentences / rows), e.g. 2000,5000,10000 "
                         "(default 1000,2000,5000,10000,20000,50000)")
    ap.add_argument("--ladders", nargs="+", default=None, choices=["brown", "zipf-top"],
                    help="default: both")
    ap.add_argument("--fixed", nargs="*", default=None, choices=["zipf20k", "zipf50k"],
                    help="fixed zipf-two-view problems (default: both; none with --quick; "
                         "--fixed with no name: none)")
    ap.add_argument("--solvers", nargs="+", default=None,
                    choices=["auto", "dense", "randomized", "iterative"],
                    help="SparseCCA solvers, one row each (default auto randomized iterative; "
                         "'auto' is the one the ratios use)")
    ap.add_argument("--k", type=int, default=None, help="n_components for all (default 50)")
    ap.add_argument("--tau", type=float, default=1e-3,
                    help="tau of the agreement setting (sklearn is unregularised)")
    ap.add_argument("--zipf-d1", type=int, default=2000, help="columns of the zipf-top ladder")
    ap.add_argument("--max-dense-gb", type=float, default=10.0,
                    help="skip dense runs (reference, sklearn) estimated to need more")
    ap.add_argument("--train-sentences", type=int, default=None,
                    help="taggers: first N en-wsj training sentences (default all)")
    ap.add_argument("--test-sentences", type=int, default=None,
                    help="taggers: first N en-wsj test sentences (default all)")
    ap.add_argument("--hmm-sentences", type=int, default=None,
                    help="NLTK HMM tags only the first N test sentences (default: the same "
                         "test set as the others)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="per-run limit in seconds (default 600; 60 with --quick)")
    ap.add_argument("--out", type=Path,
                    help="also write the report: JSON when it ends in .json, else Markdown")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        cfg = json.loads(args.child)
        out = child_cca(cfg) if cfg["task"] == "cca" else child_tagger(cfg)
        out["process_maxrss_mb"] = peak_rss_bytes() / MB  # this child's own VmHWM
        with open(args.result, "w") as fh:
            json.dump(out, fh)
        return 0

    q = args.quick
    defaults = dict(sizes=["200,500"] if q else ["1000,2000,5000,10000,20000,50000"],
                    ladders=["brown"] if q else ["brown", "zipf-top"],
                    fixed=[] if q else ["zipf20k", "zipf50k"],
                    solvers=["auto"] if q else ["auto", "randomized", "iterative"],
                    k=10 if q else 50, train_sentences=1000 if q else 0,
                    test_sentences=50 if q else 0, hmm_sentences=0,
                    timeout=60.0 if q else 600.0)
    for key, val in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, val)
    args.sizes = parse_sizes(args.sizes)
    if "auto" not in args.solvers:
        args.solvers = ["auto"] + args.solvers
    both = not (args.cca or args.taggers)
    require(*_data_files(args, both))  # exit 3 with one line (see _data_check.py)
    info = machine_info()
    t0 = time.perf_counter()
    command = "python benchmarks/compare_peers.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    print(f"machine: {info}", flush=True)
    report, ratio_rows = [], []
    data = {"command": command, "machine": info, "args": {k: (str(v) if isinstance(v, Path)
                                                               else v)
                                                           for k, v in vars(args).items()},
            "cca": [], "taggers": [], "headlines": {}}
    if both or args.cca:
        problems = Problems()
        try:
            part = CCAPart(args, problems, ratio_rows, data)
            for name in args.ladders:
                part.ladder(name, report)
            for name in args.fixed:
                part.fixed(name, report)
        finally:
            problems.cleanup()
    if both or args.taggers:
        tagger_part(args, report, ratio_rows, data)
    data["ratios"] = ratio_rows
    data["failed"] = failed_runs(data)
    total = time.perf_counter() - t0
    head = [
        "# sparsecca vs peers\n",
        f"Command: `{command}`  ",
        f"Machine: {info['cpus']} CPUs, {info['mem_gib']} GiB, Python {info['python']}, NumPy "
        f"{info['numpy']}, SciPy {info['scipy']}, scikit-learn {have('sklearn') or '-'}, "
        f"NLTK {have('nltk') or '-'}; load average at start {info['loadavg']}, at the end "
        f"{[round(x, 2) for x in os.getloadavg()]}; total {total:.0f} s.  Each run in its own "
        f"process; fit MB = peak RSS during the fit minus the RSS just before it; child MB = "
        f"the child's whole-run peak RSS; timeout {args.timeout:.0f} s per run.\n",
        "## Ratio table (ours vs each peer)\n",
        "Time ratio > 1: the peer is slower (CCA: fit time; taggers: train + tag time).  "
        "Memory ratio > 1: the peer's peak is larger.  Agreement: CCA, largest difference of "
        "the sorted top-k empirical canonical correlations from SparseCCA('auto')'s; "
        "taggers, test accuracy of ours vs the peer.\n",
        markdown_table(ratio_rows, RATIO_COLS) + "\n",
    ]
    for name, h in data["headlines"].items():
        head.append(headline_text(args, name, h) + "\n")
    text = "\n".join(head + report)
    print("\n" + text)
    if args.out:
        data["markdown"] = text
        write_report(args.out, text, data)
        print(f"wrote {args.out}")
    if data["failed"]:
        print(f"{len(data['failed'])} run(s) FAILED: {'; '.join(data['failed'])}",
              file=sys.stderr)
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
