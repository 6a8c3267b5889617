-- A vector key begins with the first half of its text's hash
-- (recall.VectorKey), so the chunks holding a key are found through
-- chunks_hash (holdsKey), and chunks_vkey, which every chunk a sweep
-- inserted paid for, goes. A chunk with a header had the key
-- sha256(header, NUL, text hash); its key is now the first 32 hex digits of
-- its text's hash followed by the first 32 of that, so the new key is made
-- from the old one and the text's hash. Nothing is embedded again: each
-- vector is renamed, in place (the keys keep their length), through
-- chunks_vkey before it goes.
UPDATE vectors SET vkey = (SELECT substr(c.hash, 1, 32) || substr(c.vkey, 1, 32) FROM chunks c
	WHERE c.vkey = vectors.vkey AND c.vkey != c.hash LIMIT 1)
	WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.vkey = vectors.vkey AND c.vkey != c.hash);
UPDATE chunks SET vkey = substr(hash, 1, 32) || substr(vkey, 1, 32) WHERE vkey != hash;
DROP INDEX chunks_vkey;
