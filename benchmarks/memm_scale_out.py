"""The MEMM trained on a partitioned corpus (``MEMMTagger().fit(parts)`` on a LocalCluster)
against the same fit in memory: wall time, peak memory, and how far the two models are apart.

Data: the first ``--sentences`` sentences of en-brown train (``--tags``, UPOS by default),
written as ``--files`` gzip CoNLL-U files in a temporary directory (one partition per file).

* in memory: a child process reads the files and concatenates them, then fits; its RSS is
  sampled from here during the fit (psutil, every 20 ms, completed by its ``VmHWM``);
* distributed: a LocalCluster of ``--workers`` single-threaded workers reads the files as
  partitions and keeps them (``persist``), then fits; the workers' RSS is sampled the same
  way (``WorkerMemory`` of ``scale_out.py``), and the table shows the largest worker.

Each side reports the RSS when the fit starts (the corpus loaded) and its peak during the
fit.  ``--repeat`` runs the pair several times, alternating which side goes first; the ratios
are those of each pair.  The models' agreement: the final losses, the largest weight
difference, the iterations, and the tags of en-brown test.

Usage::

    python benchmarks/memm_scale_out.py                       # 20,000 sentences, 8 files
    python benchmarks/memm_scale_out.py --sentences 2000 --files 4 --maxiter 10   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "memory"))

from _data_check import require  # noqa: E402  (benchmarks/ is the script's dir)
from _harness import machine_info, markdown_table  # noqa: E402
from scale_out import BROWN_TRAIN, MB, WorkerMemory, write_replicated  # noqa: E402

BROWN_TEST = BROWN_TRAIN.with_name("test.conllu.gz")


def child(args) -> int:
    """The in-memory side: read, say ``ready``, wait for a line, fit, report the time, wait
    for a line (the parent reads the peak RSS meanwhile), save the model."""
    from sparsecca.data import concat_corpora, read_conllu
    from sparsecca.tagging import MEMMTagger

    paths = json.loads(args.child)
    corpus = concat_corpora([read_conllu(p, tags=args.tags) for p in paths])
    print("ready", flush=True)
    sys.stdin.readline()
    t = time.perf_counter()
    model = MEMMTagger(maxiter=args.maxiter).fit(corpus)
    print(json.dumps({"seconds": time.perf_counter() - t}), flush=True)
    sys.stdin.readline()
    model.save(args.model, overwrite=True)
    return 0


def fit_in_memory(args, paths, model_path) -> dict:
    proc = subprocess.Popen([sys.executable, __file__, "--child", json.dumps(list(map(str, paths))),
                             "--model", str(model_path), "--tags", args.tags,
                             "--maxiter", str(args.maxiter)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", "the in-memory child failed"
        memory = WorkerMemory([proc.pid])
        memory.start()
        memory.stage()
        before = next(iter(memory.peaks.values())) / MB
        proc.stdin.write("\n")
        proc.stdin.flush()
        result = json.loads(proc.stdout.readline())
        peak = memory.stage_peaks()[0]  # the child is alive: it waits for a line
        memory.stop()
        proc.stdin.write("\n")
        proc.stdin.flush()
    finally:
        proc.stdin.close()
        if proc.wait() != 0:
            raise RuntimeError(f"the in-memory child exited {proc.returncode}")
    return {"side": "in memory", "seconds": result["seconds"], "before_mb": before,
            "peak_mb": peak}


def fit_distributed(args, client, paths) -> tuple[dict, object]:
    from distributed import wait

    from sparsecca.distributed import read_conllu_partitions
    from sparsecca.tagging import MEMMTagger

    parts = read_conllu_partitions(paths, tags=args.tags).persist()
    wait(parts.partitions)
    pids = sorted(client.run(os.getpid).values())
    memory = WorkerMemory(pids)
    memory.start()
    memory.stage()
    before = max(memory.peaks.values()) / MB
    t = time.perf_counter()
    model = MEMMTagger(maxiter=args.maxiter).fit(parts)
    seconds = time.perf_counter() - t
    peaks = memory.stage_peaks()
    memory.stop()
    del parts
    return ({"side": "distributed", "seconds": seconds, "before_mb": before,
             "peak_mb": max(peaks), "note": f"worker peaks {[round(p) for p in peaks]} MB"},
            model)


def warm_up() -> None:
    """On a worker: import the package (what a long-running cluster has done already)."""
    from sparsecca.data import synthetic_corpus
    from sparsecca.tagging import MEMMTagger

    MEMMTagger(maxiter=2).fit(synthetic_corpus(20, random_state=0))


def agreement(a, b, test) -> str:
    import numpy as np

    diff = max(float(np.abs(getattr(a, n) - getattr(b, n)).max())
               for n in ("emit_weights_", "bigram_weights_", "tri_weights_"))
    tags_a, tags_b = a.tag(test).tag_ids, b.tag(test).tag_ids
    return (f"losses {a.loss_:.10g} and {b.loss_:.10g} (iterations {a.n_iter_}, {b.n_iter_}); "
            f"largest weight difference {diff:.2e}; test tags differing "
            f"{int((tags_a != tags_b).sum())} of {tags_a.size}; accuracy "
            f"{a.score(test):.4%} and {b.score(test):.4%}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=20_000)
    ap.add_argument("--files", type=int, default=8, help="gzip files (= partitions)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="3GB", help="per worker (default 3GB)")
    ap.add_argument("--tags", choices=("upos", "xpos"), default="upos")
    ap.add_argument("--maxiter", type=int, default=30, help="L-BFGS-B iterations")
    ap.add_argument("--repeat", type=int, default=1, help="pairs of fits, alternating order")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--model", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        return child(args)
    if args.files < 1 or args.sentences < args.files:
        ap.error("--files must be >= 1 and --sentences >= --files")
    require(BROWN_TRAIN, BROWN_TEST)
    import logging

    from distributed import Client, LocalCluster

    from sparsecca.data import read_conllu
    from sparsecca.tagging import MEMMTagger

    info = machine_info()
    print(f"machine: {info['cpus']} cpus, {info['mem_gib']} GiB, load {info['loadavg']}; "
          f"{args.workers} workers x 1 thread", flush=True)
    rows, ratios = [], []
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=args.workers, threads_per_worker=1,
                         memory_limit=args.memory_limit, processes=True,
                         dashboard_address=":0", silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        paths = write_replicated(Path(tmp), args.sentences, args.files)
        client.run(warm_up)
        model_path = Path(tmp) / "in_memory.npz"
        for r in range(args.repeat):
            pair = {}
            for side in (("memory", "dask") if r % 2 == 0 else ("dask", "memory")):
                if side == "memory":
                    pair[side] = fit_in_memory(args, paths, model_path)
                else:
                    pair[side], model = fit_distributed(args, client, paths)
                print(f"  {pair[side]['side']:<12} {pair[side]['seconds']:8.2f} s  RSS at the "
                      f"start {pair[side]['before_mb']:,.0f} MB, peak "
                      f"{pair[side]['peak_mb']:,.0f} MB", flush=True)
            rows += [pair["memory"], pair["dask"]]
            ratios.append({"pair": r + 1,
                           "time": pair["dask"]["seconds"] / pair["memory"]["seconds"],
                           "peak": pair["dask"]["peak_mb"] / pair["memory"]["peak_mb"],
                           "growth": ((pair["dask"]["peak_mb"] - pair["dask"]["before_mb"])
                                      / (pair["memory"]["peak_mb"]
                                         - pair["memory"]["before_mb"]))})
        reference = MEMMTagger.load(model_path)
        note = agreement(model, reference, read_conllu(BROWN_TEST, tags=args.tags))
    table = markdown_table(rows, [("side", "fit", "s"), ("seconds", "time (s)", ".2f"),
                                  ("before_mb", "RSS at the start (MB)", ",.0f"),
                                  ("peak_mb", "peak RSS (MB)", ",.0f")])
    ratio = markdown_table(ratios, [("pair", "pair", "d"), ("time", "time dask / memory", ".2f"),
                                    ("peak", "peak largest worker / in memory", ".2f"),
                                    ("growth", "growth during the fit, worker / in memory",
                                     ".2f")])
    print(f"\n{args.sentences:,} sentences of en-brown train in {args.files} partitions, "
          f"maxiter {args.maxiter}\n\n{table}\n\n{ratio}\n\nagreement (the last pair): {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
