-- Sources: archive conversations, memories and diary days. sid is the
-- integer key chunks point to, so the per-row join of a filtered full-text
-- search stays on small integer b-trees; id is the source id users see.
CREATE TABLE sources (
	sid          INTEGER PRIMARY KEY,
	id           TEXT NOT NULL UNIQUE,
	kind         TEXT NOT NULL CHECK (kind IN ('archive', 'memory', 'diary')),
	vault        TEXT NOT NULL DEFAULT '',
	title        TEXT NOT NULL DEFAULT '',
	date         TEXT NOT NULL DEFAULT '',
	date_lo      TEXT, -- first day the date covers, NULL when undated
	date_hi      TEXT, -- last day the date covers, NULL when undated
	owner        TEXT NOT NULL DEFAULT '',
	category     TEXT NOT NULL DEFAULT '',
	content_hash TEXT NOT NULL DEFAULT '',
	size         INTEGER NOT NULL DEFAULT 0,
	mtime        INTEGER NOT NULL DEFAULT 0,
	chunk_count  INTEGER NOT NULL DEFAULT 0,
	body         TEXT NOT NULL DEFAULT '',
	index_state  TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL, -- unix nanoseconds, UTC
	updated_at   INTEGER NOT NULL
);
CREATE INDEX sources_kind_vault ON sources (kind, vault);

-- Chunks hold only what ranking, filtering and the vector index need per
-- row; their text lives in chunk_texts so a search touching thousands of
-- chunk rows reads a few dense pages instead of one page per chunk. They
-- repeat their source's filter attributes (kind .. date_hi), so a filtered
-- full-text search looks up one row per match, not two; a source whose
-- attributes change gets new chunk rows, so the copies never go stale.
-- AUTOINCREMENT: ids only grow, so a repair cursor never skips a new chunk.
CREATE TABLE chunks (
	id       INTEGER PRIMARY KEY AUTOINCREMENT,
	sid      INTEGER NOT NULL REFERENCES sources (sid),
	idx      INTEGER NOT NULL,
	hash     TEXT NOT NULL,
	mid_word INTEGER NOT NULL DEFAULT 0,
	kind     TEXT NOT NULL,
	owner    TEXT NOT NULL,
	category TEXT NOT NULL,
	date_lo  TEXT,
	date_hi  TEXT,
	UNIQUE (sid, idx)
);
CREATE INDEX chunks_hash ON chunks (hash);
CREATE INDEX chunks_personal ON chunks (owner) WHERE kind != 'archive';

CREATE TABLE chunk_texts (
	id     INTEGER PRIMARY KEY REFERENCES chunks (id),
	text   TEXT NOT NULL,
	header TEXT NOT NULL DEFAULT ''
);

-- Full-text index of chunks: rowid = chunks.id, title = the source title
-- (so a title or memory key match ranks high), body = the chunk text, both
-- as textindex.IndexText writes them. Contentless: the text is in
-- chunk_texts already; contentless_delete lets rows be deleted by rowid.
-- Words are stemmed (porter), so "runs" finds "running"; the query planner
-- reads the vocabulary by textindex.Term, which stems exactly as this
-- tokenizer does (TestTermsAgreeWithFTS5).
CREATE VIRTUAL TABLE chunks_fts USING fts5 (
	title, body,
	content = '',
	contentless_delete = 1,
	tokenize = 'porter unicode61 remove_diacritics 2'
);
-- Document frequencies, for planning queries over common words.
CREATE VIRTUAL TABLE chunks_fts_vocab USING fts5vocab (chunks_fts, row);

CREATE TABLE spaces (
	name          TEXT PRIMARY KEY,
	provider      TEXT NOT NULL,
	model         TEXT NOT NULL,
	dim           INTEGER NOT NULL CHECK (dim > 0),
	normalized    INTEGER NOT NULL DEFAULT 0,
	is_read       INTEGER NOT NULL DEFAULT 0,
	created_at    INTEGER NOT NULL,
	repair_cursor INTEGER NOT NULL DEFAULT 0
);
-- At most one space is the one searches read from.
CREATE UNIQUE INDEX spaces_one_read ON spaces (is_read) WHERE is_read;

-- Vectors by chunk text hash: identical passages share one vector. vec is
-- little-endian float32.
CREATE TABLE vectors (
	space TEXT NOT NULL REFERENCES spaces (name) ON DELETE CASCADE,
	hash  TEXT NOT NULL,
	vec   BLOB NOT NULL,
	PRIMARY KEY (space, hash)
) WITHOUT ROWID;

CREATE TABLE sweeps (
	id              INTEGER PRIMARY KEY,
	vault           TEXT NOT NULL,
	started         INTEGER NOT NULL,
	finished        INTEGER NOT NULL,
	files_seen      INTEGER NOT NULL,
	files_changed   INTEGER NOT NULL,
	files_skipped   INTEGER NOT NULL,
	files_failed    INTEGER NOT NULL,
	files_removed   INTEGER NOT NULL,
	chunks_written  INTEGER NOT NULL,
	bytes           INTEGER NOT NULL,
	vectors_missing INTEGER NOT NULL,
	outcome         TEXT NOT NULL
);
