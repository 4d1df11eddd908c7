-- Stale-stats sweep: stores whose stats were not observed recently, oldest first.
CREATE INDEX store_stats_updated ON store_stats (updated_at);

---- create above / drop below ----

DROP INDEX store_stats_updated;
