-- Terms longer than 256 bytes are held by a key of fixed length: their
-- first 256 bytes and their SHA-256 (termKey in lexical.go), since a B-tree
-- entry holds at most about 2,700 bytes and a longer word failed its whole
-- write. A database may already hold long terms that fitted (a word that
-- compresses well, or of 257 to about 2,700 bytes): they are rekeyed here,
-- in postings, in their chunks' term lists and in terms, found through the
-- terms table (one pass over it) and the postings' key.
UPDATE chunks c SET terms = ARRAY(
	SELECT CASE WHEN length(t.term) > 256 THEN substring(t.term FROM 1 FOR 256) || sha256(t.term) ELSE t.term END
	FROM unnest(c.terms) WITH ORDINALITY AS t(term, i) ORDER BY t.i)
WHERE c.id IN (SELECT p.chunk_id FROM terms l JOIN postings p ON p.term = l.term WHERE length(l.term) > 256);

UPDATE postings p SET term = substring(p.term FROM 1 FOR 256) || sha256(p.term)
WHERE p.term IN (SELECT term FROM terms WHERE length(term) > 256);

UPDATE terms SET term = substring(term FROM 1 FOR 256) || sha256(term)
WHERE length(term) > 256;
