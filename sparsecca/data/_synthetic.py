"""A deterministic generator of realistic POS-tagged text, for demos, examples and fast tests."""

from __future__ import annotations

import numpy as np

from .._params import check_random_state
from ._corpus import TaggedCorpus, Vocabulary

__all__ = ["synthetic_corpus"]

# tag -> (number of word types, suffixes that mark it, open class?)
# Shared suffixes ("s", "ed", "er", "ing") make the suffix cue ambiguous, as in English.
_TAGSET = {
    "NOUN": (4000, ("tion", "ness", "ment", "er", "s", "ity", ""), True),
    "VERB": (2000, ("ing", "ed", "s", "ize", "en", ""), True),
    "ADJ": (1500, ("ous", "ful", "ive", "al", "able", "ed", "er"), True),
    "ADV": (400, ("ly", "ward", ""), True),
    "PROPN": (1500, ("",), True),
    "DET": (12, ("",), False),
    "ADP": (40, ("",), False),
    "PRON": (25, ("",), False),
    "CONJ": (10, ("",), False),
    "PRT": (15, ("",), False),
    "NUM": (300, ("",), False),
    "PUNCT": (8, ("",), False),
}
_TAGS = list(_TAGSET)
# (tag, other tag, fraction of the tag's frequent types that the other tag also emits)
_AMBIGUOUS = [("NOUN", "VERB", 0.25), ("VERB", "NOUN", 0.15), ("ADJ", "NOUN", 0.15),
              ("ADP", "PRT", 0.40), ("ADV", "ADJ", 0.20), ("DET", "PRON", 0.30),
              ("VERB", "ADJ", 0.10)]
_CONS = list("bcdfghjklmnprstvwz") + ["ch", "sh", "th", "st", "pr", "tr", "gr", "bl"]
_VOWELS = list("aeiou") + ["ea", "ou", "ai", "io"]
_PUNCT = [".", ",", ";", ":", "!", "?", "-", "'"]


def _stems(rng: np.random.Generator, n: int, min_syl: int, max_syl: int, taken: set) -> list:
    out = []
    while len(out) < n:
        k = int(rng.integers(min_syl, max_syl + 1))
        s = "".join(_CONS[rng.integers(len(_CONS))] + _VOWELS[rng.integers(len(_VOWELS))]
                    for _ in range(k))
        if rng.random() < 0.5:
            s += _CONS[rng.integers(len(_CONS))]
        if s not in taken:
            taken.add(s)
            out.append(s)
    return out


def _sample_rows(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    """One categorical draw per row of ``probs`` (rows sum to 1), vectorised."""
    cum = np.cumsum(probs, axis=1)
    u = rng.random(probs.shape[0])[:, None] * cum[:, -1:]
    return np.minimum((u > cum).sum(axis=1), probs.shape[1] - 1)


def synthetic_corpus(n_sentences: int = 5000, random_state=0, *, n_genres: int = 3,
                     mean_length: float = 18.0, zipf_exponent: float = 1.1,
                     ambiguity: float = 1.0) -> TaggedCorpus:
    """Generate a POS-tagged corpus with the statistics that make tagging and reranking hard.

    The generator is deterministic given ``random_state``.  Its structure:

    * a sentence-level latent *genre* (``n_genres``) that selects one of several second-order
      tag-transition tensors P(t_i | t_{i-2}, t_{i-1}) and re-weights word choice, so a
      sentence's bag of suffixes carries information about its bag of tag n-grams that a
      trigram HMM cannot use (what the CCA rerankers exploit);
    * a Zipfian lexicon per tag (exponent ``zipf_exponent``): many rare and unseen words;
    * suffixes that correlate with tags (-tion, -ly, -ing, ...) but are shared between tags
      ("s", "ed", "er") so the unknown-word cue is informative but ambiguous;
    * ambiguous word types emitted by two tags (noun/verb, adposition/particle, ...);
    * capitalised proper nouns and sentence-initial capitalisation, numbers and punctuation.

    Parameters
    ----------
    n_sentences : int >= 1
    random_state : int, numpy Generator, RandomState or None
        The same seed gives the same corpus (on the same NumPy random generator).
    n_genres : int >= 1
        Latent genres; 1 leaves the rerankers nothing beyond what a trigram HMM sees.
    mean_length : float in [2, 200]
        Mean sentence length in tokens (lengths are log-normal, at least 1, at most six
        times the mean).
    zipf_exponent : float > 1
        Exponent of the rank-frequency law of each tag's lexicon; smaller gives a heavier
        tail (more rare and unseen words).
    ambiguity : float in [0, 1]
        Scales the fraction of shared (ambiguous) word types; 0 gives none.

    Returns
    -------
    TaggedCorpus
        Tagged with a 12-tag universal-style tagset (NOUN, VERB, ADJ, ADV, PROPN, DET, ADP,
        PRON, CONJ, PRT, NUM, PUNCT).

    Raises
    ------
    ValueError
        A parameter outside the ranges above.

    Examples
    --------
    >>> from sparsecca.data import synthetic_corpus
    >>> corpus = synthetic_corpus(200, random_state=0)
    >>> corpus.n_sentences, len(corpus.tags)
    (200, 12)
    >>> corpus.tags.items[:4]
    ['NOUN', 'VERB', 'ADJ', 'ADV']
    >>> words, tags = corpus[0]
    >>> len(words) == len(tags) == int(corpus.lengths[0])
    True
    >>> synthetic_corpus(200, random_state=0) == corpus  # deterministic given the seed
    True
    """
    if not isinstance(n_sentences, (int, np.integer)) or isinstance(n_sentences, bool) \
            or n_sentences < 1:
        raise ValueError(f"n_sentences must be an int >= 1, got {n_sentences!r}")
    if not isinstance(n_genres, (int, np.integer)) or n_genres < 1:
        raise ValueError(f"n_genres must be an int >= 1, got {n_genres!r}")
    if not 2.0 <= mean_length <= 200.0:
        raise ValueError(f"mean_length must be in [2, 200], got {mean_length!r}")
    if not zipf_exponent > 1.0:
        raise ValueError(f"zipf_exponent must be > 1, got {zipf_exponent!r}")
    if not 0.0 <= ambiguity <= 1.0:
        raise ValueError(f"ambiguity must be in [0, 1], got {ambiguity!r}")
    rng = check_random_state(random_state)
    T = len(_TAGS)
    tag_index = {t: i for i, t in enumerate(_TAGS)}
    words, lexicon, shared = _lexicon(rng, tag_index, ambiguity)
    emit = _emissions(rng, words, lexicon, shared, n_genres, zipf_exponent)
    trans = _transitions(rng, T, tag_index, n_genres)
    return _sentences(rng, words, lexicon, emit, trans, tag_index, n_sentences, n_genres,
                      mean_length)


def _lexicon(rng, tag_index, ambiguity):
    """The word list, each tag's word ids and the shared (ambiguous) types (word, a, b)."""
    # ---- lexicon: global word list, per-tag lists of word ids ---------------------------
    taken: set = set()
    words: list[str] = []
    lexicon: list[list[int]] = []
    for tag, (size, suffixes, open_class) in _TAGSET.items():
        if tag == "PUNCT":
            forms = _PUNCT[:size]
        elif tag == "NUM":
            forms = sorted({str(x) for x in rng.integers(1, 3000, size=size * 2)})[:size]
            forms += [f"{a}.{b}" for a, b in zip(rng.integers(0, 99, 20), rng.integers(0, 9, 20))]
        else:
            stems = _stems(rng, size, 1, 3 if open_class else 2, taken)
            if tag == "PROPN":
                forms = [s.capitalize() for s in stems]
            else:
                suff = np.array(suffixes, dtype=object)
                forms = [s + suff[rng.integers(len(suff))] for s in stems]
        ids = []
        for f in forms:
            if f in taken and tag in ("NUM", "PUNCT"):
                continue
            taken.add(f)
            ids.append(len(words))
            words.append(f)
        # forms built from distinct stems can still collide after suffixing: keep first
        lexicon.append(ids)
    # deduplicate forms (rare suffix collisions) by mapping to the first occurrence
    first: dict[str, int] = {}
    remap = np.empty(len(words), dtype=np.int64)
    for i, w in enumerate(words):
        remap[i] = first.setdefault(w, i)
    lexicon = [list(dict.fromkeys(int(remap[i]) for i in lex)) for lex in lexicon]

    shared: list[tuple[int, int, int]] = []   # (word id, tag a, tag b)
    for a, b, frac in _AMBIGUOUS:
        la, lb = lexicon[tag_index[a]], lexicon[tag_index[b]]
        n_share = int(round(frac * ambiguity * min(len(la), 400)))
        if n_share:
            # frequent types of `a` (low ranks) become emittable by `b` at random ranks
            share = [la[i] for i in rng.choice(min(len(la), 400), size=n_share, replace=False)]
            for w in share:
                lb.insert(int(rng.integers(0, len(lb) + 1)), w)
                shared.append((w, tag_index[a], tag_index[b]))

    return words, lexicon, shared


def _emissions(rng, words, lexicon, shared, n_genres, zipf_exponent):
    """``emit[g][t]``: the word distribution of tag ``t`` (over its lexicon) in genre ``g``."""
    # per (genre, tag): Zipf weights over the tag's lexicon, re-weighted per genre
    emit = []
    for _ in range(n_genres):
        row = []
        for lex in lexicon:
            ranks = np.arange(1, len(lex) + 1, dtype=float)
            w = ranks ** -zipf_exponent * rng.lognormal(0.0, 1.0, size=len(lex))
            row.append(w)
        emit.append(row)
    # each genre favours some word endings, so a sentence's bag of suffixes reveals its genre
    endings = sorted({w[-2:] for w in words})
    ending_of = np.array([endings.index(w[-2:]) for w in words])
    for g in range(n_genres):
        boost = rng.normal(0.0, 1.0, size=len(endings))
        for t, lex in enumerate(lexicon):
            emit[g][t] = emit[g][t] * np.exp(boost[ending_of[np.asarray(lex)]])
    # an ambiguous word leans to one of its tags depending on the genre (as "bank" or "run"
    # do across topics): the sentence's other words reveal the genre, a trigram HMM cannot
    position = [{w: i for i, w in enumerate(lex)} for lex in lexicon]
    for w, a, b in shared:
        lean = rng.normal(0.0, 2.0, size=n_genres)
        for g in range(n_genres):
            emit[g][a][position[a][w]] *= np.exp(-lean[g])
            emit[g][b][position[b][w]] *= np.exp(lean[g])
    emit = [[w / w.sum() for w in row] for row in emit]

    return emit


def _transitions(rng, T, tag_index, n_genres):
    """``trans[g, t2, t1]``: P(t | t2, t1) in genre ``g`` (BOS = T)."""
    # ---- second-order transitions per genre, with BOS = T ---------------------------------
    base = rng.dirichlet(np.full(T, 0.3), size=T + 1)           # first-order backbone
    base[:, tag_index["PUNCT"]] *= 0.3
    trans = np.empty((n_genres, T + 1, T + 1, T))
    for g in range(n_genres):
        genre_bias = rng.lognormal(0.0, 0.8, size=T)
        second = rng.dirichlet(np.full(T, 0.5), size=(T + 1, T + 1))
        p = (0.6 * base[None, :, :] + 0.4 * second) * genre_bias
        trans[g] = p / p.sum(axis=-1, keepdims=True)

    return trans


def _sentences(rng, words, lexicon, emit, trans, tag_index, n_sentences, n_genres,
               mean_length):
    """The corpus: genres, lengths, tags position by position, words, capitalisation."""
    T = len(_TAGS)
    # ---- sentences, generated position by position for all sentences at once --------------
    genre = rng.integers(0, n_genres, size=n_sentences)
    sigma = 0.5
    lengths = np.maximum(1, np.round(
        rng.lognormal(np.log(mean_length) - sigma**2 / 2, sigma, size=n_sentences))).astype(int)
    lengths = np.minimum(lengths, int(mean_length * 6))
    max_len = int(lengths.max())
    tags = np.full((n_sentences, max_len), -1, dtype=np.int64)
    prev2 = np.full(n_sentences, T)
    prev1 = np.full(n_sentences, T)
    for p in range(max_len):
        live = np.flatnonzero(lengths > p)
        t = _sample_rows(rng, trans[genre[live], prev2[live], prev1[live]])
        last = lengths[live] == p + 1
        # most sentences end in a full stop or question mark
        end = last & (rng.random(live.size) < 0.9) & (lengths[live] > 1)
        t[end] = tag_index["PUNCT"]
        tags[live, p] = t
        prev2[live], prev1[live] = prev1[live], t

    mask = tags >= 0
    flat_tags = tags[mask]
    sent_of_token = np.repeat(np.arange(n_sentences), lengths)
    flat_genre = genre[sent_of_token]
    flat_words = np.empty(flat_tags.size, dtype=np.int64)
    for g in range(n_genres):
        for ti in range(T):
            sel = np.flatnonzero((flat_tags == ti) & (flat_genre == g))
            if sel.size:
                lex = np.asarray(lexicon[ti])
                flat_words[sel] = lex[rng.choice(lex.size, size=sel.size, p=emit[g][ti])]
    offsets = np.zeros(n_sentences + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # sentence-final punctuation is "." or "?"
    final = offsets[1:] - 1
    is_p = flat_tags[final] == tag_index["PUNCT"]
    flat_words[final[is_p]] = np.where(rng.random(is_p.sum()) < 0.85, words.index("."),
                                       words.index("?"))

    # sentence-initial capitalisation (a new type when the capitalised form is new)
    forms = np.array(words, dtype=object)
    token_forms = forms[flat_words]
    token_forms[offsets[:-1]] = [f[:1].upper() + f[1:] for f in token_forms[offsets[:-1]]]
    vocab: dict[str, int] = {}
    word_ids = np.fromiter((vocab.setdefault(f, len(vocab)) for f in token_forms),
                           dtype=np.int32, count=token_forms.size)
    return TaggedCorpus(word_ids, flat_tags.astype(np.int32), offsets, Vocabulary(vocab),
                        Vocabulary(_TAGS))
