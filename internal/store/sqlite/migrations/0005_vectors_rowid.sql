-- Vectors move from a WITHOUT ROWID table keyed by (space, hash) to a rowid
-- table with a unique index on (space, hash). In an index b-tree a cell
-- whose payload overflows its page is read whole for every key comparison,
-- and a vector blob (every unit of a chunk: ~10 KB at 384 dimensions)
-- always overflows, so each lookup by hash copied tens of kilobytes: the
-- float rescoring of a search (~50 lookups) took 3 ms at 100k chunks, and
-- the "which chunks lack a vector" checks of stats and repair scanned every
-- blob. Now a lookup walks the small index and reads one row.
CREATE TABLE vectors_new (
	space TEXT NOT NULL REFERENCES spaces (name) ON DELETE CASCADE,
	hash  TEXT NOT NULL,
	vec   BLOB NOT NULL,
	UNIQUE (space, hash)
);
INSERT INTO vectors_new (space, hash, vec) SELECT space, hash, vec FROM vectors ORDER BY space, hash;
DROP TABLE vectors;
ALTER TABLE vectors_new RENAME TO vectors;
