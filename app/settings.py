"""Application settings: one pydantic-settings class behind a cached get_settings()."""

from functools import lru_cache
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_data_dir() -> Path:
    return platformdirs.user_data_path("vlcurate")


class GroupGrant(BaseModel):
    """What one identity-provider group gives: a global role (no `workspace`), or a role in the named
    workspace (annotator, reviewer or manager)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["annotator", "reviewer", "manager", "admin"]
    workspace: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _role_fits(self) -> "GroupGrant":
        if self.workspace is None and self.role == "manager":
            raise ValueError("a global role is annotator, reviewer or admin (manager is a workspace role: name the workspace)")
        if self.workspace is not None and self.role == "admin":
            raise ValueError("a workspace role is annotator, reviewer or manager (admin is global: leave out the workspace)")
        return self


class Settings(BaseSettings):
    """Every setting is read from an environment variable named `VLCURATE_<NAME>`.

    The database URL is also read from plain `DATABASE_URL`.
    """

    model_config = SettingsConfigDict(env_prefix="VLCURATE_", extra="ignore")

    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("DATABASE_URL", "VLCURATE_DATABASE_URL"),
        description="PostgreSQL URL. Absent: an embedded PostgreSQL is started in the data directory.",
    )
    data_dir: Path = Field(
        default_factory=_default_data_dir,
        description="Embedded database, local image storage, exports and the generated secret key.",
    )
    secret_key: SecretStr | None = Field(
        default=None,
        description="Signs session cookies. Absent: generated once and kept in DATA_DIR/secret_key.",
    )
    public_url: str | None = Field(
        default=None,
        description="The address users open the app at (`https://curate.example.org`); when it is https, the session "
        "cookie is sent over HTTPS only.",
    )
    session_https_only: bool = Field(
        default=False,
        description="Send the session cookie over HTTPS only, whatever VLCURATE_PUBLIC_URL says (it is anyway on a request "
        "that came over HTTPS).",
    )
    session_max_age_seconds: int = Field(
        default=14 * 24 * 3600, ge=1, description="How long a login lasts (from the login, not the last request)."
    )

    @field_validator("public_url")
    @classmethod
    def _public_url_is_http(cls, value: str | None) -> str | None:
        if value and not value.lower().startswith(("http://", "https://")):
            raise ValueError("VLCURATE_PUBLIC_URL starts with https:// or http://")
        return value

    @property
    def secure_cookies(self) -> bool:
        """Whether the session cookie carries `Secure` on every answer."""
        return self.session_https_only or (self.public_url or "").lower().startswith("https://")

    # -- single sign-on (OpenID Connect): app/oidc.py, app/services/users/sso.py --
    oidc_issuer: str | None = Field(
        default=None,
        description="The OpenID provider's issuer URL (its `/.well-known/openid-configuration` is read from there). "
        "Absent: no single sign-on.",
    )
    oidc_client_id: str | None = Field(default=None, description="This app's client id at the OpenID provider.")
    oidc_client_secret: SecretStr | None = Field(
        default=None, description="This app's client secret at the OpenID provider (sent by HTTP Basic to its token endpoint)."
    )
    oidc_scopes: str = Field(
        default="openid profile email", description="Scopes asked for, space-separated; `openid` is always among them."
    )
    oidc_groups_claim: str = Field(default="groups", description="The ID token's claim that lists the user's groups.")
    oidc_groups: dict[str, GroupGrant | list[GroupGrant]] = Field(
        default_factory=dict,
        description="JSON object from a group name to what it gives: `{\"role\": ...}` (a global role) or "
        "`{\"workspace\": ..., \"role\": ...}`, or a list of them. A user in no mapped group cannot sign in.",
    )
    oidc_name: str | None = Field(
        default=None, description="The provider's name on the login button (\"Sign in with <name>\"); absent: the issuer's host."
    )
    local_passwords: bool = Field(
        default=True,
        description="Whether users may log in with a password. false (single sign-on only): the password form is gone "
        "and password logins are refused; needs VLCURATE_OIDC_ISSUER.",
    )

    @model_validator(mode="after")
    def _sso_complete(self) -> "Settings":
        if self.oidc_issuer and not self.oidc_client_id:
            raise ValueError("VLCURATE_OIDC_ISSUER needs VLCURATE_OIDC_CLIENT_ID")
        if self.oidc_issuer and not self.oidc_issuer.lower().startswith(("https://", "http://")):
            raise ValueError("VLCURATE_OIDC_ISSUER starts with https:// or http://")
        if not self.local_passwords and not self.oidc_issuer:
            raise ValueError("VLCURATE_LOCAL_PASSWORDS=false needs VLCURATE_OIDC_ISSUER: nobody could log in")
        return self

    def group_grants(self, group: str) -> list[GroupGrant]:
        """What the group gives (nothing for a group that is not mapped)."""
        grants = self.oidc_groups.get(group, [])
        return grants if isinstance(grants, list) else [grants]

    storage_backend: Literal["local", "s3"] = Field(
        default="local", description="Where images and export files live: `local` (DATA_DIR/storage) or `s3`."
    )
    s3_bucket: str | None = Field(default=None, description="S3 bucket (storage_backend=s3).")
    s3_prefix: str = Field(default="", description="Key prefix inside the S3 bucket.")
    s3_endpoint_url: str | None = Field(
        default=None, description="S3-compatible endpoint (MinIO, moto); absent: AWS."
    )
    s3_region: str | None = Field(default=None, description="S3 region name.")

    # -- many machines: object storage URLs and the database connection budget --
    s3_presign_seconds: int = Field(
        default=0, ge=0, le=7 * 24 * 3600,
        description="0: replicas stream images and export files from S3 themselves. Above 0: export downloads "
        "redirect to presigned URLs valid this long, and images too when the URL is https (the Content-Security-Policy "
        "allows images from https: only).",
    )
    s3_public_endpoint_url: str | None = Field(
        default=None, description="The S3 endpoint browsers reach, for presigned URLs; absent: VLCURATE_S3_ENDPOINT_URL."
    )
    db_pool_size: int = Field(default=10, ge=1, le=1000, description="Database connections each process keeps open at most when idle.")
    db_max_overflow: int = Field(
        default=10, ge=0, le=1000, description="Database connections each process may open beyond the pool under load."
    )

    max_upload_bytes: int = Field(default=512 * 1024 * 1024, description="Largest accepted import upload.")
    max_image_bytes: int = Field(default=30 * 1024 * 1024, description="Largest accepted image file.")
    max_image_pixels: int = Field(
        default=60_000_000, description="Largest accepted image area (width x height), a decompression-bomb guard."
    )
    max_zip_uncompressed_bytes: int = Field(
        default=8 * 1024 * 1024 * 1024, description="Largest total uncompressed size of an images zip."
    )
    max_json_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024,
        description="Largest JSON text accepted: one imported record (JSONL line, JSON array element, CSV row or cell) or an API request body.",
    )
    max_json_depth: int = Field(
        default=64, ge=2, le=500, description="Deepest nesting of arrays and objects accepted in an imported record or an API request body."
    )
    thumbnail_size: int = Field(default=640, description="Longest side of generated WebP thumbnails, in pixels.")

    login_max_failures: int = Field(
        default=5,
        ge=1,
        description="Failed logins in a row for one username from one address before each further attempt from there waits.",
    )
    login_address_max_failures: int = Field(
        default=100,
        ge=1,
        description="Failed logins from one address within the window, whatever the usernames, before its attempts wait.",
    )
    login_backoff_seconds: float = Field(
        default=1.0, gt=0, description="The first wait once the free failures are used; it doubles with each further failure."
    )
    login_backoff_max_seconds: float = Field(default=900.0, gt=0, description="The longest wait between two attempts.")
    login_window_seconds: int = Field(
        default=3600,
        ge=1,
        description="A username's failures from an address are forgotten once none followed for this long (a correct "
        "password forgets them at once); an address's count starts again this long after its first failure.",
    )
    trusted_proxies: str = Field(
        default="",
        description="Comma-separated addresses or networks (CIDR) of reverse proxies whose X-Forwarded-For is believed. "
        "Empty: the connecting address is the client's.",
    )

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies_parse(cls, value: str) -> str:
        from app.netaddr import parse_networks

        parse_networks(value)  # raises ValueError naming the bad entry
        return value

    worklog_timezone: str = Field(
        default="UTC",
        description="The time zone (IANA name, e.g. `Europe/Berlin`) whose calendar days the work log counts answers in.",
    )

    @field_validator("worklog_timezone")
    @classmethod
    def _timezone_known(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"VLCURATE_WORKLOG_TIMEZONE: '{value}' is not a known time zone (IANA name, e.g. Europe/Berlin)") from None
        return value

    clip_model_dir: Path | None = Field(
        default=None, description="Local directory of a CLIP-family model for image-text matching (never downloaded)."
    )
    drafters_file: Path | None = Field(
        default=None,
        description="TOML file naming the model servers and local models that draft (`[drafters.<name>]` tables: see "
        "app/drafting/config.py). Absent: no drafter is configured.",
    )
    worker_batch_size: int = Field(default=32, ge=1, description="Items per suggestion job.")
    worker_image_batch: int = Field(
        default=0, ge=0, description="Images per forward pass of an image model, across a job's items; 0: chosen for "
        "the device (256 on CUDA, 32 on CPU)."
    )
    worker_precision: Literal["auto", "fp32", "bf16", "fp16"] = Field(
        default="auto", description="Model precision: auto is bf16 autocast on CUDA (fp16 where the GPU has no bf16) "
        "and fp32 on CPU; bf16 and fp16 autocast on any device."
    )
    worker_compile: bool = Field(
        default=False, description="torch.compile the image tower (a slower first batch; see docs/worker-speed.md)."
    )
    unsupported_threshold: float = Field(
        default=0.45, description="WikiDO: a caption phrase below this similarity to the reference text is flagged."
    )
    worker_stalled_seconds: int = Field(
        default=60, ge=5, description="A job whose worker sent no heartbeat for this long is run again."
    )

    @property
    def storage_dir(self) -> Path:
        return self.data_dir / "storage"


@lru_cache
def get_settings() -> Settings:
    return Settings()
