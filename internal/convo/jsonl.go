package convo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// chatLine is one message of a chat log, in the shapes logs commonly take:
// {"role", "content"} as the OpenAI and Anthropic APIs have it, {"speaker" or
// "author" or "sender" or "name", "text" or "message"}, ShareGPT's {"from",
// "value"}, and Claude Code session logs,
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
	From      looseString     `json:"from"`
	Value     json.RawMessage `json:"value"`
	Content   json.RawMessage `json:"content"`
	Text      json.RawMessage `json:"text"`
	Message   json.RawMessage `json:"message"`
	Type      looseString     `json:"type"`
	Summary   looseString     `json:"summary"`
	Timestamp json.RawMessage `json:"timestamp"`
	CreatedAt json.RawMessage `json:"created_at"`
	claudeCodeFlags
	// SessionID marks a line of a Claude Code session, which may hold
	// no text (a queue operation).
	SessionID json.RawMessage `json:"sessionId"`

	// A line or element that is a whole conversation: its messages, in
	// the shape OpenAI's fine-tuning and chat-completion logs have
	// ("messages") or ShareGPT's ("conversations"), and its id.
	Messages      json.RawMessage `json:"messages"`
	Conversations json.RawMessage `json:"conversations"`
	ID            looseString     `json:"id"`

	// A line of a Codex rollout: its item ("payload"), or, in the header
	// of an older rollout, the model's instructions (see codexStart).
	Payload      json.RawMessage `json:"payload"`
	Instructions json.RawMessage `json:"instructions"`
}

// claudeCodeBookkeeping are the types of the lines of a Claude Code
// session that hold no message: the session's title, snapshots of the
// files it edits, its input queue.
var claudeCodeBookkeeping = map[looseString]bool{"summary": true, "file-history-snapshot": true, "queue-operation": true}

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

// parseJSONL reads a chat log of one JSON object per line: one
// conversation, or, when lines hold a conversation each ("messages" or
// "conversations", as fine-tuning sets have them), one conversation per
// line, its id the line's "id" or else its line number. A Codex CLI
// session rollout, told by its first line, is read as one (see
// codexRollout). Lines are read
// whole however long they are. Blank lines are skipped, and so are objects
// without text (tool calls, metadata). A malformed line fails the whole
// file, naming the line: the rest would be indexed as if it were the
// complete conversation. So does a file none of whose lines is a message
// or a conversation: it is a log of something else, and a sweep that
// passed it by without a word would look as if it had read it.
//
// The one malformed line that does not fail the file is a last line
// without its line break that is a JSON object cut short: a log being
// written (Claude Code and Codex append to a session's log a line at a
// time while it runs), read between two writes. The lines before it are
// the conversation so far, and are read; a sweep records the file's size
// and mtime, which finishing the line changes, so the next sweep reads it
// again. Anything else wrong with a last line (a line break after it, or
// JSON that is malformed rather than unfinished) still fails the file.
func parseJSONL(name string, r io.Reader, src *sourceReader, fn func(Conversation) error) error {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	var log chatLog
	var codex *codexRollout // when the file is a Codex rollout
	ids := exportIDs{lines: true}
	var first []byte // the first line, to describe a file of unknown shape
	var off int64    // of the line in the file
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if t[0] != '{' {
				return invalidf(name, "line %d is not a JSON object", n)
			}
			var l chatLine
			if jerr := json.Unmarshal(t, &l); jerr != nil {
				if errors.Is(err, io.EOF) && unfinished(t) {
					break // a line being written: see parseJSONL
				}
				base := off + int64(bytes.Index(line, t[:1]))
				return invalidf(name, "line %d: %s", n, describeJSON(jerr, base))
			}
			if first == nil {
				first = t
				if codexStart(&l) {
					codex = &codexRollout{}
				}
			}
			if codex != nil {
				if cerr := codex.add(&l); cerr != nil {
					return invalidf(name, "line %d: %v", n, cerr)
				}
			} else if c, whole, cerr := l.conversation(strconv.Itoa(n)); whole {
				if cerr != nil {
					return invalidf(name, "line %d: %v", n, cerr)
				}
				if err := ids.check(name, n, c.ID); err != nil {
					return err
				}
				log.known = true
				if err := deliver(c, fn); err != nil {
					return err
				}
			} else if lerr := log.add(&l); lerr != nil {
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
	if codex != nil {
		return deliver(codex.conversation(), fn)
	}
	if first != nil && !log.known {
		return invalidf(name, "no line is a chat message or a conversation (want \"role\" and \"content\", \"messages\" or \"conversations\"); line 1 has %s: unknown JSON lines format", describeKeys(first))
	}
	return deliver(log.c, fn)
}

// unfinished reports whether t is the start of a JSON value that ends
// before the value does: what a writer caught mid-line leaves.
func unfinished(t []byte) bool {
	var v json.RawMessage
	return errors.Is(json.NewDecoder(bytes.NewReader(t)).Decode(&v), io.ErrUnexpectedEOF)
}

// describeKeys lists the keys of a JSON object, for an error.
func describeKeys(obj []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil || len(m) == 0 {
		return "no keys"
	}
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 1 {
		return "the key " + strconv.Quote(keys[0])
	}
	more := ""
	if len(keys) > 8 {
		keys, more = keys[:8], ", ..."
	}
	for i, k := range keys {
		keys[i] = strconv.Quote(k)
	}
	return "the keys " + strings.Join(keys, ", ") + more
}

// conversation reads a line that is a whole conversation ("messages" or
// "conversations" an array), with id as its id when it has none of its
// own; whole is false for any other line.
func (l *chatLine) conversation(id string) (c Conversation, whole bool, err error) {
	raw, field := bytes.TrimSpace(l.Messages), "messages"
	if len(raw) == 0 || raw[0] != '[' {
		raw, field = bytes.TrimSpace(l.Conversations), "conversations"
	}
	if len(raw) == 0 || raw[0] != '[' {
		return Conversation{}, false, nil
	}
	var msgs []chatLine
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return Conversation{}, true, fmt.Errorf("%q: %s", field, describeJSON(err, 0))
	}
	var log chatLog
	for i := range msgs {
		if err := log.add(&msgs[i]); err != nil {
			return Conversation{}, true, fmt.Errorf("%q[%d]: %v", field, i, err)
		}
	}
	if len(msgs) > 0 && !log.known {
		// Not messages: an export wrapped in an object, say. Passing it
		// by would look as if it had been read.
		var elems []json.RawMessage
		json.Unmarshal(raw, &elems)
		return Conversation{}, true, fmt.Errorf("%q holds no messages (want objects with \"role\" and \"content\", or \"from\" and \"value\"); its first has %s", field, describeKeys(elems[0]))
	}
	log.c.ID = strings.TrimSpace(string(l.ID))
	if log.c.ID == "" {
		log.c.ID = id
	}
	return log.c, true, nil
}

// parseConversations reads a JSON array of conversations, each an object
// whose "messages" or "conversations" holds its messages (fine-tuning sets,
// ShareGPT), its id the element's "id" or else its index.
func parseConversations(name string, r io.Reader, src *sourceReader, fn func(Conversation) error) error {
	ids := exportIDs{}
	return walkArray(name, r, src, func(i int, dec *json.Decoder) error {
		var l chatLine
		if err := decodeElement(name, src, i, dec, &l); err != nil {
			return err
		}
		c, whole, err := l.conversation(strconv.Itoa(i))
		switch {
		case !whole:
			return invalidf(name, "element [%d] has no \"messages\" or \"conversations\" array: not a conversation", i)
		case err != nil:
			return invalidf(name, "element [%d]: %v", i, err)
		}
		if err := ids.check(name, i, c.ID); err != nil {
			return err
		}
		return deliver(c, fn)
	})
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
	return deliver(log.c, fn)
}

// chatLog gathers the messages of a chat log into a conversation.
type chatLog struct {
	c Conversation
	// known is set by a line in a shape chatLog reads, text or not.
	known bool
}

// toolRoles speak for tools: the OpenAI API's roles for their output, and
// ShareGPT's for a function call and its result.
var toolRoles = map[string]bool{"tool": true, "function": true, "function_call": true, "observation": true}

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
		speaker = string(l.From)
	}
	if speaker == "" {
		speaker = string(l.Name)
	}
	log.known = log.known || role != "" || speaker != "" || len(l.Content) > 0 || len(l.Text) > 0 ||
		len(l.Message) > 0 || len(l.Value) > 0 || len(l.SessionID) > 0 || claudeCodeBookkeeping[l.Type]
	text, err := contentText(l.Content, "content")
	if err == nil && text == "" {
		text, err = contentText(l.Text, "text")
	}
	if err == nil && text == "" {
		text, err = contentText(l.Value, "value")
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
		// What the session adds to a turn (reminders, command wrappers,
		// command output) comes in the user's turns; an answer that
		// quotes such a tag is the answer.
		if l.Type == "user" {
			if text = claudeCodeText(text); text == "" {
				return nil
			}
		}
	}
	if t := strings.ToLower(string(l.Type)); role == "" && (t == "user" || t == "assistant" || hiddenRoles[t]) {
		role = t
	}
	if speaker == "" {
		speaker = role
	}
	who := role
	if who == "" {
		who = speaker
	}
	if toolRoles[strings.ToLower(strings.TrimSpace(who))] {
		return nil // a tool's call or output: not a turn of the conversation
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

// deliver passes c to fn when it has messages, dated by its first.
func deliver(c Conversation, fn func(Conversation) error) error {
	if len(c.Messages) == 0 {
		return nil
	}
	c.Date = dateOf(c.Created)
	return fn(c)
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
	blocks, err := contentBlocks(raw, field)
	return blocksText(blocks), err
}

// contentBlocks reads message content as blocks: a string is one text
// block.
func contentBlocks(raw json.RawMessage, field string) ([]contentBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var blocks []contentBlock
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%q: %s", field, describeJSON(err, 0))
		}
		blocks = []contentBlock{{Type: "text", Text: s}}
	case '{':
		var b contentBlock
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("%q: %s", field, describeJSON(err, 0))
		}
		blocks = []contentBlock{b}
	case '[':
		if err := json.Unmarshal(raw, &blocks); err != nil {
			return nil, fmt.Errorf("%q: %s", field, describeJSON(err, 0))
		}
	default:
		return nil, fmt.Errorf("%q is neither text nor content blocks", field)
	}
	return blocks, nil
}

// contentBlock is one block of message content, as the OpenAI and
// Anthropic APIs write it.
type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// blocksText joins the text blocks of content by blank lines, an image
// showing as "[image]"; other blocks are left out.
func blocksText(blocks []contentBlock) string {
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
	return strings.Join(parts, "\n\n")
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
