"""The one exception tree of polymem.

```
PolymemError
├── InvalidInput (ValueError)
│   ├── NaiveDatetimeError
│   ├── EmptyContentError
│   ├── ContentTooLargeError
│   ├── InvalidFilterError
│   ├── DimensionMismatchError
│   ├── InvalidURLError
│   └── ContentRejectedError
├── NotFoundError (KeyError)
├── VersionConflictError
├── ReembedRequiredError (deprecated, never raised)
├── SnapshotError
├── StoreClosedError
├── ReadOnlyStoreError
├── StoreUnreadableError
├── ModelAnswerError (ValueError)
├── PermissionDeniedError
│   ├── SourceBlockedError
│   └── SessionOwnerError
├── MissingDependencyError (ImportError)
└── NotSupportedError (NotImplementedError)
```
Every edge (CLI, service, client) translates to and from these types, so an
embedded store and a remote one raise alike.
"""

from __future__ import annotations


class PolymemError(Exception):
    """Root of every error polymem raises on purpose."""

    code = "polymem_error"


class InvalidInput(PolymemError, ValueError):
    """An argument was rejected before anything was written."""

    code = "invalid_input"


class NaiveDatetimeError(InvalidInput):
    """A datetime without a timezone was given; polymem never guesses one."""

    code = "naive_datetime"


class EmptyContentError(InvalidInput):
    """Memory or message content was empty or only whitespace."""

    code = "empty_content"


class ContentTooLargeError(InvalidInput):
    """Content exceeded the store's `max_content_chars`."""

    code = "content_too_large"


class InvalidFilterError(InvalidInput):
    """A recall filter named an unknown field or operator, or a bad value."""

    code = "invalid_filter"


class DimensionMismatchError(InvalidInput):
    """A vector's length differs from the embedder's dimension."""

    code = "dimension_mismatch"


class InvalidURLError(InvalidInput):
    """`polymem.open()` was given a URL it cannot open."""

    code = "invalid_url"


class NotFoundError(PolymemError, KeyError):
    """The memory or session does not exist (or is outside your namespace)."""

    code = "not_found"

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else "not found"


class VersionConflictError(PolymemError):
    """`expected_version` did not match: someone else changed the memory first."""

    code = "version_conflict"


class ReembedRequiredError(PolymemError):
    """Deprecated, never raised: a store whose vectors come from another embedding model opens and
    recalls (those memories by full text, with a warning) until `polymem reembed` re-embeds them.
    Kept so that existing `except` clauses keep working."""

    code = "reembed_required"


class SnapshotError(PolymemError):
    """A snapshot file is corrupt, truncated or of an unknown format version."""

    code = "snapshot_error"


class StoreClosedError(PolymemError):
    """The store was used after `close()`."""

    code = "store_closed"


class ReadOnlyStoreError(PolymemError):
    """A write reached a store opened read-only (`?mode=ro`, or a file this process may only read)."""

    code = "read_only_store"


class StoreUnreadableError(PolymemError):
    """The store's file is not a database polymem can read: random bytes, truncated, a directory."""

    code = "store_unreadable"


class ModelAnswerError(PolymemError, ValueError):
    """A chat model's reply could not be read (an extraction reply with no JSON list of memories);
    nothing was written."""

    code = "model_answer_unreadable"


class PermissionDeniedError(PolymemError):
    """The caller's grants do not cover this scope or action."""

    code = "permission_denied"


class LockTimeoutError(PolymemError, TimeoutError):
    """The consolidation lock stayed taken by another instance past the timeout."""

    code = "lock_timeout"


class MissingDependencyError(PolymemError, ImportError):
    """An optional dependency is missing; the message names the pip line to run."""

    code = "missing_dependency"


def missing_extra(module: str, extra: str, package: str = "polymem") -> MissingDependencyError:
    """Build the error for an absent optional dependency, naming the install line."""
    return MissingDependencyError(
        f"{module!r} is not installed. Install it with `pip install {package}[{extra}]`."
    )


class NotSupportedError(PolymemError, NotImplementedError):
    """The operation needs what this store does not have (e.g. the service's registry of blocked sources)."""

    code = "not_supported"


class ContentRejectedError(InvalidInput):
    """The write filter flagged the content and the policy for its source is "refuse"."""

    code = "content_rejected"


class SourceBlockedError(PermissionDeniedError):
    """The memory's source is quarantined (`block_source`); its writes are refused."""

    code = "source_blocked"


class SessionOwnerError(PermissionDeniedError):
    """The session belongs to another user: a handle may only use sessions its user opened."""

    code = "session_owner"
