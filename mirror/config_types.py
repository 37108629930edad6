"""The shape of a config: which sections and keys exist and what type each one holds.

A typo in a key name or a value of the wrong type must stop the run before any request: a
misspelt ``base_urll`` would otherwise mirror the default site, a misspelt ``querry`` everything,
and ``enabled = "no"`` would count as true. Each problem is reported as one line naming the key.
"""

from __future__ import annotations

import difflib
import math
from typing import Any

from .errors import EXIT_USAGE, MirrorError

# What a key of each type is called in a message.
TYPE_NAMES = {bool: "true or false", int: "an integer", float: "a number", str: "a string", list: "a list"}


class ConfigError(MirrorError):
    """The configuration cannot be used; the message says which key and why."""

    exit_code = EXIT_USAGE


def shown(value: Any) -> str:
    """``value`` written as in a TOML file, so a message quotes what the user wrote."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    if isinstance(value, dict):
        return "a table"
    return str(value)


def suggestion(name: str, known: list[str], template: str = "{}") -> str:
    """`` (did you mean X?)`` for the known name closest to ``name``, or nothing."""
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {template.format(close[0])}?)" if close else ""


def key_type(defaults: dict[str, dict[str, Any]], types: dict[tuple[str, str], type], section: str, key: str) -> type:
    """The type ``[section] key`` holds, or a ConfigError naming it when there is no such key."""
    known = defaults[section]
    if key not in known:
        raise ConfigError(f"[{section}] {key}: unknown key{suggestion(key, list(known))}")
    return types.get((section, key)) or type(known[key])


def check_value(section: str, key: str, value: Any, wanted: type) -> Any:
    """``value`` if it is a ``wanted`` (None stands for unset), else a ConfigError naming the key.

    bool is not an int here, a float with a fraction or not is not an int, and an int is a fine
    float; inf and nan are refused everywhere since no setting means them. A secret's value is
    never shown.
    """
    if value is None:
        return None
    if wanted is float and type(value) is int:
        value = float(value)
    got = TYPE_NAMES.get(type(value), "a table") if key == "api_key" else shown(value)
    if type(value) is not wanted:
        raise ConfigError(f"[{section}] {key}: expected {TYPE_NAMES[wanted]}, got {got}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"[{section}] {key}: expected a finite number, got {got}")
    return value


def from_environment(text: str, wanted: type) -> Any:
    """An environment variable's text as a ``wanted``, or the text itself for check_value to refuse."""
    try:
        if wanted is int:
            return int(text.strip())
        if wanted is float:
            return float(text.strip())
    except ValueError:
        pass
    return text
