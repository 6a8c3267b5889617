package convo

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMarkdownTurns(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{{
		name: "bold labels split at every turn",
		in:   "**Caroline:** hi\n\n**Melanie:** hello\nstill Melanie\n\n**Caroline:** bye",
		want: []string{"**Caroline:** hi", "**Melanie:** hello\nstill Melanie", "**Caroline:** bye"},
	}, {
		name: "bold label with the colon outside",
		in:   "**User**: a\n**Assistant**: b",
		want: []string{"**User**: a", "**Assistant**: b"},
	}, {
		name: "full-width colon and names in other scripts",
		in:   "**小明：**你好\n\n**Zoë:** hej\n\n**小明：** 再见",
		want: []string{"**小明：**你好", "**Zoë:** hej", "**小明：** 再见"},
	}, {
		name: "a speaker who talks once is a turn in a conversation",
		in:   "**Ann:** one\n\n**Bob:** two\n\n**Ann:** three\n\n**Cy:** four",
		want: []string{"**Ann:** one", "**Bob:** two", "**Ann:** three", "**Cy:** four"},
	}, {
		name: "consecutive bold label lines are turns",
		in:   "**Ann:** one\n**Bob:** two\n**Ann:** three",
		want: []string{"**Ann:** one", "**Bob:** two", "**Ann:** three"},
	}, {
		name: "heading turns with and without colon",
		in:   "## User\nq\n\n### Assistant:\na\n\n#### Human\nq2",
		want: []string{"## User\nq", "### Assistant:\na", "#### Human\nq2"},
	}, {
		name: "role words as line prefixes",
		in:   "User: q\nAI: a\nHuman: q2\nClaude: a2\nChatGPT: a3\nMe: q3\nSystem: s\nYou: y\nAssistant: z",
		want: []string{"User: q", "AI: a", "Human: q2", "Claude: a2", "ChatGPT: a3", "Me: q3", "System: s", "You: y", "Assistant: z"},
	}, {
		name: "plain names need two turns",
		in:   "Ravi: one\nLena: two\nRavi: three\nLena: four",
		want: []string{"Ravi: one", "Lena: two", "Ravi: three", "Lena: four"},
	}, {
		name: "a one-off plain label is prose",
		in:   "User: see the form\nExample: foo\nWarning: bar\nAnswer: baz",
		want: []string{"User: see the form\nExample: foo\nWarning: bar\nAnswer: baz"},
	}, {
		name: "prose labels never split, even repeated",
		in:   "User: a\nNote: one\nNote: two\n\n**Note:** three",
		want: []string{"User: a\nNote: one\nNote: two\n\n**Note:** three"},
	}, {
		name: "no markers: paragraphs",
		in:   "First paragraph\nwith two lines.\n\n\nSecond.\n\n**Note:** third.",
		want: []string{"First paragraph\nwith two lines.", "Second.", "**Note:** third."},
	}, {
		name: "level 1 and 5 headings and long headings are not turns",
		in:   "# User\n\n##### Assistant\n\n## What I learned about sourdough this year\n\ntext",
		want: []string{"# User", "##### Assistant", "## What I learned about sourdough this year", "text"},
	}, {
		name: "one-off headings in notes are paragraphs",
		in:   "## Setup\n\nstep one\n\n## Usage\n\nrun it",
		want: []string{"## Setup", "step one", "## Usage", "run it"},
	}, {
		name: "markers inside code fences are text",
		in:   "User: run this\n\n~~~\nAssistant: not a turn\n\n## User\n~~~\n\nAssistant: done",
		want: []string{"User: run this\n\n~~~\nAssistant: not a turn\n\n## User\n~~~", "Assistant: done"},
	}, {
		name: "a longer fence is closed only by a fence at least as long",
		in:   "User: x\n````\n```\nAssistant: inside\n````\nAssistant: outside",
		want: []string{"User: x\n````\n```\nAssistant: inside\n````", "Assistant: outside"},
	}, {
		name: "indented lines are code",
		in:   "User: x\n\n    Assistant: indented code\n\tAssistant: tab\nAssistant: real",
		want: []string{"User: x\n\n    Assistant: indented code\n\tAssistant: tab", "Assistant: real"},
	}, {
		name: "urls and times are not labels",
		in:   "User: see\nhttps://example.com/a\nAt 10:30 it failed\nHttps://x.org",
		want: []string{"User: see\nhttps://example.com/a\nAt 10:30 it failed\nHttps://x.org"},
	}, {
		name: "lowercase plain labels are prose, bold ones are not",
		in:   "so: this\nso: that\n\n**ann:** hi\n\n**ann:** again",
		want: []string{"so: this\nso: that", "**ann:** hi", "**ann:** again"},
	}, {
		name: "text before the first marker becomes its own blocks",
		in:   "# Chat\nDate: 2023-05-08\n\nintro\n\n**User:** q",
		want: []string{"# Chat\nDate: 2023-05-08", "intro", "**User:** q"},
	}, {
		name: "blank lines trimmed at block edges, inner text verbatim",
		in:   "\n\n**User:**   q  \n\n\n   indented\n\n\n**Assistant:** a\n\n",
		want: []string{"**User:**   q  \n\n\n   indented", "**Assistant:** a"},
	}, {
		name: "CRLF line endings",
		in:   "User: a\r\nstill a\r\n\r\nAssistant: b\r\n",
		want: []string{"User: a\nstill a", "Assistant: b"},
	}, {
		name: "French spacing before the colon",
		in:   "Utilisateur : bonjour\nAssistant : salut\nUtilisateur : merci",
		want: []string{"Utilisateur : bonjour", "Assistant : salut", "Utilisateur : merci"},
	}, {
		name: "empty and blank files have no blocks",
		in:   " \n\t\n",
		want: nil,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseMarkdown("t.md", tt.in).Messages
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("blocks:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestMarkdownTitleAndDate(t *testing.T) {
	tests := []struct {
		name, file, in       string
		title, date, created string
		firstBlock           string
	}{
		{"front matter", "a.md", "---\ntitle: \"A \\\"quoted\\\" title\"\ndate: 2023-05-08\n---\n# Heading\n\nbody", `A "quoted" title`, "2023-05-08", "", "# Heading"},
		{"single-quoted front matter", "a.md", "---\ntitle: 'It''s'\ndate: '8 May 2023'   \n---\nbody", "It's", "2023-05-08", "", "body"},
		{"front matter with comment and list", "a.md", "---\ntags:\n  - a\n- b\ntitle: Plain # comment\n...\nbody", "Plain", "", "", "body"},
		{"front matter block scalar", "a.md", "---\ntitle: >\n  Folded\n  title\ndate: 2020\n---\nbody", "Folded title", "2020", "", "body"},
		{"front matter created", "a.md", "---\ntags: [chat]\ncreated: 2023-05-08\n---\nbody", "", "2023-05-08", "", "body"},
		{"front matter date over created", "a.md", "---\ncreate_time: 2023-05-08T13:56:00+02:00\ndate: 2024-01-02\n---\nbody", "", "2024-01-02", "", "body"},
		{"front matter timestamp", "a.md", "---\ndate: 2023-05-08T13:56:00+02:00\n---\nbody", "", "2023-05-08", "2023-05-08T11:56:00Z", "body"},
		{"unclosed front matter is text", "a.md", "---\ntitle: x\nbody", "", "", "", "---\ntitle: x\nbody"},
		{"capitalised front matter over named turns", "a.md", "---\nTitle: Tea\nAuthor: Ann\nDate: 2023-05-08\n---\nCaroline: a\nMelanie: b\nCaroline: c\nMelanie: d\n", "Tea", "2023-05-08", "", "Caroline: a"},
		{"epoch seconds in front matter", "a.md", "---\ndate: 1709703000\n---\nbody", "", "2024-03-06", "2024-03-06T05:30:00Z", "body"},
		{"epoch milliseconds in front matter", "a.md", "---\ncreated: 1709703000000\n---\nbody", "", "2024-03-06", "2024-03-06T05:30:00Z", "body"},
		{"compact date in front matter", "a.md", "---\ndate: '20240306'\n---\nbody", "", "2024-03-06", "", "body"},
		{"date the heading begins with", "notes.md", "# 2024-03-06 Standup\n\ntext", "2024-03-06 Standup", "2024-03-06", "", "# 2024-03-06 Standup"},
		{"a date line over the heading's", "notes.md", "# 2024-03-06 Standup\n\nDate: 2024-03-07\n\ntext", "2024-03-06 Standup", "2024-03-07", "", "# 2024-03-06 Standup"},
		{"the heading's date over the file name's", "2001-01-01.md", "# 2024-03-06 Standup\n\ntext", "2024-03-06 Standup", "2024-03-06", "", "# 2024-03-06 Standup"},
		{"a year in the heading is no date", "notes.md", "# 2048 game notes\n\ntext", "2048 game notes", "", "", "# 2048 game notes"},
		{"heading title and LoCoMo date", "a.md", "# Session 1\n\nDate: 1:56 pm on 8 May, 2023\n\n**A:** x\n\n**A:** y", "Session 1", "2023-05-08", "2023-05-08T13:56:00Z", "# Session 1"},
		{"closed heading", "a.md", "# Title ##\ntext", "Title", "", "", "# Title ##\ntext"},
		{"bold date line", "a.md", "**Date:** May 8, 2023\n\nUser: x", "", "2023-05-08", "", "**Date:** May 8, 2023"},
		{"full-width date line", "a.md", "Date：2023年\n\nDate: 2023-06\n", "", "", "", "Date：2023年"},
		{"date line after the first marker is ignored", "a.md", "User: hi\nDate: 2023-05-08", "", "", "", "User: hi\nDate: 2023-05-08"},
		{"heading inside a message is no title", "a.md", "User: x\n\n# Not the title", "", "", "", "User: x\n\n# Not the title"},
		{"date from the file name", "notes/2024-02-29 standup.md", "text", "", "2024-02-29", "", "text"},
		{"a date line wins over the file name", "2024-02-29.md", "Date: 2001-01-01", "", "2001-01-01", "", "Date: 2001-01-01"},
		{"impossible date in the file name", "2023-02-30.md", "text", "", "", "", "text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := parseMarkdown(tt.file, tt.in)
			created := ""
			if !c.Created.IsZero() {
				created = c.Created.UTC().Format(time.RFC3339)
			}
			if c.Title != tt.title || c.Date != tt.date || created != tt.created {
				t.Errorf("title, date, created = %q, %q, %q; want %q, %q, %q", c.Title, c.Date, created, tt.title, tt.date, tt.created)
			}
			if len(c.Messages) == 0 || c.Messages[0] != tt.firstBlock {
				t.Errorf("first block of %q = %q, want %q", tt.in, c.Messages, tt.firstBlock)
			}
		})
	}
}

func TestParseDate(t *testing.T) {
	tests := []struct{ in, date, at string }{
		{"2023-05-08", "2023-05-08", ""},
		{"2023/5/8", "2023-05-08", ""},
		{"2023.05.08", "2023-05-08", ""},
		{"2023-05", "2023-05", ""},
		{"2023", "2023", ""},
		{"8 May 2023", "2023-05-08", ""},
		{"8th May, 2023", "2023-05-08", ""},
		{"May 8, 2023", "2023-05-08", ""},
		{"Sept. 1st 2023", "2023-09-01", ""},
		{"Monday, 8 May 2023", "2023-05-08", ""},
		{"May 2023", "2023-05", ""},
		{"1:56 pm on 8 May, 2023", "2023-05-08", "2023-05-08T13:56:00Z"},
		{"12:05 am on 1 January, 2024", "2024-01-01", "2024-01-01T00:05:00Z"},
		{"10:04:59am on 2 Feb, 2021", "2021-02-02", "2021-02-02T10:04:59Z"},
		{"8 May 2023 at 17:30", "2023-05-08", "2023-05-08T17:30:00Z"},
		{"2023-05-08T13:56:00Z", "2023-05-08", "2023-05-08T13:56:00Z"},
		{"2023-05-08T23:30:00-05:00", "2023-05-08", "2023-05-09T04:30:00Z"},
		{"2023-05-08 13:56:07.123", "2023-05-08", "2023-05-08T13:56:07Z"},
		{"2023-05-08 13:56", "2023-05-08", "2023-05-08T13:56:00Z"},
		{"1709703000", "2024-03-06", "2024-03-06T05:30:00Z"},
		{"1709703000123", "2024-03-06", "2024-03-06T05:30:00Z"},
		{"20240306", "2024-03-06", ""},
		{"20240231", "", ""},
		{"12345", "", ""},
		{"0000000000", "", ""},
		{"0000", "", ""},
		{`"2023-05-08"`, "2023-05-08", ""},
		{"  'May 8, 2023'  ", "2023-05-08", ""},
		{"29 Feb 2024", "2024-02-29", ""},
		{"29 Feb 2023", "", ""},
		{"31 April 2023", "", ""},
		{"2023-13-01", "", ""},
		{"08/05/2023", "", ""},
		{"8 May", "", ""},
		{"May 8", "", ""},
		{"sometime in May 2023", "", ""},
		{"13:00 pm on 8 May 2023", "2023-05-08", ""},
		{"8 May 2023 9 May 2023", "", ""},
		// A zone after the time keeps the day; an offset moves the moment,
		// a zone by name leaves it unknown.
		{"July 14, 2025 11:30 PM EST", "2025-07-14", ""},
		{"2025-07-14 23:30 CET", "2025-07-14", ""},
		{"2025-07-14 23:30:00 +02:00", "2025-07-14", "2025-07-14T21:30:00Z"},
		{"Mon, 14 Jul 2025 10:00:00 +0200", "2025-07-14", "2025-07-14T08:00:00Z"},
		{"14 July 2025, 10:00 (UTC+2)", "2025-07-14", "2025-07-14T08:00:00Z"},
		{"2025-07-14 23:30 GMT-05:30", "2025-07-14", "2025-07-15T05:00:00Z"},
		{"2025-07-14 10:00 UTC", "2025-07-14", "2025-07-14T10:00:00Z"},
		{"2025-07-14 10:00 Z", "2025-07-14", "2025-07-14T10:00:00Z"},
		{"EST 2025-07-14 10:00", "", ""},           // a zone before the time is no zone
		{"2025-07-14 10:00 EST CET", "", ""},       // nor is a second one
		{"2025-07-14 10:00 meeting notes", "", ""}, // nor a word that is none
		{"", "", ""},
	}
	for _, tt := range tests {
		date, at := parseDate(tt.in)
		gotAt := ""
		if !at.IsZero() {
			gotAt = at.UTC().Format(time.RFC3339)
		}
		if date != tt.date || gotAt != tt.at {
			t.Errorf("parseDate(%q) = %q, %q; want %q, %q", tt.in, date, gotAt, tt.date, tt.at)
		}
	}
}

// TestMarkdownKeepsAllText checks on every fixture-like input that the
// blocks hold every non-blank line of the body, in order, verbatim.
func TestMarkdownKeepsAllText(t *testing.T) {
	for _, in := range []string{
		"# T\n\nDate: 2023\n\n**A:** x\n\n```\n**B:** y\n```\n\n**B:** z\n\n**A:** w",
		"User: a\n\n\nAssistant: b\nNote: c\n\n\n",
		"plain\n\nparagraphs\n   \n  only",
		"```\nunclosed\n\n**A:** a\n\n**A:** b",
	} {
		if err := checkKeepsText(in, parseMarkdown("t.md", in).Messages); err != "" {
			t.Errorf("%q: %s", in, err)
		}
	}
}

// checkKeepsText compares the non-blank lines of in (after front matter) with
// those of the blocks, and checks that every block is non-empty and appears
// in in verbatim.
func checkKeepsText(in string, blocks []string) string {
	_, body := splitFrontMatter(normalizeNewlines(in))
	var want, got []string
	for _, l := range strings.Split(body, "\n") {
		if strings.TrimSpace(l) != "" {
			want = append(want, l)
		}
	}
	for _, b := range blocks {
		if b == "" {
			return "an empty block"
		}
		if !strings.Contains(body, b) {
			return "block " + quote(b) + " is not in the input verbatim"
		}
		for _, l := range strings.Split(b, "\n") {
			if strings.TrimSpace(l) != "" {
				got = append(got, l)
			}
		}
	}
	if !reflect.DeepEqual(got, want) {
		return "lines of the blocks " + quote(strings.Join(got, "|")) + " differ from the input's " + quote(strings.Join(want, "|"))
	}
	return ""
}

func quote(s string) string { return "\"" + s + "\"" }

// An image embedded as a data URI reads as [image] (with its alt text),
// not as the kilobytes of base64 it holds; other images and links stay.
func TestDataImages(t *testing.T) {
	b64 := strings.Repeat("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9Q", 3000) // 198 KB
	tests := []struct{ in, want string }{
		{"**User:** my screenshot ![img](data:image/png;base64," + b64 + ") looks odd", "**User:** my screenshot [image: img] looks odd"},
		{"User: ![](data:image/gif;base64,R0lGODlhAQABAAAAACw=)", "User: [image]"},
		{"User: ![a  chart](data:image/png;base64,iVBOR\nw0KGgo= \"Q2 sales\")", "User: [image: a chart]"},
		{"User: ![x](<data:image/png;base64,iVBOR>)", "User: [image: x]"},
		{`User: <img src="data:image/png;base64,` + b64 + `" alt="the error dialog" width="300">`, "User: [image: the error dialog]"},
		{`User: <IMG alt='logo' SRC='data:image/svg+xml;utf8,<svg/>'> and text`, "User: [image: logo] and text"},
		{`User: <img src=data:image/png;base64,iVBOR>`, "User: [image]"},
		{"User: ![photo](https://example.com/a.png) and [a link](data:text/plain,hi)", "User: ![photo](https://example.com/a.png) and [a link](data:text/plain,hi)"},
		{"User: the data: scheme, as in ![x](data:", "User: the data: scheme, as in ![x](data:"},
		// From an audit: prose up to the next parenthesis went with it.
		{"User: what if I write ![x](data: then keep typing\nimportant words like kubernetes\nuntil a paren (like this) later.",
			"User: what if I write ![x](data: then keep typing\nimportant words like kubernetes\nuntil a paren (like this) later."},
	}
	for _, tt := range tests {
		convs, err := parseString(t, "chat.md", tt.in)
		if err != nil || len(convs) != 1 {
			t.Errorf("%.60q: %d conversations, %v", tt.in, len(convs), err)
			continue
		}
		if got := strings.Join(convs[0].Messages, "\n\n"); got != tt.want {
			t.Errorf("%.60q: got %.200q, want %q", tt.in, got, tt.want)
		}
	}
}
