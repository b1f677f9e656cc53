"""Covariance builders: operators equal the dense formulas, streaming equals one matrix."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import sparsecca.linalg._gram as gram_mod
from sparsecca.linalg import (
    CentringPrecisionWarning,
    CrossCovariance,
    GramStats,
    centred_projection,
    column_mean,
)
from sparsecca.linalg._gram import RegularizedGram
from sparsecca.linalg._inverse import GramFactor
from sparsecca.linalg._precision import in_precision
from sparsecca.linalg._thresholds import Thresholds, applied

from .conftest import count_problem, covariances


def _inputs(fmt, dtype, seed=0):
    X, M = count_problem(60, 23, 7, seed=seed, dtype=dtype)
    if fmt == "dense":
        return X.toarray(), M.toarray()
    return X, M


def _tol(dtype):
    # counts up to ~10: relative rounding of a sum of n products, scaled by eps
    return 200 * np.finfo(dtype).eps


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("tau", [0.0, 0.3, 1.0])
def test_regularized_gram_matches_dense(dtype, fmt, center, tau):
    X, M = _inputs(fmt, dtype)
    C = RegularizedGram(X, tau, center=center)
    Cxx, _, _ = covariances(X, M, tau, center=center)
    assert C.shape == (23, 23) and C.dtype == dtype
    rng = np.random.default_rng(1)
    V = rng.standard_normal((23, 4))
    scale = np.abs(Cxx).max()
    np.testing.assert_allclose(C @ V, Cxx @ V, rtol=_tol(dtype), atol=_tol(dtype) * scale * 5)
    np.testing.assert_allclose(C @ V[:, 0], Cxx @ V[:, 0], rtol=_tol(dtype),
                               atol=_tol(dtype) * scale * 5)
    np.testing.assert_allclose(C.T @ V, Cxx @ V, rtol=_tol(dtype), atol=_tol(dtype) * scale * 5)
    np.testing.assert_allclose(C.toarray(), Cxx, rtol=_tol(dtype), atol=_tol(dtype) * scale)
    np.testing.assert_allclose(C.diagonal(), np.diag(Cxx), rtol=_tol(dtype),
                               atol=_tol(dtype) * scale)


def test_centering_never_densifies():
    X, _ = count_problem(50, 40, 5, seed=3)
    C = RegularizedGram(X, 0.2, center=True)
    assert sp.issparse(C._src.X) and C._src.X.nnz == X.nnz
    np.testing.assert_allclose(C.mean_, X.toarray().mean(axis=0))


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_streamed_blocks_equal_one_matrix(center, dtype):
    X, M = count_problem(97, 31, 9, seed=5, dtype=dtype)
    cuts = [0, 10, 11, 50, 97]
    blocks = [X[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    C_one = RegularizedGram(X, 0.4, center=center)
    C_blk = RegularizedGram.from_blocks(iter(blocks), 0.4, center=center)
    assert C_blk.n_samples == 97 and C_blk.dtype == dtype
    V = np.random.default_rng(0).standard_normal((31, 3))
    np.testing.assert_allclose(C_blk @ V, C_one @ V, rtol=_tol(dtype), atol=_tol(dtype) * 100)
    np.testing.assert_allclose(C_blk.toarray(), C_one.toarray(), rtol=_tol(dtype),
                               atol=_tol(dtype) * 100)
    pairs = [(X[a:b], M[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    K_one = CrossCovariance(X, M, center=center)
    K_blk = CrossCovariance.from_blocks(iter(pairs), center=center)
    W = np.random.default_rng(1).standard_normal((9, 2))
    np.testing.assert_allclose(K_blk @ W, K_one @ W, rtol=1e-10, atol=1e-9)
    U = np.random.default_rng(2).standard_normal((31, 2))
    np.testing.assert_allclose(K_blk.T @ U, K_one.T @ U, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("center", [False, True])
def test_cross_covariance(fmt, center):
    X, M = _inputs(fmt, np.float64, seed=2)
    K = CrossCovariance(X, M, center=center)
    _, _, Cxy = covariances(X, M, 0.5, center=center)
    assert K.shape == (23, 7)
    V = np.random.default_rng(0).standard_normal((7, 3))
    U = np.random.default_rng(1).standard_normal((23, 3))
    # products from the factors' rows, then from the dense X^T M that toarray() keeps
    for cached in (False, True):
        assert (K._dense is not None) == cached
        np.testing.assert_allclose(K @ V, Cxy @ V, rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(K.T @ U, Cxy.T @ U, rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(K.H @ U[:, 0], Cxy.T @ U[:, 0], rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(K.toarray(), Cxy, rtol=1e-12, atol=1e-10)
    S = K.tosparse()
    assert sp.issparse(S)
    u, v = K.rank_one()
    np.testing.assert_allclose(S.toarray() - np.outer(u, v), Cxy, rtol=1e-12, atol=1e-10)
    # a copy by default; copy=False is the operator's own (read-only by contract) matrix
    assert K.tosparse(copy=False) is K.tosparse(copy=False)
    assert S is not K.tosparse(copy=False)


def test_gram_stats_accumulation():
    X, _ = count_problem(40, 12, 3, seed=7)
    st = GramStats.from_blocks([X[:13], X[13:].toarray()])
    np.testing.assert_allclose(st.gram.toarray(), (X.T @ X).toarray())
    np.testing.assert_allclose(st.colsum, np.asarray(X.sum(axis=0)).ravel())
    assert st.n_samples == 40 and st.n_features == 12


@pytest.mark.parametrize("center", [False, True])
def test_empty_row_blocks_add_nothing(center):
    """A stream's empty chunks (a filter that kept no row) are skipped, as the Dask path
    skips empty chunks: the same operators as the stream without them."""
    X, M = count_problem(40, 12, 3, seed=8)
    empty_x, empty_m = sp.csr_matrix((0, 12)), np.zeros((0, 3))
    C = RegularizedGram.from_blocks([empty_x, X[:15], empty_x, X[15:]], 0.3, center=center)
    C_ref = RegularizedGram(X, 0.3, center=center)
    assert C.n_samples == 40
    np.testing.assert_allclose(C.toarray(), C_ref.toarray(), rtol=0, atol=1e-13)
    K = CrossCovariance.from_blocks([(empty_x, empty_m), (X[:15], M[:15]), (X[15:], M[15:]),
                                     (empty_x, empty_m)], center=center)
    V = np.random.default_rng(0).standard_normal((3, 2))
    np.testing.assert_allclose(K @ V, CrossCovariance(X, M, center=center) @ V,
                               rtol=0, atol=1e-12)


def test_toarray_refuses_large_dimensions():
    X = sp.random(5, 30, density=0.2, format="csr", random_state=0)
    with pytest.raises(ValueError, match=r"d must be <= max_dim=10, pass a larger max_dim"):
        RegularizedGram(X, 0.5).toarray(max_dim=10)


def test_block_errors():
    with pytest.raises(ValueError, match=r"blocks must yield at least one row block with "
                                         r"rows, got none"):
        GramStats.from_blocks([])
    with pytest.raises(ValueError, match=r"blocks must yield at least one row block with "
                                         r"rows, got only blocks of 0 rows"):
        GramStats.from_blocks([np.ones((0, 4)), sp.csr_matrix((0, 4))])
    with pytest.raises(ValueError, match=r"blocks\[1\] must have 4 columns like the first "
                                         r"block, got 3"):  # an empty block is checked too
        GramStats.from_blocks([np.ones((2, 4)), np.ones((0, 3))])
    with pytest.raises(ValueError, match=r"pairs must yield at least one \(X_block, M_block\) "
                                         r"pair with rows, got only pairs of 0 rows"):
        CrossCovariance.from_blocks([(np.ones((0, 4)), np.ones((0, 2)))])
    with pytest.raises(ValueError, match=r"pairs\[1\]\[1\] must have the same number of rows "
                                         r"as pairs\[1\]\[0\]"):
        CrossCovariance.from_blocks([(np.ones((2, 4)), np.ones((2, 2))),
                                     (np.ones((0, 4)), np.ones((1, 2)))])
    with pytest.raises(ValueError, match=r"pairs\[1\]\[1\] must have 2 columns like "
                                         r"pairs\[0\]\[1\], got 3"):
        CrossCovariance.from_blocks([(np.ones((2, 4)), np.ones((2, 2))),
                                     (np.ones((0, 4)), np.ones((0, 3)))])
    with pytest.raises(ValueError, match=r"blocks\[1\] must have 4 columns like the first "
                                         r"block, got 5"):
        GramStats.from_blocks([np.ones((2, 4)), np.ones((2, 5))])
    with pytest.raises(ValueError, match=r"pairs must yield at least one"):
        CrossCovariance.from_blocks([])
    with pytest.raises(TypeError, match=r"pairs\[0\] must be an \(X_block, M_block\) pair, "
                                        r"got int"):
        CrossCovariance.from_blocks([5])


@pytest.mark.parametrize("sparse", [False, True])
def test_centred_dual_gram_and_dual_eigh(sparse):
    """Xc Xc^T (the dual Gram) and the dual SVD of centred data against explicit centring;
    the constant term is (mu^T mu) 1 1^T (it was n mu^T mu: a wrong dual basis for every
    centred n < d dense solve)."""
    from sparsecca.linalg._gram import _DataMatrix
    from sparsecca.linalg._inverse import GramFactor

    rng = np.random.default_rng(4)
    Xd = rng.poisson(0.7, size=(30, 70)).astype(float)
    X = sp.csr_matrix(Xd) if sparse else Xd
    Xc = Xd - Xd.mean(axis=0)
    K = _DataMatrix(X, center=True).dense_outer_gram()
    np.testing.assert_allclose(K, Xc @ Xc.T, rtol=0, atol=1e-12 * np.abs(Xc @ Xc.T).max())
    U, lam, V = GramFactor(X, center=True).dual_eigh()
    assert lam.size == 29  # centring removes one dimension
    np.testing.assert_allclose(V.T @ V, np.eye(29), atol=1e-10)
    np.testing.assert_allclose((U * np.sqrt(lam)) @ V.T, Xc, atol=1e-10)


@pytest.mark.parametrize("xfmt,mfmt", [("csr", "csr"), ("csr", "dense"), ("dense", "csr"),
                                       ("dense", "dense")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_product_is_the_stored_part_of_x_transpose_m_and_cached_read_only(
        xfmt, mfmt, dtype):
    """dense_product is the part P of C_xy = P - u v^T that the operator stores: X^T M of
    the factors as given, except that a centred dense factor enters centred (its float64
    copy); toarray is Xc^T Mc either way."""
    X, M = count_problem(60, 23, 7, seed=9, dtype=dtype)
    Xd, Md = X.toarray().astype(np.float64), M.toarray().astype(np.float64)
    ref = Xd.T @ Md  # the slow reference (uncentred)
    Xs = Xd - Xd.mean(axis=0) if xfmt == "dense" else Xd
    Ms = Md - Md.mean(axis=0) if mfmt == "dense" else Md
    stored = Xs.T @ Ms
    X = X.toarray() if xfmt == "dense" else X
    M = M.toarray() if mfmt == "dense" else M
    K = CrossCovariance(X, M, center=True)
    D = K.dense_product()
    assert D.dtype == np.float64 and D.shape == (23, 7)
    np.testing.assert_allclose(D, stored, rtol=1e-12, atol=1e-10)
    assert K.dense_product() is D and not D.flags.writeable  # kept, and never written
    with pytest.raises(ValueError, match="read-only"):
        D[0, 0] = 1.0
    # toarray subtracts the centring term from a fresh array: Xc^T Mc
    u, v = K.rank_one()
    np.testing.assert_allclose(K.toarray(), stored - np.outer(u, v), rtol=1e-12, atol=1e-10)
    centred = (Xd - Xd.mean(axis=0)).T @ Md
    np.testing.assert_allclose(K.toarray(), centred, rtol=0,
                               atol=1e-12 * np.abs(ref).max())
    np.testing.assert_array_equal(K.dense_product(), D)
    # a single-precision copy (LOBPCG's working precision) is kept beside it, read-only
    S = K._dense_in(np.float32)
    assert S.dtype == np.float32 and not S.flags.writeable
    assert K._dense_in(np.float32) is S and K._dense_in(np.float64) is D
    np.testing.assert_array_equal(S, D.astype(np.float32))
    # beyond the cache size it is formed again on each call, equal
    with applied(Thresholds(dense_cross_cache_bytes=0)):
        K2 = CrossCovariance(X, M)
        a, b = K2.dense_product(), K2.dense_product()
        assert a is not b
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, ref, rtol=1e-12, atol=1e-10)  # uncentred: X^T M
        assert K2._dense_in(np.float32) is not K2._dense_in(np.float32)
        # accumulated from row blocks: the same array
        Kb = CrossCovariance.from_blocks([(X[:25], M[:25]), (X[25:], M[25:])])
        np.testing.assert_allclose(Kb.dense_product(), ref, rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("xdtype", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
@pytest.mark.parametrize("center", [False, True])
def test_products_in_single_precision(center, fmt, xdtype, split, set_thresholds):
    """in_precision(op, float32) (LOBPCG's single-precision steps) gives float32 products
    within float32 rounding of the float64 products (times the centring's amplification
    bound); float64 gives the operators themselves.  Sparse factors accumulate in float32 from
    float32 copies of their values (shared index arrays), centred ones too while the bound
    allows; anything else rounds the float64 product."""
    set_thresholds(split_min_flops=1 if split else 10**12)
    X, M = _inputs(fmt, xdtype, seed=4)
    C = RegularizedGram(X, 0.3, center=center)
    K = CrossCovariance(X, M, center=center)
    rng = np.random.default_rng(3)
    V, W, U = (rng.standard_normal((23, 5)), rng.standard_normal((7, 5)),
               rng.standard_normal((23, 5)))
    CV = C.from_gram_image(C.gram_matmat(V), V)  # float64 (C @ V is in X's dtype)
    C32, K32 = in_precision(C, np.float32), in_precision(K, np.float32)
    pairs = [(C32 @ V, CV), (K32 @ W, K @ W), (K32.rmatmat(U), K.T @ U)]
    a_x = C._src.centring_amplification()
    # counts: the mean does not dominate; a dense X is centred explicitly (a_x ~ 1)
    assert (a_x == 1.0) == (not center) if fmt == "csr" else a_x < 1 + 1e-12
    assert a_x < 10
    for got, ref in pairs:
        assert got.dtype == np.float32 and got.shape == ref.shape
        # a sum of ~60 products of counts up to ~10 and normals, each rounded in float32;
        # centred, the rounding of the uncentred product, up to a_x times larger
        np.testing.assert_allclose(got, ref, rtol=0,
                                   atol=a_x * _tol(np.float32) * np.abs(ref).max())
    assert in_precision(C, np.float64) is C and in_precision(K32, np.float64) is K
    np.testing.assert_array_equal(in_precision(C, np.float64) @ V, C @ V)
    assert K.accumulates_single()
    single = fmt == "csr"
    assert (C._src._single is not None) == single
    assert (K._m_single is not None) == single
    if single:
        assert np.shares_memory(C._src._single_values().indices, C._src.X.indices)
        assert C._src._single_values().dtype == np.float32
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got int64"):
        in_precision(C, np.int64)
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got float16"):
        in_precision(K, np.float16)


def test_stored_cross_product_in_single_precision():
    """A CrossCovariance with a stored X^T M: an accumulated sparse one gives its float64
    products rounded to float32; a kept dense one goes through its float32 copy."""
    X, M = _inputs("csr", np.float64, seed=6)
    # blocks that float32 holds exactly (the cast operator rounds its operand first)
    W = np.random.default_rng(0).standard_normal((7, 3)).astype(np.float32).astype(float)
    U = np.random.default_rng(1).standard_normal((23, 3)).astype(np.float32).astype(float)
    K = CrossCovariance.from_blocks([(X[:30], M[:30]), (X[30:], M[30:])])
    for V, transpose in ((W, False), (U, True)):
        ref = K.T @ V if transpose else K @ V
        K32 = in_precision(K, np.float32)
        got = K32.rmatmat(V) if transpose else K32.matmat(V)
        assert got.dtype == np.float32 and K._dense is None and K._m_single is None
        np.testing.assert_array_equal(got, ref.astype(np.float32))
    K = CrossCovariance(X, M)
    K.dense_product()  # kept (small): products go through it
    for V, transpose in ((W, False), (U, True)):
        ref = K.T @ V if transpose else K @ V
        K32 = in_precision(K, np.float32)
        got = K32.rmatmat(V) if transpose else K32.matmat(V)
        assert got.dtype == np.float32 and K._m_single is None
        # through the kept float32 copy of X^T M (minus the rank-one term)
        np.testing.assert_array_equal(
            got, K._stored_apply(V.astype(np.float32), transpose, K._dense_in(np.float32)))
        np.testing.assert_allclose(got, ref, rtol=0,
                                   atol=_tol(np.float32) * np.abs(ref).max())


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_centring_amplification_bounds_the_norm_ratio(fmt):
    """centring_amplification bounds ||X^T X|| / ||Xc^T Xc|| from above (checked with
    numpy.linalg.norm), is 1 uncentred, and inf for a constant nonzero X."""
    X, _ = _inputs(fmt, np.float64, seed=2)
    Xd = X.toarray() if sp.issparse(X) else X
    Xc = Xd - Xd.mean(axis=0)
    ratio = np.linalg.norm(Xd.T @ Xd, 2) / np.linalg.norm(Xc.T @ Xc, 2)
    amp = gram_mod._DataMatrix(X, center=True).centring_amplification()
    if fmt == "dense":  # centred explicitly: only the rounding of its means is corrected
        assert amp < 1 + 1e-12
        amp = gram_mod._DataMatrix(sp.csr_matrix(X), center=True).centring_amplification()
    assert ratio <= amp * (1 + 1e-12) and amp < 10 * ratio
    assert gram_mod._DataMatrix(X, center=False).centring_amplification() == 1.0
    # shifted counts: the mean dominates the centred data, the bound too (stored sparse:
    # a dense X is centred explicitly, and its products then have nothing to amplify)
    shifted = Xd + 50.0
    ratio = (np.linalg.norm(shifted.T @ shifted, 2)
             / np.linalg.norm(Xc.T @ Xc, 2))
    amp = gram_mod._DataMatrix(sp.csr_matrix(shifted), center=True).centring_amplification()
    assert ratio <= amp * (1 + 1e-12) and amp > Thresholds().single_centred_max_amplification
    assert gram_mod._DataMatrix(shifted, center=True).centring_amplification() < 1 + 1e-12
    with pytest.warns(CentringPrecisionWarning, match="keeps about 0 significant digits"):
        ones = gram_mod._DataMatrix(sp.csr_matrix(np.ones((5, 3))), center=True)
    assert ones.centring_amplification() == np.inf
    zeros = sp.csr_matrix(np.zeros((5, 3)))
    assert gram_mod._DataMatrix(zeros, center=True).centring_amplification() == 1.0


def test_dense_views_are_centred_explicitly_and_keep_their_means():
    """A dense X (and M) is centred in a float64 copy: with offsets of 1e6 over unit spread
    the operators equal the explicitly centred ones to rounding of the data (the rank-one
    correction alone left Xc^T Xc ~1e-4 off), mean_ is the data's, the input is untouched."""
    rng = np.random.default_rng(7)
    X0 = rng.standard_normal((400, 9))
    M0 = rng.standard_normal((400, 4))
    X, M = X0 + 1e6, M0 - 1e6
    keep = (X.copy(), M.copy())
    Xc, Mc = X - X.mean(axis=0), M - M.mean(axis=0)
    C = RegularizedGram(X, 0.2, center=True)
    ref = 0.8 * Xc.T @ Xc + 0.2 * np.eye(9)
    np.testing.assert_allclose(C.toarray(), ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    np.testing.assert_allclose(C.mean_, X.mean(axis=0), rtol=1e-15)
    K = CrossCovariance(X, M, center=True)
    np.testing.assert_allclose(K.toarray(), Xc.T @ Mc, rtol=0,
                               atol=1e-12 * np.abs(Xc.T @ Mc).max())
    V = rng.standard_normal((4, 3))
    np.testing.assert_allclose(K @ V, Xc.T @ (Mc @ V), rtol=0,
                               atol=1e-12 * np.abs(Xc.T @ (Mc @ V)).max())
    W = rng.standard_normal((9, 2))
    P = centred_projection(X, W, X.mean(axis=0))
    np.testing.assert_allclose(P, Xc @ W, rtol=0, atol=1e-12 * np.abs(Xc @ W).max())
    np.testing.assert_array_equal(X, keep[0])
    np.testing.assert_array_equal(M, keep[1])


def test_implicit_centring_that_cancels_digits_warns():
    """A sparse (or streamed) view whose means dominate its spread is still centred
    implicitly (densifying it is not an option), with a CentringPrecisionWarning that says
    how many digits are left; count data gives none."""
    X, _ = _inputs("csr", np.float64, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RegularizedGram(X, 0.3, center=True)
        RegularizedGram.from_blocks([X[:30], X[30:]], 0.3, center=True)
    shifted = sp.csr_matrix(X.toarray() + 1e6)
    with pytest.warns(CentringPrecisionWarning, match=r"sparse X .* keeps about \d+ "
                                                      r"significant digits"):
        RegularizedGram(shifted, 0.3, center=True)
    with pytest.warns(CentringPrecisionWarning, match="centre X yourself"):
        RegularizedGram.from_blocks([shifted[:30], shifted[30:]], 0.3, center=True)
    with pytest.warns(CentringPrecisionWarning, match="sparse Y"):
        GramFactor(shifted, center=True, name="Y")
    with warnings.catch_warnings():  # uncentred: nothing cancels
        warnings.simplefilter("error")
        RegularizedGram(shifted, 0.3)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dense"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_column_sums_accumulate_in_float64(fmt, dtype):
    """column_sums / column_mean against math.fsum of each column: scipy's
    ``sum(axis=0, dtype=float64)`` of float32 sparse data accumulates in float32."""
    import math

    rng = np.random.default_rng(1)
    A = np.where(rng.random((20_000, 5)) < 0.6, rng.random((20_000, 5)) * 7 + 1e3, 0.0)
    A[:, 3] = 0.0  # an empty column
    A = A.astype(dtype)
    X = A if fmt == "dense" else sp.csr_matrix(A).asformat(fmt)
    A64 = A.astype(np.float64)
    sums = [math.fsum(A64[:, j]) for j in range(5)]
    squares = [math.fsum(A64[:, j] ** 2) for j in range(5)]
    # float64 accumulation of 12,000 terms: ~sqrt(n) eps; float32 would be ~1e-4 off
    np.testing.assert_allclose(gram_mod.column_sums(X), sums, rtol=1e-12)
    np.testing.assert_allclose(gram_mod.column_sums(X, squares=True), squares, rtol=1e-12)
    np.testing.assert_allclose(column_mean(X), np.array(sums) / 20_000, rtol=1e-12)


@pytest.mark.parametrize("shift", ["x", "m"])
def test_centred_products_with_a_dominant_mean_stay_float64(shift):
    """Where the mean dominates X (or M), float32 products are the float64 ones rounded (no
    float32 accumulation): through the factors, and through a kept dense X^T M."""
    X, M = _inputs("csr", np.float64, seed=5)
    # a column of large, nearly constant counts: X^T X is ~1e4 times Xc^T Xc
    big = sp.csr_matrix(300.0 + np.arange(X.shape[0], dtype=np.float64)[:, None] % 2)
    X, M = (sp.hstack([X, big]).tocsr(), M) if shift == "x" else (X, sp.hstack([M, big]).tocsr())
    C = RegularizedGram(X, 0.3, center=True)
    K = CrossCovariance(X, M, center=True)
    assert not K.accumulates_single()
    assert C._src.accumulates_single(np.float32) == (shift == "m")
    rng = np.random.default_rng(8)
    # blocks that float32 holds exactly (the cast operator rounds its operand first)
    W = rng.standard_normal((M.shape[1], 4)).astype(np.float32).astype(float)
    U = rng.standard_normal((X.shape[1], 4)).astype(np.float32).astype(float)
    for _ in range(2):  # the factored products, then through the kept dense X^T M
        K32 = in_precision(K, np.float32)
        np.testing.assert_array_equal(K32 @ W, (K @ W).astype(np.float32))
        np.testing.assert_array_equal(K32.rmatmat(U), (K.T @ U).astype(np.float32))
        assert K._m_single is None
        K.dense_product()
    if shift == "x":
        U32 = U.astype(np.float32)  # the cast operator works on the block in its dtype
        CV = C.from_gram_image(C.gram_matmat(U32).astype(np.float32), U32)
        np.testing.assert_array_equal(in_precision(C, np.float32) @ U, CV)
        assert C._src._single is None
    # accumulated from row blocks, centred: no column norms, float64 rounded
    Kb = CrossCovariance.from_blocks([(X[:30], M[:30]), (X[30:], M[30:])], center=True)
    assert not Kb.accumulates_single()
    assert CrossCovariance.from_blocks([(X, M)]).accumulates_single()


def test_operators_of_the_engines_data_are_not_checked_again(monkeypatch):
    """Validation runs at the public entry points only: built from the engine's own data (a
    _DataMatrix, checked when the engine was fitted; RegularizedGram through its private
    _trusted path) the operators do not run check_tau / check_matrix again; from a user's
    matrix they do."""
    import sparsecca.linalg._cross as cross_mod

    X, M = _inputs("csr", np.float64, seed=1)
    data = gram_mod._DataMatrix(X, center=True)
    calls = []

    def counted(check):
        def run(*args, **kwargs):
            calls.append(check.__name__)
            return check(*args, **kwargs)
        return run

    monkeypatch.setattr(gram_mod, "check_tau", counted(gram_mod.check_tau))
    monkeypatch.setattr(cross_mod, "check_matrix", counted(cross_mod.check_matrix))
    C = RegularizedGram._trusted(data, 0.3)
    K = CrossCovariance(data, M, center=True)
    assert calls == []
    np.testing.assert_allclose(C.toarray(), RegularizedGram(X, 0.3, center=True).toarray(),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(K.toarray(), CrossCovariance(X, M, center=True).toarray(),
                               rtol=1e-12, atol=1e-12)
    assert calls == ["check_tau", "check_matrix", "check_matrix"]
    with pytest.raises(ValueError, match="center"):
        CrossCovariance(data, M, center=False)
