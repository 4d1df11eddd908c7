"""Datagen stores: a data-generation pipeline's checkpoint event log (DatagenStore.append,
append_checkpoint, fold_item, overview, root_item_statuses, item_failures, ...), with
lance-context's event ids and item ids."""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._errors import NotFoundError
from ._http import JSON, Client
from ._store import _Store


def datagen_event_id(item_id: str, checkpoint_id: str, ordinal: int) -> str:
    """The deterministic event id lance-context derives: UUIDv5 (OID namespace) of
    "item_id NUL checkpoint_id NUL ordinal". A retried append writes the same ids."""
    return str(uuid.uuid5(uuid.NAMESPACE_OID, f"{item_id}\0{checkpoint_id}\0{ordinal}"))


class DatagenItemId:
    """An item id: a root key and one (origin step, branch index) segment per fan-out below it,
    stored as a path ("5/expand:0/judge:1")."""

    def __init__(self, root_key: str, segments: Sequence[Tuple[str, int]] = ()) -> None:
        if not root_key:
            raise ValueError("an item id needs a root key")
        self.root_key = root_key
        self.segments: Tuple[Tuple[str, int], ...] = tuple((str(s), int(i)) for s, i in segments)

    @classmethod
    def from_source_key(cls, key: str) -> "DatagenItemId":
        return cls(key)

    @classmethod
    def parse(cls, path: str) -> "DatagenItemId":
        root, *rest = path.split("/")
        segments = []
        for part in rest:
            step, sep, idx = part.partition(":")
            if not sep:
                raise ValueError(f"malformed item id segment {part!r} in {path!r}")
            segments.append((step, int(idx)))
        return cls(root, segments)

    def child(self, origin_step: str, branch_idx: int) -> "DatagenItemId":
        return DatagenItemId(self.root_key, self.segments + ((origin_step, branch_idx),))

    def parent(self) -> Optional["DatagenItemId"]:
        return DatagenItemId(self.root_key, self.segments[:-1]) if self.segments else None

    def root(self) -> "DatagenItemId":
        return DatagenItemId(self.root_key)

    def is_root(self) -> bool:
        return not self.segments

    def __str__(self) -> str:
        return self.root_key + "".join(f"/{s}:{i}" for s, i in self.segments)

    def __repr__(self) -> str:
        return f"DatagenItemId({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DatagenItemId) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))


ItemRef = Union[str, DatagenItemId]


class DatagenStore(_Store):
    """A datagen store on a Strata server. Events are dicts in lance-context's DatagenEventDto
    form; every append is durable and visible to every worker when it returns."""

    collection = "datagen"

    @classmethod
    def create(cls, base_url: Union[str, Client], name: str, *, storage_options: Optional[Mapping[str, str]] = None, **client_options: Any) -> "DatagenStore":
        body: Dict[str, Any] = {"name": name}
        if storage_options:
            body["storage_options"] = dict(storage_options)
        return cls._create(cls._client_for(base_url, **client_options), name, body)

    @classmethod
    def connect_or_create(cls, base_url: Union[str, Client], name: str, *, storage_options: Optional[Mapping[str, str]] = None, **client_options: Any) -> "DatagenStore":
        body: Dict[str, Any] = {"name": name}
        if storage_options:
            body["storage_options"] = dict(storage_options)
        return cls._connect_or_create(base_url, name, body, client_options)

    def _post_events(self, events: Iterable[Mapping[str, Any]], checkpoint: bool) -> Dict[str, Any]:
        body = json.dumps({"events": [_wire(e) for e in events]}).encode()
        _, data = self._client.request("POST", Client.path(self.collection, self.name, "events"),
                                       query={"checkpoint": True} if checkpoint else None, body=body, content_type=JSON)
        return json.loads(data)

    def append(self, events: Iterable[Mapping[str, Any]]) -> Dict[str, Any]:
        """Append events as one batch; {version, count}. Retrying it is idempotent."""
        return self._post_events(events, False)

    def append_checkpoint(self, events: Iterable[Mapping[str, Any]]) -> Dict[str, Any]:
        """Append one atomic step boundary: its field events and exactly one STEP_COMPLETED."""
        return self._post_events(events, True)

    def fold_item(self, item_id: ItemRef, load_blobs: bool = False) -> Optional[Dict[str, Any]]:
        """The item's folded state, or None when it never started."""
        r = self._client.json("GET", Client.path(self.collection, self.name, "items", str(item_id)), query={"load_blobs": True} if load_blobs else None)
        return (r or {}).get("item")

    def item_failures(self, item_id: ItemRef) -> List[Dict[str, Any]]:
        return self._client.json("GET", Client.path(self.collection, self.name, "items", str(item_id), "failures")).get("failures") or []

    def item_events(self, item_id: ItemRef) -> List[Dict[str, Any]]:
        """The item's raw events in item_seq order (without blob bytes)."""
        return self._client.json("GET", Client.path(self.collection, self.name, "items", str(item_id), "events")).get("events") or []

    def root_events(self, root_item_id: ItemRef) -> List[Dict[str, Any]]:
        """A root's events and its sub-items', in (item_id, item_seq) order."""
        return self._client.json("GET", Client.path(self.collection, self.name, "roots", str(root_item_id), "events")).get("events") or []

    def overview(self) -> Dict[str, Any]:
        return self._client.json("GET", Client.path(self.collection, self.name, "overview"))

    def root_item_statuses(self, root_item_ids: Iterable[ItemRef]) -> Dict[str, str]:
        """Lifecycle status of each root; a root never started is absent."""
        ids = ",".join(str(i) for i in root_item_ids)
        return self._client.json("GET", Client.path(self.collection, self.name, "root-status"), query={"ids": ids}).get("statuses") or {}

    def get_blob(self, event_id: str, item_id: Optional[ItemRef] = None) -> Optional[bytes]:
        """An event's blob bytes, or None. With the event's item (a fold's blob_event_ids pair
        them) the server does a point read."""
        query = {"item_id": str(item_id)} if item_id is not None else None
        try:
            _, data = self._client.request("GET", Client.path(self.collection, self.name, "blobs", event_id), query=query, accept="application/octet-stream")
        except NotFoundError:
            return None
        return data

    def load_blob(self, folded: Mapping[str, Any], field_name: str) -> Optional[bytes]:
        """A folded item's blob field's bytes (None when the field holds no blob)."""
        event_id = (folded.get("blob_event_ids") or {}).get(field_name)
        if event_id is None:
            return None
        return self.get_blob(event_id, folded.get("item_id"))


def _wire(event: Mapping[str, Any]) -> Dict[str, Any]:
    """An event as JSON: blob bytes base64, item ids as their paths."""
    out = {k: (str(v) if isinstance(v, DatagenItemId) else v) for k, v in event.items()}
    value = out.get("value")
    if isinstance(value, Mapping) and isinstance(value.get("bytes"), (bytes, bytearray, memoryview)):
        import base64

        v = dict(value)
        raw = bytes(v["bytes"])
        v["bytes"] = base64.b64encode(raw).decode()
        v.setdefault("size", len(raw))
        out["value"] = v
    return out
