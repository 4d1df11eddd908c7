"""The HTTP plumbing every store shares: URLs, bearer tokens, JSON and binary bodies, the error
envelope, and retries of 503 + Retry-After."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Mapping, Optional, Tuple

from ._errors import ContextStoreError, GoneError, QuotaExceededError, UnavailableError, error_for

JSON = "application/json"

# The 503 codes of a request the server refused before admitting it (nothing was written). A
# request deadline's DEADLINE_EXCEEDED or a STORAGE_UNAVAILABLE fault may have taken effect.
_RETRYABLE_CODES = ("OVERLOADED", "UNAVAILABLE")


class _SameHostRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects, dropping the bearer token when one leads to another host or from https
    to http: the token is for the API's host only."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            old, nxt = urllib.parse.urlparse(req.full_url), urllib.parse.urlparse(newurl)
            if old.netloc != nxt.netloc or (old.scheme == "https" and nxt.scheme != "https"):
                new.remove_header("Authorization")
        return new


_opener = urllib.request.build_opener(_SameHostRedirects)


class Client:
    """One Strata API endpoint (any worker of a cluster).

    ``max_retries`` bounds the retries of a 503 OVERLOADED or UNAVAILABLE answered with
    Retry-After (the server refused the request before admitting it: it wrote nothing) and of a
    refused connection; each waits what Retry-After says, at most ``max_wait`` seconds. Nothing
    else is retried: a 503 DEADLINE_EXCEEDED or a dropped connection may have taken effect.
    ``timeout`` bounds each request. The token is never sent to another host on a redirect.
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: Optional[str] = None,
        timeout: float = 60.0,
        max_retries: int = 8,
        max_wait: float = 30.0,
    ) -> None:
        parsed = urllib.parse.urlparse(base_url.rstrip("/"))
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"base URL {base_url!r}: want http(s)://host[:port]")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_wait = max_wait

    @staticmethod
    def path(*segments: str) -> str:
        """/api/v1/<segment>/... with each segment percent-encoded (a '/' in an id included)."""
        return "/api/v1/" + "/".join(urllib.parse.quote(s, safe="") for s in segments)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Optional[bytes] = None,
        content_type: Optional[str] = None,
        accept: str = JSON,
    ) -> Tuple[int, bytes]:
        """Send one request; returns (status, body) of a 2xx answer, raises a typed error
        otherwise."""
        url = self.base_url + path
        if query:
            items = {k: ("true" if v is True else "false" if v is False else str(v)) for k, v in query.items() if v is not None}
            if items:
                url += "?" + urllib.parse.urlencode(items)
        attempt = 0
        while True:
            req = urllib.request.Request(url, data=body, method=method)
            req.add_header("Accept", accept)
            if content_type:
                req.add_header("Content-Type", content_type)
            if self.token:
                req.add_header("Authorization", "Bearer " + self.token)
            try:
                with _opener.open(req, timeout=self.timeout) as resp:  # noqa: S310 - the configured API URL
                    return resp.status, resp.read()
            except urllib.error.HTTPError as e:  # an error answer: the envelope, typed
                data = e.read()
                retry_after = _retry_after(e.headers.get("Retry-After"))
                err = _decode_error(e.code, data, retry_after)
                # A 429 of a tenant's append rate quota wrote nothing and clears within its
                # Retry-After: retried like backpressure (the other quotas are the caller's).
                rate_limited = isinstance(err, QuotaExceededError) and err.quota == "append_rows_per_second"
                if ((e.code == 503 and err.code in _RETRYABLE_CODES) or rate_limited) and retry_after is not None and attempt < self.max_retries:
                    attempt += 1
                    time.sleep(min(retry_after, self.max_wait))
                    continue
                raise err from None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
                # A refused connection sent nothing: retried. Any other failure without an answer
                # (DNS, a timeout, a connection dropped mid-request) may have taken effect.
                if isinstance(getattr(e, "reason", e), ConnectionRefusedError) and attempt < self.max_retries:
                    attempt += 1
                    time.sleep(min(0.5, self.max_wait))
                    continue
                raise UnavailableError(0, "UNREACHABLE", f"{method} {url}: {getattr(e, 'reason', e)}") from e

    def json(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None, payload: Any = None) -> Any:
        body = None if payload is None else json.dumps(payload).encode()
        _, data = self.request(method, path, query=query, body=body, content_type=JSON if body is not None else None)
        if not data:
            return None
        return json.loads(data)


def _retry_after(value: Optional[str]) -> Optional[float]:
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _decode_error(status: int, data: bytes, retry_after: Optional[float]) -> ContextStoreError:
    code, message = "HTTP_" + str(status), data.decode(errors="replace").strip()
    restart, quota, tenant = None, None, None
    try:
        env: Dict[str, Any] = json.loads(data)
        code, message = env["error"]["code"], env["error"]["message"]
        restart = env["error"].get("restart")
        quota, tenant = env["error"].get("quota"), env["error"].get("tenant")
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    err = error_for(status, code, message, retry_after)
    if isinstance(err, GoneError):
        err.restart = restart
    if isinstance(err, QuotaExceededError):
        err.quota, err.tenant = quota, tenant
    return err
