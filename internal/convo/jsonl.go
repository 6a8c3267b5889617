package convo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// chatLine is one message of a chat log, in the shapes logs commonly take:
// {"role", "content"} as the OpenAI and Anthropic APIs have it, {"speaker" or
// "author" or "sender" or "name", "text" or "message"}, and Claude Code
// session logs,
// which wrap {"role", "content"} in "message" next to "type" and
// "timestamp". Content is a string or an array of {"type", "text"} blocks.
//
// Who speaks and what kind of line it is are read leniently, as timestamps
// are: logs put other things under these common names (a reasoning item's
// "summary" is an array of blocks, a "name" may be an object), and such a
// value only says the line is not the plain string field read here. The
// text fields stay strict: a value of the wrong type there is text lost.
type chatLine struct {
	Role      looseString     `json:"role"`
	Speaker   looseString     `json:"speaker"`
	Name      looseString     `json:"name"`
	Author    json.RawMessage `json:"author"`
	Sender    looseString     `json:"sender"`
	Content   json.RawMessage `json:"content"`
	Text      json.RawMessage `json:"text"`
	Message   json.RawMessage `json:"message"`
	Type      looseString     `json:"type"`
	Summary   looseString     `json:"summary"`
	Timestamp json.RawMessage `json:"timestamp"`
	CreatedAt json.RawMessage `json:"created_at"`
	claudeCodeFlags
}

// looseString is a JSON string, or "" when the value is of another type.
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = looseString(v)
	} else {
		*s = ""
	}
	return nil
}

// parseJSONL reads a chat log of one JSON object per line: one conversation.
// Lines are read whole however long they are. Blank lines are skipped, and so
// are objects without text (tool calls, metadata). A malformed line fails the
// whole file, naming the line: the rest would be indexed as if it were the
// complete conversation.
func parseJSONL(name string, r io.Reader, src *sourceReader, fn func(Conversation) error) error {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	var log chatLog
	var off int64 // of the line in the file
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if t[0] != '{' {
				return invalidf(name, "line %d is not a JSON object", n)
			}
			var l chatLine
			if jerr := json.Unmarshal(t, &l); jerr != nil {
				base := off + int64(bytes.Index(line, t[:1]))
				return invalidf(name, "line %d: %s", n, describeJSON(jerr, base))
			}
			if lerr := log.add(&l); lerr != nil {
				return invalidf(name, "line %d: %v", n, lerr)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return src.fail(name, err)
		}
		off += int64(len(line))
	}
	return log.deliver(fn)
}

// parseMessages reads a JSON array of message objects: one conversation.
func parseMessages(name string, r io.Reader, src *sourceReader, fn func(Conversation) error) error {
	var log chatLog
	err := walkArray(name, r, src, func(i int, dec *json.Decoder) error {
		var l chatLine
		if err := decodeElement(name, src, i, dec, &l); err != nil {
			return err
		}
		if err := log.add(&l); err != nil {
			return invalidf(name, "element [%d]: %v", i, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return log.deliver(fn)
}

// chatLog gathers the messages of a chat log into a conversation.
type chatLog struct{ c Conversation }

// hiddenRoles are the prompts an application gives the model before the
// conversation (its instructions, the same in every log of that
// application), not turns anyone wrote in it; the ChatGPT export hides its
// system messages too.
var hiddenRoles = map[string]bool{"system": true, "developer": true}

func (log *chatLog) add(l *chatLine) error {
	if l.Type == "summary" && log.c.Title == "" {
		log.c.Title = strings.TrimSpace(string(l.Summary)) // Claude Code's name for the session
	}
	role := string(l.Role)
	speaker := string(l.Speaker)
	if speaker == "" {
		speaker = authorName(l.Author)
	}
	if speaker == "" {
		speaker = string(l.Sender)
	}
	if speaker == "" {
		speaker = string(l.Name)
	}
	text, err := contentText(l.Content, "content")
	if err == nil && text == "" {
		text, err = contentText(l.Text, "text")
	}
	if err != nil {
		return err
	}
	wrapped := false // in a "message" object, as Claude Code writes a turn
	if m := bytes.TrimSpace(l.Message); len(m) > 0 && m[0] == '{' {
		wrapped = true
		var inner struct {
			Role    looseString     `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(m, &inner); err != nil {
			return fmt.Errorf("\"message\": %s", describeJSON(err, 0))
		}
		if role == "" {
			role = string(inner.Role)
		}
		if text == "" {
			if text, err = contentText(inner.Content, "message.content"); err != nil {
				return err
			}
		}
	} else if text == "" {
		if text, err = contentText(l.Message, "message"); err != nil {
			return err
		}
	}
	if wrapped && (l.Type == "user" || l.Type == "assistant") {
		if l.internal() {
			return nil
		}
		if text = claudeCodeText(text); text == "" {
			return nil
		}
	}
	if role == "" && (l.Type == "user" || l.Type == "assistant") {
		role = string(l.Type)
	}
	if speaker == "" {
		speaker = role
	}
	if r := strings.ToLower(strings.TrimSpace(role)); r == "tool" || r == "function" {
		return nil // tool output: not a turn of the conversation
	}
	if hiddenRoles[strings.ToLower(strings.TrimSpace(speaker))] || hiddenRoles[strings.ToLower(strings.TrimSpace(role))] {
		return nil
	}
	b := renderTurn(speakerLabel(speaker), text)
	if b == "" {
		return nil
	}
	log.c.Messages = append(log.c.Messages, b)
	at := rawTime(l.Timestamp)
	if at.IsZero() {
		at = rawTime(l.CreatedAt)
	}
	if !at.IsZero() {
		if log.c.Created.IsZero() {
			log.c.Created = at
		}
		log.c.Updated = at
	}
	return nil
}

func (log *chatLog) deliver(fn func(Conversation) error) error {
	if len(log.c.Messages) == 0 {
		return nil
	}
	log.c.Date = dateOf(log.c.Created)
	return fn(log.c)
}

// authorName reads "author" as a name, or as an object with a name or role;
// a value of another shape names no one.
func authorName(raw json.RawMessage) string {
	var name string
	if json.Unmarshal(raw, &name) == nil {
		return name
	}
	var a struct {
		Name looseString `json:"name"`
		Role looseString `json:"role"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	if a.Name != "" {
		return string(a.Name)
	}
	return string(a.Role)
}

// contentText reads message content: a string, one block, or an array of
// blocks whose text blocks are joined by blank lines. Images show as
// "[image]"; tool calls, tool results and thinking blocks are left out.
func contentText(raw json.RawMessage, field string) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	type block struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	var blocks []block
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%q: %s", field, describeJSON(err, 0))
		}
		return s, nil
	case '{':
		var b block
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", fmt.Errorf("%q: %s", field, describeJSON(err, 0))
		}
		blocks = []block{b}
	case '[':
		if err := json.Unmarshal(raw, &blocks); err != nil {
			return "", fmt.Errorf("%q: %s", field, describeJSON(err, 0))
		}
	default:
		return "", fmt.Errorf("%q is neither text nor content blocks", field)
	}
	var parts []string
	for _, b := range blocks {
		switch {
		case strings.Contains(b.Type, "image"):
			parts = append(parts, "[image]")
		case (b.Type == "" || b.Type == "text" || b.Type == "input_text" || b.Type == "output_text") &&
			strings.TrimSpace(b.Text) != "":
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

// rawTime reads a timestamp written as text (as isoTime reads it) or as
// seconds (or milliseconds) since the epoch; anything else is unknown. It looks at the
// first byte before decoding: exports hold one per message, and a failed
// decode costs an error value each.
func rawTime(raw json.RawMessage) time.Time {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return time.Time{}
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return isoTime(s)
		}
	case c == '-' || '0' <= c && c <= '9':
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return time.Time{}
		}
		if f > 1e11 {
			f /= 1000 // milliseconds
		}
		return unixTime(f)
	}
	return time.Time{}
}
