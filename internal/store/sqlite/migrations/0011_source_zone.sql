-- The time zone a sweep dated each archive source in, when its date is the
-- day of a moment written in UTC there (ingest.ZoneKey), '' when its date
-- does not depend on the zone, so that a sweep in another zone dates it
-- again. Sources written before this column have NULL: unknown
-- (recall.ZoneUnknown), read again once. Nullable, so that adding it
-- rewrites no row.
ALTER TABLE sources ADD COLUMN zone TEXT;
