// Package convo turns the files of a vault into conversations: a title, a
// date and the verbatim message blocks the chunker packs into chunks.
//
// It reads markdown and plain-text transcripts, ChatGPT and Claude.ai data
// exports (conversations.json), and JSON chat logs: JSON lines (Claude Code
// sessions and Codex CLI rollouts among them), or a JSON array of messages,
// and fine-tuning sets of one conversation per line or array element. Exports are streamed one conversation at a time, so
// memory follows the largest conversation, not the size of the file.
//
// Text is read as UTF-8. UTF-16 text with a byte order mark, as some
// Windows tools write it, is decoded. Text that is not valid UTF-8 is read
// as follows, judged on the whole file (a JSON file longer than SniffLen
// bytes is read as UTF-8, its invalid bytes replaced by U+FFFD: judged by
// its head, one stray byte there decoded the rest as Windows-1252):
//   - mostly UTF-8, with a few invalid bytes (or ASCII with a character cut
//     short): each invalid byte sequence is replaced by U+FFFD
//     (encoding/json does the same inside JSON strings);
//   - Western European text in Windows-1252 or ISO 8859-1 (accented
//     letters as single bytes among ASCII): decoded as Windows-1252, so it
//     stays searchable;
//   - anything else (Windows-1251, GBK, Shift-JIS ...: runs of non-ASCII
//     bytes, which any single-byte code page would turn into mojibake no
//     search matches) is an error asking for a conversion to UTF-8.
//
// Content that is not text at all (a NUL byte, or more than one byte in
// twenty of its head a control character other than tab, line and page
// breaks, escape, bell and backspace) is an error.
package convo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// Conversation is one conversation of a file: a whole markdown or JSON-lines
// file, or one element of an export.
type Conversation struct {
	// ID is "" for a file that is one conversation, and the conversation's
	// id inside an export (the sweep names it "<export path>/<id>").
	ID string
	// Title is the one the file gives; a conversation of an export that
	// has none is titled by the first line of its first user message.
	Title string
	// Date is "YYYY-MM-DD", "YYYY-MM" or "YYYY", or "" when unknown: the
	// day as written, in the zone written with it, except that a moment
	// written in UTC is dated in the reader's zone (Parse).
	Date string
	// Zoned is true when Date is the day of a moment written in UTC in the
	// reader's zone (Parse), a day another zone may give otherwise: the
	// date depends on the zone, so a sweep records the zone it was made in
	// and makes it again when the zone changes.
	Zoned bool
	// Created and Updated are in UTC, and zero when unknown. Markdown sets
	// Created only when its date line gives a time of day too.
	Created, Updated time.Time
	// Messages are the message blocks in order, never empty strings. Blocks
	// of markdown are verbatim apart from line endings (CRLF becomes LF),
	// blank lines trimmed at their edges and images embedded as data URIs
	// shown as "[image]"; messages of JSON formats are rendered as
	// "**Speaker:** text".
	Messages []string
}

// Format is a kind of file Parse understands.
type Format int

const (
	FormatMarkdown      Format = iota + 1 // markdown or plain text, with or without turn markers
	FormatJSONL                           // JSON lines, one message object, or one conversation, per line
	FormatMessages                        // a JSON array of message objects: one conversation
	FormatChatGPT                         // a ChatGPT data export (conversations.json)
	FormatClaude                          // a Claude.ai data export (conversations.json)
	FormatConversations                   // a JSON array of conversations, each with "messages" or "conversations"
)

func (f Format) String() string {
	switch f {
	case FormatMarkdown:
		return "markdown"
	case FormatJSONL:
		return "jsonl"
	case FormatMessages:
		return "json-messages"
	case FormatChatGPT:
		return "chatgpt-export"
	case FormatClaude:
		return "claude-export"
	case FormatConversations:
		return "json-conversations"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// SniffLen is how much of the start of a file Detect needs (or the whole file
// when it is shorter) to tell the formats apart.
const SniffLen = 64 << 10

var extensions = map[string]bool{".md": true, ".markdown": true, ".txt": true, ".json": true, ".jsonl": true}

// Supported reports whether a sweep should look at the file: by extension,
// case-insensitively.
func Supported(name string) bool { return extensions[extension(name)] }

// Several reports whether a file of this name may hold several
// conversations, each with an id (Conversation.ID), that a sweep stores as
// sources of their own: JSON (an export, an array of conversations) and
// JSON lines (one conversation a line). Any other file is one conversation.
func Several(name string) bool {
	ext := extension(name)
	return ext == ".json" || ext == ".jsonl"
}

func extension(name string) string {
	return strings.ToLower(path.Ext(strings.ReplaceAll(name, `\`, "/")))
}

var (
	bomUTF8    = []byte{0xEF, 0xBB, 0xBF}
	bomUTF16LE = []byte{0xFF, 0xFE}
	bomUTF16BE = []byte{0xFE, 0xFF}
)

func hasUTF16BOM(b []byte) bool {
	return bytes.HasPrefix(b, bomUTF16LE) || bytes.HasPrefix(b, bomUTF16BE)
}

// utf16Decoder honours either byte order mark and drops it.
func utf16Decoder() transform.Transformer {
	return unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder()
}

// Detect tells the format of a file from its name and its first bytes (at
// least SniffLen of them, or the whole file). Extensions decide between text
// (.md, .markdown, .txt), JSON lines (.jsonl) and JSON (.json); the content
// decides the rest. A JSON file is an array whose first element tells the
// format: "mapping" makes it a ChatGPT export, "chat_messages" a Claude
// export, "role", "speaker" or "author" an array of messages, "messages" or
// "conversations" an array of conversations (fine-tuning sets, ShareGPT).
// An empty array
// is reported as FormatChatGPT: it holds no conversations in any format.
func Detect(name string, head []byte) (Format, error) {
	ext := extension(name)
	if !extensions[ext] {
		return 0, invalidf(name, "unsupported file type %q (want .md, .markdown, .txt, .json or .jsonl)", ext)
	}
	switch {
	case bytes.HasPrefix(head, bomUTF8):
		head = head[len(bomUTF8):]
	case hasUTF16BOM(head):
		decoded, _, err := transform.Bytes(utf16Decoder(), head[:len(head)&^1])
		if err != nil {
			return 0, invalidf(name, "undecodable UTF-16 text")
		}
		head = decoded
	}
	if off, ok := binaryAt(head); ok {
		return 0, invalidf(name, "binary content (byte %d), not text", off)
	}
	switch ext {
	case ".json":
		return sniffJSON(name, head)
	case ".jsonl":
		if t := bytes.TrimLeft(head, " \t\r\n"); len(t) > 0 && t[0] != '{' {
			return 0, invalidf(name, "not JSON lines: the first line is not a JSON object")
		}
		return FormatJSONL, nil
	}
	return FormatMarkdown, nil
}

// binaryAt reports whether head is not text, and the offset of the first
// byte that says so: a NUL, or more than one byte in twenty being a control
// character. Bytes that are not valid UTF-8 say nothing here: text in a
// legacy encoding is full of them, and is judged by sniffEncoding.
func binaryAt(head []byte) (int, bool) {
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return i, true
	}
	bad, first := 0, -1
	for i, c := range head {
		// Terminal logs hold bells and backspaces (title sequences, line
		// editing), escapes (colours) and form feeds: text all the same.
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1b && c != 0x07 && c != 0x08) || c == 0x7f {
			bad++
			if first < 0 {
				first = i
			}
		}
	}
	return first, bad*20 > len(head)
}

// Parse reads the conversations of one file and calls fn for each one that has
// at least one message, in file order. name is used for the format and in
// errors. A file that is empty or blank (spaces, tabs and line breaks, after
// any byte order mark) holds no conversations, whatever its format. Exports and JSON arrays are streamed one element at a time; a text
// or JSON-lines file is one conversation and is held whole, so callers bound
// its size. A file named as one of the other files of a data export
// (user.json, projects.json ...) whose content is in no format Parse reads
// holds no conversations, and is no error.
//
// Malformed input gives an error with code recall.EINVALID naming the file and,
// where known, the line, the array element and the byte offset. Conversations
// passed to fn before an error were complete and valid, but the caller should
// treat the file as failed and discard them: a partly read export would
// otherwise be indexed as if it were whole. An error from fn stops Parse and
// is returned as it is; errors reading r are returned wrapped, without a code.
//
// zone is the reader's time zone (nil: UTC). A conversation dated by a moment
// written in UTC (seconds since the epoch, a timestamp ending in Z or
// +00:00), as exports and chat logs write every time, is dated by that
// moment's day in zone: a conversation held at 11 pm in California is on
// that day, not the next. A day written with another offset, or with none,
// is the day written (Conversation.Date).
func Parse(name string, r io.Reader, zone *time.Location, fn func(Conversation) error) error {
	fn = withoutNUL(withTitle(inZone(zone, inUTC(fn))))
	src := &sourceReader{r: r}
	br := bufio.NewReaderSize(src, SniffLen)
	head, err := br.Peek(SniffLen)
	if err != nil && !errors.Is(err, io.EOF) {
		return src.fail(name, err)
	}
	switch {
	case bytes.HasPrefix(head, bomUTF8):
		br.Discard(len(bomUTF8))
		head = head[len(bomUTF8):]
	case hasUTF16BOM(head):
		br = bufio.NewReaderSize(transform.NewReader(br, utf16Decoder()), SniffLen)
		if head, err = br.Peek(SniffLen); err != nil && !errors.Is(err, io.EOF) {
			return src.fail(name, err)
		}
	}
	if len(head) < SniffLen && blank(head) && extensions[extension(name)] {
		// The whole file is blank: no conversation, in any format. A JSON
		// file has no format to detect, and failed with every sweep,
		// while an empty note has always been no error.
		return nil
	}
	format, err := Detect(name, head)
	if err != nil {
		if recall.ErrorCode(err) == recall.EINVALID && exportCompanion(name) {
			return nil
		}
		return err
	}
	// Markdown is judged whole, once read. JSON is judged here only when
	// the head is the whole file: a large export judged by its head could
	// be decoded as Windows-1252 for one stray byte in it, turning every
	// accented letter after it to mojibake; JSON is UTF-8 (RFC 8259), and
	// a large file's stray bytes become U+FFFD as encoding/json makes them.
	if format != FormatMarkdown && len(head) < SniffLen {
		switch sniffEncoding(head, false) {
		case encWindows1252:
			br = bufio.NewReaderSize(transform.NewReader(br, charmap.Windows1252.NewDecoder()), SniffLen)
		case encUnknown:
			return legacyError(name)
		}
	}
	switch format {
	case FormatMarkdown:
		return parseMarkdownFile(name, br, src, fn)
	case FormatJSONL:
		return parseJSONL(name, br, src, fn)
	case FormatMessages:
		return parseMessages(name, br, src, fn)
	case FormatChatGPT:
		return parseChatGPT(name, br, src, fn)
	case FormatConversations:
		return parseConversations(name, br, src, fn)
	default:
		return parseClaude(name, br, src, fn)
	}
}

// blank reports whether b is nothing but JSON's whitespace (spaces, tabs
// and line breaks).
func blank(b []byte) bool { return len(bytes.TrimLeft(b, " \t\r\n")) == 0 }

// withTitle gives a conversation of an export that has no title one made
// from its first line (see fallbackTitle): a search result or a list of
// sources would show only its date. A conversation that is a whole file
// needs none: it is known by its file name.
func withTitle(fn func(Conversation) error) func(Conversation) error {
	return func(c Conversation) error {
		if c.Title == "" && c.ID != "" {
			c.Title = fallbackTitle(c.Messages)
		}
		return fn(c)
	}
}

// inZone dates a conversation dated by a moment written in UTC by that
// moment's day in zone (see Parse).
// A date so made is Zoned, in UTC too: another zone would make another.
func inZone(zone *time.Location, fn func(Conversation) error) func(Conversation) error {
	if zone == nil {
		zone = time.UTC
	}
	return func(c Conversation) error {
		if writtenInUTC(c.Created) && c.Date == dateOf(c.Created) {
			c.Date = dateOf(c.Created.In(zone))
			c.Zoned = true
		}
		return fn(c)
	}
}

// inUTC passes conversations on with their times in UTC. A parser keeps a
// text timestamp in the offset it was written with until it has dated the
// conversation by it (dateOf).
func inUTC(fn func(Conversation) error) func(Conversation) error {
	return func(c Conversation) error {
		c.Created, c.Updated = c.Created.UTC(), c.Updated.UTC()
		return fn(c)
	}
}

// titleLen is the most characters of a title made from a message.
const titleLen = 80

// fallbackTitle is the first line of text of the first user message (or
// of the first message, when no turn is the user's), without its speaker
// label, markdown markers and placeholders such as "[image]", cut to about
// titleLen characters at a word boundary.
func fallbackTitle(messages []string) string {
	first := ""
	for _, m := range messages {
		if text, ok := strings.CutPrefix(m, "**User:**"); ok {
			first = text
			break
		}
	}
	if first == "" && len(messages) > 0 {
		first = messages[0]
		if strings.HasPrefix(first, "**") {
			if _, text, ok := strings.Cut(first[2:], ":**"); ok {
				first = text
			}
		}
	}
	for line := range strings.Lines(first) {
		line = strings.TrimLeft(strings.TrimSpace(line), "#>*-+ \t")
		if line == "" || strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") || placeholder.MatchString(line) {
			continue
		}
		line = strings.Join(strings.Fields(emphasis.Replace(line)), " ")
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) <= titleLen {
			return line
		}
		cut := line[:len(string([]rune(line)[:titleLen]))]
		if i := strings.LastIndexByte(cut, ' '); i > len(cut)/2 {
			cut = cut[:i]
		}
		return strings.TrimRight(cut, " ,;:.-") + "…"
	}
	return ""
}

// emphasis drops markdown's bold markers from a title: a title reads as
// plain text wherever it is shown.
var emphasis = strings.NewReplacer("**", "", "__", "")

// placeholder is a line that stands for something not shown as text.
var placeholder = regexp.MustCompile(`^\[(?:image|file|artifact|canvas)\b[^\]]*\]$`)

// withoutNUL passes conversations on with every NUL character replaced by
// U+FFFD, as invalid UTF-8 is. A text file with a NUL byte is refused as
// binary, but JSON can escape one (\u0000) into any string of an export,
// and no store keeps it faithfully (PostgreSQL refuses it, failing the
// write of the whole batch it is in).
func withoutNUL(fn func(Conversation) error) func(Conversation) error {
	clean := func(s string) string {
		if strings.IndexByte(s, 0) < 0 {
			return s
		}
		return strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return func(c Conversation) error {
		c.ID, c.Title = clean(c.ID), clean(c.Title)
		for i, m := range c.Messages {
			c.Messages[i] = clean(m)
		}
		return fn(c)
	}
}

// exportCompanions are the files that come beside conversations.json in an
// unzipped ChatGPT or Claude data export and hold no conversation: the
// account, feedback on answers, shared links, model comparisons, projects.
// Were they errors, a vault holding an export as it came would fail every
// sweep on them.
var exportCompanions = map[string]bool{
	// ChatGPT
	"user.json":                 true,
	"message_feedback.json":     true,
	"shared_conversations.json": true,
	"model_comparisons.json":    true,
	// Claude
	"users.json":    true,
	"projects.json": true,
}

func exportCompanion(name string) bool {
	return exportCompanions[strings.ToLower(path.Base(strings.ReplaceAll(name, `\`, "/")))]
}

// sourceReader remembers the error of the underlying reader, so that a failing
// disk is reported as an I/O error and not as malformed content.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		s.err = err
	}
	return n, err
}

// fail returns the read error if there was one, else err as it is.
func (s *sourceReader) fail(name string, err error) error {
	if s.err != nil {
		return fmt.Errorf("%s: read: %w", name, s.err)
	}
	return err
}

func invalidf(name, format string, args ...any) error {
	return recall.Errorf(recall.EINVALID, "%s: %s", name, fmt.Sprintf(format, args...))
}

// normalizeNewlines turns CRLF and lone CR line endings into LF so that turn
// markers and blank lines are found the same way on every platform.
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// trimBlankLines drops whitespace-only lines at both ends of s, keeping the
// indentation of the first line and the text of the others untouched.
func trimBlankLines(s string) string {
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 || strings.TrimSpace(s[:i]) != "" {
			break
		}
		s = s[i+1:]
	}
	for {
		i := strings.LastIndexByte(s, '\n')
		if i < 0 || strings.TrimSpace(s[i+1:]) != "" {
			break
		}
		s = s[:i]
	}
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}
