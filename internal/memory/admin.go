package memory

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/recall-mcp/recall"
)

// ListAll pages through every memory and diary day of every owner (admin).
func (s *Service) ListAll(ctx context.Context, cursor string, limit int) (Page, error) {
	if limit == 0 {
		limit = 50
	}
	if limit < 0 || limit > 200 {
		return Page{}, recall.Errorf(recall.EINVALID, "limit must be between 1 and 200")
	}
	f := recall.Filter{Kinds: []recall.Kind{recall.KindMemory, recall.KindDiary}}
	srcs, next, err := s.st.ListSources(ctx, recall.ListOptions{Filter: f, Cursor: cursor, Limit: limit})
	if err != nil {
		return Page{}, err
	}
	p := Page{Items: make([]Item, len(srcs)), Next: next}
	for i, src := range srcs {
		p.Items[i] = itemOf(src)
		if src.Kind == recall.KindDiary {
			if d, err := dayOf(src); err == nil && len(d.Entries) > 0 {
				p.Items[i].Preview = preview(d.Entries[0].Text)
			}
		}
	}
	return p, nil
}

// Status is the index state of memories and diary days.
type Status struct {
	Counts  map[string]int `json:"counts"`  // ok, pending, skipped
	Pending []Item         `json:"pending"` // up to 100 sources still waiting for vectors
}

// IndexStatus counts index states and lists pending sources (admin).
func (s *Service) IndexStatus(ctx context.Context) (Status, error) {
	st, err := s.st.Stats(ctx)
	if err != nil {
		return Status{}, err
	}
	out := Status{Counts: map[string]int{recall.IndexOK: 0, recall.IndexPending: 0, recall.IndexSkipped: 0}, Pending: []Item{}}
	for k, v := range st.IndexStates {
		out.Counts[k] = v
	}
	if out.Counts[recall.IndexPending] == 0 {
		return out, nil
	}
	cursor := ""
	for len(out.Pending) < 100 {
		p, err := s.ListAll(ctx, cursor, 200)
		if err != nil {
			return Status{}, err
		}
		for _, it := range p.Items {
			if it.Index == recall.IndexPending && len(out.Pending) < 100 {
				out.Pending = append(out.Pending, it)
			}
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	return out, nil
}

// Reindex rebuilds one memory's (or diary day's, as "diary/DATE") chunks
// and vectors from its stored value (admin). The chunks are rebuilt from
// the value as it is when they are written (Writer.Update), so a save or a
// diary entry that lands meanwhile is neither undone nor lost; the vectors
// follow the commit, as a diary entry's do.
func (s *Service) Reindex(ctx context.Context, key, owner string) (SaveResult, error) {
	var src recall.Source
	var err error
	date, isDay := cutDiary(key)
	if isDay {
		src, err = s.st.Source(ctx, recall.DiaryID(owner, date))
	}
	if !isDay || recall.IsNotFound(err) {
		// A memory; or one saved as "diary/DATE" before such keys were
		// refused, reached when there is no such day.
		src, err = s.memory(ctx, owner, key)
	}
	if err != nil {
		return SaveResult{}, err
	}
	var doc *recall.Document
	_, err = s.w.Update(ctx, src.ID, func(cur *recall.Document) (*recall.Document, error) {
		if cur == nil {
			return nil, notFound(quote(key) + " was deleted while it was being reindexed")
		}
		blocks := []string{cur.Source.Body}
		if cur.Source.Kind == recall.KindDiary {
			d, err := dayOf(cur.Source)
			if err != nil {
				return nil, err
			}
			blocks = entryTexts(d.Entries)
		}
		next := recall.Document{Source: cur.Source, Chunks: s.chunks(cur.Source.Title, blocks)}
		next.Source.ChunkCount, next.Source.IndexState = len(next.Chunks), s.initialState()
		doc = &next
		return doc, nil
	})
	if err != nil {
		return SaveResult{}, err
	}
	state := doc.Source.IndexState
	vecs, st, why := s.embedWithin(ctx, doc.Chunks)
	state = s.putVectors(ctx, vecs, st, &why, state)
	state = s.settled(ctx, src.ID, state)
	return SaveResult{Key: key, Stored: "ok", Index: state, Chunks: len(doc.Chunks), Model: s.modelName(), ContentHash: doc.Source.ContentHash,
		IndexError: s.pendingBecause(state, why)}, nil
}

func cutDiary(key string) (string, bool) {
	if len(key) == len(diaryName)+10 && key[:len(diaryName)] == diaryName {
		return key[len(diaryName):], true
	}
	return "", false
}

// CheckStored reports whether src, a memory or a diary day read from
// outside (an export being imported), is one this package could have
// written and can reach again: its id names its owner and key (or day), the
// key and owner pass the rules a caller's names pass, and a day's body is
// its entries. A record edited by hand otherwise imports as a memory that
// no read or delete can name.
func CheckStored(src recall.Source) error {
	if err := validOwner(src.Owner); err != nil {
		return err
	}
	switch src.Kind {
	case recall.KindMemory:
		if err := ValidateKey(src.Title); err != nil {
			return err
		}
		if want := recall.MemoryID(src.Owner, src.Title); src.ID != want {
			return recall.Errorf(recall.EINVALID, "a memory of owner %q and key %q has the id %q", src.Owner, src.Title, want)
		}
	case recall.KindDiary:
		if err := validateDate(src.Date); err != nil || len(src.Date) != len("2006-01-02") {
			return recall.Errorf(recall.EINVALID, "a diary day's date must be YYYY-MM-DD, not %q", src.Date)
		}
		if want := recall.DiaryID(src.Owner, src.Date); src.ID != want {
			return recall.Errorf(recall.EINVALID, "the diary day %s of owner %q has the id %q", src.Date, src.Owner, want)
		}
		if _, err := dayOf(src); err != nil {
			return recall.Errorf(recall.EINVALID, "a diary day's body must be its entries as JSON")
		}
	}
	return nil
}

// OwnersOf lists, in order, the owners (admin) who hold a memory or diary
// day named as a client names it: a key ("plan") or "diary/<date>", of the
// given kind ("" for either). The unowned namespace is left out. It reads
// every memory and diary day, which is what an admin's error path can
// afford and a request path could not: the server never tells a client of
// another owner's key, which reads exactly like a missing one.
func OwnersOf(ctx context.Context, st recall.Store, kind recall.Kind, name string) ([]string, error) {
	names := map[string]bool{}
	if kind == "" || kind == recall.KindMemory {
		for _, k := range recall.KeyForms(name) {
			names[k] = true
		}
	}
	if kind == "" || kind == recall.KindDiary {
		if strings.HasPrefix(name, "diary/") {
			names[name] = true
		}
	}
	f := recall.Filter{Kinds: []recall.Kind{recall.KindMemory, recall.KindDiary}}
	seen := map[string]bool{}
	for cursor := ""; ; {
		srcs, next, err := st.ListSources(ctx, recall.ListOptions{Filter: f, Cursor: cursor, Limit: 200})
		if err != nil {
			return nil, err
		}
		for _, src := range srcs {
			if src.Owner != "" && (kind == "" || src.Kind == kind) && names[recall.PublicID(src.ID)] {
				seen[src.Owner] = true
			}
		}
		if next == "" {
			return slices.Sorted(maps.Keys(seen)), nil
		}
		cursor = next
	}
}
