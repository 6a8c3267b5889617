-- The chunk text each source holds, in bytes, for stats: sources.size is
-- the size of the file a source was read from, which every conversation of
-- an export shares, so summing it overcounts exports.
ALTER TABLE sources ADD COLUMN text_bytes INTEGER NOT NULL DEFAULT 0;
UPDATE sources SET text_bytes = (SELECT coalesce(sum(length(CAST(t.text AS BLOB))), 0)
	FROM chunks c JOIN chunk_texts t ON t.id = c.id WHERE c.sid = sources.sid);
