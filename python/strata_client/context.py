"""Context stores: agent memory with vector search and hybrid retrieval (lance-context's
Context API over HTTP: add, add_many, get, list, search, retrieve, related, update, upsert,
delete/forget, version, checkout, compact, compaction_stats)."""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Any, Dict, Iterable, List, Mapping, Optional, Union

from ._http import Client
from ._store import _Store

_RECORD_FIELDS = (
    "embedding", "bot_id", "session_id", "tenant", "source", "external_id", "metadata", "relationships",
    "expires_at", "retention_policy", "supersedes_id", "state_metadata", "payload_uri", "payload_size",
    "payload_checksum",
)
_PATCH_FIELDS = (
    "bot_id", "session_id", "tenant", "source", "state_metadata", "metadata", "relationships", "expires_at",
    "retention_policy", "lifecycle_status", "retired_at", "retired_reason", "embedding",
)


def _timestamp(value: Union[datetime, str, None], name: str) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"{name} must include timezone information")
        return value.isoformat().replace("+00:00", "Z")
    raise TypeError(f"{name} must be a datetime, an RFC 3339 string or None")


def _vector(value: Any) -> List[float]:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [float(x) for x in value]
    raise TypeError("a vector must be a sequence of floats")


def _record_body(role: str, content: Any, content_type: Optional[str], fields: Mapping[str, Any]) -> Dict[str, Any]:
    """An AddRecordRequest: text content as text_payload, bytes as binary_payload (base64)."""
    body: Dict[str, Any] = {"role": role}
    if isinstance(content, (bytes, bytearray, memoryview)):
        body["binary_payload"] = base64.b64encode(bytes(content)).decode()
        body["content_type"] = content_type or "application/octet-stream"
    elif content is not None:
        body["text_payload"] = str(content)
        if content_type:
            body["content_type"] = content_type
    elif content_type:
        body["content_type"] = content_type
    for key in _RECORD_FIELDS:
        value = fields.get(key)
        if value is None:
            continue
        if key == "expires_at":
            value = _timestamp(value, key)
        elif key == "embedding":
            value = _vector(value)
        body[key] = value
    return body


def _normalize(raw: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    """lance-context's record dict: its keys ("text", "binary" as bytes, datetimes) plus the wire
    fields as they came."""
    if raw is None:
        return None
    out = dict(raw)
    out["text"] = raw.get("text_payload")
    binary = raw.get("binary_payload")
    out["binary"] = base64.b64decode(binary) if binary else None
    out["relationships"] = list(raw.get("relationships") or [])
    for key in ("created_at", "expires_at", "retired_at"):
        value = raw.get(key)
        if isinstance(value, str):
            out[key] = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return out


class RemoteContext(_Store):
    """A context store on a Strata server."""

    collection = "contexts"

    @classmethod
    def create(cls, base_url: Union[str, Client], name: str, *, embedding_dim: Optional[int] = None,
               distance_metric: Optional[str] = None, id_index_type: Optional[str] = None,
               storage_options: Optional[Mapping[str, str]] = None, **client_options: Any) -> "RemoteContext":
        """Create a store (AlreadyExistsError when the name is taken)."""
        return cls._create(cls._client_for(base_url, **client_options), name,
                           _create_body(name, embedding_dim, distance_metric, id_index_type, storage_options))

    @classmethod
    def connect_or_create(cls, base_url: Union[str, Client], name: str, *, embedding_dim: Optional[int] = None,
                          distance_metric: Optional[str] = None, id_index_type: Optional[str] = None,
                          storage_options: Optional[Mapping[str, str]] = None, **client_options: Any) -> "RemoteContext":
        """Open the store, creating it when it does not exist."""
        return cls._connect_or_create(base_url, name, _create_body(name, embedding_dim, distance_metric, id_index_type, storage_options),
                                      client_options)

    def _path(self, *rest: str) -> str:
        return Client.path(self.collection, self.name, *rest)

    # --- writes

    def add(self, role: str, content: Any = None, content_type: Optional[str] = None, *, flush: bool = False,
            **fields: Any) -> str:
        """Add one record; its id. Fields: embedding, bot_id, session_id, tenant, source, external_id,
        metadata, relationships, expires_at, retention_policy, supersedes_id, state_metadata."""
        return self.add_many([dict(fields, role=role, content=content, content_type=content_type)], flush=flush)[0]

    def add_many(self, records: Iterable[Mapping[str, Any]], *, flush: bool = False) -> List[str]:
        """Add records in one write (each a mapping of add's arguments); their ids, in order."""
        bodies = []
        for i, r in enumerate(records):
            if not isinstance(r, Mapping):
                raise TypeError(f"records[{i}] must be a mapping")
            bodies.append(_record_body(r.get("role", "user"), r.get("content"), r.get("content_type") or r.get("data_type"), r))
        resp = self._client.json("POST", self._path("records"), query={"flush": True} if flush else None, payload={"records": bodies})
        return list(resp.get("ids") or [])

    def upsert(self, role: str, content: Any = None, content_type: Optional[str] = None, *, external_id: str,
               flush: bool = False, **fields: Any) -> Dict[str, Any]:
        """Insert a record, or replace the one holding external_id (the new record supersedes it):
        {version, inserted, replaced_id, record}."""
        body = _record_body(role, content, content_type, dict(fields, external_id=external_id))
        resp = self._client.json("PUT", self._path("records"), query={"flush": True} if flush else None,
                                 payload={"record": body, "key": "external_id"})
        resp["record"] = _normalize(resp.get("record"))
        return resp

    def update(self, *, id: Optional[str] = None, external_id: Optional[str] = None, flush: bool = False,
               **patch: Any) -> Dict[str, Any]:
        """Apply a patch (bot_id, session_id, tenant, source, state_metadata, metadata, relationships,
        expires_at, retention_policy, lifecycle_status, retired_at, retired_reason, embedding) to the
        record of id or external_id: a successor supersedes it. {version, updated, replaced_id, record}."""
        if (id is None) == (external_id is None):
            raise ValueError("Specify exactly one of id or external_id")
        unknown = set(patch) - set(_PATCH_FIELDS)
        if unknown:
            raise TypeError(f"unknown patch fields: {sorted(unknown)}")
        body: Dict[str, Any] = {}
        for key, value in patch.items():
            if key in ("expires_at", "retired_at"):
                value = _timestamp(value, key)
            elif key == "embedding" and value is not None:
                value = _vector(value)
            body[key] = value
        req: Dict[str, Any] = {"patch": body}
        if id is not None:
            req["id"] = id
        else:
            req["external_id"] = external_id
        resp = self._client.json("PATCH", self._path("records"), query={"flush": True} if flush else None, payload=req)
        resp["record"] = _normalize(resp.get("record"))
        return resp

    def delete(self, *, id: Optional[str] = None, external_id: Optional[str] = None, flush: bool = False) -> bool:  # type: ignore[override]
        """Delete one record by id or external_id; True when it existed. (The store itself is
        deleted with drop().)"""
        if (id is None) == (external_id is None):
            raise ValueError("Specify exactly one of id or external_id")
        query: Dict[str, Any] = {"flush": True} if flush else {}
        if id is not None:
            resp = self._client.json("DELETE", self._path("records", id), query=query or None)
        else:
            resp = self._client.json("DELETE", self._path("records"), query=dict(query, external_id=external_id))
        return bool(resp.get("deleted"))

    def forget(self, *, id: Optional[str] = None, external_id: Optional[str] = None) -> bool:
        """Alias for delete."""
        return self.delete(id=id, external_id=external_id)

    def drop(self) -> None:
        """Delete the store (a soft delete; maintenance purges its data later)."""
        _Store.delete(self)

    # --- reads

    def get(self, id: Optional[str] = None, *, external_id: Optional[str] = None) -> Optional[Dict[str, Any]]:
        """One record by id or external_id, or None."""
        if (id is None) == (external_id is None):
            raise ValueError("Specify exactly one of id or external_id")
        if id is not None:
            resp = self._client.json("GET", self._path("records", id))
        else:
            resp = self._client.json("GET", self._path("records", "by-external-id"), query={"external_id": external_id})
        return _normalize(resp.get("record"))

    def get_by_external_id(self, external_id: str) -> Optional[Dict[str, Any]]:
        """The record holding external_id, or None."""
        return self.get(external_id=external_id)

    def list(self, limit: Optional[int] = None, offset: Optional[int] = None, filters: Optional[Mapping[str, Any]] = None, *,
             include_expired: bool = False, include_retired: bool = False) -> List[Dict[str, Any]]:
        """Visible records in creation order (binary payloads omitted: get() answers them)."""
        query: Dict[str, Any] = {"limit": limit or 10000, "offset": offset or None, "include_expired": include_expired or None,
                                 "include_retired": include_retired or None}
        if filters:
            query["filters"] = json.dumps(dict(filters))
        resp = self._client.json("GET", self._path("records"), query=query)
        return [_normalize(r) for r in resp.get("records") or []]  # type: ignore[misc]

    def related(self, target_id: str, relation: Optional[str] = None, limit: Optional[int] = None, *,
                include_expired: bool = False, include_retired: bool = False) -> List[Dict[str, Any]]:
        """Records with a relationship to target_id."""
        query = {"target_id": target_id, "relation": relation, "limit": limit, "include_expired": include_expired or None,
                 "include_retired": include_retired or None}
        resp = self._client.json("GET", self._path("records", "related"), query=query)
        return [_normalize(r) for r in resp.get("records") or []]  # type: ignore[misc]

    def payload(self, id: str) -> bytes:
        """A record's binary payload (else its text, UTF-8)."""
        _, data = self._client.request("GET", self._path("records", id, "payload"))
        return data

    def search(self, query: Any, limit: Optional[int] = None, filters: Optional[Mapping[str, Any]] = None, *,
               include_expired: bool = False, include_retired: bool = False, include_relationships: bool = False) -> List[Dict[str, Any]]:
        """The records nearest to query: record dicts with "distance"."""
        body: Dict[str, Any] = {"query": _vector(query), "include_expired": include_expired, "include_retired": include_retired,
                                "include_relationships": include_relationships}
        if limit is not None:
            body["limit"] = limit
        if filters:
            body["filters"] = dict(filters)
        resp = self._client.json("POST", self._path("search"), payload=body)
        out = []
        for hit in resp.get("results") or []:
            rec = _normalize(hit.get("record")) or {}
            rec["distance"] = hit.get("distance")
            out.append(rec)
        return out

    def retrieve(self, *, text: Optional[str] = None, vector: Any = None, limit: Optional[int] = None,
                 filters: Optional[Mapping[str, Any]] = None, include_expired: bool = False, include_retired: bool = False,
                 include_relationships: bool = False, fusion: str = "rrf") -> List[Dict[str, Any]]:
        """Hybrid retrieval: text and vector channels fused by reciprocal rank fusion. Record dicts
        with "score", "vector_distance", "text_score" and "matched_channels"."""
        if text is None and vector is None:
            raise ValueError("retrieve requires text or vector")
        body: Dict[str, Any] = {"fusion": fusion, "include_expired": include_expired, "include_retired": include_retired,
                                "include_relationships": include_relationships}
        if text is not None:
            body["text"] = text
        if vector is not None:
            body["vector"] = _vector(vector)
        if limit is not None:
            body["limit"] = limit
        if filters:
            body["filters"] = dict(filters)
        resp = self._client.json("POST", self._path("retrieve"), payload=body)
        out = []
        for hit in resp.get("results") or []:
            rec = _normalize(hit.get("record")) or {}
            rec.update(score=hit.get("score"), vector_distance=hit.get("vector_distance"), text_score=hit.get("text_score"),
                       matched_channels=list(hit.get("matched_channels") or []))
            out.append(rec)
        return out

    # --- versions and compaction

    def checkout(self, version: int) -> None:
        """Confirm a retained base-table version is readable (list it with the version's reads)."""
        self._client.json("POST", self._path("checkout"), payload={"version": int(version)})

    def compact(self, *, target_rows_per_fragment: Optional[int] = None, materialize_deletions: bool = True) -> Dict[str, int]:
        """Compact the base table now: {fragments_removed, fragments_added, files_removed, files_added}."""
        body: Dict[str, Any] = {"materialize_deletions": materialize_deletions}
        if target_rows_per_fragment:
            body["target_rows_per_fragment"] = target_rows_per_fragment
        return self._client.json("POST", self._path("compact"), payload=body)

    def compaction_stats(self) -> Dict[str, Any]:
        """{total_fragments, is_compacting, last_compaction, last_error, total_compactions}."""
        return self._client.json("GET", self._path("compact", "stats"))


ContextStore = RemoteContext


def _create_body(name: str, embedding_dim: Optional[int], distance_metric: Optional[str], id_index_type: Optional[str],
                 storage_options: Optional[Mapping[str, str]]) -> Dict[str, Any]:
    body: Dict[str, Any] = {"name": name}
    if embedding_dim:
        body["embedding_dim"] = int(embedding_dim)
    if distance_metric:
        body["distance_metric"] = distance_metric
    if id_index_type:
        body["id_index_type"] = id_index_type
    if storage_options:
        body["storage_options"] = dict(storage_options)
    return body
