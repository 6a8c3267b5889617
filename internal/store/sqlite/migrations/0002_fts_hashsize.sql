-- FTS5 keeps new index entries in an in-memory hash and writes them out as
-- a segment when it passes 'hashsize' (1 MiB by default) or a transaction
-- commits. Small segments must be merged later, which was a fifth of a
-- sweep's CPU; 64 MiB lets a sweep's write batch become one segment. The
-- memory is bounded by the writer's batch limits.
INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('hashsize', 67108864);
