"""`mirror serve`: the archive answers the JSON API; mirroring it gives back the same archive."""

from __future__ import annotations

import hashlib
import io
import json
import re
import time
from pathlib import Path

import httpx
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from mirror.cli import cli
from mirror.errors import EXIT_STORE
from mirror.localsite.board.editor import BoardEditor
from mirror.localsite.http.server import LoopbackServer, SiteServer
from mirror.store import open_database

from ..support.browsing import serving
from ..support.configs import RESOURCES, mirror_config, sync, write_config

TABLES = ("images", "tags", "comments", "galleries", "forums", "topics", "posts", "filters", "users")


def _origin_free(value):
    """A record with every absolute URL's scheme and host taken off, for comparing two archives."""
    return json.loads(re.sub(r"https?://127\.0\.0\.1:\d+", "", json.dumps(value)))


def rows(db, table: str) -> dict:
    key = "short_name" if table == "forums" else ("forum_short_name", "slug") if table == "topics" else "id"
    keys = (key,) if isinstance(key, str) else key
    out = {}
    for row in db[table].rows:
        out[tuple(row[k] for k in keys)] = (_origin_free(json.loads(row["raw"])) if row["raw"] else None,
                                            row.get("hidden_from_users"), row.get("stub"))
    return out


def test_mirroring_the_archive_gives_back_the_same_records_and_files(archive, tmp_path):
    config, original, served, everything = archive
    copy_config = mirror_config(served, tmp_path, everything)
    report, copy = sync(copy_config, RESOURCES)
    for table in TABLES:
        a, b = rows(original, table), rows(copy, table)
        visible = {k: v for k, v in a.items() if not v[1]}
        assert {k: v for k, v in b.items() if k in visible} == visible, table
        assert set(visible) <= set(b), table
    hidden = [row["id"] for row in original.query("SELECT id FROM images WHERE hidden_from_users = 1")]
    assert hidden and all(copy["images"].get(i)["hidden_from_users"] == 1 for i in hidden)
    kept = {(r["image_id"], r["representation"]): r["sha512"] for r in original["downloads"].rows_where("status = 'done'")}
    again = {(r["image_id"], r["representation"]): r["sha512"] for r in copy["downloads"].rows_where("status = 'done'")}
    assert kept and again == kept


def test_search_paging_filters_and_errors(archive):
    config, db, served, everything = archive
    api = httpx.Client(base_url=served.api_url, timeout=10)
    body = api.get("/search/images", params={"q": "*", "filter_id": everything}).json()
    visible = db.execute("SELECT count(*) FROM images WHERE coalesce(hidden_from_users, 0) = 0").fetchone()[0]
    assert body["total"] == visible and len(body["images"]) == 15 and body["interactions"] == []
    assert api.get("/search/images", params={"q": "*", "filter_id": everything, "del": "1"}).json()["total"] \
        == db["images"].count
    assert api.get("/search/images", params={"q": ""}).json() == {"images": [], "interactions": [], "total": 0}
    paged = api.get("/search/images", params={"q": "*", "filter_id": everything, "per_page": 100, "page": 2,
                                              "sf": "id", "sd": "asc"}).json()["images"]
    expected = [r[0] for r in db.execute("SELECT id FROM images WHERE coalesce(hidden_from_users, 0) = 0 "
                                         "ORDER BY id LIMIT 50 OFFSET 50")]
    assert [i["id"] for i in paged] == expected
    error = api.get("/search/images", params={"q": "(safe"})
    assert error.status_code == 400 and error.json() == {"error": "Imbalanced parentheses."}
    assert api.get("/search/images", params={"q": "my:faves"}).json()["error"].startswith("You must be logged in")
    assert api.get("/images/abc").status_code == 400 and api.get("/images/99999999").status_code == 404
    assert api.get("/filters/user").status_code == 403
    assert api.get("/no/such/route").json() == {"error": "Not Found"}


def test_the_default_filter_hides_and_spoilers_as_the_site_does(archive):
    config, db, served, everything = archive
    default = db.execute("SELECT id, hidden_tag_ids FROM filters WHERE name = 'Default' AND system = 1").fetchone()
    assert default is not None and json.loads(default[1])
    hidden_tags = json.loads(default[1])
    api = httpx.Client(base_url=served.api_url, timeout=10)
    shown = api.get("/search/images", params={"q": "*", "per_page": 50, "sf": "id", "sd": "asc"}).json()
    hidden_ids = {r[0] for r in db.execute(
        f"SELECT image_id FROM image_tags WHERE tag_id IN ({','.join('?' * len(hidden_tags))})", hidden_tags)}
    assert hidden_ids and not {i["id"] for i in shown["images"]} & hidden_ids
    one = next(iter(hidden_ids))
    assert api.get(f"/images/{one}").json()["image"]["spoilered"] is True  # shown, spoilered
    assert api.get(f"/images/{one}", params={"filter_id": everything}).json()["image"]["spoilered"] is False


def test_served_records_point_at_this_server_and_its_files_are_the_kept_ones(archive):
    config, db, served, everything = archive
    row = next(db.query("SELECT d.image_id, d.sha512 FROM downloads d JOIN images i ON i.id = d.image_id "
                        "WHERE d.representation = 'full' AND d.status = 'done' AND i.format != 'svg' LIMIT 1"))
    image = httpx.get(f"{served.api_url}/images/{row['image_id']}").json()["image"]
    assert image["representations"]["full"].startswith(served.url + "/img/view/")
    body = httpx.get(image["representations"]["full"]).content
    assert hashlib.sha512(body).hexdigest() == row["sha512"] == image["sha512_hash"]
    assert httpx.get(image["view_url"]).content == body  # the slugged view URL names the same file
    ranged = httpx.get(image["representations"]["full"], headers={"Range": "bytes=0-9"})
    assert ranged.status_code == 206 and ranged.content == body[:10]
    not_kept = image["representations"]["full"].replace(f"/{row['image_id']}.", "/999999.")
    assert httpx.get(not_kept).status_code == 404


def test_a_kept_file_that_links_out_of_the_files_folder_is_not_served(archive, tmp_path):
    """A symbolic link in the files folder (to /etc/shadow, say) answers 404, not what it points at."""
    config, db, served, everything = archive
    image_id, path = db.execute("SELECT d.image_id, d.path FROM downloads d JOIN images i ON i.id = d.image_id "
                                "WHERE d.representation = 'full' AND d.status = 'done' AND i.format != 'svg' "
                                "LIMIT 1").fetchone()
    full = httpx.get(f"{served.api_url}/images/{image_id}").json()["image"]["representations"]["full"]
    kept = Path(config.store.files) / path
    secret = tmp_path / "shadow"
    secret.write_bytes(b"root:secret-hash:19000:0:99999:7:::")
    aside = kept.with_name(kept.name + ".aside")
    kept.rename(aside)
    try:
        kept.symlink_to(secret)
        answer = httpx.get(full)
        assert answer.status_code == 404 and b"secret-hash" not in answer.content
    finally:
        kept.unlink()
        aside.rename(kept)
    assert httpx.get(full).status_code == 200  # the real file again


def test_serve_says_clearly_when_there_is_no_mirror(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "none.db"), "--port", "0"])
    assert result.exit_code == EXIT_STORE and "no mirror database" in result.output


def test_serve_from_the_command_line_logs_each_request(archive, tmp_path):
    config = archive[0]
    path = write_config(config, tmp_path / "mirror.toml")
    with serving(path) as (url, process):
        secret = "k3y-" + "s3cret"
        assert httpx.get(url + "/search/tags", params={"q": "*", "key": secret}).json()["total"] > 0
        deadline = time.monotonic() + 10
        logged = ""
        while "GET /api/v1/json/search/tags" not in logged and time.monotonic() < deadline:
            logged += process.stdout.readline()
        assert "200" in logged
        assert "key=***" in logged and secret not in logged  # the key is ignored, and never logged


def test_reverse_search_on_serve_fetches_no_url_a_client_gives(archive):
    """A URL would make an archive served to a network a way into the services of its machine:
    serve answers as the site does for a URL it cannot fetch, and asks nobody."""
    asked = []

    async def service(scope, receive, send):
        asked.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"image/png")]})
        await send({"type": "http.response.body", "body": png_bytes()})

    with LoopbackServer(service) as inside:
        answer = httpx.post(archive.served.api_url + "/search/reverse", data={"url": inside.url + "/admin.png"})
    assert answer.status_code == 200 and answer.json() == {"images": [], "interactions": [], "total": 0}
    assert asked == []


def png_bytes() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (40, 40), (90, 10, 200)).save(out, "PNG")
    return out.getvalue()


def test_a_sync_writing_does_not_block_serving(archive):
    config, db, served, everything = archive
    writer = open_database(config.database)
    with writer.conn:  # a write transaction held open, as a sync's page commit is
        writer.execute("UPDATE sync_state SET updated_at = updated_at")
        assert httpx.get(f"{served.api_url}/search/images", params={"q": "*"}, timeout=5).status_code == 200


QUERY_PIECES = list('abc:*?~^()",.!-| \\0123456789') + [
    " AND ", " OR ", "NOT ", "safe", "score.gt:", "id.lte:", "created_at:", "2020-01", "3 days ago", "my:faves",
    "filter_id:", "gallery_id:", "description:", "wilson_score.gte:0.", "animated:", "true", "\x00", "é", "日本"]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(query=st.lists(st.sampled_from(QUERY_PIECES), max_size=25).map("".join),
       endpoint=st.sampled_from(["images", "comments", "posts", "tags", "galleries", "filters"]),
       sf=st.sampled_from([None, "score", "random:7", "gallery_id:1", "_score", "bogus"]))
def test_any_query_string_answers_200_or_400_with_a_message_never_500(archive, query, endpoint, sf):
    served = archive.served
    params = {"q": query, "filter_id": archive.everything, **({"sf": sf} if sf else {})}
    response = httpx.get(f"{served.api_url}/search/{endpoint}", params=params, timeout=10)
    assert response.status_code in (200, 400), (query, response.text[:200])
    body = response.json()
    if response.status_code == 400:
        assert isinstance(body["error"], str) and body["error"]
    else:
        assert isinstance(body[endpoint], list) and isinstance(body["total"], int)


def test_a_query_too_long_or_too_deep_is_refused_with_a_message(archive):
    api = httpx.Client(base_url=archive.served.api_url, timeout=10)
    long = api.get("/search/images", params={"q": "safe, " * 2000})
    assert long.status_code == 400 and "longer than" in long.json()["error"]
    deep = api.get("/search/images", params={"q": "(" * 1500 + "safe" + ")" * 1500})
    assert deep.status_code == 400 and deep.json()["error"]


JSON_TYPE = "application/json; charset=utf-8"  # what the site sends, and the derpi client asserts exactly


def json_answers(api_url: str, image_id: int) -> dict[str, httpx.Response]:
    """Answers of every kind a client meets: records, lists, searches, errors and a reverse search."""
    paths = ["/search/images?q=*", "/search?q=*", f"/images/{image_id}", "/images/featured", "/search/tags?q=*",
             "/search/comments?q=*", "/search/posts?q=*", "/search/galleries?q=*", "/search/filters?q=*",
             "/filters/system", "/filters/user", "/forums", "/profiles/1", "/oembed?url=x",
             "/search/images?q=(safe", "/images/abc", "/images/99999999", "/no/such/route", "/tags/safe"]
    with httpx.Client(base_url=api_url, timeout=10) as api:
        answers = {path: api.get(path) for path in paths}
        answers["POST /search/reverse"] = api.post("/search/reverse", data={"url": "not a url"})
    return answers


def assert_json_says_utf_8(answers: dict[str, httpx.Response]) -> None:
    kinds = {path: answer.headers.get("content-type") for path, answer in answers.items()
             if answer.content.startswith((b"{", b"["))}
    assert len(kinds) >= len(answers) - 2  # nearly all answer JSON; those that do say so exactly
    assert {path: kind for path, kind in kinds.items() if kind != JSON_TYPE} == {}


def test_every_json_answer_says_charset_utf_8_as_the_site_does(archive):
    config, db, served, everything = archive
    image_id = db.execute("SELECT min(id) FROM images WHERE hidden_from_users = 0").fetchone()[0]
    assert_json_says_utf_8(json_answers(served.api_url, image_id))
    with SiteServer(BoardEditor.generate(seed=2, images=8)) as site:
        assert_json_says_utf_8(json_answers(site.api_url, min(site.editor.images)))
        control = httpx.get(f"{site.url}/_control/requests")
        assert control.headers["content-type"] == JSON_TYPE


HUGE = str(2**66)  # past SQLite's 64-bit integers


def test_ids_and_pages_past_2_63_answer_as_for_a_record_not_kept_never_a_traceback(archive):
    """A gallery, an image or a page number no 64-bit integer holds: nothing matches (200, empty), no
    file is kept (404), a page is past the end; never a 500 from an OverflowError."""
    config, db, served, everything = archive
    api = httpx.Client(base_url=served.api_url, timeout=10)
    for params in ({"q": f"gallery_id:{HUGE}"}, {"q": f"safe || gallery_id:{HUGE}", "sf": f"gallery_id:{HUGE}"}):
        answer = api.get("/search/images", params={**params, "filter_id": everything})
        assert answer.status_code == 200, (params, answer.text[:200])
    assert api.get("/search/images", params={"q": f"gallery_id:{HUGE}"}).json()["total"] == 0
    forum, slug = db.execute("SELECT forum_short_name, slug FROM topics WHERE raw IS NOT NULL").fetchone()
    deep = api.get(f"/forums/{forum}/topics/{slug}/posts", params={"page": HUGE})
    assert deep.status_code == 200 and deep.json()["posts"] == [] and deep.json()["total"] > 0
    for path in (f"/img/2012/2/24/{HUGE}/thumb.png", f"/img/view/2012/2/24/{HUGE}.png",
                 f"/img/download/2012/2/24/{HUGE}__x.png"):
        assert httpx.get(served.url + path).status_code == 404, path
