package convo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// An OpenAI Codex CLI session rollout (~/.codex/sessions/YYYY/MM/DD/
// rollout-<time>-<id>.jsonl) is one session: a line per item, each
// {"timestamp", "type", "payload"} where type is session_meta (the first
// line: the session's id, start time, working directory), response_item
// (what went to or came from the model: messages, reasoning, tool calls and
// their output), event_msg (what the terminal showed, among them a copy of
// each user and agent message), turn_context or compacted. Rollouts of
// versions before about September 2025 have no wrapper: a first line {"id", "timestamp",
// "instructions"}, then the response items themselves, and
// {"record_type": "state"} lines.

// codexLineTypes are the types of the lines of a rollout.
var codexLineTypes = map[looseString]bool{
	"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true,
}

// codexStart reports whether l, the first line of a JSON lines file, opens a
// Codex rollout: a wrapped line of a rollout type, or the older header. A
// rollout is told apart on its first line, since only it says the lines
// after it are items of a Codex session rather than messages of a chat log.
func codexStart(l *chatLine) bool {
	if p := bytes.TrimSpace(l.Payload); codexLineTypes[l.Type] && len(p) > 0 && p[0] == '{' {
		return true
	}
	return l.Type == "" && l.ID != "" && len(l.Timestamp) > 0 && len(l.Instructions) > 0
}

// codexItem is a response item, or the payload of an event_msg line: the
// parts of either that hold a message.
type codexItem struct {
	Type    looseString     `json:"type"`
	Role    looseString     `json:"role"`
	Content json.RawMessage `json:"content"`
	// Message is the text of a user_message or agent_message event. It is
	// read leniently, unlike message content: the events are a copy, read
	// only from rollouts without response items, and a change in their
	// shape should not fail a file whose messages are elsewhere.
	Message looseString `json:"message"`
}

// codexRollout gathers the messages of a rollout.
type codexRollout struct {
	started, firstLine time.Time
	// items are the messages of the response items, events those of the
	// user_message and agent_message events: the same turns twice, in
	// the model's and the terminal's copy. The items are what was said
	// (the events leave out, say, the images a user attached); the
	// events are read only should a rollout hold no message items.
	items, events codexTurns
}

// codexTurns are messages with the time of the last.
type codexTurns struct {
	messages []string
	last     time.Time
}

func (t *codexTurns) add(speaker, text string, at time.Time) {
	if b := renderTurn(speakerLabel(speaker), text); b != "" {
		t.messages = append(t.messages, b)
		if !at.IsZero() {
			t.last = at
		}
	}
}

// add reads one line of the rollout. Lines of other types, and the items
// that are no messages (reasoning, tool calls and their output, web
// searches, snapshots, compactions), are passed by: tool traffic is left
// out as in the other formats, and the summary a compaction writes is the
// model's second telling of turns the rollout already holds.
func (r *codexRollout) add(l *chatLine) error {
	at := rawTime(l.Timestamp)
	if r.firstLine.IsZero() {
		r.firstLine = at
	}
	var item codexItem
	switch {
	case l.Type == "session_meta" || l.Type == "" && len(l.Instructions) > 0:
		if r.started.IsZero() {
			// A forked session's rollout holds the session it forked
			// from's meta line too; the first is its own.
			var meta struct {
				Timestamp json.RawMessage `json:"timestamp"`
			}
			json.Unmarshal(l.Payload, &meta)
			if r.started = rawTime(meta.Timestamp); r.started.IsZero() && len(l.Instructions) > 0 {
				r.started = at // the older header: its own timestamp
			}
		}
		return nil
	case l.Type == "response_item":
		if err := json.Unmarshal(l.Payload, &item); err != nil {
			return fmt.Errorf("\"payload\": %s", describeJSON(err, 0))
		}
	case l.Type == "event_msg":
		json.Unmarshal(l.Payload, &item) // lenient, as codexItem.Message is
	case len(l.Payload) == 0:
		// An item of an older rollout, written without the wrapper.
		item = codexItem{Type: l.Type, Role: l.Role, Content: l.Content}
	default:
		return nil
	}
	switch {
	case l.Type == "event_msg" && item.Type == "user_message":
		r.events.add("user", codexUserText(string(item.Message)), at)
	case l.Type == "event_msg" && item.Type == "agent_message":
		r.events.add("assistant", string(item.Message), at)
	case l.Type != "event_msg" && item.Type == "message" && (item.Role == "user" || item.Role == "assistant"):
		// Other roles are Codex's instructions to the model: "developer"
		// (sandbox and approval policy, collaboration mode) and "system".
		blocks, err := contentBlocks(item.Content, "content")
		if err != nil {
			return err
		}
		if item.Role == "assistant" {
			r.items.add("assistant", blocksText(blocks), at)
			break
		}
		r.items.add("user", codexUserBlocks(blocks), at)
	}
	return nil
}

// conversation is the session: its response items' messages, or when it
// has none its events', dated by the session's start (or its first line's
// time) and titled by its first user message, since the file's name
// (rollout-<time>-<id>) says nothing of it.
func (r *codexRollout) conversation() Conversation {
	turns := r.items
	if len(turns.messages) == 0 {
		turns = r.events
	}
	c := Conversation{Messages: turns.messages, Created: r.started, Updated: turns.last}
	if c.Created.IsZero() {
		c.Created = r.firstLine
	}
	c.Title = fallbackTitle(c.Messages)
	return c
}

// codexFragments mark the text Codex adds to the conversation as a user
// message for the model: the working directory and shell, the instructions of
// AGENTS.md files (written "<user_instructions>" by older versions), a
// skill's text, a note that the user interrupted a turn, a subagent's
// status, editor context. A part whose text opens and closes with one of
// these pairs of markers marks its message as Codex's, as Codex itself
// reads it; case is ignored, as there.
var codexFragments = [][2]string{
	{"# AGENTS.md instructions", "</INSTRUCTIONS>"},
	{"<user_instructions>", "</user_instructions>"},
	{"<environment_context>", "</environment_context>"},
	{"<skill>", "</skill>"},
	{"<turn_aborted>", "</turn_aborted>"},
	{"<subagent_notification>", "</subagent_notification>"},
	{"<additional_context>", "</additional_context>"},
	{"<user_shell_command>", "</user_shell_command>"},
}

func codexFragment(text string) bool {
	t := strings.TrimSpace(text)
	for _, f := range codexFragments {
		if len(t) >= len(f[0])+len(f[1]) && strings.EqualFold(t[:len(f[0])], f[0]) && strings.EqualFold(t[len(t)-len(f[1]):], f[1]) {
			return true
		}
	}
	return false
}

// codexShellCommand is a shell command the user ran from the prompt ("!"),
// recorded with what it printed for the model to see.
var codexShellCommand = regexp.MustCompile(`(?s)^<user_shell_command>\s*<command>(.*?)</command>`)

// codexUserBlocks is the text of a user message as the user wrote it, or
// "" for a message Codex wrote. A shell command the user ran reads as
// "! command" without its output, as in a Claude Code session. The tags
// Codex puts around an attached image ("<image name=[Image #1]>" ...
// "</image>") are left out; the image shows as "[image]".
func codexUserBlocks(blocks []contentBlock) string {
	kept := blocks[:0:0]
	for _, b := range blocks {
		if b.Type != "input_text" && b.Type != "text" {
			kept = append(kept, b)
			continue
		}
		if m := codexShellCommand.FindStringSubmatch(strings.TrimSpace(b.Text)); m != nil && codexFragment(b.Text) {
			return "! " + strings.TrimSpace(m[1])
		}
		if codexFragment(b.Text) {
			return ""
		}
		if !codexImageTag(b.Text) {
			kept = append(kept, b)
		}
	}
	return blocksText(kept)
}

// codexImageTag reports whether text is one of the tags Codex puts around
// an image the user attached.
func codexImageTag(text string) bool {
	t := strings.TrimSpace(text)
	return t == "<image>" || t == "</image>" ||
		strings.HasPrefix(t, "<image name=") && strings.HasSuffix(t, ">") && !strings.Contains(t, "\n")
}

// codexUserText is the text of a user_message event, read as a message of
// one text part.
func codexUserText(text string) string {
	return codexUserBlocks([]contentBlock{{Type: "input_text", Text: text}})
}
