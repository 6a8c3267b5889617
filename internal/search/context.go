package search

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/recall-mcp/recall"
)

// Context returns the chunks around a hit, within the caller's scope, and
// the kind of the source it read. kind ("" for any) says which namespace
// source names: a memory key and an archive file may share a name.
func (e *Engine) Context(ctx context.Context, source string, kind recall.Kind, index, radius int, scope recall.Filter) ([]recall.StoredChunk, recall.Kind, error) {
	if radius < 0 || radius > 3 {
		return nil, "", recall.Errorf(recall.EINVALID, "radius must be between 0 and 3")
	}
	if index < 0 {
		return nil, "", recall.Errorf(recall.EINVALID, "chunk index must be 0 or more")
	}
	if len(source) > recall.MaxSourceIDLen {
		return nil, "", recall.Errorf(recall.EINVALID, "source is longer than %d bytes", recall.MaxSourceIDLen)
	}
	var chunks []recall.StoredChunk
	var got recall.Kind
	err := e.Bounded(ctx, "reading around the result", func(ctx context.Context) error {
		var err error
		chunks, got, err = e.context(ctx, source, kind, index, radius, scope)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return chunks, got, nil
}

// context is Context's reading, within its budget.
func (e *Engine) context(ctx context.Context, source string, kind recall.Kind, index, radius int, scope recall.Filter) ([]recall.StoredChunk, recall.Kind, error) {
	src, err := e.resolve(ctx, source, kind, scope)
	if err != nil {
		if hint := e.exportHint(ctx, err, kind, source, scope); hint != nil {
			return nil, "", hint
		}
		return nil, "", err
	}
	meta := recall.SourceMeta{ID: src.ID, Kind: src.Kind, Title: src.Title, Date: src.Date, Owner: src.Owner, Category: src.Category}
	scope.Since, scope.Until = "", "" // reading around a hit ignores date filters
	if !scope.Allows(&meta) {
		return nil, "", recall.Errorf(recall.ENOTFOUND, "no source %q", source)
	}
	if index >= src.ChunkCount {
		return nil, "", recall.Errorf(recall.ENOTFOUND, "source %q has no chunk %d: its chunk count is %d (numbered from 0)", source, index, src.ChunkCount)
	}
	chunks, err := e.store.Chunks(ctx, src.ID, max(0, index-radius), index+radius)
	return chunks, src.Kind, err
}

// errReadBudget ends the context of a read bounded by the engine's
// budget (Bounded) when the budget runs out.
var errReadBudget = errors.New("the read's budget ran out")

// Bounded runs read, a read of the store made for a caller (reading around
// a hit, a page of a listing), within the engine's budget (Options.Budget)
// as a search runs within it: a read that meets a pathological case (a
// scan no index serves, a store that stalls) ends there, where it ran for
// as long as its client waited (the server's contexts carry no client
// deadline; a client that times out just leaves, and one that never
// leaves held a read connection for good). Past the budget read's context
// ends, and Bounded returns an EUNAVAILABLE error saying what ran out of
// time, never what read had gathered by then, even when read returned
// without an error: the result may be partial. A caller that leaves (its
// context ended otherwise) gets read's error, as from a search.
func (e *Engine) Bounded(ctx context.Context, what string, read func(ctx context.Context) error) error {
	bctx, cancel := context.WithTimeoutCause(ctx, e.opt.Budget, errReadBudget)
	defer cancel()
	err := read(bctx)
	if bctx.Err() != nil && context.Cause(bctx) == errReadBudget {
		return recall.Errorf(recall.EUNAVAILABLE, "%s took longer than the %s a read may take: try again later", what, e.opt.Budget)
	}
	return err
}

// exportHint is the error for a source that is not found because it names
// an export or a folder of conversations, each of which is a source of its
// own ("conversations.json/<id>"): it names a few of them that scope
// allows. It is nil when name holds none. Archive sources are shared by
// every owner, so naming them tells a caller nothing it could not search.
func (e *Engine) exportHint(ctx context.Context, err error, kind recall.Kind, name string, scope recall.Filter) error {
	if !recall.IsNotFound(err) || (kind != "" && kind != recall.KindArchive) || name == "" {
		return nil
	}
	const shown = 3
	page, next, lerr := e.store.ListSources(ctx, recall.ListOptions{
		Filter: recall.Filter{Kinds: []recall.Kind{recall.KindArchive}, SourcePrefix: strings.TrimSuffix(name, "/") + "/"},
		Limit:  shown,
	})
	if lerr != nil {
		return nil
	}
	var ids []string
	scope.Since, scope.Until = "", "" // as Context reads around a hit
	for _, src := range page {
		if scope.Allows(&recall.SourceMeta{ID: src.ID, Kind: src.Kind, Date: src.Date}) {
			ids = append(ids, strconv.Quote(recall.PublicID(src.ID)))
		}
	}
	if len(ids) == 0 {
		return nil
	}
	more := ""
	if next != "" {
		more = ", …"
	}
	return recall.Errorf(recall.ENOTFOUND, "%s: it holds conversations, each a source of its own: give one of them, such as %s%s",
		recall.ErrorMessage(err), strings.Join(ids, ", "), more)
}

// resolve finds the source a client names: a memory key or diary/<date> of
// the caller's owner, or an archive path, of the given kind ("" for any).
// The caller's own memories and diary come first, so that an archive
// source given the same name (anyone allowed to ingest can choose one)
// never stands in for them; the kind a search result carries reaches the
// archive file.
func (e *Engine) resolve(ctx context.Context, name string, kind recall.Kind, scope recall.Filter) (recall.Source, error) {
	var candidates []string
	if kind == "" || kind == recall.KindMemory {
		for _, k := range recall.KeyForms(name) {
			candidates = append(candidates, recall.MemoryID(scope.Owner, k))
		}
	}
	if date, ok := strings.CutPrefix(name, "diary/"); ok && (kind == "" || kind == recall.KindDiary) {
		candidates = append(candidates, recall.DiaryID(scope.Owner, date))
	}
	if kind == "" || kind == recall.KindArchive {
		candidates = append(candidates, name)
	}
	for _, id := range candidates {
		src, err := e.store.Source(ctx, id)
		if err == nil {
			return src, nil
		}
		if !recall.IsNotFound(err) {
			return recall.Source{}, err
		}
	}
	return recall.Source{}, recall.Errorf(recall.ENOTFOUND, "no source %q", name)
}
