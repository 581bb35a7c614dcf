"""The OpenID Connect client (authorization code flow with PKCE, through Authlib): the provider's
discovery document and keys, the sign-in redirect, and the checked claims of the ID token it returns.
No database: app.services.users.sso turns the claims into a user."""

from __future__ import annotations

import hmac
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import OAuth2Client, OAuthError
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from app.settings import Settings

TIMEOUT_S = 10.0  # one call to the provider: a hung provider fails the sign-in, it does not hold a worker
METADATA_TTL_S = 3600.0  # how long a discovery document and key set are trusted before they are read again
LEEWAY_S = 60  # clock skew allowed between the provider and this server on exp / iat
SHOWN_CHARS = 300  # characters of the provider's error description shown and kept in the audit log
# Signature algorithms accepted whatever the provider advertises: asymmetric only ('none' and the
# HMAC ones, which would make the client secret a signing key, are refused).
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")


class SignInError(Exception):
    """The sign-in failed; `message` says why in words a user can act on (no secret in it)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Pending:
    """What one sign-in keeps between the redirect to the provider and its return (in the signed
    session cookie): the state and nonce it must come back with, and the PKCE verifier."""

    state: str
    nonce: str
    verifier: str
    next: str

    def as_dict(self) -> dict[str, str]:
        return {"state": self.state, "nonce": self.nonce, "verifier": self.verifier, "next": self.next}

    @classmethod
    def of(cls, data: object) -> Pending | None:
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("state", "nonce", "verifier", "next")):
            return None
        return cls(data["state"], data["nonce"], data["verifier"], data["next"])


_cache: dict[str, tuple[float, dict[str, Any]]] = {}
_cache_lock = threading.Lock()


def _get_json(url: str, what: str) -> dict[str, Any]:
    try:
        answer = httpx.get(url, timeout=TIMEOUT_S)
        answer.raise_for_status()
        data = answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise SignInError(f"The sign-in provider's {what} could not be read ({type(exc).__name__}). Try again later.") from None
    if not isinstance(data, dict):
        raise SignInError(f"The sign-in provider's {what} is not a JSON object.")
    return data


def _cached(url: str, what: str, *, fresh: bool = False) -> dict[str, Any]:
    now = time.monotonic()
    with _cache_lock:
        hit = _cache.get(url)
    if hit and not fresh and now - hit[0] < METADATA_TTL_S:
        return hit[1]
    data = _get_json(url, what)
    with _cache_lock:
        _cache[url] = (now, data)
    return data


def _same(sent: str, kept: str) -> bool:
    """Constant-time equality of two texts (any characters: compare_digest refuses non-ASCII str)."""
    return hmac.compare_digest(sent.encode("utf-8", "surrogatepass"), kept.encode())


def metadata(settings: Settings) -> dict[str, Any]:
    """The provider's discovery document, whose `issuer` must be the configured one exactly."""
    issuer = settings.oidc_issuer or ""
    doc = _cached(issuer.rstrip("/") + "/.well-known/openid-configuration", "discovery document")
    if doc.get("issuer") != issuer:
        raise SignInError("The sign-in provider names another issuer than the one configured (VLCURATE_OIDC_ISSUER).")
    for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not isinstance(doc.get(key), str):
            raise SignInError(f"The sign-in provider's discovery document has no {key}.")
    return doc


def display_name(settings: Settings) -> str:
    """The provider's name on the login button."""
    return settings.oidc_name or urlsplit(settings.oidc_issuer or "").hostname or "single sign-on"


def scopes(settings: Settings) -> str:
    asked = settings.oidc_scopes.split()
    return " ".join(asked if "openid" in asked else ["openid", *asked])


def _client(settings: Settings, redirect_uri: str) -> OAuth2Client:
    secret = settings.oidc_client_secret.get_secret_value() if settings.oidc_client_secret else None
    return OAuth2Client(
        client_id=settings.oidc_client_id,
        client_secret=secret,
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
        scope=scopes(settings),
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
        timeout=TIMEOUT_S,
    )


def start(settings: Settings, redirect_uri: str, next_path: str) -> tuple[str, Pending]:
    """The provider's authorization URL to send the browser to, and what to keep until it returns."""
    doc = metadata(settings)
    pending = Pending(state=generate_token(32), nonce=generate_token(32), verifier=generate_token(64), next=next_path)
    with _client(settings, redirect_uri) as client:
        url, _ = client.create_authorization_url(
            doc["authorization_endpoint"], state=pending.state, code_verifier=pending.verifier, nonce=pending.nonce
        )
    return url, pending


def finish(settings: Settings, pending: Pending | None, params: dict[str, str], redirect_uri: str) -> dict[str, Any]:
    """The claims of the ID token the provider returns for the code in `params` (the callback's query),
    once the state matches the pending sign-in, the code is exchanged with the PKCE verifier, and the
    token's signature (the provider's JWKS), issuer, audience, expiry and nonce are right."""
    if pending is None:
        raise SignInError("This sign-in was not started here, or it was already used. Start again from the login page.")
    if not _same(params.get("state", ""), pending.state):
        raise SignInError("The sign-in answer does not belong to this browser's sign-in (state mismatch). Start again.")
    if params.get("error"):
        raise SignInError(f"The sign-in provider refused: {_shown(params.get('error_description') or params['error'])}.")
    if not params.get("code"):
        raise SignInError("The sign-in provider sent no authorization code.")
    doc = metadata(settings)
    with _client(settings, redirect_uri) as client:
        try:
            token = client.fetch_token(
                doc["token_endpoint"], grant_type="authorization_code", code=params["code"], code_verifier=pending.verifier
            )
        except OAuthError as exc:
            raise SignInError(f"The sign-in provider did not accept the code ({exc.error}).") from None
        except Exception as exc:
            raise SignInError(f"The sign-in provider's token endpoint could not be reached ({type(exc).__name__}).") from None
    if not isinstance(token.get("id_token"), str):
        raise SignInError("The sign-in provider sent no ID token.")
    return verify_id_token(settings, doc, token["id_token"], pending.nonce)


def _shown(text: str) -> str:
    """The provider's own words, fit to show and store: printable characters only, at most SHOWN_CHARS."""
    clean = "".join(c if c.isprintable() else " " for c in str(text)).strip()
    return clean[:SHOWN_CHARS] + ("…" if len(clean) > SHOWN_CHARS else "")


def _decode(doc: dict[str, Any], id_token: str) -> jwt.Token:
    advertised = doc.get("id_token_signing_alg_values_supported") or ["RS256"]
    algorithms = [a for a in advertised if a in ALGORITHMS]
    if not algorithms:  # an empty list would let joserfc fall back to its own default algorithms
        raise SignInError(f"The sign-in provider advertises no signing algorithm this server accepts ({', '.join(ALGORITHMS)}).")
    try:
        try:
            return jwt.decode(id_token, KeySet.import_key_set(_cached(doc["jwks_uri"], "key set")), algorithms=algorithms)
        except InvalidKeyIdError:  # a key not in the cached set: the provider may have rotated its keys
            return jwt.decode(id_token, KeySet.import_key_set(_cached(doc["jwks_uri"], "key set", fresh=True)), algorithms=algorithms)
    except InvalidKeyIdError:
        raise SignInError("The ID token is signed with a key the provider does not publish.") from None
    except (JoseError, ValueError) as exc:
        raise SignInError(f"The ID token's signature is not the provider's ({type(exc).__name__}).") from None


def verify_id_token(settings: Settings, doc: dict[str, Any], id_token: str, nonce: str) -> dict[str, Any]:
    """The ID token's claims once its signature, iss, aud (and azp), exp, iat, sub and nonce hold."""
    claims = _decode(doc, id_token).claims
    registry = jwt.JWTClaimsRegistry(
        leeway=LEEWAY_S,
        iss={"essential": True, "value": settings.oidc_issuer},
        sub={"essential": True},
        aud={"essential": True},
        exp={"essential": True},
        iat={"essential": True},
        nonce={"essential": True},
    )
    try:
        registry.validate(claims)
    except JoseError as exc:
        raise SignInError(f"The ID token is not valid ({exc.description or exc.error}).") from None
    audience = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if settings.oidc_client_id not in audience:
        raise SignInError("The ID token was issued for another application (audience mismatch).")
    if len(audience) > 1 and claims.get("azp") != settings.oidc_client_id:
        raise SignInError("The ID token was issued for another application (azp mismatch).")
    if not isinstance(claims["nonce"], str) or not _same(claims["nonce"], nonce):
        raise SignInError("The ID token does not belong to this sign-in (nonce mismatch). Start again.")
    return claims
