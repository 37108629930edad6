"""`mirror serve`: the Philomena JSON API answered from a database in the store's schema.

    app.py      create_serve_app and run_serve (uvicorn, the access log)
    api.py      the /api/v1/json GET endpoints: a table of routes and small handlers
    board.py    Board: the database read-only, records as served, and the extension points a
                board with accounts fills (the local site's GeneratedBoard)
    http.py     error answers, id and page parsing, the proxy layer in front
    files.py    the archive's kept files under /img, at the paths the records name
    params.py   parameters and files of write requests, as the site reads them
    reverse.py  POST /search/reverse

It never imports the client, the crawlers or the local test site.
"""
