package memory

import (
	"cmp"
	"context"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/chunk"
)

// SaveRequest is save_memory's input.
type SaveRequest struct {
	Key      string
	Value    string
	Category string // "" derives it from the key prefix
	Owner    string
	Date     string // YYYY-MM-DD; "" means today
}

// SaveResult is save_memory's answer.
type SaveResult struct {
	Key         string `json:"key"`
	Stored      string `json:"stored"` // always "ok": the value is committed
	Index       string `json:"index"`  // ok, pending or skipped
	Chunks      int    `json:"chunks"`
	Model       string `json:"model"`
	ContentHash string `json:"content_hash"`
	// IndexError is why the index is pending: for the command line's
	// stderr, never a client (it may name the embedder's address).
	IndexError error `json:"-"`
}

// Memory is read_memory's answer.
type Memory struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	Category    string `json:"category,omitempty"`
	Owner       string `json:"owner,omitempty"`
	Date        string `json:"date,omitempty"`
	ContentHash string `json:"content_hash"`
	Chunks      int    `json:"chunks"`
	Index       string `json:"index"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

// Save stores a memory's value verbatim, replacing any value under the same
// key (in its normal form: newKey) atomically. Identical content is not
// re-embedded (index "skipped") unless vectors it lacks can be made now.
func (s *Service) Save(ctx context.Context, req SaveRequest, sc Scope) (SaveResult, error) {
	raw := req.Key
	key, err := newKey(req.Key)
	if err != nil {
		return SaveResult{}, err
	}
	req.Key = key
	if err := validateValue(req.Value); err != nil {
		return SaveResult{}, err
	}
	if err := validateDate(req.Date); err != nil {
		return SaveResult{}, err
	}
	if utf8.RuneCountInString(req.Category) > MaxCategoryLen {
		return SaveResult{}, recall.Errorf(recall.EINVALID, "category is longer than %d characters", MaxCategoryLen)
	}
	owner, err := sc.owner(req.Owner)
	if err != nil {
		return SaveResult{}, err
	}
	cur, err := s.memory(ctx, owner, raw)
	exists := err == nil
	if err != nil && !recall.IsNotFound(err) {
		return SaveResult{}, err
	}
	if exists && cur.Title == raw {
		// The key as typed names a memory saved before keys were
		// normalised: it is saved there, so reading the key back as typed
		// (recall.KeyForms) gives what was just saved.
		req.Key = raw
	} else if exists && cur.Title != req.Key {
		exists = false // the normal form is a new memory beside the legacy one
	}
	id := recall.MemoryID(owner, req.Key)
	hash := recall.TextHash(req.Value)
	res := SaveResult{Key: req.Key, Stored: "ok", Model: s.modelName(), ContentHash: hash}
	unchanged := exists && cur.ContentHash == hash
	// What the caller leaves out, a saved memory keeps: its category and
	// date change only when given.
	date, category := req.Date, req.Category
	switch {
	case exists:
		date = cmp.Or(date, cur.Date)
		category = cmp.Or(category, cur.Category)
	default:
		date = cmp.Or(date, s.today())
		category = s.Category(req.Key, category)
	}
	// Identical content is embedded again only when vectors are missing
	// and this process can make them: a value saved without an embedder,
	// or while it failed, is completed by saving it again.
	reembed := !unchanged || (cur.IndexState != recall.IndexOK && s.canEmbed())
	if !reembed {
		res.Index, res.Chunks = recall.IndexSkipped, cur.ChunkCount
		if cur.Category == category && cur.Date == date {
			return res, nil
		}
		// Same value, new metadata: rewrite the row; identical chunks keep
		// their rows and vectors, so nothing is re-embedded.
	}

	chunks := s.chunks(req.Key, []string{req.Value})
	var vecs []recall.Vector
	// A rewrite of the metadata carries no vectors; the store settles the
	// state it is written with against the vectors it holds then (a delete
	// or replace since the read may have taken them).
	state := cur.IndexState
	var why error
	if reembed {
		vecs, state, why = s.embedWithin(ctx, chunks)
	}
	doc := recall.Document{
		Source: recall.Source{ID: id, Kind: recall.KindMemory, Title: req.Key, Date: date, Owner: owner,
			Category: category, ContentHash: hash, Size: int64(len(req.Value)), ChunkCount: len(chunks),
			Body: req.Value, IndexState: state},
		Chunks: chunks,
	}
	if _, err := s.w.Write(ctx, []recall.Document{doc}, vecs); err != nil {
		return SaveResult{}, err
	}
	if reembed {
		res.Index = s.settled(ctx, id, state)
		res.IndexError = s.pendingBecause(res.Index, why)
	}
	res.Chunks = len(chunks)
	return res, nil
}

// chunks splits message blocks with the key or title as the embedding header.
func (s *Service) chunks(title string, blocks []string) []recall.Chunk {
	cs := chunk.Split(blocks, s.opt.Chunk)
	for i := range cs {
		cs[i].Header = title
	}
	return cs
}

// Read returns a memory; another owner's key reads exactly like a missing one.
func (s *Service) Read(ctx context.Context, key, owner string, sc Scope) (Memory, error) {
	if err := ValidateKey(key); err != nil {
		return Memory{}, err
	}
	o, err := sc.owner(owner)
	if err != nil {
		return Memory{}, err
	}
	src, err := s.memory(ctx, o, key)
	if err != nil {
		return Memory{}, err
	}
	return memoryOf(src), nil
}

// memory reads the memory a caller names, by the forms of its key
// (recall.KeyForms).
func (s *Service) memory(ctx context.Context, owner, key string) (recall.Source, error) {
	for _, k := range recall.KeyForms(key) {
		src, err := s.st.Source(ctx, recall.MemoryID(owner, k))
		if !recall.IsNotFound(err) {
			return src, err
		}
	}
	return recall.Source{}, notFound("no memory with key " + quote(key))
}

func memoryOf(src recall.Source) Memory {
	return Memory{Key: src.Title, Value: src.Body, Category: src.Category, Owner: src.Owner, Date: src.Date,
		ContentHash: src.ContentHash, Chunks: src.ChunkCount, Index: src.IndexState,
		CreatedAt: src.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), UpdatedAt: src.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z")}
}

// Delete removes a memory's value, chunks, full-text rows and vectors in one
// transaction. It refuses unless confirm is true.
func (s *Service) Delete(ctx context.Context, key, owner string, confirm bool, sc Scope) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	o, err := sc.owner(owner)
	if err != nil {
		return err
	}
	if !confirm {
		return recall.Errorf(recall.EINVALID, "deleting %s cannot be undone: call again with confirm set to true", quote(key))
	}
	// One form at a time: a key saved before keys were normalised and its
	// normal form are two memories, and one delete removes one.
	for _, k := range recall.KeyForms(key) {
		n, _, err := s.w.Delete(ctx, recall.MemoryID(o, k))
		if err != nil || n > 0 {
			return err
		}
	}
	return notFound("no memory with key " + quote(key))
}

// FindRequest is find_memories' input.
type FindRequest struct {
	Prefix   string
	Category string
	Owner    string
	Since    string
	Until    string
	Cursor   string
	Limit    int
}

// Item is one memory in a listing.
type Item struct {
	Key       string `json:"key"`
	Category  string `json:"category,omitempty"`
	Owner     string `json:"owner,omitempty"`
	Date      string `json:"date,omitempty"`
	Preview   string `json:"preview"`
	Index     string `json:"index"`
	UpdatedAt string `json:"updated_at"`
}

// Page is a page of a listing; Next is "" on the last page.
type Page struct {
	Items []Item `json:"items"`
	Next  string `json:"next_cursor,omitempty"`
}

// Find lists memories matching at least one condition (an admin may list
// without one), a page at a time.
func (s *Service) Find(ctx context.Context, req FindRequest, sc Scope) (Page, error) {
	if req.Prefix == "" && req.Category == "" && req.Since == "" && req.Until == "" && !sc.Admin {
		return Page{}, recall.Errorf(recall.EINVALID, "give at least one of prefix, category, since or until")
	}
	if req.Prefix != "" {
		if err := ValidateKey(req.Prefix); err != nil {
			return Page{}, recall.Errorf(recall.EINVALID, "prefix: %s", recall.ErrorMessage(err))
		}
		req.Prefix = recall.NormKey(req.Prefix)
	}
	switch {
	case req.Limit == 0:
		req.Limit = 10
	case req.Limit < 0 || req.Limit > MaxFindLimit:
		return Page{}, recall.Errorf(recall.EINVALID, "limit must be between 1 and %d", MaxFindLimit)
	}
	o, err := sc.owner(req.Owner)
	if err != nil {
		return Page{}, err
	}
	f := recall.Filter{Kinds: []recall.Kind{recall.KindMemory}, SourcePrefix: recall.MemoryPrefix(o, req.Prefix),
		Category: req.Category, Since: req.Since, Until: req.Until}
	if err := f.Validate(); err != nil {
		return Page{}, err
	}
	srcs, next, err := s.st.ListSources(ctx, recall.ListOptions{Filter: f, Cursor: req.Cursor, Limit: req.Limit})
	if err != nil {
		return Page{}, err
	}
	p := Page{Items: make([]Item, len(srcs)), Next: next}
	for i, src := range srcs {
		p.Items[i] = itemOf(src)
	}
	return p, nil
}

func itemOf(src recall.Source) Item {
	return Item{Key: recall.PublicID(src.ID), Category: src.Category, Owner: src.Owner, Date: src.Date,
		Preview: preview(src.Body), Index: src.IndexState, UpdatedAt: src.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z")}
}

func quote(s string) string { return "\"" + s + "\"" }
