"""What every store kind shares: connecting (and creating), describing, keyset-paged listing,
SQL, flush and merge-wal."""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Type, TypeVar, Union

from ._errors import AlreadyExistsError, NotFoundError
from ._http import Client

S = TypeVar("S", bound="_Store")

Filter = Union[str, Mapping[str, Any], None]


def _pyarrow() -> Any:
    """pyarrow when it is installed, else None."""
    try:
        import pyarrow  # noqa: PLC0415 - optional dependency
    except ImportError:
        return None
    return pyarrow


def filter_param(f: Filter) -> Optional[str]:
    """A filter for the list routes: a SQL predicate as it is, or a dict of equalities as JSON."""
    if f is None or isinstance(f, str):
        return f or None
    return json.dumps(dict(f))


class _Store:
    collection = ""  # the URL segment of the kind: rollouts, generic, datagen

    def __init__(self, client: Client, name: str, info: Dict[str, Any]) -> None:
        self._client = client
        self.name = name
        self._info = info

    # --- connecting

    @classmethod
    def _client_for(cls, base_url: Union[str, Client], **kwargs: Any) -> Client:
        return base_url if isinstance(base_url, Client) else Client(base_url, **kwargs)

    @classmethod
    def connect(cls: Type[S], base_url: Union[str, Client], name: str, **client_options: Any) -> S:
        """Open an existing store (NotFoundError when there is none)."""
        client = cls._client_for(base_url, **client_options)
        return cls(client, name, client.json("GET", Client.path(cls.collection, name)))

    @classmethod
    def _create(cls: Type[S], client: Client, name: str, body: Dict[str, Any]) -> S:
        info = client.json("POST", Client.path(cls.collection), payload=body)
        return cls(client, name, info)

    @classmethod
    def _connect_or_create(cls: Type[S], base_url: Union[str, Client], name: str, body: Dict[str, Any], client_options: Dict[str, Any]) -> S:
        client = cls._client_for(base_url, **client_options)
        try:
            return cls(client, name, client.json("GET", Client.path(cls.collection, name)))
        except NotFoundError:
            # exist_ok: another process creating it at the same moment is not an error.
            return cls._create(client, name, dict(body, exist_ok=True))

    # --- describing

    def info(self) -> Dict[str, Any]:
        """The store's description: name, uri, version (and schema for generic stores)."""
        self._info = self._client.json("GET", Client.path(self.collection, self.name))
        return self._info

    def version(self) -> int:
        """The base table's current version."""
        return int(self.info().get("version") or 0)

    @property
    def uri(self) -> str:
        return str(self._info.get("uri", ""))

    def delete(self) -> None:
        """Delete the store (a soft delete; maintenance purges its data later)."""
        self._client.request("DELETE", Client.path(self.collection, self.name))

    # --- maintenance hooks

    def flush(self) -> None:
        """Seal this worker's shard: what it acknowledged becomes visible to every worker."""
        self._client.request("POST", Client.path(self.collection, self.name, "flush"))

    def _merge_wal_path(self) -> str:
        return Client.path(self.collection, self.name, "merge-wal")

    def merge_wal(self) -> int:
        """Seal and merge the store's pending generations into its base table; the number merged."""
        return int((self._client.json("POST", self._merge_wal_path()) or {}).get("reclaimed", 0))

    # --- SQL

    def sql(self, statement: str, *, source: Optional[str] = None, limit: Optional[int] = None,
            arrow: Optional[bool] = None) -> Any:
        """Run one read-only SQL statement (DuckDB) over a consistent snapshot of the store, the
        table ``t`` (also named ``records``): newest row per id, base table and WAL (``source``:
        "all", the default; "base" for the base table alone; "wal" for rows not merged yet).

        Returns a ``pyarrow.Table`` when pyarrow is installed (or ``arrow=True``), else a list of
        dicts, one per row. ``limit`` caps the rows (the server caps a JSON answer at its own
        limit; the Arrow answer at a larger one). A statement the server refuses raises
        InvalidRequestError with code INVALID_SQL and DuckDB's message."""
        body: Dict[str, Any] = {"sql": statement}
        if source:
            body["source"] = source
        if limit:
            body["limit"] = limit
        path = Client.path(self.collection, self.name, "query")
        if arrow is None:
            arrow = _pyarrow() is not None
        if arrow:
            pa = _pyarrow()
            if pa is None:
                raise RuntimeError("sql(arrow=True) needs pyarrow")
            _, data = self._client.request("POST", path, query={"format": "arrow"}, body=json.dumps(body).encode(),
                                           content_type="application/json", accept="application/vnd.apache.arrow.stream")
            import pyarrow.ipc  # noqa: PLC0415 - optional dependency
            return pyarrow.ipc.open_stream(data).read_all()
        res = self._client.json("POST", path, payload=body)
        columns = res.get("columns") or []
        return [dict(zip(columns, row)) for row in res.get("rows") or []]

    # --- change feed

    def changes(self, *, consumer: Optional[str] = None, cursor: Optional[str] = None, start: Optional[str] = None,
                limit: Optional[int] = None, wait: float = 30.0, commit: bool = True, follow: bool = True,
                complete_by: Optional[str] = None, group_size: Optional[int] = None,
                group_timeout: Optional[float] = None) -> Iterator[Dict[str, Any]]:
        """Iterate over the change feed, one batch at a time: ``{"rows": [...], "cursor": str,
        "groups": int}``, each row with ``_seq`` and ``_op`` ("upsert" or "delete").

        With ``consumer`` (registered at the feed's end if it does not exist; ``start="earliest"``
        for the oldest rows the feed holds) the feed resumes from its committed cursor and each
        batch is committed when the loop asks for the next one (``commit=False``: call
        ``commit(consumer, batch["cursor"])`` yourself). Without one it starts at ``cursor`` or
        ``start``. ``follow=False`` stops at the first empty batch. ``complete_by`` and
        ``group_size`` deliver complete groups (``group_timeout`` seconds: incomplete ones after it).
        A position whose rows were released raises GoneError with ``restart``."""
        if consumer:
            try:
                self.create_consumer(consumer, start=start)
            except AlreadyExistsError:
                pass
        while True:
            q: Dict[str, Any] = {"format": "jsonl", "limit": limit, "wait": f"{wait}s" if follow else None,
                                 "complete_by": complete_by, "group_size": group_size,
                                 "group_timeout": f"{group_timeout}s" if group_timeout else None}
            if consumer:
                q["consumer"] = consumer
            elif cursor:
                q["cursor"] = cursor
            elif start:
                q["start"] = start
            _, data = self._client.request("GET", Client.path(self.collection, self.name, "changes"), query=q,
                                           accept="application/x-ndjson")
            batch: Dict[str, Any] = {"rows": [], "cursor": None, "groups": 0}
            for line in data.splitlines():
                if not line.strip():
                    continue
                obj = json.loads(line)
                if "_cursor" in obj:
                    batch["cursor"], batch["groups"] = obj["_cursor"], obj.get("_groups", 0)
                else:
                    batch["rows"].append(obj)
            if batch["rows"]:
                yield batch
                if consumer and commit:
                    self.commit(consumer, batch["cursor"])
            elif not follow:
                return
            cursor = batch["cursor"]

    def create_consumer(self, consumer: str, *, start: Optional[str] = None) -> Dict[str, Any]:
        """Register a named consumer at the feed's end (or ``start="earliest"``)."""
        body: Dict[str, Any] = {"name": consumer}
        if start:
            body["start"] = start
        return self._client.json("POST", Client.path(self.collection, self.name, "consumers"), payload=body)

    def consumers(self) -> List[Dict[str, Any]]:
        """The store's consumers with their committed cursors and lag."""
        return list((self._client.json("GET", Client.path(self.collection, self.name, "consumers")) or {}).get("consumers") or [])

    def commit(self, consumer: str, cursor: str) -> None:
        """Record ``cursor`` (a batch's) as how far ``consumer`` has processed."""
        self._client.json("POST", Client.path(self.collection, self.name, "consumers", consumer, "commit"), payload={"cursor": cursor})

    # --- listing

    def _pages(self, rows_path: str, member: str, query: Dict[str, Any], page_size: int, limit: Optional[int],
               offset: int = 0) -> Iterator[Dict[str, Any]]:
        """limit rows (all when None) after skipping offset matching ones, following the keyset
        cursor a page at a time."""
        cursor: Optional[str] = None
        seen = 0
        while limit is None or seen < limit:
            size = page_size if limit is None else min(page_size, limit - seen)
            q = dict(query, limit=size, cursor=cursor)
            if offset and cursor is None:
                q["offset"] = offset  # the server skips matching rows, then pages by cursor
            page = self._client.json("GET", rows_path, query=q)
            for row in page.get(member) or []:
                yield row
                seen += 1
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def _list(self, rows_path: str, member: str, query: Dict[str, Any], limit: Optional[int], offset: int) -> List[Dict[str, Any]]:
        return list(self._pages(rows_path, member, query, 1000, limit, offset))

    def _get_rows(self, member: str, ids: Iterable[str], columns: Optional[Iterable[str]]) -> List[Dict[str, Any]]:
        body: Dict[str, Any] = {"ids": list(ids)}
        if columns is not None:
            body["columns"] = list(columns)
        res = self._client.json("POST", Client.path(self.collection, self.name, "get-rows"), payload=body)
        return list(res.get(member) or [])
