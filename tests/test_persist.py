import gc
import json
import pickle
import warnings

import numpy as np
import pytest

from sparsecca._persist import ModelFormatError, load_model_file, save_model_file


def _save(tmp_path, **kw):
    arrays = {"w": np.arange(6.0).reshape(2, 3), "names": np.array(["a", "bb", "ccc"])}
    return save_model_file(tmp_path / "m.npz", "Thing", {"k": 3, "tau": 0.5}, arrays, **kw)


def test_roundtrip(tmp_path):
    p = _save(tmp_path, extra={"w_": 1.5})
    meta, arrays = load_model_file(p, "Thing")
    assert meta["params"] == {"k": 3, "tau": 0.5} and meta["extra"] == {"w_": 1.5}
    np.testing.assert_array_equal(arrays["w"], np.arange(6.0).reshape(2, 3))
    assert arrays["names"].tolist() == ["a", "bb", "ccc"]


def test_refuses_overwrite(tmp_path):
    p = _save(tmp_path)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        _save(tmp_path)
    _save(tmp_path, overwrite=True)
    assert p.exists()


@pytest.mark.parametrize("overwrite", ["no", "False", "0", 0, 1, None, [0], np.int64(1)])
def test_overwrite_must_be_a_bool(tmp_path, overwrite):
    # any truthy value replaced the file: 'no' meant yes
    p = _save(tmp_path)
    before = p.read_bytes()
    with pytest.raises(TypeError, match=r"^overwrite must be True or False, got "):
        _save(tmp_path, overwrite=overwrite)
    assert p.read_bytes() == before
    _save(tmp_path, overwrite=np.True_)  # NumPy's bool is a bool


def test_wrong_class(tmp_path):
    p = _save(tmp_path)
    with pytest.raises(ModelFormatError, match="holds a 'Thing', not a 'Other'"):
        load_model_file(p, "Other")


def test_newer_version(tmp_path):
    meta = {"format": "sparsecca", "format_version": 99, "class": "Thing",
            "library_version": "9.0", "params": {}, "extra": {}}
    p = tmp_path / "new.npz"
    np.savez(p, __sparsecca_meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8))
    with pytest.raises(ModelFormatError, match="format version 99 is newer"):
        load_model_file(p, "Thing")


def test_pickle_renamed(tmp_path):
    p = tmp_path / "evil.npz"
    p.write_bytes(pickle.dumps({"a": np.ones(3)}))
    with pytest.raises(ModelFormatError, match="not a sparsecca model file"):
        load_model_file(p, "Thing")


def test_object_array_npz_refused(tmp_path):
    p = tmp_path / "obj.npz"
    np.savez(p, __sparsecca_meta__=np.array([{"x": 1}], dtype=object))
    with pytest.raises(ModelFormatError, match="not a sparsecca model file"):
        load_model_file(p, "Thing")


@pytest.mark.parametrize("cut", [10, 100, 0.5, -20])
def test_truncated(tmp_path, cut):
    p = _save(tmp_path)
    raw = p.read_bytes()
    n = int(len(raw) * cut) if isinstance(cut, float) else cut
    p.write_bytes(raw[:n])
    with pytest.raises(ModelFormatError, match="m.npz"):
        load_model_file(p, "Thing")


def test_corrupted_bytes(tmp_path):
    p = _save(tmp_path)
    raw = bytearray(p.read_bytes())
    for i in range(60, len(raw) - 60, 7):
        raw[i] ^= 0xFF
    p.write_bytes(bytes(raw))
    with pytest.raises(ModelFormatError):
        load_model_file(p, "Thing")


def test_object_arrays_not_saved(tmp_path):
    with pytest.raises(TypeError, match="dtype object"):
        save_model_file(tmp_path / "x.npz", "T", {}, {"a": np.array([{}], dtype=object)})


@pytest.mark.parametrize("cut", [10, 100, -20])
def test_truncated_file_is_closed(tmp_path, cut):
    # np.load(path) left the file open when the archive turned out truncated
    p = _save(tmp_path)
    p.write_bytes(p.read_bytes()[:cut])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ModelFormatError, match="m.npz: corrupted or truncated"):
            load_model_file(p, "Thing")
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
