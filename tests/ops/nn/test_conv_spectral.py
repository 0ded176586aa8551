"""Stride-1 convolutions through products of spectra (minitf.ops.nn.conv_spectral).

Expected values: the convolution and both its gradients written here in numpy
by the definition (one product per filter tap over the zero-padded input),
with TF's SAME padding (``(k - 1) // 2`` before, the rest after).
"""

import numpy as np
import pytest

import minitf as tf
from minitf.ops.nn import conv_kernels, conv_spectral

pytestmark = pytest.mark.timeout(60)

ONES = (1, 1, 1, 1)


def _pads(k, padding):
    return ((k - 1) // 2, k - 1 - (k - 1) // 2) if padding == "SAME" else (0, 0)


def _padded(x, kh, kw, padding):
    return np.pad(x, ((0, 0), _pads(kh, padding), _pads(kw, padding), (0, 0)))


def _output_shape(x_shape, w_shape, padding):
    kh, kw = w_shape[:2]
    oh = x_shape[1] + sum(_pads(kh, padding)) - kh + 1
    ow = x_shape[2] + sum(_pads(kw, padding)) - kw + 1
    return (x_shape[0], oh, ow, w_shape[3])


def _reference(x, w, g, padding):
    """The output, input gradient and filter gradient, tap by tap."""
    kh, kw = w.shape[:2]
    xp = _padded(x, kh, kw, padding)
    oh, ow = g.shape[1:3]
    y = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    dxp, dw = np.zeros(xp.shape), np.zeros(w.shape)
    for i in range(kh):
        for j in range(kw):
            window = xp[:, i : i + oh, j : j + ow]
            y += window @ w[i, j]
            dxp[:, i : i + oh, j : j + ow] += g @ w[i, j].T
            dw[i, j] = np.einsum("nabc,nabo->co", window, g)
    top, left = _pads(kh, padding)[0], _pads(kw, padding)[0]
    dx = dxp[:, top : top + x.shape[1], left : left + x.shape[2]]
    return y, dx, dw


def _transforms(x_shape, w_shape, padding, dtype):
    kh, kw = w_shape[:2]
    out = _output_shape(x_shape, w_shape, padding)[1:3]
    pads = (_pads(kh, padding)[0], _pads(kw, padding)[0])
    return conv_spectral.transforms(x_shape[1:3], (kh, kw), out, pads, np.dtype(dtype))


@pytest.mark.parametrize(
    "x_shape, w_shape, padding",
    [
        ((3, 7, 9, 4), (3, 4, 4, 5), "SAME"),
        ((3, 7, 9, 4), (3, 4, 4, 5), "VALID"),
        ((2, 5, 6, 3), (5, 6, 3, 2), "VALID"),
        ((2, 4, 4, 3), (5, 5, 3, 2), "SAME"),  # the filter is larger than the input
        ((2, 6, 5, 3), (2, 3, 3, 2), "SAME"),  # even sizes: more padding after than before
        ((1, 1, 1, 2), (3, 3, 2, 2), "SAME"),
        ((2, 9, 7, 3), (4, 6, 3, 2), "SAME"),  # shorter periods than the padded sizes
        ((1, 3, 8, 2), (7, 2, 2, 3), "SAME"),
    ],
)
@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_output_and_gradients_match_the_definition(x_shape, w_shape, padding, dtype, rtol):
    rng = np.random.RandomState(0)
    x, w = rng.randn(*x_shape), rng.randn(*w_shape)
    g = rng.randn(*_output_shape(x_shape, w_shape, padding))
    y, dx, dw = _reference(x, w, g, padding)
    t = _transforms(x_shape, w_shape, padding, dtype)
    x, w, g = x.astype(dtype), w.astype(dtype), g.astype(dtype)
    got = [
        conv_spectral.conv2d(x, w, t),
        conv_spectral.conv2d_backprop_input(x_shape, w, g, t),
        conv_spectral.conv2d_backprop_filter(x, w_shape, g, t),
    ]
    for value, expected in zip(got, [y, dx, dw]):
        assert value.dtype == dtype and value.flags.c_contiguous
        np.testing.assert_allclose(value, expected, rtol=0, atol=rtol * np.abs(expected).max())


@pytest.mark.parametrize(
    "size, window, padding, expected",
    [
        (14, 5, "SAME", 16),  # padded 18: the 2 zeros after wrap onto the 2 before
        (14, 4, "SAME", 16),  # 1 before, 2 after
        (9, 4, "VALID", 9),
        (3, 7, "SAME", 6),  # 3 before, 3 after
    ],
)
def test_the_period_leaves_out_the_padding_that_wraps_onto_zeros(size, window, padding, expected):
    before, after = _pads(window, padding)
    out = size + before + after - window + 1
    assert conv_spectral.period(size, window, out, before) == expected
    # By the definition: no read o + t (plus or minus the period) other than
    # o + t itself lands on the input.
    for o in range(out):
        for tap in range(window):
            for wrapped in (o + tap - expected, o + tap + expected):
                assert not before <= wrapped < before + size


def test_the_cnns_second_convolution_goes_the_spectral_way_and_its_first_does_not():
    assert conv_spectral.pays((50, 14, 14, 32), (5, 5, 32, 64), ONES, ONES, (14, 14), np.float32)
    assert not conv_spectral.pays((50, 28, 28, 1), (5, 5, 1, 32), ONES, ONES, (28, 28), np.float32)


def test_few_images_with_many_channels_go_through_im2col():
    # 128 x 128 filters on 4 images: the filters' spectra (612 frequencies each,
    # 80 MB) cost more than im2col's products.
    assert not conv_spectral.pays(
        (4, 32, 32, 128), (3, 3, 128, 128), ONES, ONES, (32, 32), np.float32
    )


@pytest.mark.parametrize(
    "strides, dilations, w_shape, dtype",
    [
        ((1, 2, 2, 1), ONES, (5, 5, 32, 64), np.float32),
        (ONES, (1, 2, 2, 1), (5, 5, 32, 64), np.float32),
        (ONES, ONES, (5, 5, 32, 64), np.float16),
        (ONES, ONES, (5, 5, 32, 64), np.int32),
        (ONES, ONES, (1, 1, 32, 64), np.float32),
        (ONES, ONES, (2, 2, 32, 64), np.float32),
    ],
)
def test_other_convolutions_go_through_im2col(strides, dilations, w_shape, dtype):
    assert not conv_spectral.pays((50, 14, 14, 32), w_shape, strides, dilations, (14, 14), dtype)


def test_conv2d_and_its_gradients_in_a_graph():
    padding = "SAME"
    rng = np.random.RandomState(1)
    x, w = rng.randn(8, 10, 10, 32), rng.randn(5, 5, 32, 48)
    g = rng.randn(*_output_shape(x.shape, w.shape, padding))
    y_ref, dx_ref, dw_ref = _reference(x, w, g, padding)
    assert conv_spectral.pays(x.shape, w.shape, ONES, ONES, g.shape[1:3], np.float64)
    xt, wt = tf.constant(x), tf.constant(w)
    y = tf.nn.conv2d(xt, wt, [1, 1, 1, 1], padding)
    dx, dw = tf.gradients(y, [xt, wt], grad_ys=tf.constant(g))
    with tf.Session() as sess:
        got = sess.run([y, dx, dw])
    for value, expected in zip(got, [y_ref, dx_ref, dw_ref]):
        np.testing.assert_allclose(value, expected, rtol=0, atol=1e-12 * np.abs(expected).max())


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_nan_or_an_infinity_reaches_only_the_windows_that_hold_it(bad):
    rng = np.random.RandomState(2)
    x, w = rng.randn(8, 10, 10, 32), rng.randn(5, 5, 32, 48)
    assert conv_spectral.pays(x.shape, w.shape, ONES, ONES, (10, 10), np.float64)
    x[3, 4, 6, 1] = bad
    g = rng.randn(*_output_shape(x.shape, w.shape, "SAME"))
    expected = _reference(x, w, g, "SAME")
    with tf.Session() as sess:
        xt, wt = tf.constant(x), tf.constant(w)
        y = tf.nn.conv2d(xt, wt, [1, 1, 1, 1], "SAME")
        got = sess.run([y, tf.gradients(y, wt, grad_ys=tf.constant(g))[0]])
    for value, reference in zip(got, [expected[0], expected[2]]):
        np.testing.assert_array_equal(np.isnan(value), np.isnan(reference))
        np.testing.assert_array_equal(np.isinf(value), np.isinf(reference))
    assert np.isfinite(got[0][[0, 1, 2, 4, 5, 6, 7]]).all()


def test_spectra_keep_a_spectrum_per_array_and_transforms():
    spectra = conv_spectral.Spectra()
    t = _transforms((2, 6, 6, 3), (3, 3, 3, 2), "SAME", np.float64)
    other = _transforms((2, 6, 6, 3), (3, 3, 3, 2), "VALID", np.float64)
    a, same_values = np.ones((2, 6, 6, 3)), np.ones((2, 6, 6, 3))
    made = []

    def make():
        made.append(1)
        return np.full(3, float(len(made)))

    first = spectra.get("input", a, t, make)
    assert spectra.get("input", a, t, make) is first
    assert len(made) == 1
    spectra.get("input", same_values, t, make)  # another array: not the same values for long
    spectra.get("input", a, other, make)
    spectra.get("gradient", a, t, make)
    assert len(made) == 4
    others = [np.ones(1) for _ in range(conv_spectral.KEPT_PER_STEP)]
    for array in others:  # more than a step keeps: the oldest ones go
        spectra.get("input", array, t, make)
    assert spectra.get("input", others[-1], t, make) is not None and len(made) == 20
    spectra.get("input", a, t, make)
    assert len(made) == 21


def _counting_spectrum(monkeypatch):
    """Counts `conv_spectral._spectrum`'s calls by the shape of what it transforms."""
    calls = {}
    spectrum = conv_spectral._spectrum

    def counted(a, rows, cols):
        calls[a.shape] = calls.get(a.shape, 0) + 1
        return spectrum(a, rows, cols)

    monkeypatch.setattr(conv_spectral, "_spectrum", counted)
    return calls


def test_a_step_transforms_its_input_filter_and_gradient_once(monkeypatch):
    rng = np.random.RandomState(3)
    x, w = rng.randn(8, 10, 10, 32), rng.randn(5, 5, 32, 48)
    g = rng.randn(*_output_shape(x.shape, w.shape, "SAME"))
    expected = _reference(x, w, g, "SAME")
    xt, gt = tf.placeholder(tf.float64, x.shape), tf.placeholder(tf.float64, g.shape)
    wt = tf.constant(w)
    y = tf.nn.conv2d(xt, wt, [1, 1, 1, 1], "SAME")
    dx, dw = tf.gradients(y, [xt, wt], grad_ys=gt)
    calls = _counting_spectrum(monkeypatch)
    checked = []
    finite = conv_spectral.finite
    monkeypatch.setattr(conv_spectral, "finite", lambda *a: checked.extend(a) or finite(*a))
    with tf.Session() as sess:
        w_shape = (1, 5, 5, 32 * 48)
        got = sess.run([y, dx, dw], {xt: x, gt: g})
        assert calls == {x.shape: 1, g.shape: 1, w_shape: 1}
        assert len(checked) == 6  # x, w and g once each, and the three results
        sess.run([y, dx, dw], {xt: x, gt: g})
        assert calls == {x.shape: 2, g.shape: 2, w_shape: 2}  # each step transforms its own
    for value, want in zip(got, expected):
        np.testing.assert_allclose(value, want, rtol=0, atol=1e-12 * np.abs(want).max())


def test_a_later_step_sees_an_array_written_in_place_since():
    # The variable's array is overwritten in place between the steps: the same
    # object with other values; the second step's results are the new values'.
    rng = np.random.RandomState(4)
    x1, x2, w = rng.randn(8, 10, 10, 32), rng.randn(8, 10, 10, 32), rng.randn(5, 5, 32, 48)
    g = rng.randn(*_output_shape(x1.shape, w.shape, "SAME"))
    xv = tf.Variable(x1)
    new_x = tf.placeholder(tf.float64, x1.shape)
    assign = tf.assign(xv, new_x)
    wt, gt = tf.constant(w), tf.placeholder(tf.float64, g.shape)
    y = tf.nn.conv2d(xv, wt, [1, 1, 1, 1], "SAME")
    dw = tf.gradients(y, wt, grad_ys=gt)[0]
    with tf.Session() as sess:
        sess.run(xv.initializer)
        for x in (x1, x2):
            sess.run(assign, {new_x: x})
            got = sess.run([y, dw], {gt: g})
            y_ref, _, dw_ref = _reference(x, w, g, "SAME")
            np.testing.assert_allclose(got[0], y_ref, rtol=0, atol=1e-12 * np.abs(y_ref).max())
            np.testing.assert_allclose(got[1], dw_ref, rtol=0, atol=1e-12 * np.abs(dw_ref).max())


def test_a_step_makes_the_patch_matrix_of_an_input_once(monkeypatch):
    # One input channel: im2col, whose matrix the filter gradient shares.
    rng = np.random.RandomState(5)
    x, w = rng.randn(4, 9, 9, 1), rng.randn(5, 5, 1, 6)
    g = rng.randn(*_output_shape(x.shape, w.shape, "SAME"))
    expected = _reference(x, w, g, "SAME")
    assert not conv_spectral.pays(x.shape, w.shape, ONES, ONES, (9, 9), np.float64)
    made = []
    patches_of = conv_kernels._patches_of

    def counted(*args):
        made.append(args[0].shape)
        return patches_of(*args)

    monkeypatch.setattr(conv_kernels, "_patches_of", counted)
    xt, gt = tf.placeholder(tf.float64, x.shape), tf.placeholder(tf.float64, g.shape)
    wt = tf.constant(w)
    y = tf.nn.conv2d(xt, wt, [1, 1, 1, 1], "SAME")
    dw = tf.gradients(y, wt, grad_ys=gt)[0]
    with tf.Session() as sess:
        got = sess.run([y, dw], {xt: x, gt: g})
        assert made == [x.shape]
        sess.run([y, dw], {xt: x, gt: g})
        assert made == [x.shape, x.shape]
    for value, want in zip(got, [expected[0], expected[2]]):
        np.testing.assert_allclose(value, want, rtol=0, atol=1e-12 * np.abs(want).max())
