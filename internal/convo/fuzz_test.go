package convo

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
)

// addSeeds adds the fixtures with the given extensions to the fuzz corpus.
func addSeeds(f *testing.F, exts ...string) {
	paths, err := filepath.Glob("testdata/*")
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		for _, ext := range exts {
			if filepath.Ext(p) == ext {
				data, err := os.ReadFile(p)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(data)
			}
		}
	}
}

// checkConversations checks what Parse promises whatever the input: only
// EINVALID errors (the reader never fails here), no conversation without
// messages, no empty message, only valid UTF-8.
func checkConversations(t *testing.T, name string, data []byte) []Conversation {
	var convs []Conversation
	err := Parse(name, bytes.NewReader(data), nil, func(c Conversation) error {
		convs = append(convs, c)
		return nil
	})
	if err != nil && recall.ErrorCode(err) != recall.EINVALID {
		t.Fatalf("%s: error %v has code %s, want %s", name, err, recall.ErrorCode(err), recall.EINVALID)
	}
	for _, c := range convs {
		if len(c.Messages) == 0 {
			t.Fatalf("%s: conversation %q without messages", name, c.ID)
		}
		for _, m := range c.Messages {
			if m == "" || !utf8.ValidString(m) {
				t.Fatalf("%s: empty or invalid UTF-8 message %q", name, m)
			}
		}
		if !utf8.ValidString(c.Title) {
			t.Fatalf("%s: title %q is not valid UTF-8", name, c.Title)
		}
	}
	return convs
}

func FuzzParseMarkdown(f *testing.F) {
	addSeeds(f, ".md", ".txt")
	for _, s := range []string{
		"**A:** x\n\n```\n**B:** y",
		"---\ntitle: 'a''b\n---\n",
		"## User\n## User:\n#### ：\n**：**",
		"User：x\nUser : y\n**User**：z",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		convs := checkConversations(t, "f.md", data)
		if len(convs) > 1 {
			t.Fatalf("a markdown file gave %d conversations", len(convs))
		}
		// Nothing is lost and blocks are verbatim: checked on the text the
		// parser sees, without the byte-level repairs of Parse.
		text := string(data)
		if !utf8.ValidString(text) || strings.ContainsRune(text, 0) || strings.HasPrefix(text, "\ufeff") {
			return
		}
		if msg := checkKeepsText(text, parseMarkdown("f.md", text).Messages); msg != "" {
			t.Fatal(msg)
		}
	})
}

func FuzzParseJSON(f *testing.F) {
	addSeeds(f, ".json", ".jsonl")
	for _, s := range []string{
		`[{"id":"a","current_node":"b","mapping":{"b":{"parent":"b","children":["b"],"message":{"author":{"role":"user"},"content":{"parts":["x"]}}}}}]`,
		`[{"id":"a","mapping":{"r":{"children":["x","r"]},"x":{"parent":"r","children":["r"],"message":{"author":{"role":"user"},"content":{"parts":[{"content_type":"image_asset_pointer"},null,1]}}}}}]`,
		`[{"uuid":"u","chat_messages":[{"sender":"human","content":[{"type":"text","text":""}],"text":"t"}]}]`,
		`[{"role":"user","content":{"type":"text","text":"x"}},{"author":"me","message":{"role":"x"}}]`,
		"{\"message\":{\"content\":[{\"type\":\"image\"}]},\"timestamp\":1e300}\n{\"text\":\"\\u0000\"}",
		"{\"id\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}\n{\"conversations\":[{\"from\":\"gpt\",\"value\":\"y\"}]}\n{\"role\":\"user\",\"content\":\"z\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		convs := checkConversations(t, "f.json", data)
		ids := map[string]bool{}
		for _, c := range convs {
			if ids[c.ID] {
				t.Fatalf("conversation id %q delivered twice", c.ID)
			}
			ids[c.ID] = true
		}
		ids = map[string]bool{}
		for _, c := range checkConversations(t, "f.jsonl", data) {
			if ids[c.ID] {
				t.Fatalf("JSON lines: conversation id %q delivered twice", c.ID)
			}
			ids[c.ID] = true
		}
	})
}
