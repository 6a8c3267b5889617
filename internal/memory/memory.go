// Package memory keeps the key-value memories and dated diary entries an
// assistant saves. A memory's raw value, its chunks, full-text rows and
// vectors live in one store and change in one transaction; the index state
// (ok / pending / skipped) says whether its vectors exist yet.
package memory

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/chunk"
	"github.com/recall-mcp/recall/internal/embed"
)

// Limits.
const (
	MaxKeyLen      = 200     // characters
	MaxValueLen    = 100_000 // characters
	MaxFindLimit   = 20
	MaxRecentDays  = 30
	MaxOwnerLen    = 64
	MaxCategoryLen = 64 // characters
	previewLen     = 160
)

// Writer is the write path that keeps the vector index in step with the
// store (the search engine).
type Writer interface {
	Write(ctx context.Context, docs []recall.Document, vecs []recall.Vector, remove ...string) (recall.WriteResult, error)
	Update(ctx context.Context, id string, fn func(cur *recall.Document) (*recall.Document, error)) (recall.WriteResult, error)
	Delete(ctx context.Context, ids ...string) (int, recall.WriteResult, error)
	PutVectors(ctx context.Context, vecs []recall.Vector) error
}

// CategoryRule maps a key prefix to a category.
type CategoryRule struct {
	Prefix   string
	Category string
}

// DefaultCategories are the key-prefix rules used unless configured otherwise.
var DefaultCategories = []CategoryRule{
	{"project_", "project"}, {"proj_", "project"}, {"diary_", "diary"},
	{"person_", "person"}, {"note_", "note"},
}

// Options configure a Service.
type Options struct {
	Embedder   recall.Embedder // nil: memories are stored and searchable by text only (index "skipped", or "pending" for repair where the database has a vector space)
	Space      string          // vector space new vectors go to
	Dim        int             // its dimension: vectors of another size are refused
	Chunk      chunk.Options
	Categories []CategoryRule // nil means DefaultCategories
	Location   *time.Location // time zone for "today" in the diary (nil: UTC)
	Now        func() time.Time
	// EmbedBudget bounds the embedding a save or diary write waits for
	// (0: DefaultEmbedBudget). Past it the text is stored searchable by
	// text, index "pending", and repair embeds it later: a hanging
	// provider must not hold a save until the client gives up and nothing
	// is stored.
	EmbedBudget time.Duration
}

// DefaultEmbedBudget is Options.EmbedBudget's default.
const DefaultEmbedBudget = 15 * time.Second

// Service implements memories and the diary. It is safe for concurrent use.
type Service struct {
	st  recall.Store
	w   Writer
	opt Options

	// tmu guards opt.Embedder, opt.Space and opt.Dim, which SetSpace
	// changes when a server follows a switch of the read space.
	tmu sync.RWMutex
}

// target is where a write's vectors go: the embedder, its space and the
// space's dimension, read together so that no vector is labelled with
// another model's space.
type target struct {
	emb   recall.Embedder
	space string
	dim   int
}

func (s *Service) target() target {
	s.tmu.RLock()
	defer s.tmu.RUnlock()
	return target{s.opt.Embedder, s.opt.Space, s.opt.Dim}
}

// SetSpace makes later writes embed with emb into space (of dimension
// dim): a server calls it when it follows another process's switch of the
// read space, so that what it saves is searchable there.
func (s *Service) SetSpace(emb recall.Embedder, space string, dim int) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	s.opt.Embedder, s.opt.Space, s.opt.Dim = emb, space, dim
}

// New returns a Service over st, writing through w.
func New(st recall.Store, w Writer, opt Options) *Service {
	if opt.Categories == nil {
		opt.Categories = DefaultCategories
	}
	if opt.Location == nil {
		opt.Location = time.UTC
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.EmbedBudget <= 0 {
		opt.EmbedBudget = DefaultEmbedBudget
	}
	return &Service{st: st, w: w, opt: opt}
}

// Scope is who is asking. A token bound to an owner sees and writes only
// that owner's memories and diary; an unbound caller works in the owner it
// names (default: the unowned namespace "").
type Scope struct {
	Owner string
	Bound bool // Owner is fixed by the caller's credentials
	Admin bool
}

// owner resolves the owner a request acts as.
func (sc Scope) owner(requested string) (string, error) {
	if sc.Bound {
		if requested != "" && requested != sc.Owner {
			// Acting for another owner is refused without saying whether it exists.
			return "", recall.Errorf(recall.EFORBIDDEN, "this token may only use its own owner")
		}
		return sc.Owner, nil
	}
	if err := validOwner(requested); err != nil {
		return "", err
	}
	return requested, nil
}

// Filter is the search filter for this scope: bound tokens never see another
// owner's memories or diary in any search mode.
func (sc Scope) Filter(f recall.Filter) recall.Filter {
	if sc.Bound {
		f.OwnerScoped, f.Owner = true, sc.Owner
	}
	return f
}

var ownerRE = regexp.MustCompile(`^[A-Za-z0-9_.-]*$`)

func validOwner(o string) error {
	if len(o) > MaxOwnerLen || !ownerRE.MatchString(o) {
		return recall.Errorf(recall.EINVALID, "owner must be at most %d letters, digits, '_', '.' or '-'", MaxOwnerLen)
	}
	return nil
}

// ValidateKey checks a key a caller names (to read, delete, find or
// reindex): 1-200 characters of letters of any script, digits and _-.:/
// with no leading / and no "..". Keys saved before the stricter rules of
// newKey still pass, so they stay readable and deletable.
func ValidateKey(key string) error {
	if key == "" {
		return recall.Errorf(recall.EINVALID, "key is empty")
	}
	if !utf8.ValidString(key) {
		return recall.Errorf(recall.EINVALID, "key is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(key); n > MaxKeyLen {
		return recall.Errorf(recall.EINVALID, "key is %d characters; the limit is %d", n, MaxKeyLen)
	}
	for _, r := range key {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || strings.ContainsRune("_-.:/", r) {
			continue
		}
		return recall.Errorf(recall.EINVALID, "key contains %q: use letters, digits and _-.:/ only", r)
	}
	if strings.Contains(key, "..") || strings.HasPrefix(key, "/") {
		return recall.Errorf(recall.EINVALID, "key may not start with / or contain ..")
	}
	return nil
}

// diaryName is how clients see a diary day ("diary/2025-07-01"): in search
// results, listings and reindex_memory. A memory key may not start with it,
// or a memory and a day would answer to one name.
const diaryName = "diary/"

// newKey is the key a memory is saved under: ValidateKey's rules on the
// key's normal form (recall.NormKey), so "café" typed precomposed or with a
// combining accent is one key, and full-width "ｐｅｒｓｏｎ_ann" is
// person_ann: no two keys that look alike. It refuses the diary's
// names, a leading combining mark (it draws on whatever precedes the key)
// and characters Unicode says to render invisibly where they pass as
// letters or marks: variation selectors, U+034F and the Hangul fillers
// (the other default-ignorable characters are format characters, which
// ValidateKey refuses already).
func newKey(key string) (string, error) {
	key = recall.NormKey(key)
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if strings.HasPrefix(key, diaryName) {
		return "", recall.Errorf(recall.EINVALID, "key may not start with %s: that names a diary day", diaryName)
	}
	// A key is a clean path: HTTP clients and routers rewrite "a//b" and
	// "a/./b" to "a/b", so a request naming one would reach another memory.
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		if seg == "." || seg == "" && i < len(segs)-1 {
			return "", recall.Errorf(recall.EINVALID, "key %q has an empty or . segment between slashes: write it without", key)
		}
	}
	if first, _ := utf8.DecodeRuneInString(key); unicode.Is(unicode.M, first) {
		return "", recall.Errorf(recall.EINVALID, "key may not start with the combining mark %q", first)
	}
	for _, r := range key {
		if unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r) {
			return "", recall.Errorf(recall.EINVALID, "key contains the invisible character %U", r)
		}
	}
	return key, nil
}

func validateValue(v string) error {
	if !utf8.ValidString(v) {
		return recall.Errorf(recall.EINVALID, "value is not valid UTF-8")
	}
	if strings.TrimSpace(v) == "" {
		return recall.Errorf(recall.EINVALID, "value is empty")
	}
	if n := utf8.RuneCountInString(v); n > MaxValueLen {
		return recall.Errorf(recall.ETOOLARGE, "value is %d characters; the limit is %d", n, MaxValueLen)
	}
	return nil
}

func validateDate(d string) error {
	if d == "" {
		return nil
	}
	if _, err := time.Parse("2006-01-02", d); err != nil {
		if len(d) == 10 && strings.Trim(d[:4]+d[5:7]+d[8:], "0123456789") == "" && d[4] == '-' && d[7] == '-' {
			return recall.Errorf(recall.EINVALID, "date %q is not a day of the calendar", d)
		}
		return recall.Errorf(recall.EINVALID, "date %q is not YYYY-MM-DD", d)
	}
	return nil
}

// Category returns the category for a key: explicit wins, else the first
// prefix rule the key starts with, in any case ("Project_x" and
// "PERSON_ann" are a project and a person, as an assistant may capitalise
// a key), else "".
func (s *Service) Category(key, explicit string) string {
	if explicit != "" {
		return explicit
	}
	for _, r := range s.opt.Categories {
		if hasFoldPrefix(key, r.Prefix) {
			return r.Category
		}
	}
	return ""
}

// hasFoldPrefix reports whether s starts with prefix under Unicode case
// folding. Folding maps a rune to a rune, so the prefix is compared with
// as many leading runes of s as it has ("K", the Kelvin sign, takes three
// bytes and folds to a one-byte "k").
func hasFoldPrefix(s, prefix string) bool {
	n := utf8.RuneCountInString(prefix)
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return n == 0 && strings.EqualFold(s[:i], prefix)
}

// modelName is what save answers report as the model.
func (s *Service) modelName() string {
	t := s.target()
	if t.emb == nil {
		return ""
	}
	i := t.emb.Info()
	return i.Provider + "/" + i.Model
}

// canEmbed reports whether writes to t get vectors.
func (t target) canEmbed() bool { return t.emb != nil && t.space != "" }

// canEmbed reports whether this service makes vectors.
func (s *Service) canEmbed() bool { return s.target().canEmbed() }

// settled is the index state a source written in state has once the store
// settled it in the write's transaction: a text written pending may have
// its vectors already, and one written skipped (no embedder here) is
// pending, or ok, where the database has a vector space.
func (s *Service) settled(ctx context.Context, id, state string) string {
	if src, err := s.st.Source(ctx, id); err == nil {
		return src.IndexState
	}
	return state
}

// pendingBecause is why a text is left in state: err while it is pending,
// nil once it is not (the store found its vectors after all). A text this
// process could not even try to embed, in a database that has a vector
// space, is pending for want of an embedder.
func (s *Service) pendingBecause(state string, err error) error {
	switch {
	case state != recall.IndexPending:
		return nil
	case err == nil && !s.canEmbed():
		return recall.Errorf(recall.EUNAVAILABLE, "no embedder is configured here (embedder none, or its model is not installed)")
	}
	return err
}

// putVectors writes the vectors embed made after their texts' commit and
// returns the state they leave: embed's state once written when it is ok,
// else state as it was. Vectors come with a pending state too, when the
// embedder refused some texts and embedded the others; why keeps the
// refusal, or takes the write's error.
func (s *Service) putVectors(ctx context.Context, vecs []recall.Vector, embedded string, why *error, state string) string {
	if embedded != recall.IndexOK && len(vecs) == 0 {
		return state
	}
	if err := s.w.PutVectors(ctx, vecs); err != nil {
		if *why == nil {
			*why = err
		}
		return state
	}
	if embedded == recall.IndexOK {
		return embedded
	}
	return state
}

// embedWithin is embed within the save budget (Options.EmbedBudget).
func (s *Service) embedWithin(ctx context.Context, chunks []recall.Chunk) ([]recall.Vector, string, error) {
	bctx, cancel := context.WithTimeout(ctx, s.opt.EmbedBudget)
	defer cancel()
	vecs, state, err := s.embed(bctx, chunks)
	if err != nil && bctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		err = recall.Errorf(recall.EUNAVAILABLE, "the embedder did not answer within %s", s.opt.EmbedBudget)
	}
	return vecs, state, err
}

// embed makes vectors for the chunks (their headers and texts: their
// vector keys) that the space lacks and returns them with the vectors the
// space holds for the others, the index state the documents end up in, and,
// when that is pending, why. The write that records "ok" must carry every
// vector that state claims: another memory holding the same text under the
// same header may be deleted before that write commits, and its vector with
// it. A chunk the embedder refuses as too long for its model leaves the
// state pending, with the provider's reason, while the other chunks'
// vectors are returned to be written.
func (s *Service) embed(ctx context.Context, chunks []recall.Chunk) ([]recall.Vector, string, error) {
	t := s.target()
	if !t.canEmbed() {
		return nil, recall.IndexSkipped, nil
	}
	var keys []string
	byKey := map[string]recall.Chunk{}
	for _, c := range chunks {
		k := c.VectorKey()
		if _, ok := byKey[k]; !ok {
			byKey[k] = c
			keys = append(keys, k)
		}
	}
	have, err := s.st.VectorsByKey(ctx, t.space, keys)
	if err != nil {
		return nil, recall.IndexPending, err
	}
	out := make([]recall.Vector, 0, len(keys))
	var need []string
	for _, k := range keys {
		if v, ok := have[k]; ok {
			out = append(out, recall.Vector{Space: t.space, Key: k, Vec: v})
			continue
		}
		need = append(need, k)
	}
	if len(need) == 0 {
		return out, recall.IndexOK, nil
	}
	// A text the model refused as too long for it before (recorded by any
	// process) is not sent again: the state stays pending, for its reason.
	refusals := embed.Refusals{Store: s.st, Space: t.space}
	send, known, err := refusals.Pass(ctx, need)
	if err != nil {
		return nil, recall.IndexPending, err
	}
	var before error
	for _, k := range need {
		if why, ok := known[k]; ok {
			before = why
			break
		}
	}
	if need = send; len(need) == 0 {
		return out, recall.IndexPending, before
	}
	texts := make([]embed.ChunkText, len(need))
	for i, k := range need {
		texts[i] = embed.ChunkText{Header: byKey[k].Header, Text: byKey[k].Text}
	}
	vecs, err := embed.EmbedChunks(ctx, t.emb, t.dim, texts)
	vecs, refused, failed := embed.Partial(vecs, err)
	if failed != nil {
		return nil, recall.IndexPending, failed
	}
	if rerr := refusals.Record(ctx, need, refused); rerr != nil {
		return nil, recall.IndexPending, rerr
	}
	for i, k := range need {
		if vecs[i] != nil {
			out = append(out, recall.Vector{Space: t.space, Key: k, Vec: vecs[i]})
		}
	}
	if len(refused) > 0 {
		return out, recall.IndexPending, err // the refusal: the state's reason
	}
	if before != nil {
		return out, recall.IndexPending, before
	}
	return out, recall.IndexOK, nil
}

func preview(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= previewLen {
		return s
	}
	r := []rune(s)
	return string(r[:previewLen]) + "…"
}

func notFound(what string) error {
	return recall.Errorf(recall.ENOTFOUND, "%s", what)
}
