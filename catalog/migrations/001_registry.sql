-- The store registry: one live row per (kind, name); soft-deleted rows stay until purged.
-- name uses the C collation so keyset pagination and prefix search are plain byte-order range
-- scans on the unique index.
CREATE TABLE stores (
    id          uuid        PRIMARY KEY,
    kind        text        NOT NULL CHECK (kind IN ('rollout', 'generic', 'datagen', 'context')),
    name        text        COLLATE "C" NOT NULL CHECK (name ~ '^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$'),
    uri         text        NOT NULL,
    schema      jsonb,
    options     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);

-- At most one live store per (kind, name); also the index behind Get, List and prefix search.
CREATE UNIQUE INDEX stores_live_name ON stores (kind, name) WHERE deleted_at IS NULL;

-- ListDeleted(older than) and Restore.
CREATE INDEX stores_deleted ON stores (deleted_at, kind, name) WHERE deleted_at IS NOT NULL;

---- create above / drop below ----

DROP TABLE stores;
