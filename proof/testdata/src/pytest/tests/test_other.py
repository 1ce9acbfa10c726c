def test_other():
    print("hello from stdout")
    assert 1 == 1
