package convo

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"time"
)

// The parts of a Claude.ai export (conversations.json) that make up the
// conversation.
type claudeConversation struct {
	UUID         string           `json:"uuid"`
	Name         string           `json:"name"`
	CreatedAt    stamp            `json:"created_at"`
	UpdatedAt    stamp            `json:"updated_at"`
	ChatMessages *[]claudeMessage `json:"chat_messages"`
	// CurrentLeaf is the last message of the branch the conversation
	// shows, when the export names it.
	CurrentLeaf string `json:"current_leaf_message_uuid"`
}

type claudeMessage struct {
	UUID        string        `json:"uuid"`
	Parent      string        `json:"parent_message_uuid"`
	Sender      string        `json:"sender"`
	Text        string        `json:"text"`
	Content     []claudeBlock `json:"content"`
	Attachments []claudeFile  `json:"attachments"`
	Files       []claudeFile  `json:"files"`
}

type claudeBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`  // the tool of a tool_use block
	Input json.RawMessage `json:"input"` // its input, read only for an artifact
}

type claudeFile struct {
	FileName string `json:"file_name"`
	// ExtractedContent is the text of an attached or pasted file (a paste
	// has no name), which the conversation showed the model.
	ExtractedContent string `json:"extracted_content"`
}

// claudeArtifact is the input of an "artifacts" tool_use block: a document
// or program the model wrote beside its answer. An update gives only the
// text it replaces and leaves Content empty.
type claudeArtifact struct {
	Title    string `json:"title"`
	Language string `json:"language"`
	Content  string `json:"content"`
}

// claudeUnsupported is what the export's text field holds in place of an
// artifact, fenced: it says nothing of the conversation.
const claudeUnsupported = "This block is not supported on your current device yet."

func parseClaude(name string, r io.Reader, src *sourceReader, fn func(Conversation) error) error {
	ids := exportIDs{}
	return walkArray(name, r, src, func(i int, dec *json.Decoder) error {
		// chat_messages decodes through a pointer set beforehand, which
		// tells the three cases apart: absent (the pointer is kept and its
		// slice stays nil), null (the pointer is set to nil: a
		// conversation with no messages) and an array.
		var msgs []claudeMessage
		e := claudeConversation{ChatMessages: &msgs}
		if err := decodeElement(name, src, i, dec, &e); err != nil {
			return err
		}
		if e.ChatMessages != nil && msgs == nil {
			return invalidf(name, "element [%d] has no \"chat_messages\": not a Claude conversation", i)
		}
		if err := ids.check(name, i, e.UUID); err != nil {
			return err
		}
		c := Conversation{ID: e.UUID, Title: strings.TrimSpace(e.Name), Created: time.Time(e.CreatedAt), Updated: time.Time(e.UpdatedAt)}
		c.Date = dateOf(c.Created)
		for _, m := range claudeBranch(msgs, e.CurrentLeaf) {
			if b := renderTurn(speakerLabel(m.Sender), m.text()); b != "" {
				c.Messages = append(c.Messages, b)
			}
		}
		if len(c.Messages) == 0 {
			return nil
		}
		return fn(c)
	})
}

// claudeRoot is the parent id of a conversation's first message.
const claudeRoot = "00000000-0000-4000-8000-000000000000"

// claudeBranch returns the messages of the branch the conversation shows:
// from the current leaf (or, when the export names none or one it does not
// hold, the last message of the array) up through parent_message_uuid to
// the root. An edited question or a regenerated answer leaves the other
// branch in chat_messages, and indexing both would show a search answers
// the user replaced. Older exports carry no parent ids, and their array
// order is the conversation.
//
// Array order is kept, too, when the ids say nothing of order (every
// parent is the root), when the tree does not fork (nothing was replaced),
// and when a walk breaks, on a parent the export does not hold, a message
// other than the first without one, or a cycle: the ids then do not describe the
// conversation, and the branch up to the break would silently drop its
// beginning, while array order loses nothing (at worst it also holds a
// replaced branch, text the conversation did once show).
func claudeBranch(msgs []claudeMessage, leaf string) []claudeMessage {
	byID := make(map[string]int, len(msgs))
	for i, m := range msgs {
		if m.UUID != "" {
			byID[m.UUID] = i
		}
	}
	// The ids describe a tree only when some message hangs off another
	// (an export whose every parent is the root says nothing of order),
	// and a branch drops messages only where the tree forks.
	children := map[string]int{}
	linked := false
	for _, m := range msgs {
		p := m.Parent
		if p == claudeRoot {
			p = ""
		}
		if _, ok := byID[p]; ok && p != "" {
			linked = true
		}
		children[p]++
	}
	forks := false
	for _, n := range children {
		forks = forks || n > 1
	}
	if !linked || !forks || len(msgs) == 0 {
		return msgs
	}
	at, ok := byID[leaf]
	if !ok || children[leaf] > 0 {
		at = len(msgs) - 1 // no leaf, or one that is not (a stale one would drop what followed it)
	}
	var branch []claudeMessage
	seen := map[int]bool{}
	for {
		if seen[at] {
			return msgs // a cycle
		}
		seen[at] = true
		branch = append(branch, msgs[at])
		p := msgs[at].Parent
		if p == claudeRoot || p == "" && at == 0 {
			break
		}
		if at, ok = byID[p]; !ok {
			return msgs // a parent the export does not hold, or none but the first's
		}
	}
	slices.Reverse(branch)
	return branch
}

// text is the message as shown: its text blocks and artifacts when it has
// content blocks (other tool calls, tool results and thinking are left
// out), else its text field without the placeholders that stand in for
// artifacts there, followed by each attached file's name and extracted
// text, so that a search for the file or what it said finds the
// conversation.
func (m *claudeMessage) text() string {
	var parts []string
	for _, b := range m.Content {
		switch {
		case b.Type == "text" && strings.TrimSpace(b.Text) != "":
			parts = append(parts, b.Text)
		case b.Type == "tool_use" && b.Name == "artifacts":
			if a := artifactText(b.Input); a != "" {
				parts = append(parts, a)
			}
		}
	}
	text := strings.Join(parts, "\n\n")
	if len(parts) == 0 {
		text = withoutPlaceholders(m.Text)
	}
	named, seen := map[string]bool{}, map[claudeFile]bool{}
	for _, files := range [][]claudeFile{m.Attachments, m.Files} {
		for _, f := range files {
			if seen[f] {
				continue
			}
			seen[f] = true
			if f.FileName != "" && !named[f.FileName] {
				named[f.FileName] = true
				text += "\n[file: " + f.FileName + "]"
			}
			if c := trimBlankLines(normalizeNewlines(f.ExtractedContent)); c != "" {
				text += "\n" + c
			}
		}
	}
	return text
}

// artifactText renders an artifact as its title and its content fenced, or
// "" when it has no content (an update, or input of another shape: an
// artifact never fails the export).
func artifactText(input json.RawMessage) string {
	var a claudeArtifact
	if json.Unmarshal(input, &a) != nil || strings.TrimSpace(a.Content) == "" {
		return ""
	}
	out := codeBlock(a.Language, a.Content)
	if t := strings.TrimSpace(a.Title); t != "" && !strings.Contains(t, "\n") {
		out = "[artifact: " + t + "]\n" + out
	}
	return out
}

// withoutPlaceholders drops the artifact placeholders from a text field,
// fenced as the export writes them or bare.
func withoutPlaceholders(s string) string {
	if !strings.Contains(s, claudeUnsupported) {
		return s
	}
	fenced := "```\n" + claudeUnsupported + "\n```"
	s = strings.ReplaceAll(normalizeNewlines(s), "\n\n"+fenced+"\n\n", "\n\n")
	s = strings.ReplaceAll(s, fenced, "")
	s = strings.ReplaceAll(s, claudeUnsupported, "")
	return trimBlankLines(s)
}
