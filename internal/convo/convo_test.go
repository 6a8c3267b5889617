package convo

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

func TestSupported(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"chat.md", true},
		{"Chat.MD", true},
		{"notes/a.markdown", true},
		{`dir\b.txt`, true},
		{"conversations.json", true},
		{"log.jsonl", true},
		{"photo.png", false},
		{"archive.json.gz", false},
		{"README", false},
		{".md", true},
	}
	for _, tt := range tests {
		if got := Supported(tt.name); got != tt.want {
			t.Errorf("Supported(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name, head string
		want       Format
		err        string // substring of the error; "" for none
	}{
		{"a.md", "# Title\n\n**User:** hi", FormatMarkdown, ""},
		{"a.txt", "", FormatMarkdown, ""},
		{"a.txt", "caf\xe9 cr\xe8me, na\xefve and other Latin-1 words in a longer sentence", FormatMarkdown, ""},
		{"a.txt", "\xcf\xf0\xe8\xe2\xe5\xf2, \xea\xe0\xea \xe4\xe5\xeb\xe0?", FormatMarkdown, ""}, // Windows-1251: no binary
		{"a.md", "\x1b[1mbold\x1b[0m and a bell\x07 in a terminal log", FormatMarkdown, ""},
		{"a.md", "\xef\xbb\xbfUser: hi", FormatMarkdown, ""},
		{"a.md", "\xff\xfeU\x00:\x00 \x00h\x00i\x00", FormatMarkdown, ""},
		{"a.md", "PK\x03\x04\x14\x00\x06\x00", 0, "binary content (byte 5)"},
		{"a.md", "\x01\x02\x03\x04\x05 text", 0, "binary content"},
		{"a.jsonl", "\n{\"role\":\"user\"}\n", FormatJSONL, ""},
		{"a.jsonl", "", FormatJSONL, ""},
		{"a.jsonl", "role,content\n", 0, "not JSON lines"},
		{"c.json", ` [{"title":"x","create_time":1.5,"mapping":{}}]`, FormatChatGPT, ""},
		{"c.json", `[{"uuid":"u","name":"n","account":{"uuid":"a"},"chat_messages":[]}]`, FormatClaude, ""},
		{"c.json", `[{"content":"hi","role":"user"}]`, FormatMessages, ""},
		{"c.json", `[{"messages":[{"role":"user","content":"hi"}]}]`, FormatConversations, ""},
		{"c.json", `[{"id":"x","conversations":[{"from":"human","value":"hi"}]}]`, FormatConversations, ""},
		{"c.json", `[]`, FormatChatGPT, ""},
		{"c.json", `[{"title":"a very long title that the head cuts o`, 0, "or truncated"},
		{"c.json", `[{"title":"x"}]`, 0, `unknown JSON format; if it is no conversation (a settings or package file), move it out of the vault or into a folder whose name starts with "."`},
		{"c.json", `[1, 2]`, 0, "element [0] is a number"},
		{"c.json", `{"mapping":{}}`, FormatChatGPT, ""},
		{"c.json", ` {"uuid":"u","chat_messages":[]}`, FormatClaude, ""},
		{"c.json", `{"messages":[{"role":"user","content":"hi"}]}`, FormatConversations, ""},
		{"c.json", `{"role":"user","content":"hi"}`, FormatMessages, ""},
		{"c.json", `{"title":"x"}`, 0, "the top-level object has no \"mapping\""},
		{"c.json", `{"title":"x", "long`, 0, "in the first 19 bytes of the top-level object"},
		{"c.json", `  `, 0, "empty file"},
		{"c.json", `title,date`, 0, "not JSON"},
		{"c.json", `[{"title" 1}]`, 0, "malformed JSON"},
		{"photo.png", "\x89PNG", 0, "unsupported file type \".png\""},
	}
	for _, tt := range tests {
		got, err := Detect(tt.name, []byte(tt.head))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("Detect(%q, %q): %v", tt.name, tt.head, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Detect(%q, %q) error = %v, want one containing %q", tt.name, tt.head, err, tt.err)
		case tt.err != "" && recall.ErrorCode(err) != recall.EINVALID:
			t.Errorf("Detect(%q, %q) error code = %s, want %s", tt.name, tt.head, recall.ErrorCode(err), recall.EINVALID)
		case got != tt.want:
			t.Errorf("Detect(%q, %q) = %v, want %v", tt.name, tt.head, got, tt.want)
		}
	}
}

func parseString(t *testing.T, name, content string) ([]Conversation, error) {
	t.Helper()
	var convs []Conversation
	err := Parse(name, strings.NewReader(content), nil, func(c Conversation) error {
		convs = append(convs, c)
		return nil
	})
	return convs, err
}

func mustParseFile(t *testing.T, path string) []Conversation {
	t.Helper()
	convs, err := parseFile(t, path)
	if err != nil {
		t.Fatal(err)
	}
	return convs
}

func TestChatGPTExport(t *testing.T) {
	convs := mustParseFile(t, "testdata/chatgpt-export.json")
	if len(convs) != 2 {
		t.Fatalf("got %d conversations, want 2 (the one with only a hidden system node is skipped)", len(convs))
	}
	first := convs[0]
	all := strings.Join(first.Messages, "\n")
	for _, absent := range []string{
		"OLD BRANCH",           // the answer to the message before it was edited
		"How do I keep tomato", // the message before it was edited
		"grow tomatoes",        // custom instructions
		"\n60\n", "**Tool",     // tool output
		"**System", // hidden system message
	} {
		if strings.Contains(all, absent) {
			t.Errorf("messages contain %q, which the displayed branch does not show:\n%s", absent, all)
		}
	}
	if !strings.HasPrefix(first.Messages[0], "**User:** How do I keep cherry tomatoes") {
		t.Errorf("first message = %q, want the edited question", first.Messages[0])
	}
	for _, m := range first.Messages {
		if m == "" || !strings.HasPrefix(m, "**User:**") && !strings.HasPrefix(m, "**Assistant:**") {
			t.Errorf("message %q is not labelled User or Assistant", m)
		}
	}
	if want := time.Date(2024, 5, 1, 7, 59, 59, 870000000, time.UTC); !first.Created.Equal(want) {
		t.Errorf("Created = %v, want %v", first.Created, want)
	}
	if first.ID != "6631f3c0-1d2e-4c11-9a7e-0b1c2d3e4f50" || first.Date != "2024-05-01" {
		t.Errorf("ID, Date = %q, %q", first.ID, first.Date)
	}
	// Without current_node the newest answer is the one shown.
	last := convs[1].Messages[len(convs[1].Messages)-1]
	if !strings.Contains(last, "Say it as one word") {
		t.Errorf("last message of the conversation without current_node = %q, want the newest answer", last)
	}
}

func TestClaudeExport(t *testing.T) {
	convs := mustParseFile(t, "testdata/claude-export.json")
	if len(convs) != 2 {
		t.Fatalf("got %d conversations, want 2 (the empty one is skipped)", len(convs))
	}
	answer := convs[0].Messages[1]
	if !strings.HasPrefix(answer, "**Assistant:** Let me work backwards") || !strings.Contains(answer, "peaks by morning") {
		t.Errorf("answer = %q, want both text blocks", answer)
	}
	if strings.Contains(answer, "print(7-4)") || strings.Contains(answer, "\n3\n") {
		t.Errorf("answer = %q, want tool calls and results left out", answer)
	}
	if got := convs[0].Messages[0]; strings.Count(got, "[file: bake-plan.txt]") != 1 {
		t.Errorf("question = %q, want the attached file named once", got)
	}
	if got := convs[0].Messages[2]; got != "**User:** The 1:5:5 plan worked, thanks!" {
		t.Errorf("message without content blocks = %q, want its text", got)
	}
	if convs[1].Date != "2024-04-01" || convs[1].Created.Hour() != 21 {
		t.Errorf("Date, Created = %q, %v; want the UTC day and time", convs[1].Date, convs[1].Created)
	}
}

// A Claude conversation shows one branch: from the current leaf (or the
// last message) up through the parents. Without parent ids, or when they
// break, the array order stands.
func TestClaudeBranch(t *testing.T) {
	const root = `"00000000-0000-4000-8000-000000000000"`
	msg := func(id, parent, sender, text string) string {
		p := ""
		if parent != "" {
			p = `,"parent_message_uuid":` + parent
		}
		return `{"uuid":"` + id + `","sender":"` + sender + `","text":"` + text + `"` + p + `}`
	}
	conv := func(leaf string, msgs ...string) string {
		l := ""
		if leaf != "" {
			l = `,"current_leaf_message_uuid":"` + leaf + `"`
		}
		return `[{"uuid":"c","name":"t"` + l + `,"chat_messages":[` + strings.Join(msgs, ",") + `]}]`
	}
	regenerated := []string{
		msg("q", root, "human", "capital of Australia?"),
		msg("a1", `"q"`, "assistant", "Sydney."),
		msg("a2", `"q"`, "assistant", "Canberra."),
	}
	edited := []string{
		msg("q1", root, "human", "first try"),
		msg("a1", `"q1"`, "assistant", "answer to the first try"),
		msg("q2", root, "human", "edited question"),
		msg("a2", `"q2"`, "assistant", "answer to the edit"),
	}
	tests := []struct {
		name, in string
		want     []string
	}{
		{"regenerated, no leaf named: the last message's branch", conv("", regenerated...),
			[]string{"capital of Australia?", "Canberra."}},
		{"regenerated, leaf named", conv("a1", regenerated...),
			[]string{"capital of Australia?", "Sydney."}},
		{"edited question", conv("a2", edited...), []string{"edited question", "answer to the edit"}},
		{"edited, unknown leaf", conv("gone", edited...), []string{"edited question", "answer to the edit"}},
		{"older export without parent ids", conv("",
			msg("q", "", "human", "one"), msg("a", "", "assistant", "two"), msg("b", "", "human", "three")),
			[]string{"one", "two", "three"}},
		{"no parent is the root too", conv("",
			msg("q", "", "human", "one"), msg("a", `"q"`, "assistant", "two")),
			[]string{"one", "two"}},
		{"a missing parent: array order", conv("",
			msg("q", root, "human", "one"), msg("a", `"pruned"`, "assistant", "two")),
			[]string{"one", "two"}},
		{"a cycle: array order", conv("",
			msg("q", `"a"`, "human", "one"), msg("a", `"q"`, "assistant", "two")),
			[]string{"one", "two"}},
		// From an audit: each of these kept part of the conversation only.
		{"every parent the root: array order", conv("",
			msg("m1", root, "human", "Q1"), msg("m2", root, "assistant", "A1"),
			msg("m3", root, "human", "Q2"), msg("m4", root, "assistant", "A2")),
			[]string{"Q1", "A1", "Q2", "A2"}},
		{"parent ids from the third message on: array order", conv("",
			msg("m1", "", "human", "Q1"), msg("m2", "", "assistant", "A1"),
			msg("m3", `"m2"`, "human", "Q2"), msg("m4", `"m3"`, "assistant", "A2")),
			[]string{"Q1", "A1", "Q2", "A2"}},
		{"a stale leaf, with messages after it", conv("m2",
			msg("m1", root, "human", "Q1"), msg("m2", `"m1"`, "assistant", "A1"),
			msg("m3", `"m2"`, "human", "Q2"), msg("m4", `"m3"`, "assistant", "A2")),
			[]string{"Q1", "A1", "Q2", "A2"}},
		{"a stale leaf in a tree that forks: the last message's branch", conv("q",
			regenerated...), []string{"capital of Australia?", "Canberra."}},
	}
	for _, tt := range tests {
		convs, err := parseString(t, "conversations.json", tt.in)
		if err != nil || len(convs) != 1 {
			t.Errorf("%s: %d conversations, %v", tt.name, len(convs), err)
			continue
		}
		var got []string
		for _, m := range convs[0].Messages {
			_, text, _ := strings.Cut(m, ":** ")
			got = append(got, text)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// What a Claude conversation showed beyond its text blocks is kept: the
// text of attached and pasted files and the artifacts the model wrote; the
// placeholder the export writes for an artifact is not.
func TestClaudeAttachmentsAndArtifacts(t *testing.T) {
	convs := mustParseFile(t, "testdata/claude-artifacts.json")
	if len(convs) != 1 {
		t.Fatalf("got %d conversations, want 1", len(convs))
	}
	all := strings.Join(convs[0].Messages, "\n")
	for _, want := range []string{
		"Zebrafish sales rose 12% in Q2.\nReturns fell to 3%.", // a paste has no name
		"[file: q2.csv]\nregion,total\nnorth,40",
		"[artifact: Column totals]\n````python\nimport csv\n",
		"**Assistant:** Done.\n\nThe update divides by 100.",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("messages lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "not supported on your current device") || strings.Count(all, "[file: q2.csv]") != 1 {
		t.Errorf("messages:\n%s", all)
	}
	if len(convs[0].Messages) != 3 {
		t.Errorf("got %d messages, want 3 (the one with only a placeholder is dropped)", len(convs[0].Messages))
	}
}

func TestChatLogs(t *testing.T) {
	convs := mustParseFile(t, "testdata/chat-log.jsonl")
	if len(convs) != 1 {
		t.Fatalf("got %d conversations, want 1", len(convs))
	}
	c := convs[0]
	want := []string{"**User:**", "**Assistant:**", "**Ingrid:**", "**Assistant:**", "**User:**"}
	if len(c.Messages) != len(want) {
		t.Fatalf("got %d messages, want %d (the tool line skipped): %q", len(c.Messages), len(want), c.Messages)
	}
	for i, m := range c.Messages {
		if !strings.HasPrefix(m, want[i]) {
			t.Errorf("message %d = %q, want it to start with %q", i, m, want[i])
		}
	}
	if c.Created != time.Date(2023, 9, 14, 18, 2, 11, 0, time.UTC) || c.Updated != time.Date(2023, 9, 14, 18, 3, 10, 0, time.UTC) {
		t.Errorf("Created, Updated = %v, %v", c.Created, c.Updated)
	}
}

// A text timestamp dates a conversation by the day it was written in, in
// its own offset, as a markdown date line does: the same moment dated a
// transcript 2025-07-14 and a chat log 2025-07-15 (the UTC day). Seconds
// since the epoch have no offset but UTC's.
func TestTextTimestampsKeepTheWrittenDay(t *testing.T) {
	const stamp = "2025-07-14T23:30:00-07:00"
	md, err := parseString(t, "a.md", "Date: "+stamp+"\n\nUser: hi\n")
	if err != nil || len(md) != 1 || md[0].Date != "2025-07-14" {
		t.Fatalf("markdown: %+v %v", md, err)
	}
	for _, tt := range []struct{ name, content string }{
		{"log.jsonl", `{"role":"user","content":"hi","timestamp":"` + stamp + `"}`},
		{"conversations.json", `[{"uuid":"c1","name":"t","created_at":"` + stamp + `","chat_messages":[{"sender":"human","text":"hi"}]}]`},
		{"conversations.json", `[{"id":"c1","title":"t","create_time":"` + stamp + `","mapping":{"u":{"message":{"author":{"role":"user"},"content":{"content_type":"text","parts":["hi"]}}}},"current_node":"u"}]`},
	} {
		convs, err := parseString(t, tt.name, tt.content)
		if err != nil || len(convs) != 1 {
			t.Errorf("%s: %d conversations, %v", tt.content, len(convs), err)
			continue
		}
		if c := convs[0]; c.Date != md[0].Date || !c.Created.Equal(md[0].Created) || c.Created.Location() != time.UTC {
			t.Errorf("%s: Date %q, Created %v; want %q, %v in UTC as the markdown file has them", tt.content, c.Date, c.Created, md[0].Date, md[0].Created)
		}
	}
	convs, err := parseString(t, "log.jsonl", `{"role":"user","content":"hi","timestamp":1752561000}`) // 2025-07-15T06:30:00Z
	if err != nil || len(convs) != 1 || convs[0].Date != "2025-07-15" {
		t.Errorf("seconds since the epoch: %+v %v, want the UTC day", convs, err)
	}
}

// A moment written in UTC (seconds since the epoch, Z, +00:00, a clock
// time followed by UTC) dates a conversation by its day in the reader's
// zone, in every format: exports and logs write every time in UTC, so a
// conversation held at 9:30 pm in California on 5 March was dated 6 March.
// A day written with another offset, or a clock time without a zone, is the
// day written, whatever the zone. Created stays the moment, in UTC.
func TestMomentsWrittenInUTCAreDatedInTheReadersZone(t *testing.T) {
	moment := time.Date(2024, 3, 6, 5, 30, 0, 0, time.UTC) // 21:30 on 5 March in UTC-8, 14:30 on 6 March in UTC+9
	const epoch = "1709703000"
	west, east := time.FixedZone("UTC-8", -8*3600), time.FixedZone("UTC+9", 9*3600)
	chatgpt := func(stamp string) string {
		return `[{"id":"c1","title":"t","create_time":` + stamp + `,"mapping":{"u":{"message":{"author":{"role":"user"},"content":{"content_type":"text","parts":["hi"]}}}},"current_node":"u"}]`
	}
	inUTC := []struct{ name, content string }{
		{"conversations.json", chatgpt(epoch)},
		{"conversations.json", chatgpt(`"2024-03-06T05:30:00.000000Z"`)},
		{"conversations.json", `[{"uuid":"c1","name":"t","created_at":"2024-03-06T05:30:00.000Z","chat_messages":[{"sender":"human","text":"hi"}]}]`},
		{"log.jsonl", `{"role":"user","content":"hi","timestamp":"2024-03-06T05:30:00Z"}`},
		{"log.jsonl", `{"role":"user","content":"hi","timestamp":"2024-03-06 05:30:00+00:00"}`},
		{"log.jsonl", `{"role":"user","content":"hi","timestamp":` + epoch + `000}`},
		{"rollout-2024-03-06T05-30-00-x.jsonl", `{"timestamp":"2024-03-06T05:30:00.000Z","type":"session_meta","payload":{"id":"x","timestamp":"2024-03-06T05:30:00.000Z"}}` + "\n" +
			`{"timestamp":"2024-03-06T05:30:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}`},
		{"a.md", "Date: 2024-03-06T05:30:00Z\n\nUser: hi\n"},
		{"a.md", "Date: 2024-03-06 05:30 UTC\n\nUser: hi\n"},
		{"a.md", "---\ndate: 1709703000\n---\n\nUser: hi\n"},
	}
	dayWritten := []struct{ name, content, date string }{
		{"log.jsonl", `{"role":"user","content":"hi","timestamp":"2024-03-06T06:30:00+01:00"}`, "2024-03-06"},
		{"log.jsonl", `{"role":"user","content":"hi","timestamp":"2024-03-06T05:30:00"}`, "2024-03-06"},
		{"a.md", "Date: 2024-03-06 05:30\n\nUser: hi\n", "2024-03-06"},
		{"a.md", "Date: 2024-03-05 21:30 -08:00\n\nUser: hi\n", "2024-03-05"},
		{"a.md", "Date: 2024-03-06\n\nUser: hi\n", "2024-03-06"},
	}
	parse := func(name, content string, zone *time.Location) Conversation {
		t.Helper()
		var convs []Conversation
		err := Parse(name, strings.NewReader(content), zone, func(c Conversation) error { convs = append(convs, c); return nil })
		if err != nil || len(convs) != 1 {
			t.Fatalf("%s in %v: %d conversations, %v", content, zone, len(convs), err)
		}
		if c := convs[0]; !c.Created.IsZero() && c.Created.Location() != time.UTC {
			t.Errorf("%s in %v: Created %v, not in UTC", content, zone, c.Created)
		}
		return convs[0]
	}
	for _, tt := range inUTC {
		for _, z := range []struct {
			zone *time.Location
			date string
		}{{nil, "2024-03-06"}, {time.UTC, "2024-03-06"}, {west, "2024-03-05"}, {east, "2024-03-06"}} {
			if c := parse(tt.name, tt.content, z.zone); c.Date != z.date || !c.Created.Equal(moment) {
				t.Errorf("%s in %v: Date %q, Created %v; want %q, %v", tt.content, z.zone, c.Date, c.Created, z.date, moment)
			}
		}
	}
	for _, tt := range dayWritten {
		for _, zone := range []*time.Location{nil, west, east} {
			if c := parse(tt.name, tt.content, zone); c.Date != tt.date {
				t.Errorf("%s in %v: Date %q, want %q, the day written", tt.content, zone, c.Date, tt.date)
			}
		}
	}
}

// Text timestamps are read in the forms tools write them, a time without
// a zone as UTC, as a markdown date line is.
func TestChatLogTimestamps(t *testing.T) {
	at := time.Date(2024, 5, 6, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		stamp string
		want  time.Time
	}{
		{`"2024-05-06T10:00:00Z"`, at},
		{`"2024-05-06T12:00:00+02:00"`, at},
		{`"2024-05-06T10:00:00.123456"`, at.Add(123456 * time.Microsecond)},
		{`"2024-05-06T10:00:00"`, at},
		{`"2024-05-06 10:00:00"`, at},
		{`"2024-05-06 10:00:00.5"`, at.Add(500 * time.Millisecond)},
		{`"2024-05-06 10:00:00+00:00"`, at},
		{`"2024-05-06 10:00"`, at},
		{`1714989600000`, at},
		{`"yesterday"`, time.Time{}},
	}
	for _, tt := range tests {
		convs, err := parseString(t, "log.jsonl", `{"role":"user","content":"hi","timestamp":`+tt.stamp+`}`)
		if err != nil || len(convs) != 1 {
			t.Errorf("%s: %d conversations, %v", tt.stamp, len(convs), err)
			continue
		}
		if c := convs[0]; !c.Created.Equal(tt.want) || c.Date != dateOf(tt.want) {
			t.Errorf("%s: Created %v, Date %q; want %v", tt.stamp, c.Created, c.Date, tt.want)
		}
	}
}

// chatLogCase is a JSON-lines file of one conversation and the messages
// it should give.
type chatLogCase struct {
	name, in string
	want     []string
}

func checkChatLogs(t *testing.T, tests []chatLogCase) {
	t.Helper()
	for _, tt := range tests {
		convs, err := parseString(t, "log.jsonl", tt.in)
		if err != nil || len(convs) != 1 {
			t.Errorf("%s: %d conversations, %v", tt.name, len(convs), err)
			continue
		}
		if got := convs[0].Messages; !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// A field that says who speaks or what a line is, of a type other than a
// string, says nothing: the line is read without it, and never fails the
// file. (Text fields of the wrong type still do: that would be text lost.)
func TestChatLogLenientFields(t *testing.T) {
	tests := []chatLogCase{
		{"reasoning item with a summary array", `{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the bug"}]}
{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Thinking"}],"encrypted_content":null}
{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Fixed it."}]}`,
			[]string{"**User:** fix the bug", "**Assistant:** Fixed it."}},
		{"name as an object", `{"role":"user","content":"x","name":{"first":"a"}}`, []string{"**User:** x"}},
		{"role as a number", `{"role":7,"content":"x"}`, []string{"x"}},
		{"speaker as an array", `{"speaker":["a"],"role":"assistant","content":"x"}`, []string{"**Assistant:** x"}},
		{"author as an array", `{"author":["x"],"text":"a"}`, []string{"a"}},
		{"author with a numeric name", `{"author":{"name":1,"role":"user"},"text":"a"}`, []string{"**User:** a"}},
		{"type as an object", `{"type":{"k":1},"role":"user","content":"x"}`, []string{"**User:** x"}},
		{"message role as a number", `{"message":{"role":1,"content":"x"},"type":"user"}`, []string{"**User:** x"}},
	}
	checkChatLogs(t, tests)
}

// Who speaks is read from role, speaker, author, sender or name; the
// application's system and developer prompts are not turns and are left
// out, as ChatGPT hides its system messages.
func TestChatLogSpeakers(t *testing.T) {
	tests := []chatLogCase{
		{"sender, human as User", `{"sender":"human","text":"q","created_at":"2024-02-02T10:00:00Z"}
{"sender":"assistant","text":"a"}`, []string{"**User:** q", "**Assistant:** a"}},
		{"sender names a person", `{"sender":"Ingrid","text":"hej"}`, []string{"**Ingrid:** hej"}},
		{"system and developer prompts", `{"role":"system","content":"You are a helpful assistant."}
{"role":"developer","content":"be terse"}
{"role":"user","content":"hi"}
{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}
{"role":"tool","tool_call_id":"c","content":"{\"temp\": 20}"}
{"role":"assistant","content":[{"type":"output_text","text":"It is 20C"}]}`, []string{"**User:** hi", "**Assistant:** It is 20C"}},
		{"system as a speaker", `{"speaker":"System","text":"rules"}
{"speaker":"User","text":"hi"}`, []string{"**User:** hi"}},
		{"system named", `{"role":"system","name":"setup","content":"rules"}
{"role":"user","content":"hi"}`, []string{"**User:** hi"}},
	}
	checkChatLogs(t, tests)
}

// Claude Code writes lines for itself into a session: meta text, a
// subagent's side conversation, the summary made when the context fills
// up, reminders for the model, command output. None is a turn.
func TestClaudeCodeInternalLines(t *testing.T) {
	turn := func(typ, extra, content string) string {
		return `{"type":"` + typ + `"` + extra + `,"message":{"role":"` + typ + `","content":` + content + `},"uuid":"u","timestamp":"2025-06-01T10:00:00Z"}`
	}
	ask := turn("user", "", `"Why does TestFoo fail?"`)
	tests := []chatLogCase{
		{"meta caveat", turn("user", `,"isMeta":true`, `"Caveat: The messages below were generated by the user while running local commands."`) + "\n" + ask,
			[]string{"**User:** Why does TestFoo fail?"}},
		{"sidechain", ask + "\n" + turn("user", `,"isSidechain":true`, `"search for map writes"`) + "\n" +
			turn("assistant", `,"isSidechain":true`, `[{"type":"text","text":"found two"}]`),
			[]string{"**User:** Why does TestFoo fail?"}},
		{"compact summary", ask + "\n" + turn("user", `,"isCompactSummary":true`, `"This session is being continued from a previous conversation."`),
			[]string{"**User:** Why does TestFoo fail?"}},
		{"flags of another type mark nothing", turn("user", `,"isMeta":"yes","isSidechain":false`, `"hi"`),
			[]string{"**User:** hi"}},
		{"system reminder", turn("user", "", `[{"type":"text","text":"<system-reminder>The file changed.</system-reminder>"},{"type":"text","text":"thanks"}]`),
			[]string{"**User:** thanks"}},
		{"only a system reminder", ask + "\n" + turn("user", "", `"<system-reminder>\nTodo list empty.\n</system-reminder>"`),
			[]string{"**User:** Why does TestFoo fail?"}},
		{"slash command", turn("user", "", `"<command-name>/review</command-name>\n<command-message>review</command-message>\n<command-args>PR 12</command-args>"`),
			[]string{"**User:** /review PR 12"}},
		{"slash command without args", turn("user", "", `"<command-message>clear</command-message>\n<command-name>/clear</command-name>\n<command-args></command-args>"`),
			[]string{"**User:** /clear"}},
		{"command output", ask + "\n" + turn("user", "", `"<local-command-stdout>Total cost: $0.12</local-command-stdout>"`),
			[]string{"**User:** Why does TestFoo fail?"}},
		{"bash mode", turn("user", "", `"<bash-input>go test ./...</bash-input>"`) + "\n" +
			turn("user", "", `"<bash-stdout>ok</bash-stdout><bash-stderr></bash-stderr>"`),
			[]string{"**User:** ! go test ./..."}},
		{"system line", ask + "\n" + `{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","sessionId":"s","level":"info"}`,
			[]string{"**User:** Why does TestFoo fail?"}},
		{"the tags in a plain log are text", `{"role":"user","content":"what does <command-name>/x</command-name> mean?"}`,
			[]string{"**User:** what does <command-name>/x</command-name> mean?"}},
		{"a command among other text stays as written", turn("user", "", `"<command-name>/x</command-name> and more"`),
			[]string{"**User:** <command-name>/x</command-name> and more"}},
		// From an audit: the filters took answers that quote the tags.
		{"an answer that starts with a tag is the answer", turn("assistant", "", `[{"type":"text","text":"<bash-stdout> is the tag holding a command's output."}]`),
			[]string{"**Assistant:** <bash-stdout> is the tag holding a command's output."}},
		{"an answer's quoted reminder stays", turn("assistant", "", `[{"type":"text","text":"It said <system-reminder>empty</system-reminder> here."}]`),
			[]string{"**Assistant:** It said <system-reminder>empty</system-reminder> here."}},
	}
	checkChatLogs(t, tests)
}

// A line that holds a whole conversation (fine-tuning sets, ShareGPT) is
// a conversation of its own; a file whose lines are no messages at all is
// an error, not a file with nothing to say.
func TestChatLogShapes(t *testing.T) {
	ft := `{"messages":[{"role":"system","content":"You are helpful"},{"role":"user","content":"question one"},{"role":"assistant","content":"answer one"}]}
{"messages":[{"role":"user","content":"question two"},{"role":"assistant","content":"answer two"}]}`
	tests := []struct {
		name, in string
		want     []string // "id: message | message" per conversation
		err      string
	}{
		{"fine-tuning lines", ft, []string{"1: **User:** question one | **Assistant:** answer one", "2: **User:** question two | **Assistant:** answer two"}, ""},
		{"ShareGPT lines, ids kept", `{"id":"a","conversations":[{"from":"human","value":"hello"},{"from":"gpt","value":"hi"},{"from":"observation","value":"{}"}]}` + "\n\n" +
			`{"conversations":[{"from":"system","value":"rules"},{"from":"human","value":"again"}]}`,
			[]string{"a: **User:** hello | **Assistant:** hi", "3: **User:** again"}, ""},
		{"ShareGPT messages one per line", `{"from":"human","value":"hello"}` + "\n" + `{"from":"gpt","value":"hi"}`,
			[]string{": **User:** hello | **Assistant:** hi"}, ""},
		{"a conversation line beside message lines", `{"role":"user","content":"loose"}` + "\n" + `{"messages":[{"role":"user","content":"whole"}]}`,
			[]string{"2: **User:** whole", ": **User:** loose"}, ""},
		{"an empty conversation", `{"messages":[]}`, nil, ""},
		{"messages without text", `{"role":"user","content":""}` + "\n" + `{"role":"assistant","content":null}`, nil, ""},
		{"only Claude Code bookkeeping", `{"type":"summary","summary":"t","leafUuid":"x"}` + "\n" +
			`{"type":"file-history-snapshot","messageId":"m","snapshot":{}}` + "\n" + `{"type":"queue-operation","operation":"dequeue","sessionId":"s"}`, nil, ""},
		{"blank lines only", "\n  \n", nil, ""},
		{"no line is a message", `{"type":"meta"}` + "\n" + `{"type":"meta","n":2}`, nil,
			`no line is a chat message or a conversation (want "role" and "content", "messages" or "conversations"); line 1 has the key "type": unknown JSON lines format`},
		{"a wrapped log that is no Codex rollout", `{"timestamp":"2025-09-01T10:00:00Z","type":"log_entry","payload":{"type":"message","role":"user","content":"x"}}`, nil,
			`line 1 has the keys "payload", "timestamp", "type"`},
	}
	for _, tt := range tests {
		convs, err := parseString(t, "log.jsonl", tt.in)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || recall.ErrorCode(err) != recall.EINVALID):
			t.Errorf("%s: error %v, want EINVALID containing %q", tt.name, err, tt.err)
		}
		var got []string
		for _, c := range convs {
			got = append(got, c.ID+": "+strings.Join(c.Messages, " | "))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// A Codex rollout is one conversation of its user and assistant messages,
// without the messages Codex writes for the model, its tool traffic, or
// the copies of each message its events hold.
func TestCodexRollout(t *testing.T) {
	meta := `{"timestamp":"2025-10-14T08:31:02.118Z","type":"session_meta","payload":{"id":"s","timestamp":"2025-10-14T08:31:02.101Z","cwd":"/w"}}`
	item := func(role, parts string) string {
		return `{"timestamp":"2025-10-14T08:31:15Z","type":"response_item","payload":{"type":"message","role":"` + role + `","content":` + parts + `}}`
	}
	text := func(s string) string { return `[{"type":"input_text","text":` + strconv.Quote(s) + `}]` }
	event := func(typ, msg string) string {
		return `{"timestamp":"2025-10-14T08:31:16Z","type":"event_msg","payload":{"type":"` + typ + `","message":` + strconv.Quote(msg) + `}}`
	}
	ask := item("user", text("why is the total off by a cent?"))
	tests := []chatLogCase{
		{"items, not their copies in events", meta + "\n" + ask + "\n" + event("user_message", "why is the total off by a cent?") + "\n" +
			item("assistant", `[{"type":"output_text","text":"Each line is rounded."}]`) + "\n" + event("agent_message", "Each line is rounded."),
			[]string{"**User:** why is the total off by a cent?", "**Assistant:** Each line is rounded."}},
		{"events when there are no items", meta + "\n" + event("user_message", "<environment_context>\n<cwd>/w</cwd>\n</environment_context>") + "\n" +
			event("user_message", "add a 404 page") + "\n" + event("agent_message", "Added it."),
			[]string{"**User:** add a 404 page", "**Assistant:** Added it."}},
		{"developer and system messages", meta + "\n" + item("developer", text("<permissions instructions>x</permissions instructions>")) + "\n" +
			item("system", text("be brief")) + "\n" + ask,
			[]string{"**User:** why is the total off by a cent?"}},
		{"AGENTS.md, with and without a path, any case", meta + "\n" +
			item("user", text("# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nrun tests\n</INSTRUCTIONS>")) + "\n" +
			item("user", text("# AGENTS.md instructions\n\n<INSTRUCTIONS>\nrun tests\n</instructions>\n")) + "\n" + ask,
			[]string{"**User:** why is the total off by a cent?"}},
		{"a fragment in one part marks the whole message", meta + "\n" +
			item("user", `[{"type":"input_text","text":"<environment_context><cwd>/w</cwd></environment_context>"},{"type":"input_text","text":"<user_instructions>be brief</user_instructions>"}]`) + "\n" + ask,
			[]string{"**User:** why is the total off by a cent?"}},
		{"a tag that is not a whole fragment is the user's text", meta + "\n" + item("user", text("what does <environment_context> hold?")),
			[]string{"**User:** what does <environment_context> hold?"}},
		{"a shell command without its output", meta + "\n" +
			item("user", text("<user_shell_command>\n<command>\ngit status\n</command>\n<result>\nExit code: 0\nOutput:\nclean\n</result>\n</user_shell_command>")),
			[]string{"**User:** ! git status"}},
		{"tool calls, reasoning, compaction", meta + "\n" + ask + "\n" +
			`{"timestamp":"t","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"thinking"}]}}` + "\n" +
			`{"timestamp":"t","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c"}}` + "\n" +
			`{"timestamp":"t","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"ok"}}` + "\n" +
			`{"timestamp":"t","type":"compacted","payload":{"message":"summary of the session"}}` + "\n" +
			`{"timestamp":"t","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5-codex"}}`,
			[]string{"**User:** why is the total off by a cent?"}},
		{"an older rollout", `{"id":"s","timestamp":"2025-08-18T01:16:13.522Z","instructions":null}` + "\n" + `{"record_type":"state"}` + "\n" +
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n<cwd>/w</cwd>\n</environment_context>"}]}` + "\n" +
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the spinner"}]}` + "\n" +
			`{"type":"function_call","name":"shell","arguments":"{}","call_id":"c"}` + "\n" +
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Fixed."}]}`,
			[]string{"**User:** fix the spinner", "**Assistant:** Fixed."}},
	}
	checkChatLogs(t, tests)

	// A session that only started holds no conversation, and is no error;
	// one without session_meta is dated by its first line.
	if convs, err := parseString(t, "rollout.jsonl", meta+"\n"); err != nil || len(convs) != 0 {
		t.Errorf("meta only: %d conversations, %v", len(convs), err)
	}
	convs, err := parseString(t, "rollout.jsonl", ask)
	if err != nil || len(convs) != 1 || convs[0].Date != "2025-10-14" || convs[0].Title != "why is the total off by a cent?" {
		t.Errorf("no meta: %+v, %v", convs, err)
	}
	// A message whose content is of the wrong type is text lost: it fails
	// the file, naming the line.
	_, err = parseString(t, "rollout.jsonl", meta+"\n"+item("user", "42"))
	if err == nil || !strings.Contains(err.Error(), "line 2: \"content\" is neither text nor content blocks") || recall.ErrorCode(err) != recall.EINVALID {
		t.Errorf("wrong content type: %v", err)
	}
}

// A log read while it is written (Claude Code and Codex append a line at a
// time while a session runs) can end in a line cut short, with no line
// break after it: the lines before it are read, and the fragment left out.
// Any other malformed line still fails the file.
func TestHalfWrittenLastLine(t *testing.T) {
	const (
		user      = `{"role":"user","content":"how long do I knead rye dough?"}`
		assistant = `{"role":"assistant","content":"Briefly: rye has little gluten."}`
		session   = `{"type":"user","message":{"role":"user","content":"rename the flag"},"sessionId":"s","timestamp":"2025-10-14T09:00:00Z"}`
		meta      = `{"timestamp":"2025-10-14T09:00:00Z","type":"session_meta","payload":{"id":"s","timestamp":"2025-10-14T09:00:00Z"}}`
		item      = `{"timestamp":"2025-10-14T09:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the spinner"}]}}`
		set       = `{"id":"a","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`
	)
	for _, tt := range []struct {
		name, file, content string
		messages            []int // of each conversation read
	}{
		{"chat log", "log.jsonl", user + "\n" + assistant + "\n" + `{"role":"user","content":"and how long do I pro`, []int{2}},
		{"cut after a key", "log.jsonl", user + "\n" + `{"role"`, []int{1}},
		{"cut in a literal", "log.jsonl", user + "\n" + `{"role":"user","x":tr`, []int{1}},
		{"cut in a number", "log.jsonl", user + "\n" + `{"role":"user","x":12`, []int{1}},
		{"cut in a character", "log.jsonl", user + "\n" + `{"role":"user","content":"caf` + "\xc3", []int{1}},
		{"cut after spaces", "log.jsonl", user + "\n" + `  {"role": `, []int{1}},
		{"Claude Code session", "session.jsonl", session + "\n" + `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done`, []int{1}},
		{"Codex rollout", "rollout.jsonl", meta + "\n" + item + "\n" + `{"timestamp":"2025-10-14T09:00:02Z","type":"response_item","payload":{"type":"mess`, []int{1}},
		{"fine-tuning set", "set.jsonl", set + "\n" + `{"id":"b","messages":[{"role":"user","content":"h`, []int{2}},
		{"only a first line begun", "log.jsonl", `{"role":"user","content":"hel`, nil},
	} {
		convs, err := parseString(t, tt.file, tt.content)
		var got []int
		for _, c := range convs {
			got = append(got, len(c.Messages))
		}
		if err != nil || !slices.Equal(got, tt.messages) {
			t.Errorf("%s: conversations of %v messages, %v; want %v, no error", tt.name, got, err, tt.messages)
		}
	}
	for _, tt := range []struct{ name, content, err string }{
		{"a line cut short in the middle", user + "\n" + `{"role":"assistant","content":"cut` + "\n" + user + "\n", "line 2: malformed JSON"},
		{"a last line cut short, then a line break", user + "\n" + `{"role":"assistant","content":"cut` + "\n", "line 2: malformed JSON"},
		{"a last line cut short, then blank lines", user + "\n" + `{"role":"assistant","content":"cut` + "\n\n ", "line 2: malformed JSON"},
		{"a malformed last line", user + "\n" + `{"role":"user","content":"x"]`, "line 2: malformed JSON"},
		{"a last line of a value unquoted", user + "\n" + `{"role":user}`, "line 2: malformed JSON"},
		{"a last line of the wrong type", user + "\n" + `{"role":"user","content":42}`, "line 2: \"content\" is neither text nor content blocks"},
		{"a last line not an object", user + "\n" + `["role",`, "line 2 is not a JSON object"},
	} {
		if _, err := parseString(t, "log.jsonl", tt.content); err == nil || !strings.Contains(err.Error(), tt.err) || recall.ErrorCode(err) != recall.EINVALID {
			t.Errorf("%s: %v; want an invalid error saying %q", tt.name, err, tt.err)
		}
	}
}

func TestLongJSONLine(t *testing.T) {
	long := strings.Repeat("word ", 100_000) // 500 KB on one line, past bufio.Scanner's default limit
	convs, err := parseString(t, "log.jsonl", `{"role":"user","content":"`+long+`"}`+"\n"+`{"role":"assistant","content":"ok"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(convs) != 1 || len(convs[0].Messages) != 2 || len(convs[0].Messages[0]) != len("**User:** ")+len(long) {
		t.Fatalf("long line not read whole: %d conversations", len(convs))
	}
}

// A file that is empty or blank holds no conversation, and is no error, in
// every format: an empty .json failed every sweep (a tool's export cut to
// nothing, a file created before it was written), while an empty note and
// an empty log never did.
func TestBlankFilesHoldNoConversation(t *testing.T) {
	for _, name := range []string{"c.json", "conversations.json", "c.jsonl", "c.md", "c.txt"} {
		for _, content := range []string{"", " ", "\n\n", " \t\r\n", "\xEF\xBB\xBF", "\xEF\xBB\xBF \n", "\xFF\xFE", "\xFF\xFE\n\x00"} {
			convs, err := parseString(t, name, content)
			if err != nil || len(convs) != 0 {
				t.Errorf("%s %q: %d conversations, %v; want none and no error", name, content, len(convs), err)
			}
		}
	}
	// Not blank: whatever else is in it is judged as before.
	for _, tt := range []struct{ name, content, err string }{
		{"c.json", "\f", "not JSON"},
		{"c.json", " x ", "not JSON"},
		{"c.jsonl", " x", "not JSON lines"},
		{"c.png", "", "unsupported file type"},
	} {
		if _, err := parseString(t, tt.name, tt.content); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s %q: %v; want an error saying %q", tt.name, tt.content, err, tt.err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		file string
		want []string // substrings of the error
		ok   int      // conversations delivered before the error
	}{
		{"chatgpt-truncated.json", []string{"chatgpt-truncated.json", "element [2]", "after byte", "truncated"}, 1},
		{"chatgpt-wrong-types.json", []string{"element [1]", `"title" is a JSON number, want a string`}, 1},
		{"chatgpt-duplicate-ids.json", []string{"elements [0] and [1]", "same conversation id"}, 1},
		{"chatgpt-trailing-data.json", []string{"data after the end of the array"}, 1},
		{"claude-wrong-types.json", []string{"element [2]", `"chat_messages.content" is a JSON string, want an array`}, 1},
		{"binary.md", []string{"binary content"}, 0},
		{"gzip-garbage.json", []string{"binary content"}, 0},
		{"bad-line.jsonl", []string{"bad-line.jsonl", "line 2", "malformed JSON at byte"}, 0},
		{"not-objects.jsonl", []string{"not JSON lines"}, 0},
	}
	for _, tt := range tests {
		convs, err := parseFile(t, "testdata/"+tt.file)
		if err == nil {
			t.Errorf("%s: no error", tt.file)
			continue
		}
		if code := recall.ErrorCode(err); code != recall.EINVALID {
			t.Errorf("%s: code %s, want %s (%v)", tt.file, code, recall.EINVALID, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", tt.file, err, w)
			}
		}
		if len(convs) != tt.ok {
			t.Errorf("%s: %d conversations before the error, want %d", tt.file, len(convs), tt.ok)
		}
	}
}

func TestMoreMalformedJSON(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"c.json", `[{"id":"a","mapping":{}}, 7]`, `element [1] (after byte 24): the value is a JSON number, want an object`},
		{"c.json", `[{"id":"a","mapping":{}}, {"id":"b","title":"x"}]`, `element [1] has no "mapping"`},
		{"c.json", `[{"mapping":{"a":{"message":{"author":{"role":"user"},"content":{"parts":["hi"]}}}}}]`, `element [0] has no conversation id`},
		{"c.json", `[{"id":"../etc","mapping":{"a":{"message":{"author":{"role":"user"},"content":{"parts":["hi"]}}}}}]`, `unusable conversation id`},
		{"c.json", `[{"chat_messages":[], "uuid":"a"}, {"uuid":"b"}]`, `element [1] has no "chat_messages"`},
		{"c.json", `[{"chat_messages":[{"sender":"human","text":5}], "uuid":"a"}]`, `"chat_messages.text" is a JSON number`},
		{"c.json", `[{"id":"a","mapping":{}} {"id":"b","mapping":{}}]`, `element [1] (after byte 25): malformed JSON at byte 25`},
		{"c.json", `[{"role":"user","content":"hi"},{"role":"user","content":5}]`, `element [1]: "content" is neither text nor content blocks`},
		{"c.json", `{"uuid":"a","chat_messages":[{"sender":"human","text":"hi"}]} {"uuid":"b"}`, `data after the end of the object, at byte`},
		{"c.json", `{"uuid":"a","chat_messages":[{"sender":"human","text":"hi"}]`, `element [0] (after byte 0): truncated`},
		{"c.json", `{"id":"../a","mapping":{}}`, `element [0] has an unusable conversation id`},
		{"c.json", `{"conversations":[{"id":"c","title":"t","mapping":{}}]}`, `element [0]: "conversations" holds no messages (want objects with "role" and "content", or "from" and "value"); its first has the keys "id", "mapping", "title"`},
		{"c.jsonl", `{"messages":[{"id":1},{"id":2}]}`, `line 1: "messages" holds no messages`},
		{"c.jsonl", "{\"role\":\"user\",\"content\":\"a\"}\n{\"role\":\"user\"\n", `line 2: malformed JSON at byte`},
		{"c.json", `[{"id":"a","messages":[]},{"title":"x"}]`, `element [1] has no "messages" or "conversations" array`},
		{"c.json", `[{"id":"a","messages":[]},{"id":"a","messages":[]}]`, `elements [0] and [1] have the same conversation id "a"`},
		{"c.json", `[{"messages":[{"role":"user","content":5}]}]`, `element [0]: "messages"[0]: "content" is neither text nor content blocks`},
		{"c.jsonl", `{"id":"a","messages":[]}` + "\n" + `{"id":"a","messages":[]}`, `lines 1 and 2 have the same conversation id "a"`},
		{"c.jsonl", `{"id":"caf\u00e9","messages":[]}` + "\n" + `{"id":"cafe\u0301","messages":[]}`, `lines 1 and 2 have conversation ids that differ only in Unicode normalisation, "caf\u00e9" and "cafe\u0301"`},
		{"c.json", `[{"uuid":"caf\u00e9","chat_messages":[]},{"uuid":"cafe\u0301","chat_messages":[]}]`, `elements [0] and [1] have conversation ids that differ only in Unicode normalisation`},
		{"c.jsonl", `{"conversations":[{"from":"human","value":"x"}, 3]}`, `line 1: "conversations": the value is a JSON number, want an object`},
		{"c.jsonl", `{"role":"user","text":["x"]}`, `"text": the value is a JSON string, want an object`},
		{"c.jsonl", `{"role":"user","content":[{"type":"text","text":1}]}`, `"content": "text" is a JSON number`},
	}
	for _, tt := range tests {
		_, err := parseString(t, tt.name, tt.content)
		if err == nil || !strings.Contains(err.Error(), tt.want) || recall.ErrorCode(err) != recall.EINVALID {
			t.Errorf("Parse(%s) error = %v, want EINVALID containing %q", tt.content, err, tt.want)
		}
	}
}

// TestLongConversationIDNotQuoted: an id too long to name a source is
// refused by its length, not quoted: it may be text, and the error goes to
// sweep.log, which holds no conversation text.
func TestLongConversationIDNotQuoted(t *testing.T) {
	id := strings.Repeat("my bank password is hunter2 ", 11) // 308 bytes
	_, err := parseString(t, "c.json", `[{"uuid":"`+id+`","chat_messages":[]}]`)
	if err == nil || !strings.Contains(err.Error(), "element [0] has a conversation id of 308 bytes") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error = %v, want the id's length and not the id", err)
	}
}

func TestCallbackErrorStopsParse(t *testing.T) {
	stop := errors.New("stop")
	for _, file := range []string{"chatgpt-export.json", "claude-export.json", "chat-log.jsonl", "locomo-style.md"} {
		f, err := os.Open("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		err = Parse(file, f, nil, func(Conversation) error { calls++; return stop })
		f.Close()
		if err != stop || calls != 1 {
			t.Errorf("%s: Parse = %v after %d calls, want the callback's error after 1", file, err, calls)
		}
	}
}

type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadErrorIsNotInvalidInput(t *testing.T) {
	disk := errors.New("input/output error")
	for _, tt := range []struct{ name, data string }{
		{"c.json", `[{"id":"a","mapping":{}}, {"id":"b","mapp`},
		{"c.jsonl", "{\"role\":\"user\",\"content\":\"a\"}\n{\"ro"},
		{"c.md", "**User:** hi"},
	} {
		err := Parse(tt.name, &failingReader{[]byte(tt.data), disk}, nil, func(Conversation) error { return nil })
		if !errors.Is(err, disk) || recall.ErrorCode(err) == recall.EINVALID {
			t.Errorf("%s: Parse = %v (code %s), want the read error, not EINVALID", tt.name, err, recall.ErrorCode(err))
		}
	}
}

// TestExportIsStreamed feeds an export through a pipe and checks that the
// first conversation arrives before the rest of the file has been written.
func TestExportIsStreamed(t *testing.T) {
	pr, pw := io.Pipe()
	first := `[{"id":"one","mapping":{"a":{"message":{"author":{"role":"user"},"content":{"parts":["first"]}}}}},`
	// The head Parse sniffs, padded so the first conversation is read before
	// the writer blocks.
	pad := strings.Repeat(" ", SniffLen)
	got := make(chan string)
	done := make(chan error)
	go func() {
		done <- Parse("c.json", pr, nil, func(c Conversation) error {
			got <- c.ID
			return nil
		})
	}()
	go func() {
		pw.Write([]byte(first + pad))
	}()
	select {
	case id := <-got:
		if id != "one" {
			t.Fatalf("first conversation id = %q", id)
		}
	case err := <-done:
		t.Fatalf("Parse returned %v before the export was complete", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the first conversation was not delivered before the rest of the export was written")
	}
	go func() {
		pw.Write([]byte(`{"id":"two","mapping":{"a":{"message":{"author":{"role":"user"},"content":{"parts":["second"]}}}}}]`))
		pw.Close()
	}()
	if id := <-got; id != "two" {
		t.Fatalf("second conversation id = %q", id)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Text in UTF-8, UTF-16 with a byte order mark or Windows-1252 is read;
// UTF-8 with a few damaged bytes (a character cut short among them) keeps
// the rest; other legacy encodings,
// which would decode to mojibake, and binary content are errors.
func TestEncodings(t *testing.T) {
	utf16be := func(s string) string {
		b := []byte{0xFE, 0xFF}
		for _, r := range s {
			b = append(b, byte(r>>8), byte(r))
		}
		return string(b)
	}
	const (
		frCP1252 = "Moi : O\xf9 est la cl\xe9 ? \xc7a d\xe9pend de l'\xe9t\xe9.\n"
		deCP1252 = "User: K\xf6nnen Sie mir helfen? Die Gr\xf6\xdfe \x84passt\x93 nicht.\n"
		ruCP1251 = "User: \xcf\xf0\xe8\xe2\xe5\xf2, \xea\xe0\xea \xe4\xe5\xeb\xe0?\n"                   // Привет, как дела?
		zhGBK    = "\xd3\xc3\xbb\xa7\xa3\xba\xb1\xa1\xba\xc9\xb2\xe8\xd4\xf5\xc3\xb4\xc5\xdd\xa3\xbf\n" // 用户：薄荷茶怎么泡？
	)
	legacy := "not UTF-8 text (a legacy encoding"
	tests := []struct{ name, content, want, err string }{
		{"a.json", "\xef\xbb\xbf" + `[{"role":"user","content":"bom"}]`, "**User:** bom", ""},
		{"a.jsonl", "\xef\xbb\xbf" + `{"role":"user","content":"bom"}`, "**User:** bom", ""},
		{"a.md", utf16be("User: grüß dich\n"), "User: grüß dich", ""},
		{"a.json", utf16be(`[{"role":"user","content":"wide"}]`), "**User:** wide", ""},
		{"a.md", "User: caf\xe9", "User: café", ""},
		{"a.txt", frCP1252, "Moi : Où est la clé ? Ça dépend de l'été.", ""},
		{"a.md", deCP1252, "User: Können Sie mir helfen? Die Größe „passt“ nicht.", ""},
		{"a.jsonl", `{"role":"user","content":"caf` + "\xe9" + `"}`, "**User:** café", ""},
		{"a.json", `[{"role":"user","content":"` + strings.TrimSuffix(frCP1252, "\n") + `"}]`, "**User:** Moi : Où est la clé ? Ça dépend de l'été.", ""},
		{"a.md", "User: naïve café, déjà vu \xff and more", "User: naïve café, déjà vu \uFFFD and more", ""},
		{"a.md", "User: Caf\xc3\xa9 ok, stray \xff and \xfe and \x80 bytes", "User: Café ok, stray \uFFFD and \uFFFD and \uFFFD bytes", ""},
		{"a.md", "User: thanks, see you \xf0\x9f\x98", "User: thanks, see you \uFFFD", ""}, // an emoji cut short
		{"a.md", "User: great \xe2\x80 work", "User: great \uFFFD work", ""},
		{"a.jsonl", `{"role":"user","content":"see you ` + "\xf0\x9f\x98" + `"}`, "**User:** see you \uFFFD\uFFFD\uFFFD", ""},
		{"a.md", ruCP1251, "", legacy},
		{"a.txt", zhGBK, "", legacy},
		{"a.jsonl", `{"role":"user","content":"` + strings.TrimSpace(ruCP1251) + `"}`, "", legacy},
		{"a.md", "User: caf\xe9 \x81", "", legacy}, // 0x81 is no Windows-1252 character
		{"a.md", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "", "binary content (byte 8)"},
		{"a.txt", strings.Repeat("\x1b]0;user@host: ~\x07\x1b[?2004h$ make\x07\x08\r\n", 30), strings.TrimSpace(strings.Repeat("\x1b]0;user@host: ~\x07\x1b[?2004h$ make\x07\x08\n", 30)), ""}, // a terminal log
		{"a.txt", "\x7fELF\x02\x01\x01\x03\x02\x01\x01\x03\x02 and a little text", "", "binary content (byte 0)"},
	}
	for _, tt := range tests {
		convs, err := parseString(t, tt.name, tt.content)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) || recall.ErrorCode(err) != recall.EINVALID {
				t.Errorf("%s %q: error %v, want EINVALID containing %q", tt.name, tt.content, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s %q: %v", tt.name, tt.content, err)
		case len(convs) != 1 || len(convs[0].Messages) != 1 || convs[0].Messages[0] != tt.want:
			t.Errorf("%s %q: got %+v, want one message %q", tt.name, tt.content, convs, tt.want)
		}
	}
}

// A large export is not judged by its head: one stray byte among the ASCII
// of its first conversations made the whole stream Windows-1252, and every
// accented letter after them mojibake.
func TestLargeExportKeepsUTF8AfterAStrayByte(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := range 700 {
		text := "plain ascii text of a conversation, long enough to fill the head of the file"
		if i == 0 {
			text = "a stray \x92 byte " + text
		}
		fmt.Fprintf(&b, `{"uuid":"c%d","name":"n%d","chat_messages":[{"uuid":"m","sender":"human","text":"%s"}]},`, i, i, text)
	}
	b.WriteString(`{"uuid":"late","name":"Café","chat_messages":[{"uuid":"m","sender":"human","text":"Grüße aus Köln"}]}]`)
	if b.Len() <= SniffLen {
		t.Fatal("the export fits in the head: this test proves nothing")
	}
	convs, err := parseString(t, "conversations.json", strings.Replace(b.String(), `\x92`, "\x92", 1))
	if err != nil {
		t.Fatal(err)
	}
	last := convs[len(convs)-1]
	if last.Title != "Café" || last.Messages[0] != "**User:** Grüße aus Köln" {
		t.Errorf("the last conversation: %q %q", last.Title, last.Messages)
	}
}

// Turns between two rules are conversation, not front matter.
func TestFrontMatterDoesNotEatTurns(t *testing.T) {
	c := parseMarkdown("chat.md", "---\nUser: what is 2+2?\nAssistant: 4\n---\nUser: thanks\n")
	if !strings.Contains(strings.Join(c.Messages, "\n"), "what is 2+2?") {
		t.Errorf("turns lost: %q", c.Messages)
	}
}

// Turns of named speakers between two rules are conversation too: a block
// that repeats a key, or whose keys speak again below it, is no front
// matter, and its text stays.
func TestFrontMatterDoesNotEatNamedTurns(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"---\nCaroline: Hey Mel, I told my sister about the adoption.\nMelanie: That's huge! How did she take it?\n---\nCaroline: She cried, in a good way.\nMelanie: I'm so happy for you.\n", "adoption"},
		{"---\nQ: what is the boiling point of water?\nA: 100 C at sea level.\nQ: and on Everest?\nA: about 70 C.\n---\n", "boiling"},
		{"---\nSam: are we still on for Friday?\nSam: I booked the table.\n---\n", "booked"},
	} {
		if c := parseMarkdown("chat.md", tt.in); !strings.Contains(strings.Join(c.Messages, "\n"), tt.want) {
			t.Errorf("%q: turns lost: %q", tt.in, c.Messages)
		}
	}
}

// gptExport builds a ChatGPT export of one conversation whose messages are
// a chain in the order given; each is {role, recipient, content}.
func gptExport(msgs ...[3]string) string {
	var b strings.Builder
	b.WriteString(`[{"id":"c","title":"t","mapping":{"root":{"children":["m0"]}`)
	parent := "root"
	for i, m := range msgs {
		id := fmt.Sprintf("m%d", i)
		fmt.Fprintf(&b, `,%q:{"parent":%q,"message":{"author":{"role":%q},"recipient":%q,"content":%s}}`, id, parent, m[0], m[1], m[2])
		parent = id
	}
	fmt.Fprintf(&b, `},"current_node":%q}]`, parent)
	return b.String()
}

// An assistant message to a tool is a call, not an answer the user read;
// code for the code interpreter is shown, and kept.
func TestChatGPTToolCalls(t *testing.T) {
	code := func(lang, text string) string {
		return fmt.Sprintf(`{"content_type":"code","language":%q,"text":%q}`, lang, text)
	}
	in := gptExport(
		[3]string{"user", "all", `{"content_type":"text","parts":["Find flights to Goa"]}`},
		[3]string{"assistant", "web.run", code("unknown", `{"search_query":[{"q":"flights goa"}]}`)},
		[3]string{"tool", "all", `{"content_type":"tether_browsing_display","result":"3 flights"}`},
		[3]string{"assistant", "all", `{"content_type":"text","parts":["Here are 3 flights."]}`},
		[3]string{"assistant", "dalle.text2im", code("unknown", `{"prompt":"a watercolor cat"}`)},
		[3]string{"assistant", "bio", code("unknown", "User likes cats")},
		[3]string{"assistant", "browser", code("unknown", "search('goa')")},
		[3]string{"assistant", "python", code("python", "print(1+1)")},
		[3]string{"tool", "all", `{"content_type":"execution_output","text":"2"}`},
		[3]string{"assistant", "", `{"content_type":"text","parts":["The result is 2."]}`},
		[3]string{"assistant", "All", `{"content_type":"text","parts":["Anything else?"]}`},
	)
	checkGPTMessages(t, in,
		"**User:** Find flights to Goa",
		"**Assistant:** Here are 3 flights.",
		"**Assistant:**\n```python\nprint(1+1)\n```",
		"**Assistant:** The result is 2.",
		"**Assistant:** Anything else?",
	)
}

// checkGPTMessages checks that the export in, of one conversation, reads as
// the messages want.
func checkGPTMessages(t *testing.T, in string, want ...string) {
	t.Helper()
	convs, err := parseString(t, "conversations.json", in)
	if err != nil || len(convs) != 1 {
		t.Fatalf("%d conversations, %v", len(convs), err)
	}
	if got := convs[0].Messages; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A canvas document is shown as it was created, and as a whole rewrite
// made it; an update of a piece of it, and the model's comments on it, are
// left out.
func TestChatGPTCanvas(t *testing.T) {
	code := func(v string) string {
		return fmt.Sprintf(`{"content_type":"code","language":"json","text":%q}`, v)
	}
	in := gptExport(
		[3]string{"user", "all", `{"content_type":"text","parts":["Write the letter in a canvas"]}`},
		[3]string{"assistant", "canmore.create_textdoc", code(`{"name":"Letter","type":"document","content":"Dear Ann,\n\nThanks."}`)},
		[3]string{"tool", "all", `{"content_type":"text","parts":["Successfully created text document 'Letter'"]}`},
		[3]string{"assistant", "canmore.update_textdoc", code(`{"updates":[{"pattern":"Ann","replacement":"Anna"}]}`)},
		[3]string{"assistant", "canmore.comment_textdoc", code(`{"comments":[{"pattern":"Thanks","comment":"Say for what"}]}`)},
		[3]string{"assistant", "canmore.create_textdoc", `{"content_type":"text","parts":["{\"name\":\"totals\",\"type\":\"code/python\",\"content\":\"print(1)\"}"]}`},
		[3]string{"assistant", "canmore.update_textdoc", code(`{"updates":[{"pattern":"(?s)^.*$","multiple":false,"replacement":"print(2)"}]}`)},
		[3]string{"assistant", "canmore.update_textdoc", code(`{"updates":[{"pattern":".*","replacement":"print(3)"},{"pattern":"3","replacement":"4"}]}`)},
		[3]string{"assistant", "canmore.create_textdoc", code(`not JSON`)},
		[3]string{"assistant", "canmore.create_textdoc", code(`{"name":"empty","type":"document","content":" "}`)},
	)
	checkGPTMessages(t, in,
		"**User:** Write the letter in a canvas",
		"**Assistant:** [canvas: Letter]\nDear Ann,\n\nThanks.",
		"**Assistant:** [canvas: totals]\n```python\nprint(1)\n```",
		"**Assistant:** [canvas: totals]\n```python\nprint(2)\n```",
	)
	if got := fallbackTitle([]string{"**Assistant:** [canvas: Letter]\nDear Ann,"}); got != "Dear Ann," {
		t.Errorf("fallback title %q, want the document's first line", got)
	}
}

// ChatGPT's inline references are delimited by private-use characters: a
// citation goes, an entity reads as its name, other kinds go. Earlier
// plain-text citations go too.
func TestChatGPTMarkers(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Here are 3 flights \ue200cite\ue202turn0search1\ue202turn0news4\ue201.", "Here are 3 flights."},
		{"Visit \ue200entity\ue202[\"city\",\"Panaji\"]\ue201 too.", "Visit Panaji too."},
		{"Visit \ue200entity\ue202[\"city\",\"Panaji\",\"capital of Goa\"]\ue201.", "Visit Panaji."},
		{"\ue200image_group\ue202{\"query\":[\"goa beach\"]}\ue201Goa has beaches \ue200cite\ue202turn0search0\ue201 and forts.", "Goa has beaches and forts."},
		{"See \ue200navlist\ue202News\ue202turn0news1,turn0news2\ue201", "See"},
		{"a broken \ue200entity\ue202[\"city\"]\ue201 entity", "a broken entity"},
		{"cut short \ue200cite\ue202turn0", "cut short citeturn0"},
		{"no markers at all", "no markers at all"},
		// Earlier browsing and file search cited in plain text.
		{"The answer is 42 【11†source】 and done.", "The answer is 42 and done."},
		{"Revenue grew 8%【4:0†report.pdf】. Costs fell【8†L12-L20】.", "Revenue grew 8%. Costs fell."},
		{"Prices rose 【1†source】【2†source】.", "Prices rose."},
		{"Prices rose \ue200cite\ue202turn0search1\ue201\ue200cite\ue202turn0search2\ue201.", "Prices rose."},
		{"a dagger † and brackets 【not a citation】 stay", "a dagger † and brackets 【not a citation】 stay"},
	}
	for _, tt := range tests {
		in := gptExport([3]string{"assistant", "all", `{"content_type":"text","parts":[` + strconv.Quote(tt.in) + `]}`})
		convs, err := parseString(t, "conversations.json", in)
		if err != nil || len(convs) != 1 {
			t.Errorf("%q: %d conversations, %v", tt.in, len(convs), err)
			continue
		}
		if got, want := convs[0].Messages[0], "**Assistant:** "+tt.want; got != want {
			t.Errorf("%q: got %q, want %q", tt.in, got, want)
		}
	}
	// The user's own text is theirs, private-use characters and all.
	in := gptExport([3]string{"user", "all", `{"content_type":"text","parts":["icon \ue200x\ue201"]}`})
	if convs, err := parseString(t, "conversations.json", in); err != nil || convs[0].Messages[0] != "**User:** icon \ue200x\ue201" {
		t.Errorf("user text changed: %+v, %v", convs, err)
	}
}

// A conversation of an export without a title is named by its first user
// line; a whole file is not (the sweep names it by its file name).
func TestFallbackTitle(t *testing.T) {
	long := "Could you help me plan a week of vegetarian dinners for two people who both dislike mushrooms and olives?"
	tests := []struct {
		messages []string
		want     string
	}{
		{[]string{"**User:** What is the capital of Australia?", "**Assistant:** Canberra."}, "What is the capital of Australia?"},
		{[]string{"**Assistant:** Hello!", "**User:**\n```go\nfmt.Println(1)\n```"}, "fmt.Println(1)"},
		{[]string{"**User:** [image]\nWhat is in this picture?"}, "What is in this picture?"},
		{[]string{"**User:**\n## Plan\n- step one"}, "Plan"},
		{[]string{"**User:** " + long}, "Could you help me plan a week of vegetarian dinners for two people who both…"},
		{[]string{"**User:** " + strings.Repeat("薄荷", 50)}, strings.Repeat("薄荷", 40) + "…"},
		{[]string{"**Ingrid:** So pasta takes   longer?"}, "So pasta takes longer?"},
		{[]string{"plain text"}, "plain text"},
		{[]string{"**User:** [image]"}, ""},
		{[]string{"**Assistant:** **Answer:** y"}, "Answer: y"},
		{[]string{"**User:** is __this__ **the** way?"}, "is this the way?"},
	}
	for _, tt := range tests {
		if got := fallbackTitle(tt.messages); got != tt.want {
			t.Errorf("fallbackTitle(%q) = %q, want %q", tt.messages, got, tt.want)
		}
	}
	in := `[{"uuid":"c1","name":"  ","chat_messages":[{"sender":"human","text":"Why is the sky blue?\nAsking for a friend."}]},` +
		`{"uuid":"c2","name":"Named","chat_messages":[{"sender":"human","text":"hi"}]}]`
	convs, err := parseString(t, "conversations.json", in)
	if err != nil || len(convs) != 2 || convs[0].Title != "Why is the sky blue?" || convs[1].Title != "Named" {
		t.Errorf("export titles: %+v, %v", convs, err)
	}
	if convs, err := parseString(t, "log.jsonl", `{"role":"user","content":"hi"}`); err != nil || convs[0].Title != "" {
		t.Errorf("a whole file got a title: %+v, %v", convs, err)
	}
}

// Without current_node, an orphan node (its parent pruned) does not stand
// for the whole conversation.
func TestChatGPTMissingCurrentNodeWithOrphan(t *testing.T) {
	in := `[{"id":"c","mapping":{
	 "root":{"children":["u"]},
	 "u":{"parent":"root","children":["a"],"message":{"author":{"role":"user"},"content":{"parts":["question"]}}},
	 "a":{"parent":"u","message":{"author":{"role":"assistant"},"content":{"parts":["answer"]}}},
	 "0rphan":{"parent":"pruned","message":{"author":{"role":"user"},"content":{"parts":["stray"]}}}}}]`
	var got []string
	Parse("conversations.json", strings.NewReader(in), nil, func(c Conversation) error { got = c.Messages; return nil })
	if want := []string{"**User:** question", "**Assistant:** answer"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A node missing from the middle of the displayed branch (pruned from the
// export) does not drop every message above it: the walk goes on from the
// node that lists it among its children, or lists the node below it, and
// where none does, the path of newest children from the root comes first.
func TestChatGPTGapInBranch(t *testing.T) {
	msg := func(role, text string) string {
		return `"message":{"author":{"role":"` + role + `"},"content":{"content_type":"text","parts":["` + text + `"]}}`
	}
	tests := []struct{ name, rootChildren, bChildren string }{
		{"the parent listed by its own parent", `["a","z"]`, `["c"]`},
		{"the node listed by another", `["a","z"]`, `["d"]`},
		{"nothing lists either", `["a"]`, `[]`},
	}
	for _, tt := range tests {
		in := `[{"id":"x","title":"t","current_node":"e","mapping":{
		"root":{"children":` + tt.rootChildren + `},
		"z":{"parent":"root","children":[],` + msg("user", "a newer first question, not shown") + `},
		"a":{"parent":"root","children":["b"],` + msg("user", "first question") + `},
		"b":{"parent":"a","children":` + tt.bChildren + `,` + msg("assistant", "first answer") + `},
		"d":{"parent":"c","children":["e"],` + msg("user", "second question") + `},
		"e":{"parent":"d","children":[],` + msg("assistant", "second answer") + `}}}]`
		var got []string
		if err := Parse("conversations.json", strings.NewReader(in), nil, func(c Conversation) error { got = c.Messages; return nil }); err != nil {
			t.Fatal(err)
		}
		want := []string{"**User:** first question", "**Assistant:** first answer", "**User:** second question", "**Assistant:** second answer"}
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, want)
		}
	}
}

// "mapping": null is a conversation with nothing in it, as Claude's
// "chat_messages": null is: the export's other conversations are read. A
// conversation without the key is still no ChatGPT conversation
// (TestMoreMalformedJSON).
func TestChatGPTNullMapping(t *testing.T) {
	in := `[{"id":"a","title":"kept","mapping":{"r":{"message":{"author":{"role":"user"},"content":{"content_type":"text","parts":["hello"]}}}},"current_node":"r"},
	{"id":"b","title":"empty","mapping":null,"current_node":null}]`
	convs, err := parseString(t, "conversations.json", in)
	if err != nil || len(convs) != 1 || convs[0].Title != "kept" {
		t.Errorf("got %d conversations, %v; want the one with messages", len(convs), err)
	}
}

// A timestamp of an unexpected type or form is unknown, never an error
// that rejects the whole export; chat_messages null is a conversation with
// no messages.
func TestExportTimestampsAreLenient(t *testing.T) {
	gpt := func(created, message string) string {
		return `[{"id":"c1","title":"t","create_time":` + created + `,"mapping":{` +
			`"r":{"parent":null,"children":["u"],"message":null},` +
			`"u":{"parent":"r","children":[],"message":{"author":{"role":"user"},"create_time":` + message + `,"content":{"content_type":"text","parts":["hello"]}}}},` +
			`"current_node":"u"}]`
	}
	claude := func(created string) string {
		return `[{"uuid":"c1","name":"t","created_at":` + created + `,"updated_at":{"a":[1]},"chat_messages":[{"sender":"human","text":"hello"}]}]`
	}
	may1 := time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name, content string
		created       time.Time
	}{
		{"chatgpt text time", gpt(`"2024-05-01T08:00:00Z"`, `null`), may1},
		{"chatgpt milliseconds", gpt(`1714550400000`, `null`), may1},
		{"chatgpt object time", gpt(`{"t":1}`, `1714550400`), may1}, // the first message's time stands in
		{"chatgpt bad message time", gpt(`null`, `"soon"`), time.Time{}},
		{"claude seconds", claude(`1714550400`), may1},
		{"claude bad text", claude(`"the first of May"`), time.Time{}},
		{"claude boolean", claude(`true`), time.Time{}},
		{"claude array", claude(`[2024]`), time.Time{}},
	}
	for _, tt := range tests {
		convs, err := parseString(t, "conversations.json", tt.content)
		if err != nil || len(convs) != 1 {
			t.Errorf("%s: %d conversations, %v", tt.name, len(convs), err)
			continue
		}
		if c := convs[0]; !c.Created.Equal(tt.created) || c.Date != dateOf(tt.created) || !c.Updated.IsZero() && !c.Updated.Equal(tt.created) {
			t.Errorf("%s: Created %v, Updated %v, Date %q; want %v", tt.name, c.Created, c.Updated, c.Date, tt.created)
		}
	}

	convs, err := parseString(t, "conversations.json", `[{"uuid":"c1","name":"empty","chat_messages":null},`+
		`{"uuid":"c2","name":"t","chat_messages":[{"sender":"human","text":"hello"}]}]`)
	if err != nil || len(convs) != 1 || convs[0].ID != "c2" {
		t.Errorf("chat_messages null: %v, %v", convs, err)
	}
}

// The other files of an export hold no conversations and are no error,
// while the same content named as anything else still is one.
func TestExportCompanions(t *testing.T) {
	companions := map[string]string{
		"user.json":                        `{"id":"user-1","email":"a@example.com","chatgpt_plus_user":true}`,
		"export/message_feedback.json":     `[{"id":"f","conversation_id":"c","user_id":"u","rating":"thumbsUp","content":"{}"}]`,
		"export/shared_conversations.json": `[{"id":"s","conversation_id":"c","title":"t","is_anonymous":true}]`,
		"model_comparisons.json":           `[{"id":"m","conversation_id":"c","input":{"messages":[{"author":{"role":"user"}}]}}]`,
		`claude\users.json`:                `[{"uuid":"u","full_name":"Ann","email_address":"a@example.com"}]`,
		"Claude/Projects.json":             `[{"uuid":"p","name":"proj","docs":[{"uuid":"d","filename":"x.md","content":"zebra notes"}]}]`,
		"not-user.json":                    `{}`, // another name: an error
	}
	for name, content := range companions {
		convs, err := parseString(t, name, content)
		if name == "not-user.json" {
			if err == nil {
				t.Errorf("%q: no error", name)
			}
			continue
		}
		if err != nil || len(convs) != 0 {
			t.Errorf("%s: %d conversations, %v; want none and no error", name, len(convs), err)
		}
		if _, err := parseString(t, "conversations.json", content); recall.ErrorCode(err) != recall.EINVALID {
			t.Errorf("%s as conversations.json: %v, want EINVALID", name, err)
		}
	}
	// A companion's name does not hide conversations.
	convs, err := parseString(t, "users.json", `[{"role":"user","content":"hi"}]`)
	if err != nil || len(convs) != 1 {
		t.Errorf("messages named users.json: %d conversations, %v", len(convs), err)
	}
}

// A NUL character escaped in a JSON export reaches the caller as U+FFFD:
// no store keeps it (PostgreSQL refuses it).
func TestNULBecomesReplacementCharacter(t *testing.T) {
	export := `[{"uuid": "c1", "name": "a \u0000 title", "created_at": "2025-08-14T09:30:00Z", "chat_messages": [` +
		`{"uuid": "m1", "sender": "human", "text": "a nul \u0000 here", "created_at": "2025-08-14T09:30:00Z"}]}]`
	var got []Conversation
	if err := Parse("conversations.json", strings.NewReader(export), nil, func(c Conversation) error {
		got = append(got, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d conversations", len(got))
	}
	c := got[0]
	for _, s := range append([]string{c.ID, c.Title}, c.Messages...) {
		if strings.ContainsRune(s, 0) {
			t.Errorf("%q holds a NUL", s)
		}
	}
	if !strings.Contains(c.Messages[0], "a nul \uFFFD here") || c.Title != "a \uFFFD title" {
		t.Errorf("conversation %+v", c)
	}
}

// ChatGPT's placeholder title, "New chat", which many conversations of an
// export keep, is no title: the conversation is titled by its first line.
func TestChatGPTPlaceholderTitle(t *testing.T) {
	for _, tt := range []struct{ title, want string }{
		{"New chat", "How long to boil an egg?"},
		{" New chat ", "How long to boil an egg?"},
		{"New chat about eggs", "New chat about eggs"},
	} {
		in := `[{"title": ` + strconv.Quote(tt.title) + `, "id": "x1", "current_node": "a", "mapping": {"a": {"id": "a", "parent": null, "children": [],` +
			` "message": {"id": "a", "author": {"role": "user"}, "content": {"content_type": "text", "parts": ["How long to boil an egg?\nSoft."]}}}}}]`
		convs, err := parseString(t, "conversations.json", in)
		if err != nil || len(convs) != 1 || convs[0].Title != tt.want {
			t.Errorf("title %q: %+v, %v; want title %q", tt.title, convs, err, tt.want)
		}
	}
}
