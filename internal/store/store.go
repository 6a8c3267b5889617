// Package store holds what every recall.Store backend shares beyond the
// interface and the domain's filter semantics (recall.Filter.Allows): the
// checks on what is written, the prefix range, and the listing cursor. Backends live in subpackages (sqlite); the
// contract suite they all pass is storetest.
package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
)

// ListedSQL is the SQL condition, on a source row aliased s, that a store
// shows the source: every source but an archive source without chunks, a
// sweep's record of a vault file that holds no conversation
// (recall.SourceState.Chunks), which Source, ListSources, Stats, Export
// and a write guard's look (Guarded) leave out on every backend.
const ListedSQL = `(s.kind <> 'archive' OR s.chunk_count > 0)`

// ValidateDocument checks a document before it is written, so that a bug
// upstream cannot corrupt the store. Archive ids must already be clean
// source ids (recall.CleanSourceID); memory and diary ids are checked by
// their package and here only for being usable at all. Source.ChunkCount is
// not checked: stores record len(Chunks).
func ValidateDocument(d *recall.Document) error {
	s := &d.Source
	if !s.Kind.Valid() {
		return recall.Errorf(recall.EINVALID, "source %q: unknown kind %q", s.ID, s.Kind)
	}
	if s.Kind == recall.KindArchive {
		clean, err := recall.CleanSourceID(s.ID)
		if err != nil {
			return err
		}
		if clean != s.ID {
			return recall.Errorf(recall.EINVALID, "source id %q is not clean (want %q)", s.ID, clean)
		}
	} else if err := checkID(s.ID); err != nil {
		return err
	}
	if _, _, ok := recall.DateRange(s.Date); s.Date != "" && !ok {
		return recall.Errorf(recall.EINVALID, "source %q: date %q is not YYYY, YYYY-MM or YYYY-MM-DD", s.ID, s.Date)
	}
	switch s.IndexState {
	case "", recall.IndexOK, recall.IndexPending, recall.IndexSkipped:
	default:
		return recall.Errorf(recall.EINVALID, "source %q: unknown index state %q", s.ID, s.IndexState)
	}
	if s.Size < 0 {
		return recall.Errorf(recall.EINVALID, "source %q: negative size", s.ID)
	}
	for i, c := range d.Chunks {
		if c.Index != i {
			return recall.Errorf(recall.EINVALID, "source %q: chunk %d has index %d; chunks must be numbered 0..n-1 in order", s.ID, i, c.Index)
		}
		if c.Hash != recall.TextHash(c.Text) {
			return recall.Errorf(recall.EINVALID, "source %q: chunk %d hash does not match its text", s.ID, i)
		}
	}
	for _, f := range []string{s.Title, s.Owner, s.Category, s.Vault, s.Body} {
		if !utf8.ValidString(f) {
			return recall.Errorf(recall.EINVALID, "source %q: a field is not valid UTF-8", s.ID)
		}
	}
	return nil
}

func checkID(id string) error {
	switch {
	case id == "":
		return recall.Errorf(recall.EINVALID, "source id is empty")
	case !utf8.ValidString(id):
		return recall.Errorf(recall.EINVALID, "source id is not valid UTF-8")
	case strings.ContainsRune(id, 0):
		return recall.Errorf(recall.EINVALID, "source id contains a NUL byte")
	case len(id) > recall.MaxSourceIDLen:
		return recall.Errorf(recall.EINVALID, "source id is longer than %d bytes", recall.MaxSourceIDLen)
	}
	return nil
}

// ValidateVector refuses vectors no search could use: empty ones and ones
// holding NaN or an infinity.
func ValidateVector(v recall.Vector) error {
	if v.Space == "" {
		return recall.Errorf(recall.EINVALID, "vector for %s names no space", v.Key)
	}
	if len(v.Vec) == 0 {
		return recall.Errorf(recall.EINVALID, "vector for %s is empty", v.Key)
	}
	for i, x := range v.Vec {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return recall.Errorf(recall.EINVALID, "vector for %s has a non-finite value at %d", v.Key, i)
		}
	}
	return nil
}

// ValidateWrite checks a Store.Write call before it touches the database:
// every document (with validate, which is ValidateDocument or a backend's
// stricter version of it), no source id twice (the WriteResult could not
// say which of them a chunk id belonged to), every vector, and no source
// id both written and removed (which would the caller mean?).
func ValidateWrite(docs []recall.Document, vecs []recall.Vector, remove []string, validate func(*recall.Document) error) error {
	seen := make(map[string]bool, len(docs))
	for i := range docs {
		if err := validate(&docs[i]); err != nil {
			return err
		}
		if seen[docs[i].Source.ID] {
			return recall.Errorf(recall.EINVALID, "source %q appears twice in one write", docs[i].Source.ID)
		}
		seen[docs[i].Source.ID] = true
	}
	for _, v := range vecs {
		if err := ValidateVector(v); err != nil {
			return err
		}
	}
	for _, id := range remove {
		if seen[id] {
			return recall.Errorf(recall.EINVALID, "source %q is both written and removed in one write", id)
		}
	}
	return nil
}

// Guarded returns the documents of a Write that the guard of its context
// (recall.WithWriteGuard) lets through, asking it about each with the
// source read returns for its id (nil, nil when the store holds none, or
// only an archive source without chunks: see ListedSQL), and
// the vectors of the write but those only refused documents' chunks need;
// docs and vecs themselves when the context has no guard. Backends call it inside the
// write's transaction, before writing any document.
func Guarded(ctx context.Context, docs []recall.Document, vecs []recall.Vector, read func(id string) (*recall.Source, error)) ([]recall.Document, []recall.Vector, error) {
	guard := recall.WriteGuardOf(ctx)
	if guard == nil {
		return docs, vecs, nil
	}
	pass := make([]recall.Document, 0, len(docs))
	var refused []recall.Document
	for i := range docs {
		stored, err := read(docs[i].Source.ID)
		if err != nil {
			return nil, nil, fmt.Errorf("read source %q: %w", docs[i].Source.ID, err)
		}
		if guard(stored, &docs[i]) {
			pass = append(pass, docs[i])
		} else {
			refused = append(refused, docs[i])
		}
	}
	if len(refused) == 0 || len(vecs) == 0 {
		return pass, vecs, nil
	}
	// A refused document's vectors are left out too: they would replace
	// the stored vectors of chunks the kept copy holds, and settle it. A
	// vector a document let through also needs is kept.
	kept := map[string]bool{}
	for _, d := range pass {
		for _, c := range d.Chunks {
			kept[c.VectorKey()] = true
		}
	}
	drop := map[string]bool{}
	for _, d := range refused {
		for _, c := range d.Chunks {
			k := c.VectorKey()
			drop[k] = !kept[k]
		}
	}
	return pass, slices.DeleteFunc(slices.Clone(vecs), func(v recall.Vector) bool { return drop[v.Key] }), nil
}

// DeleteGuarded returns the ids of a Delete, or of a Write's removals,
// that the delete guard of its context (recall.WithDeleteGuard) lets go,
// asking it about each source read returns (every source the store holds
// under those ids, archive sources without chunks included; an id it
// lacks is left out, as there is nothing to remove); ids itself when the
// context has no guard. Backends call it inside the transaction, before
// removing any source.
func DeleteGuarded(ctx context.Context, ids []string, read func(ids []string) (map[string]*recall.Source, error)) ([]string, error) {
	guard := recall.DeleteGuardOf(ctx)
	if guard == nil || len(ids) == 0 {
		return ids, nil
	}
	stored, err := read(ids)
	if err != nil {
		return nil, fmt.Errorf("read sources to remove: %w", err)
	}
	pass := make([]string, 0, len(ids))
	for _, id := range ids {
		if s, ok := stored[id]; ok && guard(s) {
			pass = append(pass, id)
		}
	}
	return pass, nil
}

// ValidateSpace checks a vector space before it is created.
func ValidateSpace(s recall.VectorSpace) error {
	switch {
	case s.Name == "" || !utf8.ValidString(s.Name):
		return recall.Errorf(recall.EINVALID, "vector space needs a name")
	case s.Dim <= 0:
		return recall.Errorf(recall.EINVALID, "vector space %q: dimension must be positive, got %d", s.Name, s.Dim)
	}
	return nil
}

// PrefixEnd returns the smallest string greater than every string that
// begins with prefix, so that a prefix filter is the range
// [prefix, PrefixEnd(prefix)) and needs no LIKE pattern, where "%" and "_"
// would be wildcards. ok is false when no such string exists (prefix is all
// 0xFF bytes, which valid UTF-8 never contains).
func PrefixEnd(prefix string) (end string, ok bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xFF {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// EncodeCursor makes the opaque cursor of a listing that continues after id.
func EncodeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(id))
}

// DecodeCursor reads a cursor made by EncodeCursor; "" starts at the beginning.
// MaxCursorLen bounds a cursor: the encoding of the longest source id.
var MaxCursorLen = base64.RawURLEncoding.EncodedLen(recall.MaxSourceIDLen)

func DecodeCursor(cursor string) (string, error) {
	if len(cursor) > MaxCursorLen {
		return "", recall.Errorf(recall.EINVALID, "invalid cursor")
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || !utf8.Valid(b) {
		return "", recall.Errorf(recall.EINVALID, "invalid cursor")
	}
	return string(b), nil
}

// Rows is what ScanSourceCounts and ScanIndexStates read: database/sql's
// rows and pgx's alike. The caller closes them.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanSourceCounts adds rows of (kind, sources, chunks, text bytes) to st,
// for Stats and OwnerStats.
func ScanSourceCounts(rows Rows, st *recall.Stats) error {
	for rows.Next() {
		var k string
		var n, chunks int
		var bytes int64
		if err := rows.Scan(&k, &n, &chunks, &bytes); err != nil {
			return err
		}
		kind := recall.Kind(k)
		st.Sources[kind], st.KindChunks[kind], st.KindBytes[kind] = n, chunks, bytes
		st.Bytes += bytes
	}
	return rows.Err()
}

// ScanIndexStates reads rows of (index state, sources) into st.
func ScanIndexStates(rows Rows, st *recall.Stats) error {
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return err
		}
		st.IndexStates[state] = n
	}
	return rows.Err()
}
