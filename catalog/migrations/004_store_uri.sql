-- Registry cleanup looks datasets on storage up by URI (live or deleted) to find orphans.
CREATE INDEX stores_uri ON stores (uri);

---- create above / drop below ----

DROP INDEX stores_uri;
