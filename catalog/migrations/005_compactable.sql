-- Compaction candidacy comes from the compaction planner: how many fragments a plan would rewrite
-- (observed with the store's stats). A healthy store whose plan is empty is never a candidate,
-- however many fragments it has.
ALTER TABLE store_stats ADD COLUMN compactable_fragments integer NOT NULL DEFAULT 0;
CREATE INDEX store_stats_compactable ON store_stats (compactable_fragments DESC)
    WHERE compactable_fragments > 0;

---- create above / drop below ----

DROP INDEX store_stats_compactable;
ALTER TABLE store_stats DROP COLUMN compactable_fragments;
