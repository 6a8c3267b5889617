package convo

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the parser's output")

// TestGolden parses every fixture in testdata and compares a readable
// rendering of the result (conversations, or the error) with its .golden file.
func TestGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	fixtures := 0
	for _, path := range paths {
		if strings.HasSuffix(path, ".golden") {
			continue
		}
		fixtures++
		t.Run(filepath.Base(path), func(t *testing.T) {
			convs, err := parseFile(t, path)
			got := renderResult(convs, err)
			golden := path + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (rerun with -update and review the diff):\n%s", golden, got)
			}
		})
	}
	if fixtures < 20 {
		t.Fatalf("found %d fixtures in testdata, want at least 20", fixtures)
	}
}

// Only a file Several names may give conversations with ids: a remote
// sweep asks the server about the conversations of such a file alone.
func TestSeveral(t *testing.T) {
	paths, err := filepath.Glob("testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	withIDs := map[string]bool{}
	for _, path := range paths {
		if strings.HasSuffix(path, ".golden") {
			continue
		}
		convs, _ := parseFile(t, path)
		for _, c := range convs {
			if c.ID != "" {
				withIDs[filepath.Ext(path)] = true
				if !Several(path) {
					t.Errorf("%s gives conversation %q, but Several says it is one conversation", path, c.ID)
				}
			}
		}
	}
	if !withIDs[".json"] || !withIDs[".jsonl"] {
		t.Errorf("fixtures give conversations with ids only in %v: the test would prove little", withIDs)
	}
	for _, name := range []string{"a.md", "a.markdown", "a.txt", "dir.json/a.md"} {
		if Several(name) {
			t.Errorf("Several(%q)", name)
		}
	}
}

func parseFile(t *testing.T, path string) ([]Conversation, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var convs []Conversation
	err = Parse(filepath.Base(path), f, nil, func(c Conversation) error {
		convs = append(convs, c)
		return nil
	})
	return convs, err
}

func renderResult(convs []Conversation, err error) string {
	var b strings.Builder
	for i, c := range convs {
		fmt.Fprintf(&b, "=== conversation %d\nid: %s\ntitle: %s\ndate: %s\ncreated: %s\nupdated: %s\n",
			i+1, c.ID, c.Title, c.Date, formatTime(c.Created), formatTime(c.Updated))
		for j, m := range c.Messages {
			fmt.Fprintf(&b, "--- message %d\n%s\n", j+1, m)
		}
	}
	if err != nil {
		fmt.Fprintf(&b, "=== error (%s)\n%v\n", recall.ErrorCode(err), err)
	}
	if b.Len() == 0 {
		b.WriteString("=== no conversations\n")
	}
	return b.String()
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339Nano)
}
