"""Pieces of the pure-Python structured perceptron references (tests/kernels/test_structured.py,
tests/distributed/test_perceptron_mixing.py)."""


def update_transitions(B, C, gold, pred, bos, eos):
    """``B += bigrams(gold) - bigrams(pred)`` and the same for the stored trigrams ``C`` (a
    dict), over the histories where the BOS-padded, EOS-ended sequences differ."""
    hg, hp = [bos, bos] + gold + [eos], [bos, bos] + pred + [eos]
    for m in range(2, len(hg)):
        tg, tp = tuple(hg[m - 2:m + 1]), tuple(hp[m - 2:m + 1])
        if tg != tp:
            B[tg[1], tg[2]] += 1
            B[tp[1], tp[2]] -= 1
            if tg in C:
                C[tg] += 1
            if tp in C:
                C[tp] -= 1
