"""Argument checks of the randomized SVD, the Dask reductions and the CCA engine entry
points: each bad input names the argument, what is allowed and what came in, and valid
input gives the same result as before (against a dense reference)."""

import numpy as np
import pytest
from scipy.sparse.linalg import LinearOperator, aslinearoperator

from sparsecca.linalg import randomized_range_finder, randomized_svd, svd_flip
from sparsecca.linalg._rsvd import adaptive_range_finder

RNG = np.random.default_rng(0)
A30 = RNG.standard_normal((30, 20))


class Duck:
    """A duck-typed operator: ``shape``, ``@`` and ``.T``; ``bad`` / ``bad_t`` make the
    product / the transposed product return a (3, 3) block; products are counted."""

    def __init__(self, A, shape=None, bad=False, bad_t=False):
        self.A, self.bad, self.bad_t = A, bad, bad_t
        self.shape = A.shape if shape is None else shape
        self.calls = {"A": 0, "A.T": 0}

    def __matmul__(self, V):
        self.calls["A"] += 1
        return np.ones((3, 3)) if self.bad else self.A @ V

    @property
    def T(self):
        return _DuckT(self)


class _DuckT:
    def __init__(self, duck):
        self.duck = duck
        self.shape = duck.shape[::-1]

    def __matmul__(self, U):
        self.duck.calls["A.T"] += 1
        return np.ones((3, 3)) if self.duck.bad_t else self.duck.A.T @ U


def _operator(n_out):
    """A (30, 20) LinearOperator whose products have n_out rows (30 / 20 are right)."""
    return LinearOperator((30, 20), dtype=np.float64, matvec=lambda v: np.ones(n_out),
                          rmatvec=lambda u: np.ones(n_out))


BAD_OPERATORS = [
    ("matvec-length", lambda: _operator(7), ValueError,
     r"^A @ V failed for V of shape \(20, 13\) \(it must return shape \(30, 13\)\): "
     r"cannot reshape array of size 7"),
    ("matmat-shape", lambda: LinearOperator(
        (30, 20), dtype=np.float64, matvec=lambda v: A30 @ v, rmatvec=lambda u: A30.T @ u,
        matmat=lambda V: np.ones((7, V.shape[1]))), ValueError,
     r"^A @ V returned shape \(7, 13\) for V of shape \(20, 13\), expected \(30, 13\)$"),
    ("duck-product", lambda: Duck(A30, bad=True), ValueError,
     r"^A @ V returned shape \(3, 3\) for V of shape \(20, 13\), expected \(30, 13\)$"),
    ("duck-transposed-product", lambda: Duck(A30, bad_t=True), ValueError,
     r"^A.T @ V returned shape \(3, 3\) for V of shape \(30, 13\), expected \(20, 13\)$"),
    # the wide orientation works on A.T: its first product is A.T @ V
    ("duck-wide", lambda: Duck(A30.T, bad_t=True), ValueError,
     r"^A.T @ V returned shape \(3, 3\) for V of shape \(20, 13\), expected \(30, 13\)$"),
    ("float-shape", lambda: Duck(A30, shape=(30.0, 20.0)), ValueError,
     r"^A.shape must be two ints >= 1 \(at least 1 row and 1 column\), got \(30.0, 20.0\)$"),
    ("bool-shape", lambda: Duck(A30, shape=(True, 20)), ValueError,
     r"^A.shape must be two ints >= 1 .*, got \(True, 20\)$"),
    ("zero-shape", lambda: Duck(A30, shape=(0, 20)), ValueError,
     r"^A.shape must be two ints >= 1 .*, got \(0, 20\)$"),
    ("str-shape", lambda: Duck(A30, shape="ab"), ValueError,
     r"^A.shape must be two ints >= 1 .*, got \('a', 'b'\)$"),
    ("scalar-shape", lambda: Duck(A30, shape=5), TypeError,
     r"^A must be an array, a scipy.sparse matrix, a LinearOperator or an object with a "
     r"2-D shape"),
]


@pytest.mark.parametrize("make,exc,match", [b[1:] for b in BAD_OPERATORS],
                         ids=[b[0] for b in BAD_OPERATORS])
def test_randomized_svd_checks_generic_operators(make, exc, match):
    with pytest.raises(exc, match=match):
        randomized_svd(make(), 3, random_state=0)


def test_complex_operator_is_refused():
    # its products would be cast to float64: the SVD of Re(A), with only a ComplexWarning
    A = A30 + 1j * np.arange(600.0).reshape(30, 20)
    with pytest.raises(TypeError, match=r"^A must have a real numeric dtype .*got dtype "
                                        r"complex128$"):
        randomized_svd(aslinearoperator(A), 3, random_state=0)


def test_range_finders_check_the_first_products():
    match = r"^A @ V returned shape \(3, 3\) for V of shape \(20, 3\), expected \(30, 3\)$"
    with pytest.raises(ValueError, match=match):
        randomized_range_finder(Duck(A30, bad=True), 3, random_state=0)
    with pytest.raises(ValueError, match=r"^A.T @ V returned shape \(3, 3\)"):
        adaptive_range_finder(Duck(A30, bad_t=True), 1e-3, n_iter=1, random_state=0)


@pytest.mark.parametrize("shape", [(30, 20), (20, 30)])
@pytest.mark.parametrize("kind", ["duck", "operator", "numpy-int-shape"])
def test_generic_operators_give_the_dense_result(kind, shape):
    A = A30 if shape == (30, 20) else A30.T.copy()
    op = {"duck": Duck(A), "operator": aslinearoperator(A),
          "numpy-int-shape": Duck(A, shape=(np.int64(shape[0]), np.int32(shape[1])))}[kind]
    U, s, Vt = randomized_svd(op, 4, random_state=3)
    Ud, sd, Vtd = randomized_svd(A, 4, random_state=3)
    np.testing.assert_allclose(s, sd, rtol=1e-13)
    np.testing.assert_allclose(U, Ud, atol=1e-12)
    np.testing.assert_allclose(Vt, Vtd, atol=1e-12)
    # and against the exact SVD (A has a flat spectrum: n_iter 7 still leaves ~1e-3)
    se = np.linalg.svd(A, compute_uv=False)
    np.testing.assert_allclose(s, se[:4], rtol=5e-2)


def test_product_check_adds_no_products():
    # the shape check looks at the products that are made anyway, once each way
    duck = Duck(A30)
    randomized_svd(duck, 3, n_iter=2, random_state=0)
    assert duck.calls == {"A": 3, "A.T": 3}


BAD_FLIP = [
    ("1-D", np.ones(3), np.ones(3), ValueError, r"^u must be 2-D, got an array with shape \(3,\)$"),
    ("vt-1-D", np.ones((3, 2)), np.ones(2), ValueError,
     r"^vt must be 2-D, got an array with shape \(2,\)$"),
    ("k-mismatch", np.ones((3, 2)), np.ones((4, 5)), ValueError,
     r"^u and vt must be \(m, k\) and \(k, n\) with the same k, got shapes \(3, 2\) and "
     r"\(4, 5\)$"),
    ("no-rows", np.ones((0, 2)), np.ones((2, 5)), ValueError,
     r"^u must have at least 1 row .*got shape \(0, 2\)$"),
    ("nan", np.array([[1.0, np.nan]]), np.ones((2, 5)), ValueError,
     r"^u must contain only finite values$"),
    ("strings", np.array([["a"]]), np.ones((1, 5)), TypeError,
     r"^u must be an array of real numbers, got dtype <U1$"),
    ("complex", np.ones((3, 2), complex), np.ones((2, 5)), TypeError,
     r"^u must be an array of real numbers, got dtype complex128$"),
]


@pytest.mark.parametrize("u,vt,exc,match", [b[1:] for b in BAD_FLIP],
                         ids=[b[0] for b in BAD_FLIP])
def test_svd_flip_bad_arguments(u, vt, exc, match):
    with pytest.raises(exc, match=match):
        svd_flip(u, vt)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_svd_flip_valid_input_unchanged(dtype):
    U, s, Vt = np.linalg.svd(A30, full_matrices=False)
    U, Vt = -U.astype(dtype), -Vt.astype(dtype)
    U2, Vt2 = svd_flip(U, Vt)
    # the reference convention, written out: the largest |entry| of each column positive
    signs = np.sign(U[np.argmax(np.abs(U), axis=0), np.arange(U.shape[1])])
    np.testing.assert_array_equal(U2, U * signs)
    np.testing.assert_array_equal(Vt2, Vt * signs[:, None])
    assert U2.dtype == dtype and Vt2.dtype == dtype
    np.testing.assert_allclose((U2 * s) @ Vt2, A30, atol=1e-4 if dtype == np.float32 else 1e-12)


def test_svd_flip_integer_input_and_no_columns():
    u, vt = svd_flip(np.array([[1, -3], [2, 1]]), np.array([[1, 1], [1, 2]]))
    np.testing.assert_array_equal(u, [[1.0, 3.0], [2.0, -1.0]])
    np.testing.assert_array_equal(vt, [[1.0, 1.0], [-1.0, -2.0]])
    u, vt = svd_flip(np.ones((3, 0)), np.ones((0, 5)))  # k = 0: nothing to flip
    assert u.shape == (3, 0) and vt.shape == (0, 5)


BAD_SVD_ARGS = [
    (dict(k=0), ValueError, r"^k must be an int in \[1, min\(A.shape\)\] = \[1, 20\], got 0$"),
    (dict(k=-2), ValueError, r"^k must be an int in \[1, min\(A.shape\)\] = \[1, 20\], got -2$"),
    (dict(k=21), ValueError, r"^k must be an int in \[1, min\(A.shape\)\] = \[1, 20\], got 21$"),
    (dict(k=2.0), TypeError, r"^k must be an int in \[1, min\(A.shape\)\] = \[1, 20\], got 2.0$"),
    (dict(k=True), TypeError, r"^k must be an int in .*, got True$"),
    (dict(k=3, oversamples=-1), ValueError, r"^oversamples must be an int >= 0, got -1$"),
    (dict(k=3, oversamples=1.5), TypeError, r"^oversamples must be an int >= 0, got 1.5$"),
    (dict(k=3, n_iter=-1), ValueError, r"^n_iter must be 'auto' or an int >= 0, got -1$"),
    (dict(k=3, n_iter=2.0), TypeError, r"^n_iter must be 'auto' or an int >= 0, got 2.0$"),
    (dict(k=3, n_iter=None), TypeError, r"^n_iter must be 'auto' or an int >= 0, got None$"),
    (dict(k=3, n_iter="AUTO"), ValueError, r"^n_iter must be 'auto' or an int >= 0, got 'AUTO'$"),
    (dict(k=3, random_state=-1), ValueError,
     r"^random_state must be None, an int >= 0, a numpy Generator or RandomState, got -1$"),
    (dict(k=3, random_state=1.5), TypeError,
     r"^random_state must be None, an int >= 0, a numpy Generator or RandomState, got 1.5$"),
]


@pytest.mark.parametrize("kw,exc,match", BAD_SVD_ARGS)
def test_randomized_svd_bad_arguments(kw, exc, match):
    with pytest.raises(exc, match=match):
        randomized_svd(A30, **kw)


def test_randomized_range_finder_size_range():
    with pytest.raises(ValueError, match=r"^size must be an int in \[1, min\(A.shape\)\] = "
                                         r"\[1, 20\], got 0$"):
        randomized_range_finder(A30, 0)


@pytest.mark.parametrize("kw", [dict(k=20), dict(k=3, n_iter=0), dict(k=3, oversamples=0),
                                dict(k=3, random_state=np.random.default_rng(5))])
def test_randomized_svd_valid_arguments_unchanged(kw):
    U, s, Vt = randomized_svd(A30, **kw)
    k = kw["k"]
    assert U.shape == (30, k) and Vt.shape == (k, 20)
    np.testing.assert_allclose((U * s) @ Vt if k == 20 else U.T @ U, A30 if k == 20
                               else np.eye(k), atol=1e-10)
    se = np.linalg.svd(A30, compute_uv=False)
    assert np.all(s <= se[:k] * (1 + 1e-12)) and s[0] >= 0.9 * se[0]


# --- Dask: row blocks of unknown size (boolean indexing leaves NaN chunk sizes) ---------


def _filtered(seed=0, dtype=np.float64):
    """(n, 6) counts as a dask array of 4 row blocks; block 1 has no row with x0 > 0."""
    rng = np.random.default_rng(seed)
    Xn = rng.poisson(1.0, size=(100, 6)).astype(dtype)
    Xn[:, 0] += 1
    Xn[25:50, 0] = 0
    Mn = rng.poisson(2.0, size=(100, 3)).astype(dtype)
    return Xn, Mn, Xn[:, 0] > 0


def test_dask_unknown_size_empty_block_is_skipped():
    da = pytest.importorskip("dask.array")
    from sparsecca.linalg import CrossCovariance, GramStats

    Xn, Mn, keep = _filtered()
    X, M = da.from_array(Xn, chunks=(25, 6)), da.from_array(Mn, chunks=(25, 3))
    mask = X[:, 0] > 0
    assert np.isnan(X[mask].chunks[0]).all()
    st = GramStats.from_dask(X[mask])
    known = GramStats.from_dask(X[mask].compute_chunk_sizes())
    assert 0 in X[mask].compute_chunk_sizes().chunks[0]
    # counts: every tree order sums exactly, so the two are identical
    np.testing.assert_array_equal(st.gram.toarray(), known.gram.toarray())
    np.testing.assert_array_equal(st.colsum, known.colsum)
    assert st.n_samples == known.n_samples == keep.sum()
    np.testing.assert_array_equal(st.gram.toarray(), Xn[keep].T @ Xn[keep])
    K = CrossCovariance.from_dask(X[mask], M[mask], center=True)
    Kk = CrossCovariance.from_dask(X[mask].compute_chunk_sizes(),
                                   M[mask].compute_chunk_sizes(), center=True)
    np.testing.assert_array_equal(K.toarray(), Kk.toarray())
    np.testing.assert_allclose(K.toarray(), CrossCovariance(Xn[keep], Mn[keep],
                                                            center=True).toarray(),
                               rtol=1e-13, atol=1e-13)


def test_dask_unknown_size_real_valued_data():
    # real values: the tree adds the same blocks in another order, equal to rounding
    da = pytest.importorskip("dask.array")
    from sparsecca.linalg import GramStats

    Xn = np.random.default_rng(1).standard_normal((100, 6))
    Xn[25:50, 0] = -np.abs(Xn[25:50, 0])
    X = da.from_array(Xn, chunks=(25, 6))
    st = GramStats.from_dask(X[X[:, 0] > 0])
    keep = Xn[:, 0] > 0
    np.testing.assert_allclose(st.gram.toarray(), Xn[keep].T @ Xn[keep], rtol=1e-13)
    np.testing.assert_allclose(st.colsum, Xn[keep].sum(axis=0), rtol=1e-13, atol=1e-13)


def _dask_bad_unknown(case):
    da = pytest.importorskip("dask.array")
    from sparsecca.linalg import CrossCovariance, GramStats

    Xn, Mn, keep = _filtered()
    if case == "all-empty":
        X = da.from_array(Xn, chunks=(25, 6))
        return lambda: GramStats.from_dask(X[X[:, 0] > 100])
    if case == "nan":
        Xn[60, 3] = np.nan  # row 60 is kept: its block (2) has unknown size
        X = da.from_array(Xn, chunks=(25, 6))
        return lambda: GramStats.from_dask(X[X[:, 0] > 0], name="Y")
    X, M = da.from_array(Xn, chunks=(25, 6)), da.from_array(Mn, chunks=(25, 3))
    # different masks, same (unknown) chunk structure: block 1 has 0 rows of X, 25 of M
    return lambda: CrossCovariance.from_dask(X[X[:, 0] > 0], M[X[:, 0] >= 0])


BAD_DASK = [
    ("all-empty", r"^X must have at least 1 row, got none: every row block computed to "
                  r"0 rows$"),
    ("nan", r"^Y row block 2 \(rows unknown until computed\) must contain only finite "
            r"values, got NaN$"),
    ("rows-differ", r"^X row block 1 \(rows unknown until computed\) and M row block 1 "
                    r"\(rows unknown until computed\) must have the same number of rows, "
                    r"got 0 and 25$"),
]


@pytest.mark.parametrize("case,match", BAD_DASK, ids=[b[0] for b in BAD_DASK])
def test_dask_unknown_size_errors(case, match):
    with pytest.raises(ValueError, match=match):
        _dask_bad_unknown(case)()


def test_dask_known_chunks_beside_unknown_ones():
    # X's sizes computed, M's not: compared when the blocks are computed
    da = pytest.importorskip("dask.array")
    from sparsecca.linalg import CrossCovariance

    Xn, Mn, keep = _filtered()
    X, M = da.from_array(Xn, chunks=(25, 6)), da.from_array(Mn, chunks=(25, 3))
    K = CrossCovariance.from_dask(X[X[:, 0] > 0].compute_chunk_sizes(), M[X[:, 0] > 0])
    np.testing.assert_array_equal(K.toarray(), Xn[keep].T @ Mn[keep])


# --- cca_path / fit_path taus, CCAEngine.x_inverse -------------------------------------


def _views():
    from .conftest import count_problem

    return count_problem(120, 12, 6, seed=31)


BAD_TAUS = [
    ("set", {0.3, 0.1}, TypeError,
     r"^taus must be an ordered sequence \(a list, tuple or array\) of floats in \[0, 1\]: "
     r"the results come in its order; got a set \{0.(1|3), 0.(1|3)\}$"),
    ("frozenset", frozenset([0.3]), TypeError, r"^taus must be an ordered sequence .* got a "
                                               r"frozenset frozenset\(\{0.3\}\)$"),
    ("dict", {0.3: "a"}, TypeError, r"^taus must be an ordered sequence .* got a dict"),
    ("dict-keys", {0.3: "a", 0.1: "b"}.keys(), TypeError,
     r"^taus must be an ordered sequence .* got a dict_keys"),
    ("0-d-array", np.array(0.3), TypeError,
     r"^taus must be a non-empty sequence of floats in \[0, 1\], got array\(0.3\)$"),
    ("above-1", [0.1, 1.5], ValueError, r"^taus\[1\] must be in \[0, 1\] .*got 1.5$"),
    ("nan", (0.1, float("nan")), ValueError, r"^taus\[1\] must be in \[0, 1\] .*got nan$"),
    ("empty", np.array([]), ValueError, r"^taus must be a non-empty sequence"),
]


@pytest.mark.parametrize("taus,exc,match", [b[1:] for b in BAD_TAUS],
                         ids=[b[0] for b in BAD_TAUS])
def test_cca_path_bad_taus(taus, exc, match):
    from sparsecca.linalg import SparseCCA, cca_path

    # X and Y are not even looked at: taus are checked before any work
    with pytest.raises(exc, match=match):
        cca_path("not a matrix", None, taus, 2)
    X, Y = _views()
    with pytest.raises(exc, match=match):
        SparseCCA(2, solver="dense").fit_path(X, Y, taus)


@pytest.mark.parametrize("taus", [[0.3, 0.1], (0.3, 0.1), np.array([0.3, 0.1]),
                                  (t for t in (0.3, 0.1))])
def test_cca_path_ordered_taus_unchanged(taus):
    from sparsecca.linalg import SparseCCA, cca_path

    X, Y = _views()
    res = cca_path(X, Y, taus, 2, solver="dense")
    for r, tau in zip(res, (0.3, 0.1)):
        ref = SparseCCA(2, tau=tau, solver="dense").fit(X, Y)
        np.testing.assert_allclose(r.correlations, ref.correlations_, rtol=1e-12)


BAD_X_INVERSE = [
    (dict(tail="x"), ValueError,
     r"^tail must be one of \('diagonal', 'identity', 'auto'\), got 'x'$"),
    (dict(tail=None), ValueError, r"^tail must be one of .*, got None$"),
    (dict(rank=0), ValueError, r"^rank must be an int >= 1, got 0$"),
    (dict(rank=2.5), TypeError, r"^rank must be an int >= 1, got 2.5$"),
]


@pytest.mark.parametrize("solver", ["dense", "randomized", "iterative"])
@pytest.mark.parametrize("kw,exc,match", BAD_X_INVERSE)
def test_x_inverse_checks_rank_and_tail_for_every_solver(solver, kw, exc, match):
    from sparsecca.linalg import CCAEngine

    X, Y = _views()
    engine = CCAEngine(X, Y, solver=solver, random_state=0)
    with pytest.raises(exc, match=match):
        engine.x_inverse(0.3, **kw)


@pytest.mark.parametrize("tail", ["auto", "diagonal", "identity"])
def test_x_inverse_valid_tail_unchanged_on_dense(tail):
    # the dense inverse ignores rank and tail: C^-1 as before, against numpy
    from sparsecca.linalg import CCAEngine

    X, Y = _views()
    engine = CCAEngine(X, Y, solver="dense")
    inv = engine.x_inverse(0.3, rank=4, tail=tail)
    Xd = X.toarray()
    C = 0.7 * Xd.T @ Xd + 0.3 * np.eye(X.shape[1])
    B = np.random.default_rng(0).standard_normal((X.shape[1], 3))
    np.testing.assert_allclose(inv.matmat(B), np.linalg.solve(C, B), rtol=1e-10)


# -- n_components against the distinct columns of X -------------------------------------------

@pytest.mark.parametrize("solver", ["dense", "randomized", "iterative"])
def test_components_beyond_distinct_columns_refused_in_the_users_terms(solver):
    """X with 3 distinct columns of 6: the engine merges them, so 5 components were refused
    inside it with 'd1 = 3', a d1 the user never passed."""
    from sparsecca.linalg import CCAEngine, SparseCCA

    rng = np.random.default_rng(0)
    X3 = rng.normal(size=(50, 3))
    X, Y = np.hstack([X3, X3]), rng.normal(size=(50, 8))
    pattern = (r"^n_components=5 exceeds min\(d1, d2\) = 3 counting identical columns of X "
               r"once: X has 3 distinct columns of 6 \(the others repeat one of them and are "
               r"merged exactly\); give n_components <= 3$")
    with pytest.raises(ValueError, match=pattern):
        SparseCCA(5, tau=0.5, solver=solver, random_state=0).fit(X, Y)
    with pytest.raises(ValueError, match=pattern):
        SparseCCA(5, tau=0.5, solver=solver, random_state=0).fit_path(X, Y, [0.5])
    engine = CCAEngine(X, Y, solver=solver, random_state=0)
    with pytest.raises(ValueError, match=pattern):
        engine.solve(engine.Y, 0.5, 5)
    # the advice works
    model = SparseCCA(3, tau=0.5, solver=solver, random_state=0).fit(X, Y)
    assert model.correlations_.shape == (3,)
