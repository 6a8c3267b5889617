// Package store holds what every recall.Store backend shares beyond the
// interface: the checks on what is written, the date ranges that date filters
// compare, and the listing cursor. Backends live in subpackages (sqlite); the
// contract suite they all pass is storetest.
package store

import (
	"encoding/base64"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
)

// DateRange returns the first and the last day a date covers, as
// "YYYY-MM-DD" strings that compare correctly as text: "2025" covers
// 2025-01-01..2025-12-31, "2025-02" 2025-02-01..2025-02-28. An empty date
// gives ok false. Anything but "YYYY", "YYYY-MM" or a real "YYYY-MM-DD" is
// EINVALID.
func DateRange(date string) (lo, hi string, ok bool, err error) {
	if date == "" {
		return "", "", false, nil
	}
	var first, last time.Time
	switch len(date) {
	case 4:
		t, perr := time.Parse("2006", date)
		if perr != nil {
			return "", "", false, badDate(date)
		}
		first, last = t, t.AddDate(1, 0, -1)
	case 7:
		t, perr := time.Parse("2006-01", date)
		if perr != nil {
			return "", "", false, badDate(date)
		}
		first, last = t, t.AddDate(0, 1, -1)
	case 10:
		t, perr := time.Parse(time.DateOnly, date)
		if perr != nil {
			return "", "", false, badDate(date)
		}
		first, last = t, t
	default:
		return "", "", false, badDate(date)
	}
	return first.Format(time.DateOnly), last.Format(time.DateOnly), true, nil
}

func badDate(date string) error {
	return recall.Errorf(recall.EINVALID, "date %q is not YYYY, YYYY-MM or YYYY-MM-DD", date)
}

// DateBounds turns a filter's Since and Until into the bounds a source's range
// is compared with: a source passes Since when its last day is on or after
// since's first day, and Until when its first day is on or before until's
// last day. Empty strings mean no bound. A source without a date passes no
// date bound: asking for a period asks for sources known to fall in it.
func DateBounds(f recall.Filter) (since, until string, err error) {
	if f.Since != "" {
		if since, _, _, err = DateRange(f.Since); err != nil {
			return "", "", fmt.Errorf("since: %w", err)
		}
	}
	if f.Until != "" {
		if _, until, _, err = DateRange(f.Until); err != nil {
			return "", "", fmt.Errorf("until: %w", err)
		}
	}
	return since, until, nil
}

// ValidateFilter checks the parts of a filter that can be wrong.
func ValidateFilter(f recall.Filter) error {
	for _, k := range f.Kinds {
		if !k.Valid() {
			return recall.Errorf(recall.EINVALID, "unknown kind %q", k)
		}
	}
	_, _, err := DateBounds(f)
	return err
}

// ValidateDocument checks a document before it is written, so that a bug
// upstream cannot corrupt the store, and sets Source.ChunkCount. Archive ids
// must already be clean source ids (recall.CleanSourceID); memory and diary
// ids are checked by their package and here only for being usable at all.
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
	if _, _, _, err := DateRange(s.Date); err != nil {
		return fmt.Errorf("source %q: %w", s.ID, err)
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
	s.ChunkCount = len(d.Chunks)
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
		return recall.Errorf(recall.EINVALID, "vector for %s names no space", v.Hash)
	}
	if len(v.Vec) == 0 {
		return recall.Errorf(recall.EINVALID, "vector for %s is empty", v.Hash)
	}
	for i, x := range v.Vec {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return recall.Errorf(recall.EINVALID, "vector for %s has a non-finite value at %d", v.Hash, i)
		}
	}
	return nil
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
func DecodeCursor(cursor string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || !utf8.Valid(b) {
		return "", recall.Errorf(recall.EINVALID, "invalid cursor")
	}
	return string(b), nil
}
