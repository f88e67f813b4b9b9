"""The service's error edge: extra error types, HTTP statuses and the code registry.

```
PolymemError
├── AuthenticationError                  401 unauthenticated
├── RequestTimeoutError                  504 timeout
├── ServiceUnavailableError              503 unavailable (transport failures, shutting down)
├── RateLimitedError                     429 rate_limited (with Retry-After)
└── InvalidInput
    └── PayloadTooLargeError             413 payload_too_large
```
(ContentRejectedError, 422, and SourceBlockedError, 403, are the core's: the write filter is in the core.)
Every other class keeps its core `code`; `STATUS` maps it to a status. The
client maps a JSON error's `code` back to the same class with `error_type()`.
This module imports nothing heavy, so the client can import it.
"""

from __future__ import annotations

from .. import _errors as core
from .._errors import ContentRejectedError, InvalidInput, PermissionDeniedError, PolymemError, SourceBlockedError

__all__ = ["STATUS", "AuthenticationError", "ContentRejectedError", "PayloadTooLargeError", "RateLimitedError",
           "RequestTimeoutError",
           "ServiceUnavailableError", "SourceBlockedError", "error_type", "status_for"]


class AuthenticationError(PolymemError):
    """No bearer token, an unknown one, or a revoked one."""

    code = "unauthenticated"


class RequestTimeoutError(PolymemError):
    """The server gave up on the request (a write in flight still completes and is audited)."""

    code = "timeout"


class ServiceUnavailableError(PolymemError):
    """The service could not be reached, or is shutting down."""

    code = "unavailable"


class RateLimitedError(PolymemError):
    """The caller's token spent its request budget; `Retry-After` says when to come back."""

    code = "rate_limited"


class PayloadTooLargeError(InvalidInput):
    """The request body exceeded the service's size limit."""

    code = "payload_too_large"


STATUS: dict[type[PolymemError], int] = {
    PolymemError: 500,
    core.InvalidInput: 422,
    PayloadTooLargeError: 413,
    core.NotFoundError: 404,
    core.VersionConflictError: 409,
    core.ReembedRequiredError: 409,
    core.SnapshotError: 422,
    core.StoreClosedError: 503,
    core.ReadOnlyStoreError: 409,
    core.StoreUnreadableError: 500,
    ServiceUnavailableError: 503,
    core.PermissionDeniedError: 403,
    AuthenticationError: 401,
    RequestTimeoutError: 504,
    RateLimitedError: 429,
    core.MissingDependencyError: 500,
    core.ModelAnswerError: 502,  # the service's model (its extractor) answered unreadably
}


def status_for(exc: PolymemError) -> int:
    """The HTTP status of an error: its nearest class in `STATUS`."""
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def _walk(cls: type[PolymemError]) -> list[type[PolymemError]]:
    out = [cls]
    for sub in cls.__subclasses__():
        out.extend(_walk(sub))
    return out


def error_types() -> dict[str, type[PolymemError]]:
    """Every known error code → its class (core and service errors)."""
    return {cls.code: cls for cls in reversed(_walk(PolymemError)) if cls.__module__.startswith("polymem")}


def error_type(code: str | None, status: int) -> type[PolymemError]:
    """The class for a wire error: by code, else by status, else `PolymemError`."""
    found = error_types().get(code or "")
    if found is not None:
        return found
    by_status = {401: AuthenticationError, 403: PermissionDeniedError, 404: core.NotFoundError,
                 409: core.VersionConflictError, 413: PayloadTooLargeError, 422: InvalidInput, 429: RateLimitedError,
                 503: ServiceUnavailableError, 504: RequestTimeoutError}
    return by_status.get(status, PolymemError)
