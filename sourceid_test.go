package recall

import "testing"

func TestCleanSourceID(t *testing.T) {
	ok := []struct{ in, want string }{
		{"2025/07/a.md", "2025/07/a.md"},
		{`2025\07\a.md`, "2025/07/a.md"},
		{"./x//y.md", "x/y.md"},
		{"cafe\u0301.md", "caf\u00e9.md"}, // NFD to NFC
		{"chatgpt/conversations.json/abc-123", "chatgpt/conversations.json/abc-123"},
		{"1:1 with Bob.md", "1:1 with Bob.md"}, // a colon is no drive unless a slash follows
		{"Q:A session.md", "Q:A session.md"},
		{"notes/C:/x.md", "notes/C:/x.md"},
	}
	for _, c := range ok {
		got, err := CleanSourceID(c.in)
		if err != nil || got != c.want {
			t.Errorf("CleanSourceID(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", ".", "/etc/passwd", "../x.md", "a/../../x", `C:\x.md`, "C:/x.md", "c:", `z:\`, "a\x00b", "ctl\x1b[2J\n.md", "a\tb.md", "a\x7fb.md", "a\u0085b.md", "a\u009bb.md", "\xff", "memory:x:y", "diary::2025-01-01", "./memory:x:y", "a/../diary::2025-01-01"} {
		if _, err := CleanSourceID(in); ErrorCode(err) != EINVALID {
			t.Errorf("CleanSourceID(%q) err = %v; want EINVALID", in, err)
		}
	}
}

func TestPublicID(t *testing.T) {
	cases := map[string]string{
		MemoryID("", "person_ann"):       "person_ann",
		MemoryID("bob", "a:b/c"):         "a:b/c",
		DiaryID("bob", "2025-07-14"):     "diary/2025-07-14",
		"2025/07/chat.md":                "2025/07/chat.md",
		"exports/c.json/7d3c9a10-1111-4": "exports/c.json/7d3c9a10-1111-4",
	}
	for in, want := range cases {
		if got := PublicID(in); got != want {
			t.Errorf("PublicID(%q) = %q, want %q", in, got, want)
		}
	}
}
