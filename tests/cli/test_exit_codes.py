"""Every error a user can hit carries its exit status, and the CLI ends with it: one place maps errors
to statuses (cli.handle_errors), the classes say which (mirror.errors draws the tree)."""

from __future__ import annotations

import importlib
import pkgutil

import click
import pytest
from click.testing import CliRunner

import mirror
from mirror.cli import handle_errors
from mirror.errors import MirrorError

DOCUMENTED = {  # the README's exit codes, by the class that ends a run with each
    "ConfigError": 2, "SourceError": 2, "SiteUnavailable": 3, "RateLimited": 3,
    "RetriesExhausted": 3, "ApiError": 4, "NotFound": 4, "NotPhilomena": 4, "BadQuery": 4, "KeyRequired": 4,
    "WalkStalled": 4,
    "StoreError": 5, "StorageFailure": 5, "BoardMissing": 5, "MirrorBusy": 7, "PortUnavailable": 8,
}


def every_error() -> dict[str, type]:
    for module in pkgutil.walk_packages(mirror.__path__, "mirror."):
        importlib.import_module(module.name)
    found, todo = {}, [MirrorError]
    while todo:
        cls = todo.pop()
        found[cls.__name__] = cls
        todo += cls.__subclasses__()
    return found


def test_every_error_carries_a_documented_status():
    errors = every_error()
    assert {name: errors[name].exit_code for name in DOCUMENTED} == DOCUMENTED
    assert all(isinstance(cls.exit_code, int) and 1 <= cls.exit_code <= 8 for cls in errors.values())


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_the_cli_ends_with_the_errors_status_and_its_message(name):
    cls = every_error()[name]
    error = cls.__new__(cls)
    Exception.__init__(error, f"what went wrong with {name}")

    @click.command()
    @handle_errors
    def failing() -> None:
        raise error

    result = CliRunner().invoke(failing, [])
    assert result.exit_code == DOCUMENTED[name]
    assert result.output == f"Error: what went wrong with {name}\n"
