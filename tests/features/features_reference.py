"""Slow pure-Python references for the feature views: a Counter per sentence, token by token.

Written independently of sparsecca.features (no shared helpers), from the documented rules.
"""

import re
from collections import Counter

BOS, EOS, MARK = "<s>", "</s>", "^"


def suffix_feats(word, lengths):
    out = []
    for k in lengths:
        if len(word) >= k:
            s = word[len(word) - k:]
            # documented escape: backslashes, then the mark, then anything -> one more "\\"
            if re.match(r"\\*\^", s):
                s = "\\" + s
            out.append(s)
    if max(lengths) > len(word):
        out.append(MARK + word)
    return out


def char_feats(word, ns):
    out = []
    for k in ns:
        for i in range(0, len(word) - k + 1):
            out.append(word[i:i + k])
    return out


def word_rows(sentences, featurize, lowercase=False):
    """sentences: list of list of words -> list of Counter."""
    rows = []
    for words in sentences:
        c = Counter()
        for w in words:
            if lowercase:
                w = w.lower()
            for f in featurize(w):
                c[f] += 1
        rows.append(c)
    return rows


def tag_rows(tag_sentences, orders, boundaries):
    rows = []
    for tags in tag_sentences:
        c = Counter()
        for n in orders:
            if n == 1:
                for t in tags:
                    c[t] += 1
                continue
            if boundaries:
                seq = [BOS] * (n - 1) + list(tags) + [EOS] if tags else []
            else:
                seq = list(tags)
            for i in range(len(seq) - n + 1):
                c[" ".join(seq[i:i + n])] += 1
        rows.append(c)
    return rows


def joint_rows(sentences, kind, lengths=(2, 3, 4), lowercase=False):
    """sentences: list of list of (word, tag)."""
    rows = []
    for sent in sentences:
        c = Counter()
        for i, (w, t) in enumerate(sent):
            if lowercase:
                w = w.lower()
            p = sent[i - 1][1] if i >= 1 else BOS
            q = sent[i - 2][1] if i >= 2 else BOS
            if kind == "suffix":
                for s in suffix_feats(w, sorted(lengths)):
                    c[f"{s}\t{t}"] += 1
                    c[f"{s}\t{p} {t}"] += 1
            else:
                c[f"{w}\t{t}"] += 1
                c[f"{w}\t{p} {t}"] += 1
                c[f"{p} {t}"] += 1
                c[f"{q} {p} {t}"] += 1
        rows.append(c)
    return rows


def vocabulary(rows, min_count):
    total = Counter()
    for r in rows:
        total.update(r)
    return {f for f, n in total.items() if n >= min_count}, total


def top_columns(sums, n):
    """The ``n`` columns with the largest sums (ties: the earlier column), in column order."""
    ranked = sorted(range(len(sums)), key=lambda j: (-sums[j], j))
    return sorted(ranked[:n])
