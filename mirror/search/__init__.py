"""Philomena's search query language over the mirror's database: parsed, then compiled to SQL.

``query`` is the front end (tokenizer, parser, field tables); ``compile`` turns a parsed query
into a parameterised SQL condition over the store's tables, for ``mirror serve`` and browsing.
"""
