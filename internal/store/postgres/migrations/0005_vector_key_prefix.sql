-- A vector key begins with the first half of its text's hash
-- (recall.VectorKey), so that SQLite finds the chunks holding a key through
-- the index of text hashes and needs no index of keys (its sweeps paid for
-- one in every insert). PostgreSQL keeps chunks_vkey: its planner, given a
-- range of the hash index whose bounds it cannot see, may scan every chunk
-- to join a batch of keys, where the key's own index keeps each lookup to
-- its rows. A chunk with a header had the key sha256(header, NUL, text
-- hash); its key is now the first 32 hex digits of its text's hash followed
-- by the first 32 of that, so the new key is made from the old one and the
-- text's hash. Nothing is embedded again: each vector is renamed.
UPDATE vectors v SET vkey = left(k.hash, 32) || left(k.vkey, 32)
	FROM (SELECT DISTINCT hash, vkey FROM chunks WHERE vkey != hash) k WHERE v.vkey = k.vkey;
UPDATE chunks SET vkey = left(hash, 32) || left(vkey, 32) WHERE vkey != hash;
