"""Errors the client raises. Each names what went wrong and what to do; none carries the key.

    MirrorError
    └── ApiError                    4  the site refused a request or answered wrongly
        ├── NotFound                      404
        ├── BadQuery                      400
        │   └── UploadRejected            400 on an upload, with the site's message per field
        ├── Forbidden                     403
        │   └── KeyRequired               401, or 403 where only a key would do
        ├── UnexpectedResponse            200 with a body that is not what the endpoint promises
        │   ├── WalkStalled               a page that does not move a walk on (mirror.sync.paging)
        │   └── NotPhilomena              a web page or a redirect where the API should be: check site.base_url
        ├── WrongBaseUrl            2  site.base_url cannot be right as written: https:// to a plain-HTTP server
        └── SiteUnavailable         3  down, failing or rate-limiting past the retry budget; run again later
            ├── RetriesExhausted          one request failed on every retry
            ├── RateLimited               429 past the retry budget
            └── UploadUncertain           an upload's answer was lost: not retried
"""

from __future__ import annotations

from ..errors import EXIT_REJECTED, EXIT_UNAVAILABLE, EXIT_USAGE, MirrorError


class ApiError(MirrorError):
    """A request to the site failed. ``url`` is redacted; ``status`` is None for transport errors."""

    exit_code = EXIT_REJECTED

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


class NotFound(ApiError):
    """The site has no such record (404)."""


class BadQuery(ApiError):
    """The site could not parse the search query or a parameter (400)."""


class Forbidden(ApiError):
    """The site refused to show the record (403), for example a comment on a hidden image."""


class KeyRequired(Forbidden):
    """The endpoint needs a valid API key (401, or 403 on key-only endpoints)."""


class SiteUnavailable(ApiError):
    """The site kept failing (5xx, timeouts, dropped connections) past the retry budget.

    ``reason`` is the last failure alone ("cannot connect to HOST:PORT (connection refused)"), for
    a caller that says what to do instead in its own words."""

    exit_code = EXIT_UNAVAILABLE

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message, url=url, status=status)
        self.reason = reason


class RetriesExhausted(SiteUnavailable):
    """One request failed on every retry, though the site has not failed ``give_up_after`` times
    in a row: a caller that can skip that one request (a file download) may go on."""


class RateLimited(SiteUnavailable):
    """The site kept answering 429 past the retry budget."""


class UnexpectedResponse(ApiError):
    """The site answered 200 with a body that is not the JSON the endpoint promises."""


class NotPhilomena(UnexpectedResponse):
    """The address answers, but not as Philomena's JSON API would: with a web page, or a redirect."""


class WrongBaseUrl(ApiError):
    """``site.base_url`` cannot be right as written (``https://`` to a server that speaks plain
    HTTP): a config error found at the first request, so it ends the run at once with status 2,
    where retrying would only wait."""

    exit_code = EXIT_USAGE


class UploadRejected(BadQuery):
    """The site refused an upload (400); ``errors`` maps each field to the site's messages."""

    def __init__(self, message: str, errors: dict, *, url: str | None = None) -> None:
        super().__init__(message, url=url, status=400)
        self.errors = errors


class UploadUncertain(SiteUnavailable):
    """The answer to an upload was lost and whether it landed cannot be told: not retried."""
