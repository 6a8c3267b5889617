-- A memory or diary day saved by a process without an embedder was stored
-- "skipped" even when the database had a vector space, and stayed so after
-- repair embedded its texts. "skipped" now means the database has no space
-- to embed into: where it has a read space, such a source is "ok" when every
-- chunk text has a vector there, else "pending" for repair.
UPDATE sources SET index_state = CASE
		WHEN EXISTS (SELECT 1 FROM chunks c WHERE c.sid = sources.sid
			AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.space = (SELECT name FROM spaces WHERE is_read) AND v.hash = c.hash))
		THEN 'pending' ELSE 'ok' END
	WHERE index_state = 'skipped' AND EXISTS (SELECT 1 FROM spaces WHERE is_read);
