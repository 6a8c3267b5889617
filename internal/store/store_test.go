package store

import (
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

func TestDateRange(t *testing.T) {
	tests := []struct {
		date, lo, hi string
		ok           bool
	}{
		{"", "", "", false},
		{"2025", "2025-01-01", "2025-12-31", true},
		{"2025-07", "2025-07-01", "2025-07-31", true},
		{"2024-02", "2024-02-01", "2024-02-29", true},
		{"2025-02", "2025-02-01", "2025-02-28", true},
		{"2025-07-14", "2025-07-14", "2025-07-14", true},
	}
	for _, tt := range tests {
		lo, hi, ok, err := DateRange(tt.date)
		if err != nil || lo != tt.lo || hi != tt.hi || ok != tt.ok {
			t.Errorf("DateRange(%q) = %q, %q, %t, %v; want %q, %q, %t", tt.date, lo, hi, ok, err, tt.lo, tt.hi, tt.ok)
		}
	}
	for _, bad := range []string{"25", "2025-7", "2025-13", "2025-02-30", "2025/07/14", "July", "2025-07-14T10:00", "１９９９"} {
		if _, _, _, err := DateRange(bad); recall.ErrorCode(err) != recall.EINVALID {
			t.Errorf("DateRange(%q) err = %v; want EINVALID", bad, err)
		}
	}
}

func TestDateBounds(t *testing.T) {
	since, until, err := DateBounds(recall.Filter{Since: "2025-07", Until: "2025"})
	if err != nil || since != "2025-07-01" || until != "2025-12-31" {
		t.Errorf("DateBounds = %q, %q, %v", since, until, err)
	}
	if _, _, err := DateBounds(recall.Filter{Until: "soon"}); recall.ErrorCode(err) != recall.EINVALID {
		t.Errorf("DateBounds(until soon) err = %v; want EINVALID", err)
	}
}

func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		prefix, end string
		ok          bool
	}{
		{"notes/", "notes0", true},
		{"a%_", "a%`", true},
		{"é", "\xc3\xaa", true},
		{"\xff\xff", "", false},
		{"a\xff", "b", true},
	}
	for _, tt := range tests {
		end, ok := PrefixEnd(tt.prefix)
		if end != tt.end || ok != tt.ok {
			t.Errorf("PrefixEnd(%q) = %q, %t; want %q, %t", tt.prefix, end, ok, tt.end, tt.ok)
		}
		if ok && !(tt.prefix < end && tt.prefix+"\xfe\xfe" < end) {
			t.Errorf("PrefixEnd(%q) = %q does not bound the prefix's strings", tt.prefix, end)
		}
	}
}

func TestCursor(t *testing.T) {
	for _, id := range []string{"", "a.md", "notes/日本語 %_.md"} {
		got, err := DecodeCursor(EncodeCursor(id))
		if err != nil || got != id {
			t.Errorf("cursor round trip of %q = %q, %v", id, got, err)
		}
	}
	if _, err := DecodeCursor("not base64!"); recall.ErrorCode(err) != recall.EINVALID {
		t.Errorf("bad cursor err = %v; want EINVALID", err)
	}
}

func TestValidateDocumentCounts(t *testing.T) {
	d := recall.Document{Source: recall.Source{ID: "a.md", Kind: recall.KindArchive, ChunkCount: 7},
		Chunks: []recall.Chunk{{Text: "x", Hash: recall.TextHash("x")}}}
	if err := ValidateDocument(&d); err != nil || d.Source.ChunkCount != 1 {
		t.Errorf("ValidateDocument = %v, ChunkCount %d; want nil, 1", err, d.Source.ChunkCount)
	}
	long := recall.Document{Source: recall.Source{ID: strings.Repeat("k", recall.MaxSourceIDLen+1), Kind: recall.KindMemory}}
	if err := ValidateDocument(&long); recall.ErrorCode(err) != recall.EINVALID {
		t.Errorf("over-long memory id: %v; want EINVALID", err)
	}
}
