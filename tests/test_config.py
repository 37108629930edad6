"""Config: defaults, the example file, environment overrides, clear errors, the key kept secret."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirror.config import DEFAULTS, ConfigError, load_config
from mirror.urls import https_url, redact

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_apply_without_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config(environ={})
    assert config.base_url == "https://derpibooru.org"
    assert config["polite"]["requests_per_second"] == 1.0
    assert config.enabled_resources() == ["images"]
    assert config.api_key is None


def test_the_example_file_documents_every_default():
    config = load_config(ROOT / "config.example.toml", environ={})
    for section, values in DEFAULTS.items():
        for key, value in values.items():
            if key not in ("api_key", "filter_id"):
                assert config[section][key] == value, (section, key)


def test_environment_overrides_and_the_key_stays_secret(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('[site]\nbase_url = "https://furbooru.org"\napi_key = "from-file"\n')
    config = load_config(path, environ={"MIRROR_API_KEY": "s3cret", "MIRROR_FILTER_ID": "56027"})
    assert config.api_key.reveal() == "s3cret"
    assert "s3cret" not in repr(config) and "from-file" not in repr(config)
    assert config["site"]["filter_id"] == 56027 and config.base_url == "https://furbooru.org"


@pytest.mark.parametrize("text, message", [
    ("[polite]\nrequests_per_second = 0\n", "polite.requests_per_second must be greater than 0"),
    ("[polite]\ntimeout = 'soon'\n", "polite.timeout must be a number"),
    ("[site]\nbase_url = 'derpibooru.org'\n", "site.base_url must start with https://"),
    ("[site]\nfilter_id = 'everything'\n", "site.filter_id must be a filter's number"),
    ("[download]\nfile_deadline = 0\n", "download.file_deadline must be greater than 0"),
    ("[imagez]\nenabled = true\n", "unknown section [imagez]"),
    ("[images\n", "is not valid TOML"),
])
def test_bad_config_gives_one_clear_message(tmp_path, text, message):
    path = tmp_path / "m.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_config(path, environ={})


def test_a_missing_named_config_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml", environ={})


@pytest.mark.parametrize("url, base, expected", [
    ("//derpicdn.net/img/1.png", "https://derpibooru.org", "https://derpicdn.net/img/1.png"),
    ("http://derpicdn.net/img/1.png", "https://derpibooru.org", "https://derpicdn.net/img/1.png"),
    ("http://127.0.0.1:8808/img/1.png", "http://127.0.0.1:8808", "http://127.0.0.1:8808/img/1.png"),
    ("http://cdn.example/img/1.png", "http://127.0.0.1:8808", "https://cdn.example/img/1.png"),
    ("/img/1.png", "https://derpibooru.org", "https://derpibooru.org/img/1.png"),
])
def test_urls_from_the_site_become_https(url, base, expected):
    assert https_url(url, base) == expected


def test_redact_hides_the_key():
    shown = redact("https://derpibooru.org/api/v1/json/search/images?q=safe&key=s3cret&page=2")
    assert "s3cret" not in shown and "key=***" in shown and "q=safe" in shown
