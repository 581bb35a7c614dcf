"""A small but real OpenID provider for the single sign-on tests, built from Authlib's server components
(Flask integration): discovery, an authorization endpoint that approves one configurable test user at
once (no login form), a token endpoint (authorization code grant with OpenID Connect and PKCE required,
client_secret_basic), and a JWKS. Run as its own process:

    python -m tests.sso_provider --port 8123 --client-id vlcurate --client-secret s3cret

Tests steer it over HTTP: POST /test/config sets the user (sub, preferred_username, email, groups), the
redirect URIs allowed, claims that override what the ID token would say (a wrong aud or nonce),
whether the token is signed with a key the JWKS does not publish, and a rotation of the signing key; GET /test/token-requests lists the
token requests received (the client secret left out), so a test sees the PKCE verifier that was sent.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6749.models import ClientMixin
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.core import UserInfo
from authlib.oidc.core.grants import OpenIDCode
from authlib.oidc.core.models import AuthorizationCodeMixin
from flask import Flask, jsonify, request
from joserfc.jwk import KeySet, RSAKey

ROOT = Path(__file__).resolve().parent.parent


class Client(ClientMixin):
    def __init__(self, client_id: str, secret: str, state: dict[str, Any]) -> None:
        self.client_id, self.secret, self.state = client_id, secret, state

    def get_client_id(self):
        return self.client_id

    def get_default_redirect_uri(self):
        return self.state["redirect_uris"][0] if self.state["redirect_uris"] else None

    def get_allowed_scope(self, scope):
        return scope

    def check_redirect_uri(self, redirect_uri):
        return redirect_uri in self.state["redirect_uris"]

    def check_client_secret(self, client_secret):
        return secrets.compare_digest(client_secret, self.secret)

    def check_endpoint_auth_method(self, method, endpoint):
        return method == "client_secret_basic" if endpoint == "token" else True

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type == "authorization_code"


class Code(AuthorizationCodeMixin):
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def get_redirect_uri(self):
        return self.redirect_uri

    def get_scope(self):
        return self.scope

    def get_nonce(self):
        return self.nonce

    def get_auth_time(self):
        return self.auth_time

    def is_expired(self):
        return time.time() > self.auth_time + 300


def build(issuer: str, client_id: str, client_secret: str) -> Flask:
    app = Flask(__name__)
    lock = threading.Lock()
    state: dict[str, Any] = {"user": {"sub": "u-1", "preferred_username": "ada", "groups": []}, "redirect_uris": [],
                             "claims": {}, "unpublished_key": False, "codes": {}, "token_requests": [], "keys": 1}
    # The key the JWKS publishes (a rotation replaces it by one with a new kid), and one with the
    # same kid that it never publishes (a forged signature).
    keys = {"published": RSAKey.generate_key(2048, {"kid": "key-1"}), "unpublished": RSAKey.generate_key(2048, {"kid": "key-1"})}
    client = Client(client_id, client_secret, state)

    class CodeGrant(grants.AuthorizationCodeGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic"]

        def save_authorization_code(self, code, req):
            with lock:
                state["codes"][code] = Code(
                    code=code, client_id=req.client.get_client_id(), redirect_uri=req.payload.redirect_uri,
                    scope=req.payload.scope, nonce=req.payload.data.get("nonce"), auth_time=int(time.time()),
                    code_challenge=req.payload.data.get("code_challenge"),
                    code_challenge_method=req.payload.data.get("code_challenge_method"), user=dict(req.user),
                )

        def query_authorization_code(self, code, client_):
            found = state["codes"].get(code)
            return found if found and found.client_id == client_.get_client_id() and not found.is_expired() else None

        def delete_authorization_code(self, authorization_code):
            state["codes"].pop(authorization_code.code, None)

        def authenticate_user(self, authorization_code):
            return authorization_code.user

    class IdToken(OpenIDCode):
        def exists_nonce(self, nonce, req):
            return any(c.nonce == nonce for c in state["codes"].values())

        def resolve_client_private_key(self, client_):
            return keys["unpublished"] if state["unpublished_key"] else keys["published"]

        def get_client_claims(self, client_):
            return {"iss": issuer, "aud": [client_.get_client_id()]}

        def get_encode_header(self, client_):
            return {"alg": "RS256", "kid": keys["published"].kid}

        def generate_user_info(self, user, scope):
            info = UserInfo(sub=user["sub"], **{k: v for k, v in user.items() if k != "sub"})
            info.update(state["claims"])  # the test's overrides win over everything the token would say
            return info

    server = AuthorizationServer(app, query_client=lambda cid: client if cid == client_id else None, save_token=lambda token, req: None)
    server.register_grant(CodeGrant, [IdToken(require_nonce=True), CodeChallenge(required=True)])

    @app.get("/.well-known/openid-configuration")
    def discovery():
        return jsonify({
            "issuer": issuer, "authorization_endpoint": f"{issuer}/authorize", "token_endpoint": f"{issuer}/token",
            "jwks_uri": f"{issuer}/jwks", "response_types_supported": ["code"], "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"], "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        })

    @app.get("/jwks")
    def jwks():
        return jsonify(KeySet([keys["published"]]).as_dict(private=False))

    @app.get("/authorize")
    def authorize():
        return server.create_authorization_response(grant_user=dict(state["user"]))

    @app.post("/token")
    def token():
        with lock:
            state["token_requests"].append(dict(request.form))
        return server.create_token_response()

    @app.post("/test/config")
    def configure():
        with lock:
            config = request.get_json()
            state.update({k: v for k, v in config.items() if k in ("user", "redirect_uris", "claims", "unpublished_key")})
            if config.get("rotate_key"):
                state["keys"] += 1
                keys["published"] = RSAKey.generate_key(2048, {"kid": f"key-{state['keys']}"})
        return jsonify({"ok": True})

    @app.get("/test/token-requests")
    def token_requests():
        return jsonify(state["token_requests"])

    return app


CLIENT_ID, CLIENT_SECRET = "vlcurate-test", "provider-secret-" + "x" * 16


class Provider:
    """A running provider process, steered over HTTP."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer

    def configure(self, **config: Any) -> None:
        import httpx

        httpx.post(f"{self.issuer}/test/config", json=config, timeout=10).raise_for_status()

    def token_requests(self) -> list[dict[str, str]]:
        import httpx

        return [{k: v for k, v in r.items() if k != "client_secret"} for r in httpx.get(f"{self.issuer}/test/token-requests", timeout=10).json()]

    def settings(self, **extra: Any) -> dict[str, Any]:
        """Settings fields for an app that signs in here."""
        return {"oidc_issuer": self.issuer, "oidc_client_id": CLIENT_ID, "oidc_client_secret": CLIENT_SECRET, "oidc_name": "Test ID", **extra}


@contextmanager
def provider_process() -> Iterator[Provider]:
    """The provider in a process of its own on a free port, until the block ends."""
    from tests.conftest import free_port, running

    port = free_port()
    cmd = [sys.executable, "-m", "tests.sso_provider", "--port", str(port), "--client-id", CLIENT_ID, "--client-secret", CLIENT_SECRET]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    issuer = f"http://127.0.0.1:{port}"
    with running(cmd, f"{issuer}/.well-known/openid-configuration", env=env):
        yield Provider(issuer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--client-secret", required=True)
    args = parser.parse_args()
    issuer = f"http://127.0.0.1:{args.port}"
    build(issuer, args.client_id, args.client_secret).run(host="127.0.0.1", port=args.port, threaded=True)


if __name__ == "__main__":
    main()
