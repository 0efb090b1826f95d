import pytest

from agents.stats import wilson_interval


def test_wilson_known_values():
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == pytest.approx(1.0)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_mcnemar_exact_is_the_two_sided_binomial_on_the_discordant_pairs():
    from math import comb

    from agents.stats import mcnemar_exact

    # by hand: 1 against 9 discordant pairs, X ~ Binomial(10, 1/2): 2 * (C(10,0) + C(10,1)) / 2^10
    assert mcnemar_exact(1, 9) == pytest.approx(2 * (1 + 10) / 1024) == mcnemar_exact(9, 1)
    assert mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(2, 3) == 1.0
    # exact even where a normal approximation would be used: 40 against 60
    assert mcnemar_exact(40, 60) == pytest.approx(2 * sum(comb(100, i) for i in range(41)) / 2 ** 100)
    assert 0.05 < mcnemar_exact(40, 60) < 0.06
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_paired_difference_interval_bonett_price():
    import math

    from agents.stats import paired_difference_interval

    # by hand: 36 right in both, 2 in A only, 12 in B only, 0 in neither (n = 50); one added to each
    # discordant count and two to n: (13 - 3) / 52 +- 1.96 * sqrt((13 + 3) / 52 - ((13 - 3) / 52)^2) / 52)
    d = 10 / 52
    half = 1.959963984540054 * math.sqrt((16 / 52 - d * d) / 52)
    lo, hi = paired_difference_interval(36, 2, 12, 0)
    assert (lo, hi) == (pytest.approx(d - half), pytest.approx(d + half))
    assert lo == pytest.approx(0.0509, abs=1e-4) and hi == pytest.approx(0.3337, abs=1e-4)
    # no discordant pair: centred on 0 and never of zero width
    lo, hi = paired_difference_interval(2, 0, 0, 2)
    assert lo == pytest.approx(-hi) and hi > 0.4
    assert paired_difference_interval(0, 0, 0, 0) == (-1.0, 1.0)
    lo, hi = paired_difference_interval(0, 30, 0, 0)  # B wrong on every item A got right
    assert -1.0 <= lo < hi < 0
