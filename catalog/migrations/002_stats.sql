-- Store and shard statistics the maintenance sweeps choose work from.
--
-- store_stats.pending_generations / oldest_pending_at are a roll-up of shard_stats maintained in
-- the same transaction as every shard_stats upsert (catalog/stats.go), so the sweep's "most
-- pending generations first" query is an index scan instead of a GROUP BY over every shard.
CREATE TABLE store_stats (
    kind                    text        NOT NULL,
    name                    text        COLLATE "C" NOT NULL,
    table_version           bigint      NOT NULL DEFAULT 0,
    base_rows               bigint      NOT NULL DEFAULT 0,
    fragments               integer     NOT NULL DEFAULT 0,
    deleted_rows            bigint      NOT NULL DEFAULT 0,
    bytes                   bigint      NOT NULL DEFAULT 0,
    index_covered_fragments integer     NOT NULL DEFAULT 0,
    last_merge_at           timestamptz,
    last_compact_at         timestamptz,
    last_index_at           timestamptz,
    merges_total            bigint      NOT NULL DEFAULT 0,
    compactions_total       bigint      NOT NULL DEFAULT 0,
    pending_generations     integer     NOT NULL DEFAULT 0,
    oldest_pending_at       timestamptz,
    updated_at              timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, name)
);

CREATE INDEX store_stats_pending ON store_stats (pending_generations DESC)
    WHERE pending_generations > 0;
CREATE INDEX store_stats_oldest_pending ON store_stats (oldest_pending_at)
    WHERE oldest_pending_at IS NOT NULL;
CREATE INDEX store_stats_fragments ON store_stats (fragments DESC);
CREATE INDEX store_stats_uncovered ON store_stats ((fragments - index_covered_fragments) DESC)
    WHERE index_covered_fragments < fragments;

CREATE TABLE shard_stats (
    kind                text        NOT NULL,
    name                text        COLLATE "C" NOT NULL,
    shard               text        NOT NULL,
    pending_generations integer     NOT NULL DEFAULT 0,
    pending_rows        bigint      NOT NULL DEFAULT 0,
    pending_bytes       bigint      NOT NULL DEFAULT 0,
    oldest_pending_at   timestamptz,
    updated_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, name, shard)
);

-- Registry cleanup: quiet shards with nothing pending.
CREATE INDEX shard_stats_quiet ON shard_stats (updated_at) WHERE pending_generations = 0;

---- create above / drop below ----

DROP TABLE shard_stats;
DROP TABLE store_stats;
