"""Python client of the Strata HTTP API (stdlib only, Python >= 3.9).

Mirrors lance-context's remote store API, so code written for ``lance_context`` stores can
switch by changing an import::

    from strata_client import RolloutStore, GenericStore, DatagenStore, RemoteContext

    store = RolloutStore.connect_or_create("http://127.0.0.1:3000", "run-7")
    store.add({"id": "r1", "rollout_id": "t1", "content": "hello"})
    for record in store.iter(filters="rollout_id = 't1'"):
        ...

Every call retries a 503 that carries Retry-After (backpressure: the server wrote nothing) and
raises a typed error otherwise: NotFoundError, AlreadyExistsError, InvalidRequestError, ...
"""

from ._errors import (
    AlreadyExistsError,
    CompactionInProgressError,
    ContextStoreError,
    GoneError,
    InternalError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    QuotaExceededError,
    UnavailableError,
)
from ._http import Client
from ._snapshots import delete_snapshot, snapshot
from .context import ContextStore, RemoteContext
from .datagen import DatagenItemId, DatagenStore, datagen_event_id
from .generic import GenericStore
from .rollout import RolloutStore

__all__ = [
    "AlreadyExistsError",
    "Client",
    "ContextStore",
    "CompactionInProgressError",
    "ContextStoreError",
    "DatagenItemId",
    "DatagenStore",
    "GoneError",
    "GenericStore",
    "InternalError",
    "InvalidRequestError",
    "NotFoundError",
    "PayloadTooLargeError",
    "QuotaExceededError",
    "RemoteContext",
    "RolloutStore",
    "UnavailableError",
    "datagen_event_id",
    "delete_snapshot",
    "snapshot",
]

__version__ = "0.1.0"
