"""`polymem._postgres_async:AsyncPostgresBackend`, the import string the registries name; the
store lives in `polymem._postgres._async`."""

from ._postgres._async import AsyncPostgresBackend

__all__ = ["AsyncPostgresBackend"]
