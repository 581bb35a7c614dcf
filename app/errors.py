"""Domain errors raised by services; the web layer maps them to HTTP responses."""


class DomainError(Exception):
    status_code = 400

    def __init__(self, message: str, errors: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.errors = errors or []


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
