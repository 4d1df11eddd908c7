"""Generic stores: rows under a schema declared at creation (GenericStore.connect_or_create,
add, list, get, flush, cleanup_wal)."""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Union

from ._errors import NotFoundError
from ._http import JSON, Client
from ._store import Filter, _Store, filter_param


def schema_spec(schema: Union[Mapping[str, Any], List[Any], Dict[str, Any]]) -> Dict[str, Any]:
    """A schema as the API takes it, {"columns": [[name, type], ...]}, from that form or from a
    dict of name -> type ("string", "int64", {"type": "list", "item": "string"}, ...) in order;
    an "id" string column is added first when missing."""
    if isinstance(schema, Mapping) and "columns" in schema:
        return dict(schema)
    columns = [[name, spec] for name, spec in (schema.items() if isinstance(schema, Mapping) else schema)]
    if not any(c[0] == "id" for c in columns):
        columns.insert(0, ["id", "string"])
    return {"columns": columns}


class GenericStore(_Store):
    """A generic store on a Strata server."""

    collection = "generic"

    @classmethod
    def create(cls, base_url: Union[str, Client], name: str, schema: Any, *, seal_on_add: bool = False,
               storage_options: Optional[Mapping[str, str]] = None, **client_options: Any) -> "GenericStore":
        """Create a store (AlreadyExistsError when the name is taken)."""
        return cls._create(cls._client_for(base_url, **client_options), name, _body(name, schema, seal_on_add, storage_options))

    @classmethod
    def connect_or_create(cls, base_url: Union[str, Client], name: str, schema: Any, *, seal_on_add: bool = False,
                          storage_options: Optional[Mapping[str, str]] = None, **client_options: Any) -> "GenericStore":
        """Open the store, creating it with schema when it does not exist (an existing store of
        another schema is AlreadyExistsError)."""
        return cls._connect_or_create(base_url, name, _body(name, schema, seal_on_add, storage_options), client_options)

    @property
    def schema(self) -> Dict[str, Any]:
        """The declared schema spec."""
        return dict(self._info.get("schema") or {})

    def add(self, rows: Union[Mapping[str, Any], Iterable[Mapping[str, Any]]], *, flush: bool = True) -> Dict[str, Any]:
        """Append rows (dicts by column name; blobs as base64 strings); {version, count}."""
        if isinstance(rows, Mapping):
            rows = [rows]
        body = json.dumps({"rows": [dict(r) for r in rows]}).encode()
        _, data = self._client.request("POST", Client.path(self.collection, self.name, "rows"),
                                       query={"flush": True} if flush else None, body=body, content_type=JSON)
        return json.loads(data)

    def get(self, id: str, columns: Optional[Iterable[str]] = None, *, snapshot: Optional[str] = None) -> Optional[Dict[str, Any]]:
        """One row (of the named columns: a blob column among them comes back base64), or None;
        ``snapshot``: as a read token saw it."""
        query = {"columns": ",".join(columns) if columns else None, "snapshot": snapshot}
        try:
            return self._client.json("GET", Client.path(self.collection, self.name, "rows", id), query=query)
        except NotFoundError as e:
            if e.message.startswith("row "):
                return None
            raise

    def get_rows(self, ids: Iterable[str], columns: Optional[Iterable[str]] = None) -> List[Dict[str, Any]]:
        """Up to 1,024 rows by id in one snapshot, in the order asked (ids without a row left out)."""
        return self._get_rows("rows", ids, columns)

    def iter(self, filter: Filter = None, *, page_size: int = 1000, limit: Optional[int] = None,
             snapshot: Optional[str] = None) -> Iterator[Dict[str, Any]]:
        """Every row in id order; ``filter`` is a SQL predicate ("step > 5 AND role = 'user'") or
        a dict of equalities; ``snapshot`` reads a read token's cut (strata_client.snapshot)."""
        return self._pages(Client.path(self.collection, self.name, "rows"), "rows", {"filter": filter_param(filter), "snapshot": snapshot},
                           page_size, limit)

    def list(self, limit: Optional[int] = None, offset: int = 0, filter: Filter = None) -> List[Dict[str, Any]]:
        """Rows in id order: ``limit`` of them (all when None) after skipping ``offset`` matching ones."""
        return self._list(Client.path(self.collection, self.name, "rows"), "rows", {"filter": filter_param(filter)}, limit, offset)

    def cleanup_wal(self) -> int:
        """lance-context's name for merge_wal: fold the pending generations into the base table."""
        return self.merge_wal()


def _body(name: str, schema: Any, seal_on_add: bool, storage_options: Optional[Mapping[str, str]]) -> Dict[str, Any]:
    body: Dict[str, Any] = {"name": name, "schema": schema_spec(schema)}
    if seal_on_add:
        body["seal_on_add"] = True
    if storage_options:
        body["storage_options"] = dict(storage_options)
    return body
