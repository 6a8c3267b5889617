package convo

import (
	"encoding/json"
	"regexp"
	"strings"
)

// claudeCodeFlags mark the lines of a Claude Code session log that the
// session wrote for itself rather than the user and the model to each
// other. They are read as true only when they are the JSON value true: a
// flag of another type marks nothing.
type claudeCodeFlags struct {
	// IsMeta marks text Claude Code adds to the user's turn: the caveat
	// before local command output, expanded command prompts.
	IsMeta json.RawMessage `json:"isMeta"`
	// IsSidechain marks a subagent's conversation (the Task tool): prompts
	// the model wrote and answers it read, not the session's turns.
	IsSidechain json.RawMessage `json:"isSidechain"`
	// IsCompactSummary marks the model's summary of the session so far,
	// written when the context filled up: a second copy of what came
	// before, in the model's words.
	IsCompactSummary json.RawMessage `json:"isCompactSummary"`
}

func (f *claudeCodeFlags) internal() bool {
	for _, v := range []json.RawMessage{f.IsMeta, f.IsSidechain, f.IsCompactSummary} {
		if string(v) == "true" {
			return true
		}
	}
	return false
}

var (
	// systemReminder is context Claude Code adds to a turn for the model
	// (the open file, a changed todo list): the user never wrote it.
	systemReminder = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>`)
	// commandTag is one part of a slash command the user ran, as Claude
	// Code records it: <command-name>/review</command-name>
	// <command-message>review</command-message> <command-args>12</command-args>.
	commandTag = regexp.MustCompile(`(?s)<command-(name|message|args)>(.*?)</command-(?:name|message|args)>`)
	// bashInput is a shell command the user ran in bash mode ("!").
	bashInput = regexp.MustCompile(`(?s)^<bash-input>(.*?)</bash-input>$`)
)

// claudeCodeOutput opens the text of a turn that holds only what a local
// command or a shell command printed: output, like a tool's, which the
// user did not write.
var claudeCodeOutput = []string{"<local-command-stdout>", "<local-command-stderr>", "<bash-stdout>", "<bash-stderr>"}

// claudeCodeText is the text of a Claude Code turn as the user saw it, or
// "" for a turn to leave out: system reminders are dropped; a slash command
// reads as the command typed ("/review 12"), which says what the user did
// and can be searched for, rather than as three tags; a bash-mode command
// reads as "! command"; the output of either is left out, as tool output is.
func claudeCodeText(text string) string {
	if strings.Contains(text, "<system-reminder>") {
		text = strings.TrimSpace(systemReminder.ReplaceAllString(text, ""))
	}
	t := strings.TrimSpace(text)
	for _, p := range claudeCodeOutput {
		if strings.HasPrefix(t, p) {
			return ""
		}
	}
	if m := bashInput.FindStringSubmatch(t); m != nil {
		return "! " + strings.TrimSpace(m[1])
	}
	if !strings.HasPrefix(t, "<command-") {
		return text
	}
	var name, args string
	for _, m := range commandTag.FindAllStringSubmatch(t, -1) {
		switch m[1] {
		case "name":
			name = strings.TrimSpace(m[2])
		case "args":
			args = strings.TrimSpace(m[2])
		}
	}
	if name == "" || strings.TrimSpace(commandTag.ReplaceAllString(t, "")) != "" {
		return text // not only a command: keep it as written
	}
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	return strings.TrimSpace(name + " " + args)
}
