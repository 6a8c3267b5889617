package recall

import "testing"

func TestCleanSourceID(t *testing.T) {
	ok := []struct{ in, want string }{
		{"2025/07/a.md", "2025/07/a.md"},
		{`2025\07\a.md`, "2025/07/a.md"},
		{"./x//y.md", "x/y.md"},
		{"cafe\u0301.md", "caf\u00e9.md"}, // NFD to NFC
		{"chatgpt/conversations.json/abc-123", "chatgpt/conversations.json/abc-123"},
	}
	for _, c := range ok {
		got, err := CleanSourceID(c.in)
		if err != nil || got != c.want {
			t.Errorf("CleanSourceID(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", ".", "/etc/passwd", "../x.md", "a/../../x", `C:\x.md`, "a\x00b", "\xff"} {
		if _, err := CleanSourceID(in); ErrorCode(err) != EINVALID {
			t.Errorf("CleanSourceID(%q) err = %v; want EINVALID", in, err)
		}
	}
}
