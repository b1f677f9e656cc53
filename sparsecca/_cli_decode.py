"""k-best decoding of the ``tag`` and ``rerank`` verbs (:mod:`sparsecca.cli`): in chunks,
each written before the next is decoded, with a memory check before the first."""

from __future__ import annotations

import os

from ._cli_common import UsageError, _progress, _text_output

#: sentences decoded per call (fewer for a large k: at most _CHUNK_CANDIDATES candidates),
#: written out before the next chunk is decoded, so that memory stays bounded and long
#: inputs show progress
_DECODE_CHUNK = 5000


_CHUNK_CANDIDATES = 20_000


#: bytes per output token line held while a chunk is rendered (the str and its list slot)
_LINE_BYTES = 160


def _chunk_sentences(k: int) -> int:
    return max(1, min(_DECODE_CHUNK, _CHUNK_CANDIDATES // k))


def _available_memory() -> int | None:
    """Bytes of memory available to a new allocation (MemAvailable), None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _lattice_sizes(tagger, corpus):
    """Lattice states of each sentence of ``corpus`` in the k-best Viterbi of ``tagger``
    (pairs of candidate tags of neighbouring positions), or an upper bound: T^2 per
    position for a tagger that does not say which tags each word may take."""
    import numpy as np

    lengths = corpus.lengths.astype(np.int64)
    lattice = getattr(tagger, "_lattice", None)
    if lattice is None:
        T = len(tagger.tags_)
        return (lengths + 1) * T * T
    c = np.diff(np.asarray(lattice(corpus)[0], dtype=np.int64))  # candidate tags per token
    off = corpus.offsets.astype(np.int64)
    if not c.size:
        return lengths + 1
    # layer 0: (BOS, t_0); layers 1..n-1: (t_{m-1}, t_m); layer n: (t_{n-1}, EOS)
    pairs = np.concatenate([[0], np.cumsum(c[:-1] * c[1:])])
    top = c.size - 1
    a = np.minimum(off[:-1], top)
    b = np.clip(off[1:] - 1, 0, top)
    has = lengths > 0
    inner = np.where(has, pairs[np.maximum(b, a)] - pairs[a], 0)
    return inner + np.where(has, c[a] + c[b], 0) + 1


def _format_bytes(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"  # pragma: no cover


def _check_decode_memory(tagger, corpus, k: int, src, option: str = "-k") -> None:
    """Refuse a k whose k-best decoding would need more memory than the machine has: the
    lattices of the two largest sentences (decoded in parallel; score and two back
    pointers per entry, k entries per state) plus one output chunk (its tags and lines)."""
    import numpy as np

    if k < 50:  # a few MB at most: not worth a pass over the input
        return
    avail = _available_memory()
    if avail is None:
        return
    states = np.sort(_lattice_sizes(tagger, corpus))[::-1]
    lattice = 16.0 * k * float(states[:2].sum())
    chunk = _chunk_sentences(k)
    longest = np.sort(corpus.lengths)[::-1][:chunk]
    output = float(longest.sum()) * k * (_LINE_BYTES + 12)
    need = lattice + output
    if need > avail:
        raise UsageError(f"{option} {k}: decoding {src} needs an estimated "
                         f"{_format_bytes(need)} of memory (lattice of its largest sentence, "
                         f"{int(states[0])} states x {k} entries, and one output chunk), more "
                         f"than the {_format_bytes(avail)} available; use a smaller {option}")


def _decode(hmm, corpus, k: int, progress: bool, desc: str = "decoding"):
    """k-best lists of a corpus, in chunks so that a progress bar can advance."""
    from .tagging import concatenate

    n = corpus.n_sentences
    step = _chunk_sentences(k) if not progress else max(1, min(_chunk_sentences(k), 500))
    starts = list(range(0, n, step))
    it = starts
    if progress and len(starts) > 1:
        from tqdm.auto import tqdm

        it = tqdm(starts, desc=desc, unit="chunk")
    parts = [hmm.nbest(corpus[s:s + step], k=k) for s in it]
    return concatenate(parts) if len(parts) != 1 else parts[0]


def _format_score(x: float) -> str:
    return f"{x:.6f}"


def _render_nbest(doc, nb, column: str, top: int, first: int = 0, order=None, ranking=None):
    """The text of the 1-best (top == 1) or k-best output of sentences ``first``, ``first +
    1``, ... of ``doc`` (the sentences of ``nb``), one string per sentence (its blocks), so
    that a caller can write each before the next is made; ``order`` re-ranks candidates."""
    items = nb.tags.items
    so = nb.sent_offsets
    for i in range(nb.n_sentences):
        lines: list[str] = []
        a, b = int(so[i]), int(so[i + 1])
        cands = list(range(a, b)) if order is None else order[a:b].tolist()
        if top == 1:
            r = cands[0]
            tags = [items[t] for t in nb.tag_ids[nb.cand_offsets[r]:nb.cand_offsets[r + 1]]]
            yield "\n".join(doc.render(first + i, tags, column)) + "\n"
            continue
        sid = doc.sent_id(first + i)
        for j, r in enumerate(cands[:top], 1):
            tags = [items[t] for t in nb.tag_ids[nb.cand_offsets[r]:nb.cand_offsets[r + 1]]]
            score = nb.scores[r] if ranking is None else ranking[r]
            header = [f"# sent_id = {sid}", f"# candidate = {j}",
                      f"# score = {_format_score(score)}"]
            if ranking is not None:
                header += [f"# decoder_rank = {r - a + 1}",
                           f"# decoder_score = {_format_score(nb.scores[r])}"]
            lines += doc.render(first + i, tags, column, header=header, kbest=True)
        yield "\n".join(lines) + "\n"


def _stream_nbest(doc, tagger, column: str, k: int, top: int, output, args, reranker=None):
    """Decode ``doc`` chunk by chunk, (rerank,) and write each chunk's output before the next
    is decoded: memory holds one chunk, whatever the input's length.  Returns (sentences,
    candidates, unknown tokens, tokens compared with gold, correct of the decoder's choice,
    correct of the reranker's choice); the last three are None without gold tags."""
    import numpy as np

    gold = doc.gold(column)
    gold = None if gold is None else np.array(gold, dtype=object)
    n = doc.n_sentences
    step = _chunk_sentences(k)
    bar = None
    if _progress(args) and n * k > 2 * _CHUNK_CANDIDATES:
        from tqdm.auto import tqdm

        bar = tqdm(total=n, desc="decoding" if reranker is None else "decoding, reranking",
                   unit="sent")
    offsets = doc.corpus.offsets
    n_cand = n_unknown = correct_base = correct = 0
    with _text_output(output) as out:
        for s in range(0, n, step):
            nb = tagger.nbest(doc.corpus[s:s + step], k=k)
            order = ranking = choice = None
            if reranker is not None:
                ranking = np.asarray(reranker.decision_function(nb), dtype=np.float64)
                # best first within each sentence; ties keep the decoder's order
                order = np.lexsort((np.arange(nb.n_total), -ranking, nb.cand_sentence))
                choice = order[nb.sent_offsets[:-1]] - nb.sent_offsets[:-1]
            for text in _render_nbest(doc, nb, column, top, first=s, order=order,
                                      ranking=ranking):
                out.write(text)
            n_cand += nb.n_total
            n_unknown += int(nb.unknown.sum())
            if gold is not None:
                items = np.array(nb.tags.items, dtype=object)
                g = gold[offsets[s]:offsets[min(s + step, n)]]
                correct_base += int(np.sum(items[nb.best().tag_ids] == g))
                if choice is not None:
                    correct += int(np.sum(items[nb.best(choice).tag_ids] == g))
            if bar is not None:
                bar.update(nb.n_sentences)
    if bar is not None:
        bar.close()
    if gold is None:
        return n, n_cand, n_unknown, None, None, None
    return n, n_cand, n_unknown, len(gold), correct_base, correct
