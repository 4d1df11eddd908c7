-- Purge and orphan adoption look up the stores registered inside another store's directory (a
-- range of URIs sharing a prefix), byte-wise: the "C" collation orders '/' right before '0'.
-- purge_failed_at marks a deleted store whose last purge failed: registry cleanup reports it and
-- tries it after every store that has not failed, so a store that cannot be purged never holds
-- back the others.
CREATE INDEX stores_uri_bytes ON stores ((uri COLLATE "C"));
ALTER TABLE stores ADD COLUMN purge_failed_at timestamptz;

---- create above / drop below ----

ALTER TABLE stores DROP COLUMN purge_failed_at;
DROP INDEX stores_uri_bytes;
