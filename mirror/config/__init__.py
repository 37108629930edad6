"""Configuration: a TOML file with built-in defaults and environment overrides, as a typed Config.

Every key is optional. ``mirror.toml`` in the working directory is read when present; otherwise the
defaults (:mod:`.defaults`) apply. Each key given is checked on its own (:mod:`.checks`), then the
sections become frozen dataclasses (:mod:`.sections`): ``config.polite.requests_per_second``. The
API key is read from ``MIRROR_API_KEY`` first and ``site.api_key`` second; it is held in a
:class:`Secret` so that printing a config never shows it.

Only the CLI, its commands and :mod:`mirror.wiring` read a Config; the layers take plain arguments.
"""

from __future__ import annotations

import copy
import os
import tomllib
from pathlib import Path
from typing import Any

from .checks import ConfigError, check_section, checked, from_environment, key_type
from .defaults import DEFAULTS, TYPES
from .sections import RESOURCES, SECTIONS, Config, Secret, make_section

__all__ = ["DEFAULTS", "ENVIRONMENT", "RESOURCES", "TYPES", "Config", "ConfigError", "Secret", "load_config",
           "make_config"]

DEFAULT_CONFIG_FILE = "mirror.toml"

# Environment variables that override a key, for cron jobs and containers.
ENVIRONMENT = {
    "MIRROR_BASE_URL": ("site", "base_url"),
    "MIRROR_FILTER_ID": ("site", "filter_id"),
    "MIRROR_DATABASE": ("store", "database"),
    "MIRROR_FILES": ("store", "files"),
}


def load_config(path: str | os.PathLike[str] | None = None, environ: dict[str, str] | None = None) -> Config:
    """Read ``path`` (or ``./mirror.toml`` when present), merge defaults and environment."""
    environ = os.environ if environ is None else environ
    file_path = Path(path) if path is not None else Path(DEFAULT_CONFIG_FILE)
    user: dict[str, Any] = {}
    if path is not None or file_path.exists():
        user = _read_toml(file_path)
    return make_config(user, environ, source=str(file_path), path=file_path if user else None)


def make_config(values: dict[str, Any], environ: dict[str, str] | None = None, *,
                source: str | None = None, path: Path | None = None) -> Config:
    """A config from ``values`` (shaped like the TOML file) over the defaults, without reading a file.

    Every key given, in ``values`` or the environment, is checked on its own, so the one message a
    mistake gives names where it came from (``source``, or the variable) and which key it is.
    """
    sections = copy.deepcopy(DEFAULTS)
    for section, keys in values.items():
        check_section(section, keys, source)
        for key, value in keys.items():
            sections[section][key] = checked(section, key, value, source)
    for variable, (section, key) in ENVIRONMENT.items():
        if environ and environ.get(variable):
            value = from_environment(environ[variable], key_type(section, key))
            sections[section][key] = checked(section, key, value, f"environment {variable}")
    file_key = sections["site"].pop("api_key", None)
    key = (environ or {}).get("MIRROR_API_KEY") or file_key
    return Config(**{name: make_section(name, sections[name]) for name in SECTIONS},
                  api_key=Secret(key) if key else None, path=path)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist; copy config.example.toml to start one") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file {path} is not valid TOML: {e}") from None
