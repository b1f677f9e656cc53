"""The model registry: one entry per model, read by the command line and the experiment."""

import subprocess
import sys

import pytest

from sparsecca import registry
from sparsecca.features import CharNgramView
from sparsecca.registry import ModelSpec
from sparsecca.rerank import (
    BoostingReranker,
    DiscriminativeReranker,
    GenerativeReranker,
    HiddenVariableReranker,
    PerceptronReranker,
    RegularizedBoostingReranker,
    SoftenedReranker,
)
from sparsecca.tagging import MEMMTagger, MMSTagger, PerceptronTagger, TrigramHMM

TAGGERS = (TrigramHMM, PerceptronTagger, MEMMTagger, MMSTagger)

#: (command-line name, Table 2 row, class, group) of every model registered today
TODAY = [
    ("hmm", "HMM", TrigramHMM, ""),
    ("perceptron", "Perceptron", PerceptronTagger, ""),
    ("memm", "MEMM", MEMMTagger, ""),
    ("mms", "MMS", MMSTagger, ""),
    ("generative", "Generative", GenerativeReranker, "cca"),
    ("softened", "Softened-Disc", SoftenedReranker, "cca"),
    ("discriminative", "Discriminative", DiscriminativeReranker, "cca"),
    ("collins-sufx", "Collins (Sufx)", BoostingReranker, "baseline"),
    ("regularized-sufx", "Regularized (Sufx)", RegularizedBoostingReranker, "baseline"),
    ("collins-ngram", "Collins (n-gm)", BoostingReranker, "baseline"),
    ("regularized-ngram", "Regularized (n-gm)", RegularizedBoostingReranker, "baseline"),
    ("perceptron-sufx", "Perceptron (Sufx)", PerceptronReranker, "baseline"),
    ("hidden-variable", "Hidden-variable", HiddenVariableReranker, "hidden"),
]
N_TAGGERS = len(TAGGERS)


@pytest.mark.parametrize("name, row, cls, group", TODAY, ids=[t[0] for t in TODAY])
def test_todays_models(name, row, cls, group):
    spec = registry.get(name)
    assert (spec.row, spec.group, spec.kind) == (row, group,
                                                 "tagger" if cls in TAGGERS else "reranker")
    assert type(spec.make(random_state=0)) is cls
    assert spec.summary and "\n" not in spec.summary


def test_order_names_and_rows():
    assert [s.name for s in registry.specs("tagger")] == ["hmm", "perceptron", "memm", "mms"]
    rerankers = TODAY[N_TAGGERS:]
    assert [s.name for s in registry.specs("reranker")] == [t[0] for t in rerankers]
    assert registry.CCA_ROWS == ("Generative", "Softened-Disc", "Discriminative")
    assert registry.BASELINE_ROWS == tuple(t[1] for t in rerankers if t[3] == "baseline")
    assert registry.get("softened-disc") is registry.get("softened")
    assert list(registry.default_rerankers()) == [t[1] for t in rerankers]
    assert list(registry.default_rerankers(baselines=False)) == list(registry.CCA_ROWS)
    assert list(registry.baseline_rerankers()) == list(registry.BASELINE_ROWS)


def test_factories_pass_their_options_on():
    view = CharNgramView(n=(1, 2))
    rows = registry.rerankers(5, view, lengths=(1, 2))
    for row in registry.CCA_ROWS:
        assert rows[row].input_view is view and rows[row].random_state == 5
    assert rows["Collins (Sufx)"].lengths == (1, 2)
    assert rows["Perceptron (Sufx)"].lengths == (1, 2)
    assert rows["Perceptron (Sufx)"].random_state == 5
    assert rows["Collins (n-gm)"].features == "ngram"
    # a fresh estimator per call
    assert registry.rerankers(names=["generative"])["Generative"] is not rows["Generative"]


@pytest.mark.parametrize("name, kind, choices", [
    ("svm", "reranker", "generative, softened, discriminative, collins-sufx, regularized-sufx, "
                        "collins-ngram, regularized-ngram, perceptron-sufx, hidden-variable"),
    ("generative", "tagger", "hmm, perceptron, memm, mms"),
    ("crf", None, "hmm, perceptron, memm, mms, generative, softened, discriminative, "
                  "collins-sufx, regularized-sufx, collins-ngram, regularized-ngram, "
                  "perceptron-sufx, hidden-variable"),
])
def test_unknown_name(name, kind, choices):
    with pytest.raises(ValueError, match=rf"^unknown model '{name}'; choose from {choices}$"):
        registry.get(name, kind)


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"^unknown model 'svm'; choose from generative, "):
        registry.rerankers(names=["generative", "svm"])
    with pytest.raises(TypeError, match=r"^names must be an iterable of model names, got 'gen"):
        registry.rerankers(names="generative")
    with pytest.raises(ValueError, match=r"^kind must be one of \('tagger', 'reranker'\) or "
                                         r"None, got 'parser'$"):
        registry.specs("parser")
    with pytest.raises(TypeError, match=r"^spec must be a ModelSpec, got dict$"):
        registry.register({"name": "x"})


def _factory(random_state, input_view=None, lengths=(2, 3, 4)):
    return PerceptronReranker(features="ngram", random_state=random_state)


@pytest.mark.parametrize("fields, error, match", [
    (dict(kind="parser"), ValueError, r"^kind must be one of \('tagger', 'reranker'\), got"),
    (dict(name="My Model"), ValueError, r"^model names must be lower case, without white "
                                        r"space or commas, got 'My Model'$"),
    (dict(aliases=("a,b",)), ValueError, r"got 'a,b'$"),
    (dict(aliases="alias"), TypeError, r"^aliases must be a tuple of str, got 'alias'$"),
    (dict(row=" "), ValueError, r"^row must be a non-empty str, got ' '$"),
    (dict(factory=None), TypeError, r"^factory must be callable, got None$"),
])
def test_bad_spec(fields, error, match):
    base = dict(name="perceptron-ngram", kind="reranker", row="Perceptron (n-gm)",
                summary="averaged perceptron on n-gram features", factory=_factory)
    with pytest.raises(error, match=match):
        ModelSpec(**{**base, **fields})


@pytest.fixture
def new_reranker():
    """A reranker registered for one test (then removed)."""
    spec = registry.register(ModelSpec(
        "perceptron-ngram", "reranker", "Perceptron (n-gm)",
        "averaged perceptron on word/tag n-gram features", _factory,
        aliases=("perc-ngram",), group="baseline"))
    yield spec
    registry._unregister(spec)


def test_a_new_model_registers_once_and_appears_everywhere(new_reranker, capsys):
    from sparsecca import cli

    assert registry.get("perc-ngram") is new_reranker
    assert list(registry.default_rerankers())[-1] == "Perceptron (n-gm)"
    assert registry.BASELINE_ROWS[-1] == "Perceptron (n-gm)"
    assert "Perceptron (n-gm)" in cli._pick_rerankers(None, 0)
    assert list(cli._pick_rerankers("perc-ngram,generative", 0)) == ["Perceptron (n-gm)",
                                                                     "Generative"]
    for verb in ("train-reranker", "demo"):
        with pytest.raises(SystemExit):
            cli.main([verb, "--help"])
        assert "perceptron-sufx, perceptron-ngram (baselines)" in " ".join(
            capsys.readouterr().out.split())


def test_names_and_rows_are_unique(new_reranker):
    clash = dict(kind="reranker", summary="s", factory=_factory)
    with pytest.raises(ValueError, match=r"^a reranker named 'perc-ngram' is registered "
                                         r"already$"):
        registry.register(ModelSpec("other", row="Other", aliases=("perc-ngram",), **clash))
    with pytest.raises(ValueError, match=r"^the row 'Generative' is reranker 'generative''s "
                                         r"already$"):
        registry.register(ModelSpec("other", row="Generative", **clash))
    # a tagger may share a reranker's name: the kinds are looked up apart
    spec = registry.register(ModelSpec("generative", "tagger", "Generative tagger", "s",
                                       _factory))
    try:
        assert registry.get("generative", "tagger") is spec
        assert registry.get("generative", "reranker").row == "Generative"
    finally:
        registry._unregister(spec)


def test_help_text():
    assert registry.help_text("tagger") == "hmm, perceptron, memm, mms"
    assert registry.help_text("reranker") == (
        "generative, softened, discriminative (the CCA rerankers); collins-sufx, "
        "regularized-sufx, collins-ngram, regularized-ngram, perceptron-sufx (baselines); "
        "hidden-variable (hidden-variable model)")


def test_reading_the_registry_loads_no_model_code():
    code = ("import sys; from sparsecca import registry; registry.help_text('reranker'); "
            "print(sorted(m for m in sys.modules if m.startswith(('sparsecca.rerank', "
            "'sparsecca.tagging', 'numpy'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
