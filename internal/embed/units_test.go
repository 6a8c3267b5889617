package embed

import (
	"context"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
)

func TestUnits(t *testing.T) {
	long := strings.Repeat("word ", 100) // 500 characters: a unit of its own
	cases := []struct {
		text string
		want int
	}{
		{"", 1},
		{"one paragraph", 1},
		{"**User:** hi\n\n**Assistant:** hello\n\n**User:** bye", 1},
		{long + "\n\n" + long, 2},
		{"short\n\n" + long + "\n\nshort", 3},
		{strings.Repeat("a sentence of forty characters, or so.\n\n", 20), 3},
	}
	for _, c := range cases {
		us := Units("Title (2025-07-14)", c.text)
		if len(us) != c.want {
			t.Errorf("Units(%.30q) gave %d units, want %d", c.text, len(us), c.want)
		}
		for _, u := range us {
			if !strings.HasPrefix(u, "Title (2025-07-14)\n\n") {
				t.Errorf("unit lacks the header: %.40q", u)
			}
		}
	}
	// Every paragraph's text is in exactly one unit.
	text := "alpha beta\n\n" + long + "\n\ngamma\n\ndelta"
	joined := strings.Join(Units("", text), "\n\n")
	for _, p := range strings.Split(text, "\n\n") {
		if strings.Count(joined, strings.TrimSpace(p)) < 1 {
			t.Errorf("paragraph %.20q lost", p)
		}
	}
	if got := Units("", "字"+strings.Repeat("字", 299)+"\n\n字"); len(got) != 2 {
		t.Errorf("units count characters, not bytes: %d units", len(got))
	}
}

func TestEmbedChunks(t *testing.T) {
	e := embedtest.New(8)
	long := strings.Repeat("word ", 100)
	vecs, err := EmbedChunks(context.Background(), e, 8, []ChunkText{{"h", "short"}, {"h", long + "\n\n" + long}})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 2 || len(vecs[0]) != 8 || len(vecs[1]) != 16 {
		t.Fatalf("shapes: %d, %d, %d", len(vecs), len(vecs[0]), len(vecs[1]))
	}
	if e.Calls() != 1 || e.Texts() != 3 {
		t.Fatalf("want one call with 3 texts, got %d calls, %d texts", e.Calls(), e.Texts())
	}
	// A model of another size than the space is refused, even when its
	// vectors would divide evenly into the space's dimension.
	big := embedtest.New(16)
	if _, err := EmbedChunks(context.Background(), big, 8, []ChunkText{{"", "x"}}); recall.ErrorCode(err) != recall.ECONFLICT {
		t.Fatalf("16-dim model into an 8-dim space: %v", err)
	}
	e.FailOn(0, embedtest.FaultError)
	if _, err := EmbedChunks(context.Background(), e, 8, []ChunkText{{"", "x"}}); err == nil {
		t.Fatal("embedder failure not reported")
	}
}
