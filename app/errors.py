"""Domain errors raised by services; the web layer maps them to HTTP responses.

Every command of the command line imports this module, so it imports neither psycopg nor Jinja at
its top: the two functions that use them import them when called."""

import errno


def size_text(size: int) -> str:
    """A size as people read it ("30 MiB", not 31457280): Jinja's filesizeformat, which the pages use
    too (filter `size`), in binary units as the settings' defaults are written."""
    from jinja2.filters import do_filesizeformat

    return do_filesizeformat(size, binary=True).replace(".0 ", " ")


class DomainError(Exception):
    status_code = 400

    def __init__(self, message: str, errors: list[str] | None = None, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.errors = errors or []
        self.field = field  # the form field the error is about, where there is one (a form focuses it)


class NotFound(DomainError):
    status_code = 404


class Forbidden(DomainError):
    status_code = 403


class Conflict(DomainError):
    status_code = 409


class Invalid(DomainError):
    """Input that fails validation; `errors` lists each problem in the user's terms."""

    status_code = 422


class RateLimited(DomainError):
    status_code = 429


def format_validation_error(exc, prefix: str = "") -> list[str]:
    """A pydantic ValidationError as messages naming each field: "field 'a.b': why"."""
    messages = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "record"
        messages.append(f"{prefix}field '{loc}': {err['msg']}")
    return messages


class TooLarge(DomainError):
    status_code = 413


FULL_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def full_disk(exc: BaseException | None) -> str | None:
    """Whose disk `exc` says is full: "server" (a file the app wrote: ENOSPC or EDQUOT) or "database"
    (PostgreSQL's SQLSTATE 53100, disk_full), looked for also in what wrapped or followed it; None
    for any other error."""
    import psycopg

    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in FULL_DISK_ERRNOS:
            return "server"
        if isinstance(exc, psycopg.errors.DiskFull):
            return "database"
        exc = getattr(exc, "orig", None) or exc.__cause__ or exc.__context__
    return None


FULL_DISK_MESSAGES = {
    "server": "The server's disk is full: free space on the disk that holds its data directory and temporary files, then try again. Nothing was saved.",
    "database": "The database server's disk is full: free space on the disk that holds PostgreSQL's data, then try again. Nothing was saved.",
}


def ascii_digits(text: str) -> bool:
    """Whether `text` is one or more ASCII digits: a whole number as `int` and the API's validation both
    read it (`str.isdigit` also holds for '¹', which `int` refuses)."""
    return text.isascii() and text.isdigit()
