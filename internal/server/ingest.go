package server

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/convo"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/remote"
)

// POST /ingest takes chunks of archive sources and writes a source, one
// transaction replacing the stored one, once all of its total_chunks have
// arrived. Chunks of a source that spans requests wait in a staging area in
// memory, bounded in bytes and with a time to live.
//
// Losing staged chunks (a restart, the TTL, eviction when the area is full)
// is safe because of the client protocol: a client records a file as done
// only when every chunk was accepted AND the answer reports its sources
// complete (written or unchanged). A source left partial is sent again, in
// full, on the client's next run. The stored source is never touched until
// a complete set has arrived, so a partial upload never leaves a truncated
// source behind. Staged chunks are keyed by source, total_chunks and the
// client's version of the source, so chunks left by an earlier upload of
// another text are dropped rather than assembled with the new ones.

// Ingest limits.
const (
	maxIngestChunks  = 10_000  // chunks per request
	maxTotalChunks   = 100_000 // chunks per source
	maxIngestVersion = 128     // bytes
	maxIngestZone    = 64      // bytes
	defaultStageTTL  = 15 * time.Minute
	defaultStageSize = 64 << 20 // bytes of staged chunk text
)

type staging struct {
	mu       sync.Mutex
	ttl      time.Duration
	maxBytes int64
	now      func() time.Time
	bytes    int64
	m        map[string]*staged // by source id
}

type staged struct {
	total   int
	version string
	chunks  map[int]string
	bytes   int64
	era     string
	title   string
	zone    string // recall.Source.Zone: the last zone a chunk gave ("" when none did)
	// dated and titled: a chunk gave an era or a title, even an empty
	// one; a source given neither is labelled as the file its id names.
	dated, titled bool
	touched       time.Time
}

func newStaging(ttl time.Duration, maxBytes int64, now func() time.Time) *staging {
	if ttl <= 0 {
		ttl = defaultStageTTL
	}
	if maxBytes <= 0 {
		maxBytes = defaultStageSize
	}
	return &staging{ttl: ttl, maxBytes: maxBytes, now: now, m: map[string]*staged{}}
}

func (st *staging) size() (int, int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.m), st.bytes
}

func (st *staging) drop(id string) {
	if e := st.m[id]; e != nil {
		st.bytes -= e.bytes
		delete(st.m, id)
	}
}

// expire drops entries past their TTL. Called with st.mu held.
func (st *staging) expire(now time.Time) {
	for id, e := range st.m {
		if now.Sub(e.touched) > st.ttl {
			st.drop(id)
		}
	}
}

// evictions hands out staged ids, least recently touched first, for one
// request: the order is sorted once, when the request first needs room, so
// a request of many sources into a full staging area costs one sort, not
// one per source. Entries touched by this request (keep) are passed over.
type evictions struct {
	order []string
	next  int
}

// makeRoom evicts the least recently touched entries, other than keep,
// until need more bytes fit. Called with st.mu held.
func (st *staging) makeRoom(ev *evictions, need int64, keep string) bool {
	if st.bytes+need <= st.maxBytes {
		return true
	}
	if ev.order == nil {
		ev.order = make([]string, 0, len(st.m))
		for id := range st.m {
			ev.order = append(ev.order, id)
		}
		sort.Slice(ev.order, func(i, j int) bool { return st.m[ev.order[i]].touched.Before(st.m[ev.order[j]].touched) })
	}
	for ; ev.next < len(ev.order) && st.bytes+need > st.maxBytes; ev.next++ {
		if id := ev.order[ev.next]; id != keep {
			st.drop(id) // a no-op for an id already gone
		}
	}
	return st.bytes+need <= st.maxBytes
}

// group is one source's chunks within a request.
type group struct {
	status remote.SourceStatus
	chunks []remote.IngestChunk
	doc    *recall.Document // set when complete
}

// ingest handles one /ingest request body.
func (s *Server) ingest(ctx context.Context, req remote.IngestRequest) (remote.IngestResponse, error) {
	if len(req.Chunks) == 0 {
		return remote.IngestResponse{}, recall.Errorf(recall.EINVALID, "chunks is empty: send at least one chunk")
	}
	if len(req.Chunks) > maxIngestChunks {
		return remote.IngestResponse{}, recall.Errorf(recall.EINVALID, "%d chunks in one request; send at most %d", len(req.Chunks), maxIngestChunks)
	}
	var groups []*group
	byFile := map[string]*group{}
	type chunkKey struct {
		file  string
		index int
	}
	sent := make(map[chunkKey]string, len(req.Chunks))
	for _, c := range req.Chunks {
		// Two texts for one chunk (two conversations taken for one source)
		// would keep one silently: the request is wrong as a whole.
		k := chunkKey{c.SourceFile, c.ChunkIndex}
		if prev, ok := sent[k]; ok && prev != c.Content {
			return remote.IngestResponse{}, recall.Errorf(recall.EINVALID, "chunk %d of source_file %q is sent twice with different content", c.ChunkIndex, shorten(c.SourceFile))
		}
		sent[k] = c.Content
		g := byFile[c.SourceFile]
		if g == nil {
			g = &group{status: remote.SourceStatus{SourceFile: c.SourceFile, TotalChunks: c.TotalChunks}}
			byFile[c.SourceFile] = g
			groups = append(groups, g)
		}
		g.chunks = append(g.chunks, c)
	}
	byID := map[string]*group{}
	for _, g := range groups {
		if err := s.checkGroup(g); err != nil {
			g.reject(err)
			continue
		}
		if other := byID[g.status.Source]; other != nil {
			// Two spellings of one path (a\b and a/b) in one request.
			g.reject(recall.Errorf(recall.EINVALID, "source_file names the same source as %q in this request", other.status.SourceFile))
			continue
		}
		byID[g.status.Source] = g
	}
	s.stageGroups(groups)

	var docs []recall.Document
	var written []*group
	for _, g := range groups {
		if g.doc == nil {
			continue
		}
		if s.opt.Embedder == nil {
			g.doc.Source.IndexState = recall.IndexOK // nothing will ever embed it
		}
		cur, err := s.st.Source(ctx, g.doc.Source.ID)
		switch {
		case err == nil && cur.Kind == recall.KindArchive && cur.ContentHash == g.doc.Source.ContentHash && cur.ChunkCount == g.doc.Source.ChunkCount &&
			cur.Zone == g.doc.Source.Zone:
			g.status.Status = remote.StatusUnchanged
		case err == nil && cur.Kind != recall.KindArchive:
			g.reject(recall.Errorf(recall.ECONFLICT, "source %q is not an archive source", g.doc.Source.ID))
		case err != nil && !recall.IsNotFound(err):
			return remote.IngestResponse{}, err
		default:
			docs = append(docs, *g.doc)
			written = append(written, g)
		}
	}
	if len(docs) > 0 {
		if _, err := s.eng.Write(ctx, docs, nil); err != nil {
			return remote.IngestResponse{}, err
		}
		for _, g := range written {
			g.status.Status = remote.StatusWritten
		}
		s.bg.nudge()
	}
	resp := remote.IngestResponse{Sources: make([]remote.SourceStatus, len(groups))}
	for i, g := range groups {
		resp.Sources[i] = g.status
		s.metrics.ingested.add(1, g.status.Status)
	}
	return resp, nil
}

func (g *group) reject(err error) {
	g.status.Status = remote.StatusRejected
	g.status.Error = shorten(recall.ErrorMessage(err))
	// The client finds its source by the path it sent: a path a source id
	// may be is echoed whole; only a longer one, never valid, is cut.
	if len(g.status.SourceFile) > recall.MaxSourceIDLen {
		g.status.SourceFile = shorten(g.status.SourceFile)
	}
	g.doc = nil
}

// checkGroup validates one source's chunks and resolves its id.
func (s *Server) checkGroup(g *group) error {
	if g.status.SourceFile == "" {
		return recall.Errorf(recall.EINVALID, "source_file is empty")
	}
	id, err := recall.CleanSourceID(g.status.SourceFile)
	if err != nil {
		return err
	}
	g.status.Source = id
	total, version := g.chunks[0].TotalChunks, g.chunks[0].Version
	if total < 1 || total > maxTotalChunks {
		return recall.Errorf(recall.EINVALID, "total_chunks must be between 1 and %d", maxTotalChunks)
	}
	if len(version) > maxIngestVersion || strings.ContainsFunc(version, unicode.IsControl) {
		return recall.Errorf(recall.EINVALID, "version must be at most %d bytes, without control characters", maxIngestVersion)
	}
	for _, c := range g.chunks {
		switch {
		case c.TotalChunks != total:
			return recall.Errorf(recall.EINVALID, "chunks of one source disagree on total_chunks (%d and %d)", total, c.TotalChunks)
		case c.Version != version:
			return recall.Errorf(recall.EINVALID, "chunks of one source disagree on version (%q and %q)", version, c.Version)
		case c.ChunkIndex < 0 || c.ChunkIndex >= total:
			return recall.Errorf(recall.EINVALID, "chunk_index %d is outside 0..%d", c.ChunkIndex, total-1)
		case !utf8.ValidString(c.Content):
			return recall.Errorf(recall.EINVALID, "chunk %d: content is not valid UTF-8", c.ChunkIndex)
		case strings.IndexByte(c.Content, 0) >= 0:
			// Not kept by every store (PostgreSQL refuses it), where it
			// would fail the write of the whole request; sweeps send U+FFFD.
			return recall.Errorf(recall.EINVALID, "chunk %d: content holds a NUL character", c.ChunkIndex)
		case strings.TrimSpace(c.Content) == "":
			return recall.Errorf(recall.EINVALID, "chunk %d: content is empty", c.ChunkIndex)
		case c.Era != nil && *c.Era != "":
			if _, _, ok := recall.DateRange(*c.Era); !ok {
				return recall.Errorf(recall.EINVALID, "era %q is not a date: use YYYY, YYYY-MM or YYYY-MM-DD", *c.Era)
			}
		}
		if c.Zone != nil && (len(*c.Zone) > maxIngestZone || *c.Zone == recall.ZoneUnknown || strings.ContainsFunc(*c.Zone, unicode.IsControl)) {
			return recall.Errorf(recall.EINVALID, "chunk %d: zone must be at most %d bytes, without control characters, and not %q", c.ChunkIndex, maxIngestZone, recall.ZoneUnknown)
		}
	}
	return nil
}

// The memory a staged source and each of its chunks take beyond their
// text (struct, map entry, string headers), counted against StageBytes.
const (
	stagedEntryCost = 256
	stagedChunkCost = 64
)

// stageGroups merges each valid group into the staging area and takes out
// the sources that are now complete, as documents.
func (s *Server) stageGroups(groups []*group) {
	st := s.stage
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.now()
	st.expire(now)
	var ev evictions
	for _, g := range groups {
		if g.status.Status == remote.StatusRejected {
			continue
		}
		id := g.status.Source
		total, version := g.chunks[0].TotalChunks, g.chunks[0].Version
		e := st.m[id]
		if e != nil && (e.total != total || e.version != version) {
			// The source changed between requests (another count, or
			// another version: an edit, or a run that started over), so
			// the waiting chunks are of another text: start over.
			st.drop(id)
			e = nil
		}
		// What a source holds while it waits counts against the staging
		// limit whole: its id, title and era and each chunk's map entry,
		// not only the chunks' text.
		var added int64
		if e == nil {
			e = &staged{total: total, version: version, chunks: map[int]string{}}
			added += stagedEntryCost + int64(len(id)+len(version))
		}
		for _, c := range g.chunks {
			if old, ok := e.chunks[c.ChunkIndex]; ok {
				added -= int64(len(old))
			} else {
				added += stagedChunkCost
			}
			e.chunks[c.ChunkIndex] = c.Content
			added += int64(len(c.Content))
			if c.Era != nil {
				added += int64(len(*c.Era) - len(e.era))
				e.era, e.dated = *c.Era, true
			}
			if c.Zone != nil {
				added += int64(len(*c.Zone) - len(e.zone))
				e.zone = *c.Zone
			}
			if c.ConversationTitle != nil {
				// Cleaned as a local sweep stores titles (a tab is a
				// space, a heading of a page is cut), not refused: the
				// client would send the file again on every run.
				title := ingest.CleanTitle(*c.ConversationTitle)
				added += int64(len(title) - len(e.title))
				e.title, e.titled = title, true
			}
		}
		e.touched = now
		g.status.Received = len(e.chunks)
		if len(e.chunks) == total {
			st.drop(id)
			g.doc = archiveDocument(id, e)
			continue
		}
		if !st.makeRoom(&ev, added, id) {
			st.drop(id)
			g.reject(recall.Errorf(recall.ETOOLARGE, "the source is too large to wait for its remaining chunks; send all %d of its chunks in one request", total))
			continue
		}
		if st.m[id] == nil {
			st.m[id] = e
		}
		e.bytes += added
		st.bytes += added
		g.status.Status = remote.StatusPartial
	}
}

// archiveDocument builds the source from a complete set of chunks, in the
// shape a local sweep gives it (title, date and the embedding header). A
// title or date no chunk gave is the one a local sweep gives the file the
// id names (a client that sends a file's chunks alone may leave them out);
// one given, even empty, is kept: an export's conversation is no file, and
// its id is neither its title nor its date.
func archiveDocument(id string, e *staged) *recall.Document {
	title, date := e.title, e.era
	if !e.titled || !e.dated {
		t, d := ingest.Label(id, convo.Conversation{Title: e.title, Date: e.era})
		if !e.titled {
			title = t
		}
		if !e.dated {
			date = d
		}
	}
	header := title
	if date != "" {
		header = strings.TrimSpace(title + " (" + date + ")")
	}
	texts := make([]string, e.total)
	var size int64
	chunks := make([]recall.Chunk, e.total)
	for i := range e.total {
		t := e.chunks[i]
		texts[i] = t
		size += int64(len(t))
		chunks[i] = recall.Chunk{Index: i, Text: t, Header: header, Hash: recall.TextHash(t)}
	}
	return &recall.Document{
		Source: recall.Source{ID: id, Kind: recall.KindArchive, Title: title, Date: date, Zone: e.zone,
			ContentHash: recall.TextHash(title + "\x00" + date + "\x00" + strings.Join(texts, "\n\n")),
			Size:        size, ChunkCount: e.total, IndexState: recall.IndexPending},
		Chunks: chunks,
	}
}
