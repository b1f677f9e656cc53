"""The models of the command line and of the Table 2 experiment, registered once.

Every tagger and reranker has one :class:`ModelSpec`: its command-line name (and aliases),
its Table 2 row, its kind, a one-line summary and a factory of unfitted estimators.  The
command line (the ``--model`` / ``--models`` choices and help, ``train-tagger``), the
experiment runner's rows and :func:`default_rerankers` all read this registry, so a new
model is added by one :func:`register` call here.

The factories import the estimators when called: reading the registry (e.g. for
``sparsecca --help``) loads no model code.

Examples
--------
>>> from sparsecca import registry
>>> [spec.name for spec in registry.specs("reranker", group="cca")]
['generative', 'softened', 'discriminative']
>>> registry.get("softened-disc", "reranker").row
'Softened-Disc'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["KINDS", "ModelSpec", "register", "get", "specs", "rerankers", "default_rerankers",
           "baseline_rerankers", "help_text",
           "CCA_ROWS", "BASELINE_ROWS"]  # noqa: F822 - the two row tuples: __getattr__

#: the kinds of model
KINDS = ("tagger", "reranker")
#: the label of each group in :func:`help_text`; a group without one shows its name
_GROUP_LABELS = {"cca": "the CCA rerankers", "baseline": "baselines",
                 "hidden": "hidden-variable model"}
#: suffix lengths of the baselines' suffix-tag features, unless a caller gives others
_LENGTHS = (2, 3, 4)

_SPECS: list[ModelSpec] = []


@dataclass(frozen=True)
class ModelSpec:
    """One registered model.

    Parameters
    ----------
    name : str
        The command-line name (``--model NAME``): lower case, no white space or comma.
    kind : {'tagger', 'reranker'}
    row : str
        The row name of Table 2 (the key of :func:`rerankers` and of the report).
    summary : str
        One line saying what the model is.
    factory : callable
        ``factory(random_state, input_view=None, lengths=(2, 3, 4))`` -> an unfitted
        estimator.  ``input_view`` is the sentence-feature view of the CCA models (None:
        their default), ``lengths`` the suffix lengths of the baselines' suffix features;
        a factory ignores what does not apply to its model.
    aliases : tuple of str, default ()
        Other names accepted for ``name``.
    group : str, default ''
        A family (e.g. 'cca', 'baseline') that :func:`specs` and :func:`help_text` group by.

    Examples
    --------
    >>> spec = get("hmm", "tagger")
    >>> spec.row, spec.kind
    ('HMM', 'tagger')
    >>> type(spec.make()).__name__
    'TrigramHMM'
    >>> get("perceptron-sufx").make(random_state=3, lengths=(1, 2)).lengths
    (1, 2)
    """

    name: str
    kind: str
    row: str
    summary: str
    factory: Callable
    aliases: tuple[str, ...] = ()
    group: str = ""

    def __post_init__(self):
        for field in ("name", "row", "summary"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{field} must be a non-empty str, got {value!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if not callable(self.factory):
            raise TypeError(f"factory must be callable, got {self.factory!r}")
        if isinstance(self.aliases, str):
            raise TypeError(f"aliases must be a tuple of str, got {self.aliases!r}")
        object.__setattr__(self, "aliases", tuple(self.aliases))
        for name in (self.name, *self.aliases):
            if not isinstance(name, str) or name != name.lower() or not name \
                    or any(c.isspace() or c == "," for c in name):
                raise ValueError(f"model names must be lower case, without white space or "
                                 f"commas, got {name!r}")

    @property
    def names(self) -> tuple[str, ...]:
        """The name, then the aliases."""
        return (self.name, *self.aliases)

    def make(self, random_state=0, *, input_view=None, lengths=_LENGTHS):
        """An unfitted estimator: ``factory(random_state, input_view=..., lengths=...)``."""
        return self.factory(random_state, input_view=input_view, lengths=lengths)


def register(spec: ModelSpec) -> ModelSpec:
    """Add a model to the registry (after the ones registered before it).

    Parameters
    ----------
    spec : ModelSpec

    Returns
    -------
    ModelSpec
        ``spec``.

    Raises
    ------
    ValueError
        A model of the same kind has one of its names (aliases included) or its row.

    Examples
    --------
    >>> from sparsecca.rerank import PerceptronReranker
    >>> spec = register(ModelSpec(
    ...     "perceptron-ngram", "reranker", "Perceptron (n-gm)",
    ...     "averaged perceptron on word/tag n-gram features",
    ...     lambda random_state, input_view=None, lengths=(2, 3, 4): PerceptronReranker(
    ...         features="ngram", random_state=random_state), group="baseline"))
    >>> "Perceptron (n-gm)" in rerankers()
    True
    >>> register(spec)
    Traceback (most recent call last):
    ...
    ValueError: a reranker named 'perceptron-ngram' is registered already
    >>> _unregister(spec)  # leave the registry as it was
    """
    if not isinstance(spec, ModelSpec):
        raise TypeError(f"spec must be a ModelSpec, got {type(spec).__name__}")
    for other in specs(spec.kind):
        clash = set(spec.names) & set(other.names)
        if clash:
            raise ValueError(f"a {spec.kind} named {min(clash)!r} is registered already")
        if other.row == spec.row:
            raise ValueError(f"the row {spec.row!r} is {other.kind} {other.name!r}'s already")
    _SPECS.append(spec)
    return spec


def _unregister(spec: ModelSpec) -> None:
    """Remove ``spec`` (for tests and examples that register a model for a while)."""
    _SPECS.remove(spec)


def specs(kind: str | None = None, group: str | None = None) -> tuple[ModelSpec, ...]:
    """The registered models, in registration order.

    Parameters
    ----------
    kind : {'tagger', 'reranker'} or None
        Only models of this kind (None: all).
    group : str or None
        Only models of this group (None: all).

    Returns
    -------
    tuple of ModelSpec

    Examples
    --------
    >>> [spec.name for spec in specs("tagger")]
    ['hmm', 'perceptron', 'memm', 'mms']
    >>> [spec.row for spec in specs("reranker", group="baseline")]  # doctest: +NORMALIZE_WHITESPACE
    ['Collins (Sufx)', 'Regularized (Sufx)', 'Collins (n-gm)', 'Regularized (n-gm)',
     'Perceptron (Sufx)']
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} or None, got {kind!r}")
    return tuple(s for s in _SPECS
                 if (kind is None or s.kind == kind) and (group is None or s.group == group))


def get(name: str, kind: str | None = None) -> ModelSpec:
    """The model registered under ``name`` (or an alias of it).

    Parameters
    ----------
    name : str
        A command-line name or alias.
    kind : {'tagger', 'reranker'} or None
        Look among the models of this kind only (None: all).

    Returns
    -------
    ModelSpec

    Raises
    ------
    ValueError
        No such model: ``unknown model 'x'; choose from a, b, c`` (the names of ``kind``).

    Examples
    --------
    >>> get("collins-ngram").row
    'Collins (n-gm)'
    >>> get("hmm", "reranker")
    Traceback (most recent call last):
    ...
    ValueError: unknown model 'hmm'; choose from generative, softened, discriminative, ...
    """
    found = specs(kind)
    for spec in found:
        if name in spec.names:
            return spec
    raise ValueError(f"unknown model {name!r}; choose from "
                     f"{', '.join(spec.name for spec in found)}")


def rerankers(random_state=0, input_view=None, names=None, baselines: bool = True, *,
              lengths=_LENGTHS) -> dict:
    """Unfitted rerankers keyed by their Table 2 row name.

    Parameters
    ----------
    random_state : int, numpy Generator, RandomState or None, default 0
    input_view : unfitted view, optional
        Input view of the CCA models (default ``SuffixView()``; the paper uses character
        1-2-grams, ``CharNgramView(n=(1, 2))``, for Chinese).
    names : iterable of str, optional
        Command-line names (or aliases) of the rerankers, in the order wanted (default: all
        registered, in registration order).
    baselines : bool, default True
        With ``names`` None: include the models outside the CCA group (the baselines and
        the hidden-variable model); False gives the three CCA rerankers.
    lengths : int or sequence of int, default (2, 3, 4)
        Suffix lengths of the baselines' suffix-tag features.

    Returns
    -------
    dict of str -> reranker

    Raises
    ------
    ValueError
        An unknown name (see :func:`get`).

    Examples
    --------
    >>> list(rerankers(names=["softened-disc", "perceptron-sufx"]))
    ['Softened-Disc', 'Perceptron (Sufx)']
    >>> list(rerankers(baselines=False))
    ['Generative', 'Softened-Disc', 'Discriminative']
    """
    if names is None:
        chosen = [s for s in specs("reranker") if baselines or s.group == "cca"]
    else:
        if isinstance(names, str):
            raise TypeError(f"names must be an iterable of model names, got {names!r}")
        chosen = [get(name, "reranker") for name in names]
    return {s.row: s.make(random_state, input_view=input_view, lengths=lengths)
            for s in chosen}


def default_rerankers(random_state=0, *, input_view=None, lengths=_LENGTHS,
                      baselines: bool = True) -> dict:
    """Every registered reranker, unfitted, keyed by its Table 2 row name.

    :func:`rerankers` with ``names=None``: the CCA rows "Generative", "Softened-Disc",
    "Discriminative", then the baselines (unless ``baselines`` is False) in their Table 2
    order, then any reranker registered later.

    Parameters
    ----------
    random_state : int, numpy Generator, RandomState or None, default 0
    input_view : unfitted view, optional
        Input view of the CCA models (default ``SuffixView()``).
    lengths : int or sequence of int, default (2, 3, 4)
        Suffix lengths of the baselines' suffix-tag features.
    baselines : bool, default True
        Include the rows outside the CCA group: the Collins & Koo / regularised boosting /
        perceptron baselines and the hidden-variable model.

    Returns
    -------
    dict of str -> reranker

    Examples
    --------
    >>> rows = default_rerankers(random_state=0)
    >>> list(rows)[:3]
    ['Generative', 'Softened-Disc', 'Discriminative']
    >>> type(rows["Collins (n-gm)"]).__name__
    'BoostingReranker'
    """
    return rerankers(random_state, input_view, baselines=baselines, lengths=lengths)


def baseline_rerankers(random_state=0, *, lengths=_LENGTHS) -> dict:
    """The unfitted baseline rerankers keyed by their Table 2 row name.

    ``"Collins (Sufx)"`` / ``"Collins (n-gm)"``: :class:`~sparsecca.rerank.BoostingReranker`
    (Collins & Koo 2005) with suffix-tag pair or n-gram joint features;
    ``"Regularized (...)"``: :class:`~sparsecca.rerank.RegularizedBoostingReranker`
    (L1-regularised ExpLoss); ``"Perceptron (Sufx)"``:
    :class:`~sparsecca.rerank.PerceptronReranker` (averaged, Collins 2002).  Each is fitted
    with ``fit(train_nbest, dev_nbest)`` (dev tunes rounds / C / epochs) and scored like the
    CCA rerankers.

    Parameters
    ----------
    random_state : int, numpy Generator, RandomState or None, default 0
        Seeds the perceptron's visiting order (the boosting rerankers are deterministic).
    lengths : int or sequence of int, default (2, 3, 4)
        Suffix lengths of the "Sufx" features (e.g. (1, 2) for Chinese words).

    Returns
    -------
    dict of str -> reranker, in :data:`BASELINE_ROWS` order

    Examples
    --------
    >>> from sparsecca.registry import BASELINE_ROWS
    >>> rows = baseline_rerankers(random_state=7, lengths=(1, 2))
    >>> tuple(rows) == BASELINE_ROWS
    True
    >>> rows["Regularized (Sufx)"].lengths
    (1, 2)
    """
    return rerankers(random_state, names=[s.name for s in specs("reranker", "baseline")],
                     lengths=lengths)


def help_text(kind: str) -> str:
    """The names of the models of ``kind`` for a command-line help, by group.

    Examples
    --------
    >>> help_text("tagger")
    'hmm, perceptron, memm, mms'
    >>> help_text("reranker")  # doctest: +NORMALIZE_WHITESPACE
    'generative, softened, discriminative (the CCA rerankers); collins-sufx,
     regularized-sufx, collins-ngram, regularized-ngram, perceptron-sufx (baselines);
     hidden-variable (hidden-variable model)'
    """
    groups: dict[str, list[str]] = {}
    for spec in specs(kind):
        groups.setdefault(spec.group, []).append(spec.name)
    return "; ".join(", ".join(names) + (f" ({_GROUP_LABELS.get(group, group)})" if group
                                         else "")
                     for group, names in groups.items())


#: the module attributes that give the row names of a reranker group, in registration order
_ROW_TUPLES = {"CCA_ROWS": "cca", "BASELINE_ROWS": "baseline"}


def __getattr__(name):
    # read when asked for, so that they follow the registry (PEP 562)
    if name in _ROW_TUPLES:
        return tuple(s.row for s in specs("reranker", _ROW_TUPLES[name]))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_ROW_TUPLES])


# -- the models -------------------------------------------------------------------------------

def _trigram_hmm(random_state, input_view=None, lengths=_LENGTHS):
    from .tagging import TrigramHMM

    return TrigramHMM()


def _tagger(cls_name: str):
    def factory(random_state, input_view=None, lengths=_LENGTHS):
        from . import tagging

        return getattr(tagging, cls_name)(random_state=random_state)
    return factory


def _cca(cls_name: str):
    def factory(random_state, input_view=None, lengths=_LENGTHS):
        from . import rerank

        return getattr(rerank, cls_name)(input_view=input_view, random_state=random_state)
    return factory


def _boosting(cls_name: str, features: str):
    def factory(random_state, input_view=None, lengths=_LENGTHS):
        from . import rerank

        cls = getattr(rerank, cls_name)
        return cls(features=features, lengths=lengths) if features == "suffix" \
            else cls(features=features)
    return factory


def _perceptron(random_state, input_view=None, lengths=_LENGTHS):
    from .rerank import PerceptronReranker

    return PerceptronReranker(features="suffix", lengths=lengths, random_state=random_state)


def _hidden_variable(random_state, input_view=None, lengths=_LENGTHS):
    from .rerank import HiddenVariableReranker

    return HiddenVariableReranker(lengths=lengths, random_state=random_state)


for _spec in (
    ModelSpec("hmm", "tagger", "HMM", "second-order HMM with TnT smoothing and k-best decoding",
              _trigram_hmm),
    ModelSpec("perceptron", "tagger", "Perceptron",
              "second-order structured averaged perceptron on context features (Collins 2002)",
              _tagger("PerceptronTagger")),
    ModelSpec("memm", "tagger", "MEMM",
              "maximum-entropy Markov model, L2 log-linear local model, trigram Viterbi",
              _tagger("MEMMTagger")),
    ModelSpec("mms", "tagger", "MMS",
              "max-margin-structure tagger: per-word distance-aware perceptrons (Ni et al. 2010)",
              _tagger("MMSTagger")),
    ModelSpec("generative", "reranker", "Generative",
              "regularised CCA between the sentence view and the gold tag-sequence view",
              _cca("GenerativeReranker"), group="cca"),
    ModelSpec("softened", "reranker", "Softened-Disc",
              "CCA against the gold tags mixed with the loss-weighted candidate residuals",
              _cca("SoftenedReranker"), aliases=("softened-disc",), group="cca"),
    ModelSpec("discriminative", "reranker", "Discriminative",
              "the max-margin model, CCA re-solved as its multipliers move",
              _cca("DiscriminativeReranker"), group="cca"),
    ModelSpec("collins-sufx", "reranker", "Collins (Sufx)",
              "Collins & Koo boosting on suffix-tag features",
              _boosting("BoostingReranker", "suffix"), group="baseline"),
    ModelSpec("regularized-sufx", "reranker", "Regularized (Sufx)",
              "L1-regularised boosting on suffix-tag features",
              _boosting("RegularizedBoostingReranker", "suffix"), group="baseline"),
    ModelSpec("collins-ngram", "reranker", "Collins (n-gm)",
              "Collins & Koo boosting on word/tag n-gram features",
              _boosting("BoostingReranker", "ngram"), group="baseline"),
    ModelSpec("regularized-ngram", "reranker", "Regularized (n-gm)",
              "L1-regularised boosting on word/tag n-gram features",
              _boosting("RegularizedBoostingReranker", "ngram"), group="baseline"),
    ModelSpec("perceptron-sufx", "reranker", "Perceptron (Sufx)",
              "averaged perceptron on suffix-tag features", _perceptron, group="baseline"),
    ModelSpec("hidden-variable", "reranker", "Hidden-variable",
              "Koo & Collins hidden-variable log-linear model, tag refinements summed out",
              _hidden_variable, group="hidden"),
):
    register(_spec)
del _spec
