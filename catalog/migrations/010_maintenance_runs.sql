-- Maintenance history: one row per attempt of a store's maintenance activity (merge, index,
-- compaction, cleanup, stats refresh), written by the activity when the attempt ends; the last
-- 100 of each store are kept. Deleting a store drops its rows. The Strata UI shows them on the
-- store's page (GET /api/v1/admin/{kind}/{name}/history).
CREATE TABLE maintenance_runs (
    id          bigserial   PRIMARY KEY,
    kind        text        NOT NULL,
    name        text        NOT NULL,
    op          text        NOT NULL,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    outcome     text        NOT NULL,  -- ok, failed
    detail      text        NOT NULL   -- the result (JSON) or the error
);
CREATE INDEX maintenance_runs_store ON maintenance_runs (kind, name, finished_at DESC, id DESC);

---- create above / drop below ----

DROP TABLE maintenance_runs;
