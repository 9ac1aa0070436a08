from kubectl_squarepeg.errors import ConfigError, Interrupted, SquarepegError


def test_one_line_joins_message_and_hint_on_one_line() -> None:
    err = ConfigError("unknown key 'cpu' at a.yaml:3", "did you mean 'cpus'?\n")
    assert err.one_line() == "unknown key 'cpu' at a.yaml:3; did you mean 'cpus'?"
    assert err.exit_code == 125


def test_interrupted_exits_130_and_codes_can_be_overridden() -> None:
    assert Interrupted("x").exit_code == 130
    assert SquarepegError("x", exit_code=3).exit_code == 3
