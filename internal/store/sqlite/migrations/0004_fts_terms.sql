-- The full-text index is given terms, not text: textindex.IndexText folds,
-- splits CJK runs into bigrams and stems in Go (on every core during a
-- sweep, where FTS5's porter tokenizer ran inside the single write
-- transaction), and the "ascii" tokenizer only splits on the spaces
-- between the terms, so the index holds exactly what textindex makes.
-- Query text goes through textindex.Term the same way. The vocabulary is
-- the same as before, term for term; the rows are rebuilt from chunk_texts
-- by the Go step of this migration (rebuildFullText).
DROP TABLE chunks_fts_vocab;
DROP TABLE chunks_fts;
CREATE VIRTUAL TABLE chunks_fts USING fts5 (
	title, body,
	content = '',
	contentless_delete = 1,
	tokenize = 'ascii'
);
CREATE VIRTUAL TABLE chunks_fts_vocab USING fts5vocab (chunks_fts, row);
INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('hashsize', 67108864);
