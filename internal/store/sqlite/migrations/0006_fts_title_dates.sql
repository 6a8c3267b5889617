-- The title column of the full-text index also holds the source's date
-- written out (textindex.TitleText: "13 October 2023"), so every chunk of a
-- conversation is found by its day. The rows are rebuilt by the Go step of
-- this migration (rebuildFullText).
INSERT INTO chunks_fts (chunks_fts) VALUES ('delete-all');
