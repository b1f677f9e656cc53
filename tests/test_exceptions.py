"""sparsecca.exceptions.in_context: the message prefixed, or a note for other constructors
(also on Python 3.10, which has no ``BaseException.add_note``)."""

from __future__ import annotations

import sys

import pytest

from sparsecca.exceptions import _add_note, in_context


class _TwoArgs(Exception):
    def __init__(self, code, detail):
        super().__init__(code, detail)


def test_the_message_is_prefixed_and_the_type_kept():
    exc = in_context(KeyError("x"), "fold 3")
    assert type(exc) is KeyError and str(exc) == "\"fold 3: 'x'\""


def test_another_constructor_keeps_the_exception_and_adds_a_note():
    original = _TwoArgs(7, "bad")
    exc = in_context(original, "train.conllu")
    assert exc is original and exc.args == (7, "bad")
    assert exc.__notes__ == ["train.conllu"]
    assert in_context(exc, "fold 2").__notes__ == ["train.conllu", "fold 2"]


class _NoAddNote:
    """An object without ``add_note``, as every exception is on Python 3.10."""


def test_the_fallback_stores_notes_as_python_311_does():
    obj = _NoAddNote()
    _add_note(obj, "first")
    _add_note(obj, "second")
    assert obj.__notes__ == ["first", "second"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="BaseException.add_note is 3.11+")
def test_the_fallback_matches_add_note():
    reference = ValueError("x")
    reference.add_note("a")
    reference.add_note("b")
    obj = _NoAddNote()
    _add_note(obj, "a")
    _add_note(obj, "b")
    assert obj.__notes__ == reference.__notes__


def test_a_non_list_notes_attribute_is_refused_as_by_add_note():
    obj = _NoAddNote()
    obj.__notes__ = "not a list"
    with pytest.raises(TypeError, match="__notes__ is not a list"):
        _add_note(obj, "a")
    assert obj.__notes__ == "not a list"
