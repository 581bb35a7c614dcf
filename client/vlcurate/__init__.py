"""vlcurate's Python client: `from vlcurate import Client`. Push records and an outside model's
suggestions, browse items, act on reviews, and pull the finished records as a `datasets.Dataset`."""

from vlcurate.aio import AsyncClient
from vlcurate.client import Client
from vlcurate.errors import (
    Conflict,
    ConnectionFailed,
    Forbidden,
    Invalid,
    NotFound,
    ServerError,
    TooLarge,
    Unauthorized,
    UnexpectedAnswer,
    VlcurateError,
)

__version__ = "0.1.0"
__all__ = ["AsyncClient", "Client", "Conflict", "ConnectionFailed", "Forbidden", "Invalid", "NotFound", "ServerError",
           "TooLarge", "Unauthorized", "UnexpectedAnswer", "VlcurateError"]
