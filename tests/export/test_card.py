"""DEST's README is a Hugging Face dataset card that ``datasets`` reads offline: its front matter's
features are the tables' own, its configs name each table's live files, and each table loads with
``load_dataset("parquet", data_files=...)`` and as a config of the folder, with no network."""

from __future__ import annotations

import datasets
import polars as pl
import pytest
import yaml

from mirror.export.tables import EXPORT_TABLES


@pytest.fixture(scope="module")
def card(exported):
    text = (exported.dest / "README.md").read_text()
    assert text.startswith("---\n")
    front, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(front), body


@pytest.fixture
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    return tmp_path / "cache"


def test_the_card_gives_each_tables_features_and_leaves_the_licence_to_the_archivist(card):
    front, body = card
    assert front["license"] == "unknown" and "Licence" in body
    infos = {info["config_name"]: info for info in front["dataset_info"]}
    assert sorted(infos) == sorted(EXPORT_TABLES) == sorted(c["config_name"] for c in front["configs"])
    for name, table in EXPORT_TABLES.items():
        assert datasets.Features._from_yaml_list(infos[name]["features"]) == \
            datasets.Features.from_arrow_schema(table.schema()), name
    history = body[body.index("## history"):body.index("## image_tag_changes")]
    assert "| id | int64 | The row's number in the mirror's history" in history and "The record's id" not in history


@pytest.mark.parametrize("name", sorted(EXPORT_TABLES))
def test_each_table_loads_offline_with_datasets_as_the_card_says(card, exported, offline, name):
    front, _ = card
    (config,) = [c for c in front["configs"] if c["config_name"] == name]
    paths = [str(exported.dest / p) for p in config["data_files"][0]["path"]]
    rows = pl.read_delta(str(exported.dest / name)).height
    if rows == 0:  # datasets refuses an empty split: its features are the card's (the test above)
        with pytest.raises(ValueError, match="no data"):
            datasets.load_dataset("parquet", data_files=paths, split="train", cache_dir=str(offline))
        return
    loaded = datasets.load_dataset("parquet", data_files=paths, split="train", cache_dir=str(offline))
    assert loaded.num_rows == rows
    assert loaded.features == datasets.Features.from_arrow_schema(EXPORT_TABLES[name].schema())
    by_card = datasets.load_dataset(str(exported.dest), name, split="train", cache_dir=str(offline))
    assert by_card.num_rows == rows
