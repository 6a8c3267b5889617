-- Vectors are keyed by what was embedded: a chunk's context header and its
-- text (recall.VectorKey), no longer by its text alone, which kept the
-- vector made with a conversation's old title and date after it was
-- retitled or redated, and gave one passage in two conversations the vector
-- made with whichever header came first. chunks.vkey is each chunk's key
-- (its text's hash when it has no header: memories, diary days); chunks.hash
-- stays the text's hash, by which identical passages are collapsed into one
-- result.
--
-- Nothing is embedded again: the Go step of this migration (keyVectors)
-- fills vkey and gives each stored vector the key of the chunks holding its
-- text (a copy for each further header they have), taking it to be what
-- was embedded, as searches took it before.
ALTER TABLE chunks ADD COLUMN vkey TEXT NOT NULL DEFAULT '';
ALTER TABLE vectors RENAME COLUMN hash TO vkey;
