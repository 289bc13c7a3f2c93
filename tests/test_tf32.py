"""TF32 as the book's kernels and cuBLAS make it (`precision.tf32.to_tf32`): rounding to nearest with ties away from
zero (cvt.rna), to nearest with ties to even (TMA's copies through a TF32 tensor map, cuBLAS's way) and truncation
(the tensor cores' read), bit for bit on the cases that tell them apart."""
import numpy as np
import pytest

from gemm_lab.precision import tf32

ONE = 0x3F800000
LOW = 1 << tf32.LOW_BITS  # the last kept bit


def bits(*words: int) -> np.ndarray:
    return np.array(words, np.uint32).view(np.float32)


@pytest.mark.parametrize("rounding, expected", [
    # a tie with an even kept part, a tie with an odd one, just above a tie, just below, a negative tie
    ("nearest", (ONE + LOW, ONE + 2 * LOW, ONE + LOW, ONE, 0xBF800000 + LOW)),
    ("even", (ONE, ONE + 2 * LOW, ONE + LOW, ONE, 0xBF800000)),
    ("truncate", (ONE, ONE + LOW, ONE, ONE, 0xBF800000)),
])
def test_each_rounding_on_ties_and_their_neighbours(rounding, expected):
    x = bits(ONE + LOW // 2, ONE + LOW + LOW // 2, ONE + LOW // 2 + 1, ONE + LOW // 2 - 1, 0xBF800000 + LOW // 2)
    assert tf32.to_tf32(x, rounding).view(np.uint32).tolist() == list(expected)


def test_rounding_keeps_infinities_and_nans_and_refuses_unknown_modes():
    x = np.array([np.inf, -np.inf, np.nan], np.float32)
    for rounding in ("nearest", "even", "truncate"):
        y = tf32.to_tf32(x, rounding)
        assert np.isinf(y[:2]).all() and np.signbit(y[1]) and np.isnan(y[2])
    with pytest.raises(ValueError, match="even"):
        tf32.to_tf32(x, "up")


def test_nearest_and_even_differ_only_at_ties():
    x = np.random.default_rng(0).uniform(-1, 1, 100_000).astype(np.float32)
    near, even = tf32.to_tf32(x, "nearest"), tf32.to_tf32(x, "even")
    ties = (x.view(np.uint32) & np.uint32(LOW - 1)) == LOW // 2
    assert (near != even).sum() <= ties.sum() and (near[~ties] == even[~ties]).all()
