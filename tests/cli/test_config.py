"""Config: defaults, the example file, environment overrides, clear errors, the key kept secret."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli import cli
from mirror.config import DEFAULTS, Config, ConfigError, load_config, make_config
from mirror.config.sections import SECTIONS
from mirror.errors import EXIT_USAGE, MirrorError
from mirror.urls import https_url, redact

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_apply_without_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = load_config(environ={})
    assert config.base_url == "https://derpibooru.org"
    assert config.polite.requests_per_second == 1.0
    assert config.enabled_resources() == ["images"]
    assert config.api_key is None


def test_the_example_file_documents_every_default():
    config = load_config(ROOT / "config.example.toml", environ={})
    for section, values in DEFAULTS.items():
        for key, value in values.items():
            if key not in ("api_key", "filter_id"):
                expected = tuple(value) if isinstance(value, list) else value
                assert getattr(getattr(config, section), key) == expected, (section, key)


def test_each_section_is_a_dataclass_with_the_keys_of_its_defaults():
    assert [f.name for f in fields(Config)] == [*DEFAULTS, "api_key", "path"]
    for section, values in DEFAULTS.items():
        assert [f.name for f in fields(SECTIONS[section])] == [k for k in values if k != "api_key"], section


def test_a_config_error_is_a_usage_error():
    assert issubclass(ConfigError, MirrorError) and ConfigError.exit_code == EXIT_USAGE == 2


def test_environment_overrides_and_the_key_stays_secret(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text('[site]\nbase_url = "https://furbooru.org"\napi_key = "from-file"\n')
    config = load_config(path, environ={"MIRROR_API_KEY": "s3cret", "MIRROR_FILTER_ID": "56027"})
    assert config.api_key.reveal() == "s3cret"
    assert "s3cret" not in repr(config) and "from-file" not in repr(config)
    assert "s3cret" not in config.to_toml() and "from-file" not in config.to_toml()
    assert config.site.filter_id == 56027 and config.base_url == "https://furbooru.org"


@pytest.mark.parametrize("text, message", [
    ("[polite]\nrequests_per_second = 0\n", "[polite] requests_per_second: must be greater than 0, got 0"),
    ("[polite]\ntimeout = 'soon'\n", '[polite] timeout: expected a number, got "soon"'),
    ("[site]\nbase_url = 'derpibooru.org'\n", "[site] base_url: must start with https://"),
    ("[site]\nfilter_id = 'everything'\n", '[site] filter_id: expected an integer, got "everything"'),
    ("[comments]\nscope = 'some'\n", '[comments] scope: expected "mirrored" or "all", got "some"'),
    ("[history]\ncounters = 'hourly'\n", '[history] counters: expected "daily", "all" or "off", got "hourly"'),
    ("[download]\nrepresentations = ['thumb', 'huge']\n", '[download] representations: unknown "huge"'),
    ("[filters]\nids = [1, true]\n", "[filters] ids: expected a list of filter numbers, got [1, true]"),
    ("[download]\nfile_deadline = 0\n", "[download] file_deadline: must be greater than 0, got 0"),
    ("[download]\ndump_stall_seconds = 0\n", "[download] dump_stall_seconds: must be greater than 0, got 0"),
    ("[download]\ndump_min_rate = -1\n", "[download] dump_min_rate: must be at least 0, got -1"),
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


# --- typos and wrong types: one message naming the key, exit 2, before any request ---------------

@pytest.mark.parametrize("text, message", [
    ('[site]\nbase_urll = "http://127.0.0.1:1"\n', "[site] base_urll: unknown key (did you mean base_url?)"),
    ('[images]\nquerry = "safe"\n', "[images] querry: unknown key (did you mean query?)"),
    ("[imagez]\nenabled = true\n", "[imagez]: unknown section (did you mean [images]?)"),
    ('[images]\nenabled = "no"\n', '[images] enabled: expected true or false, got "no"'),
    ("[polite]\ngive_up_after = true\n", "[polite] give_up_after: expected an integer, got true"),
    ("[polite]\nmax_retries = 2.7\n", "[polite] max_retries: expected an integer, got 2.7"),
    ("[polite]\nrequests_per_second = inf\n", "[polite] requests_per_second: expected a finite number, got inf"),
    ("[polite]\nrequests_per_second = nan\n", "[polite] requests_per_second: expected a finite number, got nan"),
    ("[profiles]\nrefresh_days = -inf\n", "[profiles] refresh_days: expected a finite number, got -inf"),
    ("[download]\nrepresentations = \"thumb\"\n", '[download] representations: expected a list, got "thumb"'),
    ('[site]\nfilter_id = "56027"\n', '[site] filter_id: expected an integer, got "56027"'),
    ("[store]\nendpoint_url = 3\n", "[store] endpoint_url: expected a string, got 3"),
    ("site = 3\n", "[site]: expected a table of keys, got 3"),
])
def test_typos_and_wrong_types_name_the_key(tmp_path, text, message):
    path = tmp_path / "mirror.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config(path, environ={})
    assert str(raised.value) == f"{path}: {message}"


def test_an_int_where_a_float_is_wanted_is_fine(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text("[polite]\nrequests_per_second = 2\ntimeout = 7\n[profiles]\nrefresh_days = 0.5\n")
    config = load_config(path, environ={})
    assert config.polite.requests_per_second == 2.0 and type(config.polite.timeout) is float
    assert config.profiles.refresh_days == 0.5


def test_a_wrongly_typed_api_key_is_named_but_never_shown(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text("[site]\napi_key = 918273645\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path, environ={})
    assert "[site] api_key: expected a string" in str(raised.value) and "918273645" not in str(raised.value)


@pytest.mark.parametrize("variable, value, message", [
    ("MIRROR_FILTER_ID", "everything", 'MIRROR_FILTER_ID: [site] filter_id: expected an integer, got "everything"'),
    ("MIRROR_FILTER_ID", "1.5", 'MIRROR_FILTER_ID: [site] filter_id: expected an integer, got "1.5"'),
    ("MIRROR_BASE_URL", "http://derpibooru.org", "MIRROR_BASE_URL: [site] base_url: http:// is"),
])
def test_environment_overrides_go_through_the_same_checks(tmp_path, monkeypatch, variable, value, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as raised:
        load_config(environ={variable: value})
    assert str(raised.value).startswith(f"environment {message}")


@pytest.mark.parametrize("text, message", [
    ('[site]\nbase_urll = "{url}"\n', "[site] base_urll: unknown key (did you mean base_url?)"),
    ('[site]\nbase_url = "{url}"\n[images]\nquerry = "safe"\n', "[images] querry: unknown key (did you mean query?)"),
    ('[site]\nbase_url = "{url}"\n[polite]\nrequests_per_second = inf\n', "requests_per_second: expected a finite"),
    ('[site]\nbase_url = "{url}"\n[polite]\nrequests_per_second = nan\n', "requests_per_second: expected a finite"),
    ('[site]\nbase_url = "{url}"\n[images]\nenabled = "no"\n', '[images] enabled: expected true or false, got "no"'),
    # Each of these crashed with a traceback (exit 1), or failed every request (exit 3).
    ('[site]\nbase_url = "{url}"\n[images]\nquery = "' + "pony OR " * 600 + 'pony"\n',
     "[images] query: is 4,804 characters long; the most is 4,096"),
    ('[site]\nbase_url = "{url}"\nuser_agent = "me\\r\\nX-Evil: 1"\n', "[site] user_agent: must be one line of text"),
    ('[site]\nbase_url = "{url}"\n[store]\nfiles = "nosuch://bucket/x"\n', "[store] files: unknown protocol 'nosuch'"),
    ('[site]\nbase_url = "http://127.0.0.1:99999"\n', "[site] base_url: its port must be a number from 1 to 65535"),
    ('[site]\nbase_url = "https://derpibooru.org:0/"\n', "[site] base_url: its port must be a number from 1 to 65535"),
    ('[site]\nbase_url = "https://derpibooru.org:https"\n', "[site] base_url: its port must be a number from 1"),
    ('[site]\nbase_url = "{url}"\n[report]\nhealthcheck_url = "https://hc-ping.com:70000/x"\n',
     "[report] healthcheck_url: its port must be a number from 1 to 65535"),

    # A line break passed, then httpx.InvalidURL (no HTTPError) crashed the run before it started (issue 41).
    ('[site]\nbase_url = "{url}"\n[report]\nhealthcheck_url = "https://hc-ping.com/uuid\\r\\nX-Evil: 1"\n',
     "[report] healthcheck_url: must be one line of text"),
    ('[site]\nbase_url = "{url}/\\n"\n', "[site] base_url: must be one line of text"),
    # A [ with no ] around the host: redacting it for the message raised urllib's ValueError (issue 41).
    ('[site]\nbase_url = "{url}"\n[report]\nhealthcheck_url = "http://[::1/ping"\n',
     "[report] healthcheck_url: is not a URL that can be read (Invalid IPv6 URL)"),
    ('[site]\nbase_url = "http://[::1"\n', "[site] base_url: is not a URL that can be read (Invalid IPv6 URL)"),
    ('[site]\nbase_url = "{url}"\n[store]\nendpoint_url = "https://s3.example\\tx"\n',
     "[store] endpoint_url: must be one line of text"),
])
def test_the_cli_refuses_a_bad_config_with_exit_2_before_any_request(site, tmp_path, text, message):
    path = tmp_path / "mirror.toml"
    text = text.format(url=site.url)
    store = f'database = "{tmp_path / "m.db"}"\n'
    path.write_text(text.replace("[store]\n", "[store]\n" + store) if "[store]" in text else text + "[store]\n" + store)
    site.clear_requests()
    result = CliRunner().invoke(cli, ["-c", str(path), "sync"])
    assert result.exit_code == 2, result.output
    assert message in result.output and result.output.count("Error:") == 1
    assert site.requests == [] and not (tmp_path / "m.db").exists()


# --- https everywhere, except a loopback site ------------------------------------------------------

@pytest.mark.parametrize("url", ["http://derpibooru.org", "http://10.0.0.5:8808", "http://127.0.0.1.example.org",
                                 "http://[::2]:80", "HTTP://furbooru.org"])
def test_plain_http_is_refused_for_a_site_off_this_machine(tmp_path, url):
    path = tmp_path / "m.toml"
    path.write_text(f'[site]\nbase_url = "{url}"\n')
    with pytest.raises(ConfigError, match=r"\[site\] base_url: http:// is only for a site on this machine"):
        load_config(path, environ={})


@pytest.mark.parametrize("url", ["http://127.0.0.1:8808", "http://127.3.4.5", "http://localhost:8808/",
                                 "http://[::1]:8808", "https://derpibooru.org", "https://10.0.0.5"])
def test_plain_http_is_fine_on_loopback_and_https_anywhere(tmp_path, url):
    path = tmp_path / "m.toml"
    path.write_text(f'[site]\nbase_url = "{url}"\n')
    assert load_config(path, environ={}).base_url == url.rstrip("/")


def test_the_cli_refuses_plain_http_to_a_remote_site_with_exit_2(tmp_path):
    path = tmp_path / "mirror.toml"
    path.write_text(f'[site]\nbase_url = "http://derpibooru.org"\n[store]\ndatabase = "{tmp_path / "m.db"}"\n')
    result = CliRunner().invoke(cli, ["-c", str(path), "sync"])
    assert result.exit_code == 2 and "base_url: http:// is only for a site on this machine" in result.output
    assert not (tmp_path / "m.db").exists()


# --- the API's own path pasted into base_url (issue 36) --------------------------------------------

@pytest.mark.parametrize("pasted, message", [
    ("{url}/api/v1/json", 'ends with /api/v1/json, which the mirror adds itself; drop it: base_url = "{url}"'),
    ("{url}/api/v1/json/", 'ends with /api/v1/json, which the mirror adds itself; drop it: base_url = "{url}"'),
    ("{url}/booru/api/v1/json/search/images?q=safe",
     'is the URL of an API request; give the site\'s own address: base_url = "{url}/booru"'),
])
def test_base_url_with_the_apis_path_is_refused_with_the_fix_before_any_request(site, tmp_path, pasted, message):
    """It said only "...: not found" after the first request."""
    path = tmp_path / "mirror.toml"
    path.write_text(f'[site]\nbase_url = "{pasted.format(url=site.url)}"\n[store]\ndatabase = "{tmp_path / "m.db"}"\n')
    site.clear_requests()
    result = CliRunner().invoke(cli, ["-c", str(path), "sync"])
    assert result.exit_code == EXIT_USAGE
    assert result.output == f"Error: {path}: [site] base_url: {message.format(url=site.url)}\n"
    assert site.requests == [] and not (tmp_path / "m.db").exists()


def test_the_environment_override_of_base_url_is_checked_for_the_apis_path_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as raised:
        load_config(environ={"MIRROR_BASE_URL": "https://derpibooru.org/api/v1/json"})
    assert str(raised.value) == ("environment MIRROR_BASE_URL: [site] base_url: ends with /api/v1/json, which the "
                                 'mirror adds itself; drop it: base_url = "https://derpibooru.org"')


@pytest.mark.parametrize("url", ["https://derpibooru.org/booru", "https://derpibooru.org/api/v1/jsonp",
                                 "https://derpibooru.org/api"])
def test_a_base_url_with_another_path_is_taken(url):
    assert make_config({"site": {"base_url": url}}).base_url == url
