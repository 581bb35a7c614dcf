"""The HTTP API's reference: the OpenAPI schema of /api/v1 with its bearer-token scheme, and the
Swagger UI page at /api/docs (vendored, started by a static script, so the CSP holds)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.utils import get_openapi

from app.web.templating import render

router = APIRouter()
API_PREFIX = "/api/v1/"

# Every refusal of the API has one shape (app.main's error handlers write it): a message, and for
# invalid input the list of what is wrong. The schema says so for each status the API answers with.
ERROR_SCHEMA = {
    "type": "object",
    "title": "Error",
    "required": ["detail"],
    "properties": {
        "detail": {"type": "string", "description": "What went wrong, in the user's terms"},
        "errors": {"type": "array", "items": {"type": "string"}, "description": "Each invalid field or line, when there are several"},
    },
}
ERROR_STATUSES = {
    "400": "Bad request",
    "401": "No valid bearer token",
    "403": "The token's user lacks the role",
    "404": "Not found",
    "409": "Conflicts with the current state",
    "413": "Too large",
    "422": "Invalid input: `errors` names each problem",
}


@router.get("/api/docs", include_in_schema=False)
def api_docs(request: Request):
    return render(request, "api/docs.html", {"openapi_url": request.app.openapi_url})


def with_bearer_tokens(app: FastAPI) -> None:
    """Declare the bearer tokens that every /api/v1 call needs (the routes read the header themselves),
    so that the schema says so and the reference's "Authorize" button sends one."""

    def openapi() -> dict:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            schema.setdefault("components", {})["securitySchemes"] = {
                "token": {"type": "http", "scheme": "bearer", "description": "An API token (`vlc_…`): Users page or `vlcurate token create`."}
            }
            components = schema["components"].setdefault("schemas", {})
            components["Error"] = ERROR_SCHEMA
            for name in ("HTTPValidationError", "ValidationError"):  # FastAPI's 422 shape, which the app never sends
                components.pop(name, None)
            for path, operations in schema["paths"].items():
                if path.startswith(API_PREFIX):
                    for operation in operations.values():
                        operation.setdefault("security", [{"token": []}])
                        responses = operation.setdefault("responses", {})
                        for status, description in ERROR_STATUSES.items():
                            responses[status] = {
                                "description": description,
                                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                            }
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi
