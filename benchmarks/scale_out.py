"""Scale-out on Dask (``sparsecca.distributed``): the pipeline's stages on a LocalCluster with
a per-worker memory limit, at 1/4, 1/2 and the full size of a replicated en-brown corpus,
each stage's wall time and the peak RSS of every worker, and a fitted time exponent.

Data: en-brown train (``--tags``, UPOS by default) replicated, sentence after sentence, to
``--sentences`` sentences, written as ``--files`` gzip CoNLL-U files in a temporary
directory (one partition per file); each size reads the first files' worth of its
sentences (the sizes are multiples of a file, so the smaller runs read fewer files).

Stages (``STAGES``, in order; each a function of the run's context ``ctx``, a dict holding
at least ``client``, ``paths`` and ``args``, that computes on the cluster, stores what later
stages need in ``ctx`` and returns a note for the table):

1. ``read``        ``read_conllu_partitions`` of the files, persisted on the workers
2. ``hmm fit``     ``TrigramHMM().fit(parts)``: partition counts, tree-summed, normalised on
                   the driver
3. ``nbest``       ``model.nbest(parts, k)`` per partition, persisted
4. ``views``       ``cca_arrays``: the suffix and tag n-gram views fitted from tree-summed
                   counts, every partition transformed where it lies (X, Y, Yhat persisted)
5. ``statistics``  ``GramStats.from_dask(X)`` and ``CrossCovariance.from_dask(X, Y)``: the
                   tree sums of the covariances
6. ``reranker fit`` ``SoftenedReranker`` (fixed tau, lam, k, w: no dev tuning) fitted on
                   the partitioned n-best lists: views, residuals and the engine's products
                   as map-reduces over the partitions

A further stage is one more function appended to ``STAGES``.

The workers import the package and load the compiled decoder before the first stage (not
timed).  Memory: the worker processes' PIDs come from ``client.run(os.getpid)``; a driver thread
samples their RSS (psutil) every 20 ms, and each stage's peak per worker is that maximum,
completed by the kernel's high-water mark ``VmHWM`` (reset at each stage start through
``/proc/<pid>/clear_refs`` where the kernel allows it).

Usage::

    python benchmarks/scale_out.py --sentences 20000 --files 8       # a quick look
    python benchmarks/scale_out.py --out scale_out.md    # 1M sentences: long
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "memory"))

from _data_check import require  # noqa: E402  (benchmarks/ is the script's dir)
from _harness import loglog_fit, machine_info, markdown_table, write_report  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BROWN_TRAIN = SHARED_DATA / "en-brown" / "train.conllu.gz"
MB = 2**20


# -- the stages ----------------------------------------------------------------------------

def stage_read(ctx) -> str:
    from distributed import wait

    from sparsecca.distributed import read_conllu_partitions

    parts = read_conllu_partitions(ctx["paths"], tags=ctx["args"].tags).persist()
    wait(parts.partitions)
    ctx["parts"] = parts
    sizes = ctx["client"].compute([p for p in parts.map(lambda c: c.n_tokens).partitions],
                                  sync=True)
    ctx["n_tokens"] = int(sum(sizes))
    return f"{parts.n_partitions} partitions, {ctx['n_tokens']:,} tokens"


def stage_hmm_fit(ctx) -> str:
    from sparsecca.tagging import TrigramHMM

    ctx["model"] = TrigramHMM().fit(ctx["parts"])
    m = ctx["model"]
    return f"{len(m.tags_)} tags, {len(m.words_):,} words, prefix weight {m.prefix_weight_}"


def stage_nbest(ctx) -> str:
    from distributed import wait

    nbest = ctx["model"].nbest(ctx["parts"], k=ctx["args"].k).persist()
    wait(nbest.partitions)
    ctx["nbest"] = nbest
    return f"k = {ctx['args'].k}"


def stage_views(ctx) -> str:
    from distributed import wait

    from sparsecca.distributed import cca_arrays

    arrays = cca_arrays(ctx["nbest"])
    X, Y, Yhat = (a.persist() for a in (arrays.X, arrays.Y, arrays.Yhat))
    wait([X, Y, Yhat])
    ctx["views"] = X, Y
    return (f"X {X.shape[0]:,} x {X.shape[1]:,}, Yhat {Yhat.shape[0]:,} x "
            f"{Yhat.shape[1]:,}")


def stage_statistics(ctx) -> str:
    from sparsecca.linalg import CrossCovariance, GramStats

    X, Y = ctx["views"]
    sx = GramStats.from_dask(X)
    cross = CrossCovariance.from_dask(X, Y, center=True)
    ctx.pop("views")  # the reranker fit builds its own, from the n-best lists
    return f"X^T X {sx.gram.nnz:,} nonzeros, X^T Y {cross.shape[0]:,} x {cross.shape[1]:,}"


def stage_reranker_fit(ctx) -> str:
    from sparsecca.rerank import SoftenedReranker

    k = ctx["args"].components
    model = SoftenedReranker(n_components=k, tau=0.99, lam=0.75, k_grid=[k], w=1.0,
                             random_state=0).fit(ctx["nbest"])
    return (f"softened, k = {k}, solver {model.solver_}, top eigenvalue "
            f"{model.eigenvalues_[0]:.4f}")


#: (name, function) in order; a stage reads what earlier ones stored in ``ctx``
STAGES = [("read", stage_read), ("hmm fit", stage_hmm_fit), ("nbest", stage_nbest),
          ("views", stage_views), ("statistics", stage_statistics),
          ("reranker fit", stage_reranker_fit)]


# -- data ----------------------------------------------------------------------------------

def write_replicated(folder: Path, n_sentences: int, n_files: int) -> list[Path]:
    """en-brown train's sentences repeated to ``n_sentences``, in ``n_files`` gzip files of
    equal sentence counts."""
    from sparsecca.data import read_text

    text = read_text(BROWN_TRAIN)
    blocks = [b + "\n\n" for b in text.strip("\n").split("\n\n")]
    per_file = n_sentences // n_files
    paths, at = [], 0
    for i in range(n_files):
        path = folder / f"brown-{i:03d}.conllu.gz"
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as fh:
            left = per_file
            while left:
                take = min(left, len(blocks) - at)
                fh.write("".join(blocks[at:at + take]))
                at = (at + take) % len(blocks)
                left -= take
        paths.append(path)
    return paths


# -- memory of the workers -----------------------------------------------------------------

class WorkerMemory(threading.Thread):
    """Samples the RSS of the worker processes; ``stage()`` starts a stage's peaks."""

    def __init__(self, pids, interval=0.02):
        import psutil

        super().__init__(daemon=True)
        self.procs = {pid: psutil.Process(pid) for pid in pids}
        self.interval = interval
        self.peaks = dict.fromkeys(pids, 0)
        self._stop_event = threading.Event()

    def stage(self):
        for pid in self.procs:
            try:  # reset the kernel's high-water mark (VmHWM) where allowed
                Path(f"/proc/{pid}/clear_refs").write_text("5")
            except OSError:
                pass
        self.peaks = {pid: p.memory_info().rss for pid, p in self.procs.items()}

    def stage_peaks(self) -> list[float]:
        out = []
        for pid in self.procs:
            hwm = 0
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        hwm = int(line.split()[1]) * 1024
            except OSError:
                pass
            out.append(max(self.peaks[pid], hwm) / MB)
        return out

    def run(self):
        while not self._stop_event.wait(self.interval):
            for pid, p in self.procs.items():
                try:
                    self.peaks[pid] = max(self.peaks[pid], p.memory_info().rss)
                except Exception:  # noqa: BLE001 - a worker that died shows in the result
                    pass

    def stop(self):
        self._stop_event.set()


# -- one size ------------------------------------------------------------------------------

def warm_up() -> None:
    """On a worker: import the package and load the decoder's compiled kernels (what a
    long-running cluster has done already), so that the stages time their own work."""
    from sparsecca.data import synthetic_corpus
    from sparsecca.rerank import SoftenedReranker
    from sparsecca.tagging import TrigramHMM

    corpus = synthetic_corpus(30, random_state=0)
    nbest = TrigramHMM().fit(corpus).nbest(corpus, k=2)
    SoftenedReranker(n_components=2, tau=0.9, lam=0.5, k_grid=[2], w=1.0).fit(nbest)


def run_size(args, paths, n_sentences) -> list[dict]:
    import logging

    from distributed import Client, LocalCluster

    rows = []
    with LocalCluster(n_workers=args.workers, threads_per_worker=args.threads,
                      memory_limit=args.memory_limit, processes=True,
                      dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        pids = sorted(client.run(os.getpid).values())
        client.run(warm_up)
        memory = WorkerMemory(pids)
        memory.start()
        ctx = {"client": client, "paths": paths, "args": args}
        try:
            for name, fn in STAGES:
                memory.stage()
                t = time.perf_counter()
                note = fn(ctx)
                seconds = time.perf_counter() - t
                peaks = memory.stage_peaks()
                rows.append({"sentences": n_sentences, "stage": name, "seconds": seconds,
                             "peak_mb": max(peaks), "peaks": [round(p) for p in peaks],
                             "note": note})
                print(f"  {n_sentences:>9,} {name:<10} {seconds:8.2f} s  worker peak RSS "
                      f"{', '.join(f'{p:,.0f}' for p in peaks)} MB  {note}", flush=True)
        finally:
            memory.stop()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=1_000_000,
                    help="the full size (default 1,000,000 sentences)")
    ap.add_argument("--files", type=int, default=16,
                    help="gzip files (= partitions) of the full size; a multiple of 4")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="threads per worker")
    ap.add_argument("--memory-limit", default="3GB", help="per worker (default 3GB)")
    ap.add_argument("--tags", choices=("upos", "xpos"), default="upos",
                    help="tag column (default upos, as en-brown's row of Table 2)")
    ap.add_argument("--k", type=int, default=5, help="candidates per sentence")
    ap.add_argument("--components", type=int, default=50,
                    help="n_components of the CCA reranker")
    ap.add_argument("--fractions", default="0.25,0.5,1",
                    help="sizes as fractions of --sentences (multiples of 1/--files)")
    ap.add_argument("--tmpdir", default=None, help="where the gzip files go")
    ap.add_argument("--out", type=Path, default=None, help="report: .md or .json")
    args = ap.parse_args(argv)
    if args.files < 1 or args.sentences < args.files:
        ap.error("--files must be >= 1 and --sentences >= --files")
    fractions = [float(f) for f in args.fractions.split(",")]
    require(BROWN_TRAIN)
    info = machine_info()
    print(f"machine: {info['cpus']} cpus, {info['mem_gib']} GiB, load {info['loadavg']}; "
          f"{args.workers} workers x {args.threads} thread(s), memory limit "
          f"{args.memory_limit} each", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as tmp:
        t = time.perf_counter()
        paths = write_replicated(Path(tmp), args.sentences, args.files)
        print(f"wrote {args.files} files of {args.sentences // args.files:,} sentences in "
              f"{time.perf_counter() - t:.1f} s", flush=True)
        for f in fractions:
            n_files = max(1, round(f * args.files))
            rows += run_size(args, paths[:n_files], n_files * (args.sentences // args.files))
    sizes = sorted({r["sentences"] for r in rows})
    summary = []
    for name, _ in STAGES:
        times = [next(r["seconds"] for r in rows if r["sentences"] == n and r["stage"] == name)
                 for n in sizes]
        slope, _ = loglog_fit(sizes, times)
        summary.append({"stage": name, "exponent": slope,
                        **{f"t{i}": t for i, t in enumerate(times)}})
    table = markdown_table(rows, [("sentences", "sentences", ",d"), ("stage", "stage", "s"),
                                  ("seconds", "time (s)", ".2f"),
                                  ("peak_mb", "max worker peak RSS (MB)", ",.0f"),
                                  ("note", "note", "s")])
    fit = markdown_table(summary, [("stage", "stage", "s")]
                         + [(f"t{i}", f"{n:,} (s)", ".2f") for i, n in enumerate(sizes)]
                         + [("exponent", "time ~ n^b: b", ".2f")])
    text = f"{table}\n\n{fit}\n"
    print("\n" + text)
    if args.out:
        write_report(args.out, text, {"machine": info, "args": vars(args), "rows": rows,
                                      "fit": summary})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
