from pkg.calc import subtract


def test_subtract():
    assert subtract(3, 1) == 2
