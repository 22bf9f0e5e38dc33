def test_set_diagonal_passes():
    pass
