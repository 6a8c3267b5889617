package store

import (
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

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

func TestValidateDocument(t *testing.T) {
	d := recall.Document{Source: recall.Source{ID: "a.md", Kind: recall.KindArchive, ChunkCount: 7},
		Chunks: []recall.Chunk{{Text: "x", Hash: recall.TextHash("x")}}}
	if err := ValidateDocument(&d); err != nil {
		t.Errorf("ValidateDocument = %v; want nil (ChunkCount is the store's to set)", err)
	}
	for _, date := range []string{"2025-13", "July 2025", "2025-02-30"} {
		bad := recall.Document{Source: recall.Source{ID: "a.md", Kind: recall.KindArchive, Date: date}}
		if err := ValidateDocument(&bad); recall.ErrorCode(err) != recall.EINVALID {
			t.Errorf("date %q: %v; want EINVALID", date, err)
		}
	}
	long := recall.Document{Source: recall.Source{ID: strings.Repeat("k", recall.MaxSourceIDLen+1), Kind: recall.KindMemory}}
	if err := ValidateDocument(&long); recall.ErrorCode(err) != recall.EINVALID {
		t.Errorf("over-long memory id: %v; want EINVALID", err)
	}
}
