-- Change-feed consumers and read tokens.
--
-- feed_consumers: a named consumer of one store and its committed cursor (opaque here: storage
-- encodes and decodes it). Until it commits past them, its cursor holds the store's merged
-- generations from release, for at most the server's retention bound. Deleting the store drops
-- its consumers.
CREATE TABLE feed_consumers (
    kind         text        NOT NULL,
    name         text        NOT NULL,
    consumer     text        NOT NULL,
    cursor       text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    committed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, name, consumer)
);

-- read_snapshots: a read token, a cut of several stores at one moment, readable until it
-- expires or is released. Each store's cut (JSON: a table version and per-shard generations)
-- holds those versions from cleanup.
CREATE TABLE read_snapshots (
    id          text        PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    released_at timestamptz
);
CREATE TABLE read_snapshot_stores (
    snapshot_id text  NOT NULL REFERENCES read_snapshots (id) ON DELETE CASCADE,
    kind        text  NOT NULL,
    name        text  NOT NULL,
    cut         jsonb NOT NULL,
    PRIMARY KEY (snapshot_id, kind, name)
);
CREATE INDEX read_snapshot_stores_store ON read_snapshot_stores (kind, name);
CREATE INDEX read_snapshots_expiry ON read_snapshots (expires_at) WHERE released_at IS NULL;

---- create above / drop below ----

DROP TABLE read_snapshot_stores;
DROP TABLE read_snapshots;
DROP TABLE feed_consumers;
