"""A local, Philomena-compatible site: the upstream for tests, the demo and benchmarks.

    dataset.py   Dataset: the board's records, lookups and the mutations tests make
    generate.py  deterministic generation of a realistic board from a seed
    fixtures.py  loading recorded real responses instead
    media.py     tiny valid PNG/JPEG/GIF/SVG/WebM files, without Pillow
    render.py    the exact API shape of every record (one place)
    search.py    in-memory search documents, filters and sorts (query language in query.py)
    app.py       the /api/v1/json endpoints (create_app)
    files.py     /img representation files, with Range support
    faults.py    fault profiles: rate limiting, 5xx bursts, dropped connections, slowness, downtime
    log.py       the request log
    control.py   /_control: change a site running in another process
    server.py    SiteServer (background thread) and run_site (foreground, `mirror site`)

The site never imports the mirror's client, crawlers or store.
"""
