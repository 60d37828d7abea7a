"""`cleveragents serve`'s command line: the plain stdio line read without argparse answers
exactly as argparse would, and every other line is argparse's."""

from __future__ import annotations

import dataclasses

import pytest

from cleveragents.daemon.options import (
    ServeOptions,
    parse_serve_options,
    plain_stdio_options,
    serve_parser,
)

PLAIN = [
    [],
    ["--stdio"],
    ["--stdio", "--history", "/tmp/h.sqlite3"],
    ["--history", "/tmp/h.sqlite3", "--stdio"],
    ["--history=/tmp/h=1.sqlite3"],
    ["--history="],
    ["--stdio", "--log-level", "debug"],
    ["--log-level=ERROR", "--history", "h", "--stdio"],
]
NOT_PLAIN = [
    ["--tcp", "127.0.0.1:0"],
    ["--socket", "/tmp/s"],
    ["--acp"],
    ["--stdio", "--stdio"],
    ["--hist", "h"],  # argparse's abbreviation
    ["--history", "a", "--history", "b"],  # argparse: the last wins
    ["--log-level", "verbose"],
    ["--history"],
    ["--history", "--stdio"],
    ["stray"],
    ["--help"],
]


def _argparse_options(args: list[str]) -> ServeOptions:
    namespace = serve_parser().parse_args(args)
    return ServeOptions(
        **{f.name: getattr(namespace, f.name) for f in dataclasses.fields(ServeOptions)}
    )


@pytest.mark.parametrize("args", PLAIN)
def test_a_plain_line_is_read_without_argparse_as_argparse_reads_it(args: list[str]) -> None:
    plain = plain_stdio_options(args)
    assert plain is not None
    assert plain == _argparse_options(args)
    assert parse_serve_options(args) == plain


@pytest.mark.parametrize("args", NOT_PLAIN)
def test_any_other_line_is_argparses(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert plain_stdio_options(args) is None
    try:
        expected: ServeOptions | int = _argparse_options(args)
    except SystemExit as exc:
        expected = int(exc.code or 0)
    capsys.readouterr()
    try:
        got: ServeOptions | int = parse_serve_options(args)
    except SystemExit as exc:
        got = int(exc.code or 0)
    assert got == expected
    if isinstance(got, int) and args != ["--help"]:
        assert got == 2 and "cleveragents serve" in capsys.readouterr().err
