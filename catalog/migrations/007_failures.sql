-- Failing maintenance: one row per store and operation whose latest run exhausted its retries,
-- written by the store's maintenance workflow and deleted when the operation next succeeds (or
-- the store is deleted). `strata status` lists them: what fails, how, and since when.
CREATE TABLE maintenance_failures (
    kind           text        NOT NULL,
    name           text        NOT NULL,
    op             text        NOT NULL,
    error_type     text        NOT NULL,
    message        text        NOT NULL,
    failing_since  timestamptz NOT NULL,
    last_failed_at timestamptz NOT NULL,
    failures       integer     NOT NULL,
    PRIMARY KEY (kind, name, op)
);
CREATE INDEX maintenance_failures_since ON maintenance_failures (failing_since);

---- create above / drop below ----

DROP TABLE maintenance_failures;
