"""The HTTP API's reference: the OpenAPI schema of /api/v1 with its bearer-token scheme, and the
Swagger UI page at /api/docs (vendored, started by a static script, so the CSP holds)."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.utils import get_openapi

from app.web.templating import render

router = APIRouter()
API_PREFIX = "/api/v1/"


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
            for path, operations in schema["paths"].items():
                if path.startswith(API_PREFIX):
                    for operation in operations.values():
                        operation.setdefault("security", [{"token": []}])
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi
