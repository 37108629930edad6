"""The HTTP client for Philomena's JSON API: one method per GET endpoint, paced and retried."""

from .client import Page, PhilomenaClient
from .errors import (
    ApiError,
    BadQuery,
    Forbidden,
    KeyRequired,
    NotFound,
    RateLimited,
    RetriesExhausted,
    SiteUnavailable,
    UnexpectedResponse,
    WrongBaseUrl,
)

__all__ = [
    "ApiError",
    "BadQuery",
    "Forbidden",
    "KeyRequired",
    "NotFound",
    "Page",
    "PhilomenaClient",
    "RateLimited",
    "RetriesExhausted",
    "SiteUnavailable",
    "UnexpectedResponse",
    "WrongBaseUrl",
]
