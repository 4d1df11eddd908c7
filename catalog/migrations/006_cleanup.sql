-- Version cleanup candidacy: the table version a store's last version cleanup saw. Every merge,
-- compaction and index build adds a version (and, once superseded, garbage files); a store whose
-- table moved many versions past its last cleanup is queued for one.
ALTER TABLE store_stats ADD COLUMN cleaned_version bigint NOT NULL DEFAULT 0;
ALTER TABLE store_stats ADD COLUMN last_cleanup_at timestamptz;
CREATE INDEX store_stats_uncleaned ON store_stats ((table_version - cleaned_version) DESC);

---- create above / drop below ----

DROP INDEX store_stats_uncleaned;
ALTER TABLE store_stats DROP COLUMN last_cleanup_at;
ALTER TABLE store_stats DROP COLUMN cleaned_version;
