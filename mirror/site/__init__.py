"""The Philomena JSON API served from a board database: `mirror serve` over a mirror, and the
local site (the upstream for tests, the demo and benchmarks) over a generated board.

    board.py      Board: a database in the store's schema, read as the API reads it
    api.py        the /api/v1/json endpoints, one implementation for both
    generate.py   deterministic generation of a board, streamed into a database
    editor.py     BoardEditor: the edits tests, the control API and uploads make, in place
    board_rows.py records rendered and written through the store's writers, site_* tables
    render.py     the exact API shape of every record (one place)
    fixtures.py   a board of recorded real responses instead
    files.py      /img representation files (stand-ins or pictures), with Range support
    app.py        the local site (create_app); serve.py: `mirror serve`
    faults.py, log.py, control.py: the local site's fault profiles, request log and control API
    server.py     SiteServer (background thread) and run_site (foreground, `mirror site`)

The site never imports the mirror's client or crawlers.
"""
