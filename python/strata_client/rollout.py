"""Rollout stores: lance-context's rollout records (RolloutStore.connect, add, list, get, ...)."""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Union

from ._errors import NotFoundError
from ._http import JSON, Client
from ._store import Filter, _Store, filter_param


class RolloutStore(_Store):
    """A rollout store on a Strata server.

    Records are dicts of lance-context's AddRolloutRequest fields (id, rollout_id, content,
    reward, ...). ``binary_payload`` may be bytes: the record is then sent as multipart, the
    bytes as their own part.
    """

    collection = "rollouts"

    def __init__(self, client: Client, name: str, info: Dict[str, Any], version: Optional[int] = None) -> None:
        super().__init__(client, name, info)
        self._pinned = version

    @classmethod
    def create(cls, base_url: Union[str, Client], name: str, *, storage_options: Optional[Mapping[str, str]] = None, **client_options: Any) -> "RolloutStore":
        """Create a store (AlreadyExistsError when the name is taken)."""
        body: Dict[str, Any] = {"name": name}
        if storage_options:
            body["storage_options"] = dict(storage_options)
        return cls._create(cls._client_for(base_url, **client_options), name, body)

    @classmethod
    def connect_or_create(cls, base_url: Union[str, Client], name: str, *, storage_options: Optional[Mapping[str, str]] = None, **client_options: Any) -> "RolloutStore":
        """Open the store, creating it when it does not exist."""
        body: Dict[str, Any] = {"name": name}
        if storage_options:
            body["storage_options"] = dict(storage_options)
        return cls._connect_or_create(base_url, name, body, client_options)

    def checkout(self, version: int) -> "RolloutStore":
        """A read-only view of a retained base-table version (reads without the WAL)."""
        self._client.json("POST", Client.path(self.collection, self.name, "checkout"), payload={"version": version})
        return RolloutStore(self._client, self.name, self._info, version)

    # --- writes

    def add(self, records: Union[Mapping[str, Any], Iterable[Mapping[str, Any]]], *, flush: bool = True) -> Dict[str, Any]:
        """Append records (one dict or many); returns {version, ids, count}. With ``flush`` (the
        default, as lance-context's remote store) they are visible to every worker on return."""
        if isinstance(records, Mapping):
            records = [records]
        rows = [dict(r) for r in records]
        query = {"flush": True} if flush else None
        path = Client.path(self.collection, self.name, "records")
        blobs = {i: r.pop("binary_payload") for i, r in enumerate(rows) if isinstance(r.get("binary_payload"), (bytes, bytearray, memoryview))}
        if not blobs:
            _, data = self._client.request("POST", path, query=query, body=json.dumps({"records": rows}).encode(), content_type=JSON)
            return json.loads(data)
        for i, blob in blobs.items():
            rows[i].setdefault("payload_size", len(blob))
        boundary = "strata-" + uuid.uuid4().hex
        parts = [_part(boundary, "metadata", json.dumps({"records": rows}).encode(), JSON)]
        for i, blob in blobs.items():
            parts.append(_part(boundary, str(i), bytes(blob), "application/octet-stream"))
        body = b"".join(parts) + f"--{boundary}--\r\n".encode()
        _, data = self._client.request("POST", path, query=query, body=body, content_type=f"multipart/form-data; boundary={boundary}")
        return json.loads(data)

    def add_one(self, **fields: Any) -> Dict[str, Any]:
        """Append one record given as keyword arguments."""
        return self.add(fields)

    # --- reads

    def _version_query(self) -> Dict[str, Any]:
        return {"version": self._pinned} if self._pinned else {}

    def get(self, id: str, *, snapshot: Optional[str] = None) -> Optional[Dict[str, Any]]:
        """One record (without binary_payload), or None; ``snapshot``: as a read token saw it."""
        q = dict(self._version_query(), snapshot=snapshot)
        r = self._client.json("GET", Client.path(self.collection, self.name, "records", id), query=q)
        return (r or {}).get("record")

    def get_blob(self, id: str) -> Optional[bytes]:
        """A record's binary payload, or None when it has none."""
        try:
            _, data = self._client.request("GET", Client.path(self.collection, self.name, "records", id, "blob"), accept="application/octet-stream")
        except NotFoundError:
            return None
        return data

    def get_rows(self, ids: Iterable[str], columns: Optional[Iterable[str]] = None) -> List[Dict[str, Any]]:
        """Up to 1,024 records by id in one snapshot, in the order asked (ids without a record left out)."""
        return self._get_rows("records", ids, columns)

    def iter(self, filters: Filter = None, *, page_size: int = 1000, limit: Optional[int] = None,
             snapshot: Optional[str] = None) -> Iterator[Dict[str, Any]]:
        """Every record in id order (keyset pages of ``page_size``); ``filters`` is a SQL
        predicate ("rollout_id = 't1' AND reward > 0.5") or a dict of exact matches; ``snapshot``
        reads a read token's cut (strata_client.snapshot)."""
        query = dict(self._version_query(), filters=filter_param(filters), snapshot=snapshot)
        return self._pages(Client.path(self.collection, self.name, "records"), "records", query, page_size, limit)

    def list(self, limit: Optional[int] = None, offset: int = 0, filters: Filter = None) -> List[Dict[str, Any]]:
        """Records in id order: ``limit`` of them (all when None) after skipping ``offset``
        matching ones."""
        query = dict(self._version_query(), filters=filter_param(filters))
        return self._list(Client.path(self.collection, self.name, "records"), "records", query, limit, offset)

    def get_trajectory(self, rollout_id: str) -> List[Dict[str, Any]]:
        """Every record of one rollout, in sequence_order."""
        rows = list(self.iter({"rollout_id": rollout_id}))
        return sorted(rows, key=lambda r: (r.get("sequence_order") or 0, r.get("id")))

    # --- maintenance

    def _merge_wal_path(self) -> str:
        return Client.path("internal", "merge-wal", self.name)

    def compact(self, target_rows_per_fragment: Optional[int] = None, materialize_deletions: Optional[bool] = None) -> Dict[str, Any]:
        """Compact the base table now; {fragments_removed, fragments_added, files_removed, files_added}."""
        body = {k: v for k, v in {"target_rows_per_fragment": target_rows_per_fragment, "materialize_deletions": materialize_deletions}.items() if v is not None}
        return self._client.json("POST", Client.path(self.collection, self.name, "compact"), payload=body)

    def compaction_stats(self) -> Dict[str, Any]:
        return self._client.json("GET", Client.path(self.collection, self.name, "compact", "stats"))


def _part(boundary: str, name: str, data: bytes, content_type: str) -> bytes:
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\nContent-Type: {content_type}\r\n\r\n'
    return head.encode() + data + b"\r\n"
