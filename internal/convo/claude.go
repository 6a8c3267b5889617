package convo

import (
	"encoding/json"
	"io"
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
}

type claudeMessage struct {
	Sender      string        `json:"sender"`
	Text        string        `json:"text"`
	Content     []claudeBlock `json:"content"`
	Attachments []claudeFile  `json:"attachments"`
	Files       []claudeFile  `json:"files"`
}

type claudeBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type claudeFile struct {
	FileName string `json:"file_name"`
}

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
		for _, m := range msgs {
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

// text is the message as shown: its text blocks when it has content blocks
// (tool calls, tool results and thinking are left out), else its text field,
// followed by the names of attached files so that a search for the file
// finds the conversation.
func (m *claudeMessage) text() string {
	var parts []string
	for _, b := range m.Content {
		if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
			parts = append(parts, b.Text)
		}
	}
	text := strings.Join(parts, "\n\n")
	if len(parts) == 0 {
		text = m.Text
	}
	seen := map[string]bool{}
	for _, files := range [][]claudeFile{m.Attachments, m.Files} {
		for _, f := range files {
			if f.FileName != "" && !seen[f.FileName] {
				seen[f.FileName] = true
				text += "\n[file: " + f.FileName + "]"
			}
		}
	}
	return text
}
