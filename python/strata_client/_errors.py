"""Typed errors: the API's error envelope {"error": {"code", "message"}} as exceptions."""

from __future__ import annotations

from typing import Any, Dict, Optional


class ContextStoreError(RuntimeError):
    """An error answer of the API (lance-context's base error name)."""

    def __init__(self, status: int, code: str, message: str, retry_after: Optional[float] = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


class NotFoundError(ContextStoreError):
    """404: the store (or the route) does not exist."""


class AlreadyExistsError(ContextStoreError):
    """409 ALREADY_EXISTS: a store of that name exists."""


class CompactionInProgressError(ContextStoreError):
    """409 while the store is being compacted."""


class InvalidRequestError(ContextStoreError):
    """400: the request was refused whole; nothing was written."""


class PayloadTooLargeError(InvalidRequestError):
    """413: the body (or a blob in it) is over the server's limit."""


class GoneError(InvalidRequestError):
    """410: a change-feed cursor whose rows were released (CURSOR_EXPIRED: ``restart`` is
    ``{"table_version", "cursor"}``, where to start again) or a read token that expired
    (SNAPSHOT_EXPIRED)."""

    restart: Optional[Dict[str, Any]] = None


class QuotaExceededError(InvalidRequestError):
    """429 QUOTA_EXCEEDED: the store's tenant is at one of its quotas; nothing was written.
    ``quota`` names it (rows, bytes, pending_generations or append_rows_per_second), ``tenant``
    the tenant; ``retry_after`` says when to try again."""

    quota: Optional[str] = None
    tenant: Optional[str] = None


class UnavailableError(ContextStoreError):
    """503 after every retry: the worker, its catalog or its storage is overloaded or down."""


class InternalError(ContextStoreError):
    """Any other error answer (5xx)."""


def error_for(status: int, code: str, message: str, retry_after: Optional[float]) -> ContextStoreError:
    if status == 404:
        return NotFoundError(status, code, message, retry_after)
    if status == 409:
        if code == "ALREADY_EXISTS":
            return AlreadyExistsError(status, code, message, retry_after)
        return CompactionInProgressError(status, code, message, retry_after)
    if status == 410:
        return GoneError(status, code, message, retry_after)
    if status == 413:
        return PayloadTooLargeError(status, code, message, retry_after)
    if status == 429:
        return QuotaExceededError(status, code, message, retry_after)
    if 400 <= status < 500:
        return InvalidRequestError(status, code, message, retry_after)
    if status == 503:
        return UnavailableError(status, code, message, retry_after)
    return InternalError(status, code, message, retry_after)
