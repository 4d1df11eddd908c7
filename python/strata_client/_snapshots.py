"""Read tokens: one consistent read of several stores, on any worker, until they expire."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Union

from ._http import Client


def snapshot(base_url: Union[str, Client], stores: Iterable[str], *, ttl: Optional[str] = None, **client_options: Any) -> Dict[str, Any]:
    """Take a read token over ``stores`` ("rollout/a", "generic/b"), readable for ``ttl`` ("24h"
    by default): ``{"id", "expires_at", "stores": [{"store", "table_version", "generations"}]}``.
    Read it with ``snapshot=<id>`` on rollout and generic reads (``iter``/``list``/``get``)."""
    client = base_url if isinstance(base_url, Client) else Client(base_url, **client_options)
    body: Dict[str, Any] = {"stores": list(stores)}
    if ttl:
        body["ttl"] = ttl
    return client.json("POST", "/api/v1/snapshots", payload=body)


def delete_snapshot(base_url: Union[str, Client], snapshot_id: str, **client_options: Any) -> None:
    """Release a read token now."""
    client = base_url if isinstance(base_url, Client) else Client(base_url, **client_options)
    client.request("DELETE", Client.path("snapshots", snapshot_id))
