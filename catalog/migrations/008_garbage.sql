-- Garbage accounting: dropped_bytes is the table's cumulative count of bytes its commits stopped
-- referencing (from its latest manifest); cleaned_dropped_bytes is that count as of the oldest
-- version the last version cleanup kept (what it dropped before is deleted). Their difference is
-- about the garbage a store still holds; a store past a threshold is queued for cleanup.
ALTER TABLE store_stats ADD COLUMN dropped_bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE store_stats ADD COLUMN cleaned_dropped_bytes bigint NOT NULL DEFAULT 0;
CREATE INDEX store_stats_garbage ON store_stats ((dropped_bytes - cleaned_dropped_bytes) DESC);

---- create above / drop below ----

DROP INDEX store_stats_garbage;
ALTER TABLE store_stats DROP COLUMN cleaned_dropped_bytes;
ALTER TABLE store_stats DROP COLUMN dropped_bytes;
