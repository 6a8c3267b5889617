package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/repair"
)

// The operations behind both transports. MCP tools and REST endpoints
// decode the same input structs (the jsonschema tags are the tool
// descriptions models read) and call the same functions; only the
// rendering differs.

// caller is who is asking, and the request being served (nil over stdio).
type caller struct {
	id *identity
	ri *reqInfo
}

func (c caller) scope() memory.Scope {
	return memory.Scope{Owner: c.id.owner, Bound: c.id.bound, Admin: c.id.admin}
}

// SearchInput is search_archive's input.
type SearchInput struct {
	Query        string `json:"query" jsonschema:"what to look for, at most 500 characters. Words are matched literally (no operators); put \"double quotes\" around parts that must appear as an exact phrase"`
	Limit        int    `json:"limit,omitempty" jsonschema:"how many results to return, 1 to 20 (default 5)"`
	Mode         string `json:"mode,omitempty" jsonschema:"hybrid (full text and meaning combined; the default when vectors exist), lexical (full text only) or semantic (meaning only)"`
	SourcePrefix string `json:"source_prefix,omitempty" jsonschema:"only archive sources whose path starts with this, e.g. 2025/07/"`
	Kind         string `json:"kind,omitempty" jsonschema:"only this kind of source: archive (past conversations), memory (saved memories) or diary (diary days)"`
	Category     string `json:"category,omitempty" jsonschema:"only memories of this category, e.g. project or person"`
	Owner        string `json:"owner,omitempty" jsonschema:"only memories and diary days of this owner (a token bound to an owner always sees only its own)"`
	Since        string `json:"since,omitempty" jsonschema:"only sources dated on or after this date: YYYY, YYYY-MM or YYYY-MM-DD"`
	Until        string `json:"until,omitempty" jsonschema:"only sources dated on or before this date: YYYY, YYYY-MM or YYYY-MM-DD"`
}

var ownerRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{0,64}$`)

// searchesPerToken bounds the searches one credential runs at once on the
// store's full-text index (search.Engine.StoreFullText), and searchWait how
// long one more waits for its turn. The store reads through a pool of four
// connections: a client firing many costly ones at once (long quoted
// phrases of common words) would hold them all until their time budgets
// ran out, and every other client's search would wait behind them; this
// way two stay free for the others. Searches the in-memory indexes answer
// are not bounded: they hold a connection only to read their results.
const (
	searchesPerToken = 2
	searchWait       = 5 * time.Second
)

// searchTurn waits until the caller's credential runs fewer than
// searchesPerToken searches, and returns the function that ends its turn.
func (s *Server) searchTurn(ctx context.Context, c caller) (func(), error) {
	key := "-"
	if c.id != nil {
		key = c.id.key
	}
	v, _ := s.searching.LoadOrStore(key, make(chan struct{}, searchesPerToken))
	turns := v.(chan struct{})
	t := time.NewTimer(searchWait)
	defer t.Stop()
	select {
	case turns <- struct{}{}:
		return func() { <-turns }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, recall.Errorf(recall.ERATELIMIT, "this token already runs %d searches; try again when one has answered", searchesPerToken)
	}
}

// ownerFilter narrows f to the memories and diary the caller may read: its
// own when its token is bound to an owner, else those of the owner it
// names (requested), else every owner's.
func (c caller) ownerFilter(f recall.Filter, requested string) (recall.Filter, error) {
	if requested != "" {
		if !ownerRE.MatchString(requested) {
			return f, recall.Errorf(recall.EINVALID, "owner must be at most 64 letters, digits, '_', '.' or '-'")
		}
		if c.id.bound && requested != c.id.owner {
			return f, recall.Errorf(recall.EFORBIDDEN, "this token may only use its own owner")
		}
		f.OwnerScoped, f.Owner = true, requested
	}
	return c.scope().Filter(f), nil
}

func (s *Server) search(ctx context.Context, c caller, in SearchInput) (recall.SearchResponse, error) {
	if n := utf8.RuneCountInString(in.Category); n > memory.MaxCategoryLen {
		return recall.SearchResponse{}, recall.Errorf(recall.EINVALID, "category is %d characters; the limit is %d", n, memory.MaxCategoryLen)
	}
	f := recall.Filter{SourcePrefix: in.SourcePrefix, Category: in.Category, Since: in.Since, Until: in.Until}
	if in.Kind != "" {
		f.Kinds = []recall.Kind{recall.Kind(in.Kind)}
	}
	f, err := c.ownerFilter(f, in.Owner)
	if err != nil {
		return recall.SearchResponse{}, err
	}
	if s.eng.StoreFullText(in.Query) {
		done, err := s.searchTurn(ctx, c)
		if err != nil {
			return recall.SearchResponse{}, err
		}
		defer done()
	}
	resp, err := s.eng.Search(ctx, recall.SearchRequest{Query: in.Query, Mode: in.Mode, Limit: in.Limit, Filter: f})
	if err != nil {
		return resp, err
	}
	s.embedLog.note(s.log, resp)
	return resp, nil
}

// embedFailures logs why queries could not be embedded, which their
// answers only note ("searched full text only"): without it an operator
// whose embedder is misconfigured (a server that moved to a space whose
// provider it has no address for) sees every search quietly lose its
// semantic half. A reason is logged when it first shows, then at most once
// a minute while it lasts; a search embedded again ends it.
type embedFailures struct {
	mu   sync.Mutex
	last string
	at   time.Time
}

func (f *embedFailures) note(log *slog.Logger, resp recall.SearchResponse) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if resp.EmbedError == nil {
		if resp.Mode != recall.ModeLexical {
			f.last = "" // embedded: a failure from now on is news
		}
		return
	}
	msg := resp.EmbedError.Error()
	if msg == f.last && time.Since(f.at) < time.Minute {
		return
	}
	f.last, f.at = msg, time.Now()
	log.Warn("searches fall back to full text: the query could not be embedded", "err", msg)
}

// ContextInput is get_context's input.
type ContextInput struct {
	Source     string `json:"source" jsonschema:"the source of a search result, exactly as the result names it"`
	ChunkIndex int    `json:"chunk_index" jsonschema:"the chunk_index of that result"`
	Radius     *int   `json:"radius,omitempty" jsonschema:"how many chunks to show on each side, 0 to 3 (default 1)"`
	Kind       string `json:"kind,omitempty" jsonschema:"the kind of that result (archive, memory or diary): it tells an archive file from a memory of the same name"`
	Owner      string `json:"owner,omitempty" jsonschema:"the owner of that result, when it names one (a token bound to an owner always uses its own)"`
}

// ContextOutput is get_context's answer.
type ContextOutput struct {
	Source     string         `json:"source"`
	Kind       recall.Kind    `json:"kind"`
	ChunkIndex int            `json:"chunk_index"`
	Chunks     []ContextChunk `json:"chunks"`
}

// ContextChunk is one chunk around a hit.
type ContextChunk struct {
	Source     string `json:"source"`
	ChunkIndex int    `json:"chunk_index"`
	Text       string `json:"text"`
}

func (s *Server) context(ctx context.Context, c caller, in ContextInput) (ContextOutput, error) {
	radius := 1
	if in.Radius != nil {
		radius = *in.Radius
	}
	if in.Source == "" {
		return ContextOutput{}, recall.Errorf(recall.EINVALID, "source is required: use the source of a search result")
	}
	switch recall.Kind(in.Kind) {
	case "", recall.KindArchive, recall.KindMemory, recall.KindDiary:
	default:
		return ContextOutput{}, recall.Errorf(recall.EINVALID, "kind must be archive, memory or diary")
	}
	scope, err := c.ownerFilter(recall.Filter{}, in.Owner)
	if err != nil {
		return ContextOutput{}, err
	}
	chunks, kind, err := s.eng.Context(ctx, in.Source, recall.Kind(in.Kind), in.ChunkIndex, radius, scope)
	if err != nil {
		return ContextOutput{}, err
	}
	out := ContextOutput{Source: in.Source, Kind: kind, ChunkIndex: in.ChunkIndex, Chunks: make([]ContextChunk, len(chunks))}
	for i, ch := range chunks {
		out.Chunks[i] = ContextChunk{Source: recall.PublicID(ch.Source.ID), ChunkIndex: ch.Index, Text: ch.Text}
	}
	return out, nil
}

// StatsOutput is get_archive_stats' answer.
type StatsOutput struct {
	Sources     map[string]int `json:"sources"`      // by kind
	Chunks      int            `json:"chunks"`       // passages stored
	Bytes       int64          `json:"bytes"`        // text bytes of all sources
	DBBytes     int64          `json:"db_bytes"`     // database size on disk
	IndexStates map[string]int `json:"index_states"` // memories and diary days by index state
	Spaces      []SpaceOutput  `json:"spaces"`
	LastSweep   *SweepOutput   `json:"last_sweep,omitempty"`
	Index       IndexOutput    `json:"index"`
	Repair      RepairState    `json:"repair"`
	Staged      int            `json:"ingest_staged_sources"` // sources with some chunks posted to /ingest, waiting for the rest
}

// SpaceOutput is one vector space's coverage. Its counts are of distinct
// chunk texts, IndexOutput's of index entries, several per text: the
// descriptions (the tool's output schema) say which is which.
type SpaceOutput struct {
	Name     string  `json:"name"`
	Provider string  `json:"provider"`
	Model    string  `json:"model"`
	Dim      int     `json:"dim"`
	Read     bool    `json:"read"`
	Vectors  int     `json:"vectors" jsonschema:"distinct chunk texts, each under its header (title and date), that have a vector in this space, each counted once (a text is embedded as one unit vector per paragraph group)"`
	Missing  int     `json:"missing" jsonschema:"distinct chunk texts, each under its header, without a vector in this space yet, for repair to embed"`
	Coverage float64 `json:"coverage" jsonschema:"vectors / (vectors + missing); 1 when there is nothing to embed"`
}

// SweepOutput is the last sweep's summary.
type SweepOutput struct {
	Finished     string `json:"finished"` // RFC 3339, UTC
	Outcome      string `json:"outcome"`
	FilesSeen    int    `json:"files_seen"`
	FilesChanged int    `json:"files_changed"`
	FilesFailed  int    `json:"files_failed"`
	FilesRemoved int    `json:"files_removed"`
}

// IndexOutput is the state of the in-memory vector index.
type IndexOutput struct {
	State   string `json:"state" jsonschema:"loading, ready or failed"`
	Space   string `json:"space,omitempty" jsonschema:"the read space the index holds"`
	Vectors int    `json:"vectors" jsonschema:"entries in the in-memory vector index: one per unit vector (paragraph group) of each chunk that has one, so usually more than the space's vectors, which counts distinct texts; 0 until ready"`
}

// stats answers get_archive_stats and GET /api/stats. A token bound to an
// owner is shown the shared archive and its own memories and diary days:
// the counts of sources, chunks, bytes and index states leave out every
// other owner's, as a search does (how many memories another owner keeps,
// and when they write one, is theirs too). The rest (vector spaces,
// database size, the last sweep, the index, repair) is of the server.
//
// The store's counts are read within the engine's budget, as a search
// runs (search.Engine.Bounded); so are the other point reads (read_memory,
// read_diary, recent_diary, memory_index_status): a store that stalls on
// them ends them there, where they held a read connection until the
// client left.
func (s *Server) stats(ctx context.Context, c caller) (StatsOutput, error) {
	st, err := bounded(ctx, s, "counting the archive", func(ctx context.Context) (recall.Stats, error) {
		st, err := s.st.Stats(ctx)
		if err != nil || c.id == nil || !c.id.bound || c.id.admin {
			return st, err
		}
		own, err := s.st.OwnerStats(ctx, c.id.owner)
		if err != nil {
			return recall.Stats{}, err
		}
		return ownerView(st, own), nil
	})
	if err != nil {
		return StatsOutput{}, err
	}
	out := StatsOutput{Sources: map[string]int{}, Chunks: st.Chunks, Bytes: st.Bytes, DBBytes: st.DBBytes,
		IndexStates: map[string]int{}, Spaces: []SpaceOutput{}}
	for k, n := range st.Sources {
		out.Sources[string(k)] = n
	}
	for k, n := range st.IndexStates {
		out.IndexStates[k] = n
	}
	for _, sp := range st.Spaces {
		out.Spaces = append(out.Spaces, SpaceOutput{Name: sp.Name, Provider: sp.Provider, Model: sp.Model,
			Dim: sp.Dim, Read: sp.Read, Vectors: sp.Vectors, Missing: sp.Missing, Coverage: sp.Coverage})
	}
	if ls := st.LastSweep; ls != nil {
		out.LastSweep = &SweepOutput{Finished: ls.Finished.UTC().Format(time.RFC3339), Outcome: ls.Outcome,
			FilesSeen: ls.FilesSeen, FilesChanged: ls.FilesChanged, FilesFailed: ls.FilesFailed, FilesRemoved: ls.FilesRemoved}
	}
	out.Index = s.bg.index()
	out.Repair = s.bg.repairState()
	out.Staged, _ = s.stage.size()
	return out, nil
}

// ownerView replaces every owner's memories and diary days in st by one
// owner's (own, from OwnerStats).
func ownerView(st, own recall.Stats) recall.Stats {
	for _, k := range []recall.Kind{recall.KindMemory, recall.KindDiary} {
		st.Chunks += own.KindChunks[k] - st.KindChunks[k]
		st.Bytes += own.KindBytes[k] - st.KindBytes[k]
		delete(st.Sources, k)
		if n := own.Sources[k]; n > 0 {
			st.Sources[k] = n
		}
	}
	st.IndexStates = own.IndexStates
	return st
}

// RepairInput is repair_archive's input.
type RepairInput struct {
	MaxTexts int `json:"max_texts,omitempty" jsonschema:"embed at most this many chunk texts in this call, 1 to 10000 (default 256); call again to continue"`
	// RetryRefused is `recall repair --retry-refused`: the refusals are
	// recorded in the store, so without it no process ever sends those
	// texts to that model again.
	RetryRefused bool `json:"retry_refused,omitempty" jsonschema:"true sends again the chunk texts the model (or its service) refused for their size, which are otherwise never sent to it again: for after raising its limit (a larger context, a proxy's body limit); default false"`
}

// RepairOutput is repair_archive's answer.
type RepairOutput struct {
	Space    string `json:"space"`    // the space this call embedded for
	Embedded int    `json:"embedded"` // chunk texts embedded by this call
	Missing  int    `json:"missing"`  // chunk texts still without a vector in space
	Done     bool   `json:"done"`     // nothing is missing any more
	// MovedTo is the read space another process switched to while this
	// call ran (`recall space use`): the call stopped there, as vectors
	// of space are no longer searched, and repair now fills MovedTo.
	MovedTo string `json:"moved_to,omitempty"`
	// TooLong counts the chunk texts of space (of Missing) its model or
	// its service refused for their size (SpaceStats.TooLong): not sent
	// again unless retry_refused.
	TooLong int `json:"too_long,omitempty"`
	// Forgotten counts the refusals retry_refused forgot: those texts
	// were sent again (the ones past max_texts by the next call).
	Forgotten int    `json:"forgotten,omitempty"`
	Note      string `json:"note"`
}

const maxRepairTexts = 10000

func (s *Server) repair(ctx context.Context, in RepairInput) (RepairOutput, error) {
	if in.MaxTexts == 0 {
		in.MaxTexts = 256
	}
	if in.MaxTexts < 1 || in.MaxTexts > maxRepairTexts {
		return RepairOutput{}, recall.Errorf(recall.EINVALID, "max_texts must be between 1 and %d", maxRepairTexts)
	}
	p, err := s.bg.repairOnce(ctx, repair.Options{Limit: in.MaxTexts, RetryRefused: in.RetryRefused})
	moved := errors.Is(err, errTargetMoved)
	if moved {
		// The run stopped before counting what its space still misses.
		p.Missing, err = s.missing(ctx, p.Space)
	}
	if err != nil {
		return RepairOutput{}, err
	}
	out := RepairOutput{Space: p.Space, Embedded: p.Embedded, Missing: p.Missing, Done: p.Done, TooLong: p.Refusals, Forgotten: p.Forgotten}
	switch {
	case moved:
		_, out.MovedTo = s.bg.target()
		out.Note = fmt.Sprintf("stopped: another process made %s the read space while this call repaired %s, "+
			"whose vectors are no longer searched; call again to repair %s", out.MovedTo, out.Space, out.MovedTo)
	case p.Done && p.Missing == 0:
		out.Note = "reached the end: every chunk text has a vector"
	case p.Done:
		var parts []string
		if n := p.Missing - p.Refusals; n > 0 {
			parts = append(parts, fmt.Sprintf("%d the embedder failed on alone or written meanwhile (tried by the next call; see the server's log)", n))
		}
		if p.Refusals > 0 {
			parts = append(parts, fmt.Sprintf("%d refused for size by the model or its service (not sent again; retry_refused sends them again, after raising the limit)", p.Refusals))
		}
		out.Note = "reached the end; still without a vector: " + strings.Join(parts, "; ")
	default:
		out.Note = "stopped after max_texts; call again to continue where this call stopped"
	}
	return out, nil
}

// missing counts the chunk texts without a vector in space.
func (s *Server) missing(ctx context.Context, space string) (int, error) {
	st, err := s.st.Stats(ctx)
	if err != nil {
		return 0, err
	}
	for _, sp := range st.Spaces {
		if sp.Name == space {
			return sp.Missing, nil
		}
	}
	return 0, nil // dropped meanwhile: nothing of it is missing
}

// SaveInput is save_memory's input.
type SaveInput struct {
	Key      string `json:"key" jsonschema:"the memory's name, up to 200 characters: letters of any script, digits and _-.:/ (e.g. project_recall or person_ada), not starting with diary/ (the diary's days are named so) or /, without .. or an empty or . segment between slashes; saved in Unicode NFKC. Saving an existing key replaces its value"`
	Value    string `json:"value" jsonschema:"the text to remember, stored verbatim, up to 100000 characters"`
	Category string `json:"category,omitempty" jsonschema:"a category such as project, person or note; by default the saved memory's, or for a new key derived from its prefix (project_, proj_, person_, note_, diary_)"`
	Owner    string `json:"owner,omitempty" jsonschema:"whose memory this is (a token bound to an owner always uses its own)"`
	Date     string `json:"date,omitempty" jsonschema:"the date the memory is about, YYYY-MM-DD (default: the saved memory's, or today for a new key)"`
}

func (s *Server) save(ctx context.Context, c caller, in SaveInput) (memory.SaveResult, error) {
	res, err := s.mem.Save(ctx, memory.SaveRequest{Key: in.Key, Value: in.Value, Category: in.Category, Owner: in.Owner, Date: in.Date}, c.scope())
	s.pending(res.Index)
	return res, err
}

// pending wakes the background repair for a memory or diary day that was
// stored without its vectors (the embedder failed or was slow): an idle
// repair would otherwise look again only after its idle wait (5 min). A
// repair backing off from a failing embedder is not hurried by it.
func (s *Server) pending(index string) {
	if index == recall.IndexPending {
		s.bg.nudge()
	}
}

// KeyInput names one memory.
type KeyInput struct {
	Key   string `json:"key" jsonschema:"the memory's key"`
	Owner string `json:"owner,omitempty" jsonschema:"whose memory (a token bound to an owner always uses its own)"`
}

func (s *Server) read(ctx context.Context, c caller, in KeyInput) (memory.Memory, error) {
	return bounded(ctx, s, "reading the memory", func(ctx context.Context) (memory.Memory, error) {
		return s.mem.Read(ctx, in.Key, in.Owner, c.scope())
	})
}

// bounded runs read within the engine's budget (search.Engine.Bounded),
// returning its result only when it ended within it.
func bounded[T any](ctx context.Context, s *Server, what string, read func(ctx context.Context) (T, error)) (T, error) {
	var out T
	err := s.eng.Bounded(ctx, what, func(ctx context.Context) (err error) {
		out, err = read(ctx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// DeleteInput is delete_memory's input.
type DeleteInput struct {
	Key     string `json:"key" jsonschema:"the memory's key"`
	Confirm bool   `json:"confirm,omitempty" jsonschema:"must be true: deleting removes the value and everything indexed from it, and cannot be undone"`
	Owner   string `json:"owner,omitempty" jsonschema:"whose memory (a token bound to an owner always uses its own)"`
}

// DeleteOutput is delete_memory's answer.
type DeleteOutput struct {
	Key     string `json:"key"`
	Deleted bool   `json:"deleted"`
}

func (s *Server) deleteMemory(ctx context.Context, c caller, in DeleteInput) (DeleteOutput, error) {
	if err := s.mem.Delete(ctx, in.Key, in.Owner, in.Confirm, c.scope()); err != nil {
		return DeleteOutput{}, err
	}
	return DeleteOutput{Key: in.Key, Deleted: true}, nil
}

// FindInput is find_memories' input.
type FindInput struct {
	Prefix   string `json:"prefix,omitempty" jsonschema:"only keys starting with this"`
	Category string `json:"category,omitempty" jsonschema:"only memories of this category"`
	Owner    string `json:"owner,omitempty" jsonschema:"whose memories (a token bound to an owner always uses its own)"`
	Since    string `json:"since,omitempty" jsonschema:"only memories dated on or after this date: YYYY, YYYY-MM or YYYY-MM-DD"`
	Until    string `json:"until,omitempty" jsonschema:"only memories dated on or before this date: YYYY, YYYY-MM or YYYY-MM-DD"`
	Cursor   string `json:"cursor,omitempty" jsonschema:"next_cursor from the previous page, to continue a listing"`
	Limit    int    `json:"limit,omitempty" jsonschema:"memories per page, 1 to 20 (default 10)"`
}

// find and listAll read a page within the engine's budget, as get_context
// reads around a hit (search.Engine.Bounded): a listing whose filter no
// index serves scans the sources.
func (s *Server) find(ctx context.Context, c caller, in FindInput) (memory.Page, error) {
	return bounded(ctx, s, "listing memories", func(ctx context.Context) (memory.Page, error) {
		return s.mem.Find(ctx, memory.FindRequest{Prefix: in.Prefix, Category: in.Category, Owner: in.Owner,
			Since: in.Since, Until: in.Until, Cursor: in.Cursor, Limit: in.Limit}, c.scope())
	})
}

// DiaryWriteInput is write_diary's input.
type DiaryWriteInput struct {
	Text    string `json:"text" jsonschema:"the entry to add, up to 100000 characters"`
	Date    string `json:"date,omitempty" jsonschema:"the day, YYYY-MM-DD (default today)"`
	Replace bool   `json:"replace,omitempty" jsonschema:"true replaces every entry of that day with this one; by default the entry is appended"`
	Owner   string `json:"owner,omitempty" jsonschema:"whose diary (a token bound to an owner always uses its own)"`
}

func (s *Server) writeDiary(ctx context.Context, c caller, in DiaryWriteInput) (memory.DiaryResult, error) {
	res, err := s.mem.WriteDiary(ctx, in.Text, in.Date, in.Owner, in.Replace, c.scope())
	s.pending(res.Index)
	return res, err
}

// DiaryReadInput is read_diary's input.
type DiaryReadInput struct {
	Date  string `json:"date" jsonschema:"the day, YYYY-MM-DD"`
	Owner string `json:"owner,omitempty" jsonschema:"whose diary (a token bound to an owner always uses its own)"`
}

func (s *Server) readDiary(ctx context.Context, c caller, in DiaryReadInput) (memory.Day, error) {
	return bounded(ctx, s, "reading the diary", func(ctx context.Context) (memory.Day, error) {
		return s.mem.ReadDiary(ctx, in.Date, in.Owner, c.scope())
	})
}

// RecentInput is recent_diary's input.
type RecentInput struct {
	Days  int    `json:"days,omitempty" jsonschema:"how many calendar days back to look, today included, 1 to 30 (default 7)"`
	Owner string `json:"owner,omitempty" jsonschema:"whose diary (a token bound to an owner always uses its own)"`
}

// RecentOutput is recent_diary's answer.
type RecentOutput struct {
	Days []memory.Day `json:"days"` // newest first
}

func (s *Server) recentDiary(ctx context.Context, c caller, in RecentInput) (RecentOutput, error) {
	days, err := bounded(ctx, s, "reading the diary", func(ctx context.Context) ([]memory.Day, error) {
		return s.mem.RecentDiary(ctx, in.Days, in.Owner, c.scope())
	})
	if err != nil {
		return RecentOutput{}, err
	}
	if days == nil {
		days = []memory.Day{}
	}
	return RecentOutput{Days: days}, nil
}

// ListInput is list_memories' input.
type ListInput struct {
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor from the previous page"`
	Limit  int    `json:"limit,omitempty" jsonschema:"entries per page, 1 to 200 (default 50)"`
}

func (s *Server) listAll(ctx context.Context, in ListInput) (memory.Page, error) {
	return bounded(ctx, s, "listing memories", func(ctx context.Context) (memory.Page, error) {
		return s.mem.ListAll(ctx, in.Cursor, in.Limit)
	})
}

// ReindexInput is reindex_memory's input.
type ReindexInput struct {
	Key   string `json:"key" jsonschema:"the memory's key, or diary/YYYY-MM-DD for a diary day"`
	Owner string `json:"owner,omitempty" jsonschema:"the owner of the memory (default: unowned)"`
}

func (s *Server) reindex(ctx context.Context, in ReindexInput) (memory.SaveResult, error) {
	if !ownerRE.MatchString(in.Owner) {
		return memory.SaveResult{}, recall.Errorf(recall.EINVALID, "owner must be at most 64 letters, digits, '_', '.' or '-'")
	}
	if err := memory.ValidateKey(in.Key); err != nil {
		return memory.SaveResult{}, err
	}
	res, err := s.mem.Reindex(ctx, in.Key, in.Owner)
	s.pending(res.Index)
	return res, err
}

// NoInput is the input of tools that take none.
type NoInput struct{}

func (s *Server) indexStatus(ctx context.Context) (memory.Status, error) {
	// It may page through every memory to find the pending ones.
	return bounded(ctx, s, "reading the memories' index states", s.mem.IndexStatus)
}
