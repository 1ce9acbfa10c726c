import pytest
from pkg.calc import add


def test_add():
    assert add(2, 2) == 4


def test_add_wrong():
    result = add(2, 2)
    assert result == 5, "two and two"


@pytest.mark.parametrize("a,b,want", [(1, 1, 2), (2, 2, 5), (0, 0, 0)])
def test_param(a, b, want):
    assert add(a, b) == want


@pytest.mark.parametrize("s", ["a b", "x::y", "[z]"], ids=["with space", "with::colons", "brackets[]"])
def test_ids(s):
    assert s != "x::y"


@pytest.mark.skip(reason="needs a database")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert False


@pytest.mark.xfail(reason="maybe")
def test_xpass():
    pass


@pytest.fixture
def broken_fixture():
    raise RuntimeError("fixture exploded")


def test_uses_broken(broken_fixture):
    pass


class TestGroup:
    def test_method(self):
        assert True

    def test_method_fails(self):
        raise ValueError("bad value\nsecond line")
