-- Tenants, quotas and sweep paging.
--
-- A tenant is a prefix of store names (the first --tenant-depth segments split at
-- --tenant-separator); tenant_quotas holds the optional limits of each and its maintenance
-- weight. Nothing else names tenants: usage is summed from store_stats over the tenant's name
-- range, so a deployment may change its tenant depth without migrating rows.
CREATE TABLE tenant_quotas (
    tenant                     text             COLLATE "C" PRIMARY KEY,
    max_rows                   bigint           NOT NULL DEFAULT 0 CHECK (max_rows >= 0),   -- 0: no limit
    max_bytes                  bigint           NOT NULL DEFAULT 0 CHECK (max_bytes >= 0),
    max_append_rows_per_second double precision NOT NULL DEFAULT 0 CHECK (max_append_rows_per_second >= 0),
    max_pending_generations    bigint           NOT NULL DEFAULT 0 CHECK (max_pending_generations >= 0),
    weight                     integer          NOT NULL DEFAULT 1 CHECK (weight BETWEEN 1 AND 1000),
    updated_at                 timestamptz      NOT NULL DEFAULT now()
);

-- Append-rate accounting of tenants with a rate quota: each worker reports the rate it admitted
-- for a tenant over its last refresh interval and reads the others' (reports older than a few
-- intervals are ignored), so the workers share one tenant's rate between them.
CREATE TABLE tenant_append_rates (
    tenant           text             COLLATE "C" NOT NULL,
    instance         text             NOT NULL,
    rows_per_second  double precision NOT NULL,
    reported_at      timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, instance)
);

-- Live API workers (routing): each `strata serve` upserts its row every few seconds and removes
-- it when it stops; a store's preferred workers are chosen by rendezvous hashing over the rows
-- seen recently (package routing).
CREATE TABLE workers (
    instance    text        PRIMARY KEY,
    url         text        NOT NULL,   -- the worker's advertised base URL
    started_at  timestamptz NOT NULL DEFAULT now(),
    seen_at     timestamptz NOT NULL DEFAULT now()
);

-- swept_at: when the sweep last queued maintenance for the store (cleared when its maintenance
-- ran: a stats observation or a recorded cleanup). A store swept and not cleared is not queued
-- again until the sweep's requeue_after passes, so successive sweeps page through a backlog larger
-- than one sweep's cap instead of queueing the same top stores every time.
ALTER TABLE store_stats ADD COLUMN swept_at timestamptz;

-- Every live store has a stats row from its creation on; one never observed has updated_at at
-- the epoch. The stale-stats sweep then reads store_stats_updated in order instead of joining
-- every store of the registry to find the ones without a row (a second at a million stores).
INSERT INTO store_stats (kind, name, updated_at)
SELECT kind, name, 'epoch' FROM stores WHERE deleted_at IS NULL
ON CONFLICT (kind, name) DO NOTHING;

---- create above / drop below ----

DELETE FROM store_stats WHERE updated_at = 'epoch';
ALTER TABLE store_stats DROP COLUMN swept_at;
DROP TABLE workers;
DROP TABLE tenant_append_rates;
DROP TABLE tenant_quotas;
