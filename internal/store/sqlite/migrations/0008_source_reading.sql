-- The reading version a sweep made each archive source with (its parsers,
-- chunker and labels: ingest.ReadingVersion). A sweep reads a file again,
-- though its size and mtime are unchanged, when a source of it records an
-- older reading, so an upgrade's better parsing reaches files swept before
-- it. Sources written before this column have 0: read again once.
ALTER TABLE sources ADD COLUMN reading INTEGER NOT NULL DEFAULT 0;
