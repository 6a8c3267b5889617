-- Vectors are keyed by what was embedded: a chunk's context header and its
-- text (recall.VectorKey), no longer by its text alone, which kept the
-- vector made with a conversation's old title and date after it was
-- retitled or redated, and gave one passage in two conversations the vector
-- made with whichever header came first. chunks.vkey is each chunk's key:
-- its text's hash when it has no header (memories, diary days), else the
-- hex sha256 of the header, a NUL byte and the text's hash. chunks.hash
-- stays the text's hash, by which identical passages are collapsed into
-- one result.
ALTER TABLE chunks ADD COLUMN vkey text COLLATE "C";
UPDATE chunks SET vkey = CASE WHEN header = '' THEN hash
	ELSE encode(sha256(convert_to(header, 'UTF8') || '\x00'::bytea || convert_to(hash, 'UTF8')), 'hex') END;
ALTER TABLE chunks ALTER COLUMN vkey SET NOT NULL;
CREATE INDEX chunks_vkey ON chunks (vkey);

-- Nothing is embedded again: each stored vector, keyed by its text's hash
-- until now, is given the key of every chunk holding that text (taken to
-- be what was embedded, as searches took it before), and the old key goes
-- unless a chunk without a header holds it.
ALTER TABLE vectors RENAME COLUMN hash TO vkey;
ALTER INDEX vectors_hash RENAME TO vectors_vkey;
INSERT INTO vectors (space, vkey, unit, vec)
	SELECT v.space, k.vkey, v.unit, v.vec FROM (SELECT DISTINCT hash, vkey FROM chunks WHERE vkey != hash) k
	JOIN vectors v ON v.vkey = k.hash;
DELETE FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.vkey = v.vkey);
UPDATE spaces sp SET vectors = (SELECT count(*) FROM vectors v WHERE v.space = sp.name AND v.unit = 0);
