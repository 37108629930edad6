"""The local site: a fake Philomena for tests, the demo and benchmarks (`mirror site`, `mirror demo`).

It serves a generated board (or recorded real responses) through the same API code as
``mirror serve`` (:mod:`mirror.serve`), inside the layers only a test double has: faults, a
request log, a control API, uploads, and stand-in image files.

    board/   the board: generate.py (deterministic generation, streamed into a database),
             editor.py (BoardEditor: the edits tests, the control API and uploads make),
             rows.py (records rendered and written through the store's writers, site_* tables),
             render.py (the exact API shape of every record), vocabulary.py, records.py,
             fixtures.py (a board of recorded real responses), accounts.py (GeneratedBoard:
             keys, interactions, gallery dates and post positions, through serve's hooks)
    files/   img.py (/img files of a generated board, with Range; an upload's thumbnails drawn from
             it), media.py (stand-in files), pictures.py (real pictures, for reverse search)
    http/    app.py (create_app), server.py (SiteServer in a thread; run_site for `mirror site`),
             faults.py, log.py, control.py, uploads.py and upload_rules.py (POST /images),
             fetch.py (the site's scraper: URLs fetched from this machine only, within a deadline)

The fence: outside this package only the CLI (``cli.py``, ``commands/demo.py``), the tests and the
benchmarks import it; :mod:`tests.test_layout` checks that from the import graph. It never imports
the mirror's client or crawlers.
"""
