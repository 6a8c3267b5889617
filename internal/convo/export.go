package convo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/recall-mcp/recall/internal/jsonkind"
)

// sniffJSON tells the format of a JSON file from the keys of the first
// element of its top-level array, as far as head reaches. A top-level
// object is told by its own keys: a file of one conversation, as a single
// conversation saved from an export or a fine-tuning example is.
func sniffJSON(name string, head []byte) (Format, error) {
	t := bytes.TrimLeft(head, " \t\r\n")
	switch {
	case len(t) == 0:
		return 0, invalidf(name, "empty file: want a JSON array of conversations or messages")
	case t[0] != '[' && t[0] != '{':
		return 0, invalidf(name, "not JSON: want an array of conversations or messages")
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	what := "the top-level object"
	if t[0] == '[' {
		what = "element [0]"
		dec.Token() // the '[' seen above
		if !dec.More() {
			if _, err := dec.Token(); err != nil {
				return 0, invalidf(name, "malformed JSON at the start of the array")
			}
			return FormatChatGPT, nil // an empty export
		}
		tok, err := dec.Token()
		if err != nil {
			return 0, invalidf(name, "malformed JSON in element [0]: %v", err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return 0, invalidf(name, "element [0] is %s, not an object: want an array of conversations or messages", describeToken(tok))
		}
	} else {
		dec.Token() // the '{' seen above
	}
	for dec.More() {
		key, err := dec.Token()
		if err == nil {
			switch key {
			case "mapping":
				return FormatChatGPT, nil
			case "chat_messages":
				return FormatClaude, nil
			case "role", "speaker", "author":
				return FormatMessages, nil
			case "messages", "conversations":
				return FormatConversations, nil
			}
			err = skipValue(dec)
		}
		if err != nil {
			return 0, sniffError(name, what, len(head), err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return 0, sniffError(name, what, len(head), err)
	}
	return 0, invalidf(name, "%s has no \"mapping\" (ChatGPT), \"chat_messages\" (Claude), \"role\" (messages) or \"messages\" or \"conversations\" (conversations) key: unknown JSON format; if it is no conversation (a settings or package file), move it out of the vault or into a folder whose name starts with \".\" (hidden folders are not swept)", what)
}

func sniffError(name, what string, headLen int, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return invalidf(name, "no \"mapping\", \"chat_messages\", \"role\", \"messages\" or \"conversations\" key in the first %d bytes of %s: not a ChatGPT or Claude export or a list of messages or conversations, or truncated", headLen, what)
	}
	return invalidf(name, "malformed JSON in %s: %v", what, err)
}

// skipValue consumes one JSON value from dec, token by token.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

func describeToken(tok any) string {
	switch tok.(type) {
	case json.Delim:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// walkArray reads a top-level JSON array one element at a time, calling each
// with the decoder positioned at element i, so that memory holds one
// conversation and never the whole export. A top-level object is read as
// an array of that one element: a file of one conversation.
func walkArray(name string, r io.Reader, src *sourceReader, each func(i int, dec *json.Decoder) error) error {
	dec := json.NewDecoder(r)
	if topLevelObject(r) {
		if err := each(0, dec); err != nil {
			return err
		}
		return atEnd(name, src, dec, "object", " (JSON lines belong in a .jsonl file)")
	}
	tok, err := dec.Token()
	if err != nil {
		return jsonError(name, src, -1, dec.InputOffset(), err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return invalidf(name, "the top level is not a JSON array")
	}
	i := 0
	for ; dec.More(); i++ {
		if err := each(i, dec); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return jsonError(name, src, i, dec.InputOffset(), err)
	}
	return atEnd(name, src, dec, "array", "")
}

// topLevelObject reports whether r, as Parse hands it over (a
// bufio.Reader that has peeked the head Detect saw), holds a JSON object
// rather than an array. It only peeks, so the decoder still reads from the
// first byte and its offsets stay those of the file.
func topLevelObject(r io.Reader) bool {
	br, ok := r.(*bufio.Reader)
	if !ok {
		return false
	}
	head, _ := br.Peek(min(SniffLen, br.Size()))
	t := bytes.TrimLeft(head, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// atEnd checks that nothing follows the top-level value, a whole what; the
// error ends with hint.
func atEnd(name string, src *sourceReader, dec *json.Decoder, what, hint string) error {
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil || src.err == nil {
			return invalidf(name, "data after the end of the %s, at byte %d%s", what, dec.InputOffset(), hint)
		}
		return src.fail(name, err)
	}
	return nil
}

// decodeElement decodes element i into v, with an error that says where.
func decodeElement(name string, src *sourceReader, i int, dec *json.Decoder, v any) error {
	off := dec.InputOffset()
	if err := dec.Decode(v); err != nil {
		return jsonError(name, src, i, off, err)
	}
	return nil
}

// jsonError describes a decoding error of element i (or of the array itself
// when i < 0) that began at byte off.
func jsonError(name string, src *sourceReader, i int, off int64, err error) error {
	if src.err != nil {
		return src.fail(name, err)
	}
	if i < 0 {
		return invalidf(name, "%s", describeJSON(err, 0))
	}
	return invalidf(name, "element [%d] (after byte %d): %s", i, off, describeJSON(err, 0))
}

// describeJSON says what is wrong with malformed JSON; base is added to the
// offset of a syntax error.
func describeJSON(err error, base int64) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte %d: %v", base+syntax.Offset, syntax)
	case errors.As(err, &typ):
		return fmt.Sprintf("%s is a JSON %s, want %s", fieldName(typ.Field), typ.Value, jsonkind.Want(typ.Type))
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated: the file ends inside the JSON"
	}
	return "malformed JSON: " + err.Error()
}

func fieldName(f string) string {
	if f == "" {
		return "the value"
	}
	return fmt.Sprintf("%q", strings.TrimPrefix(f, "."))
}

// exportIDs checks the ids of an export's conversations: each becomes the
// last element of a source id, so it must be one plain path element, and
// unique in the file as a source id is, in Unicode NFC: two ids that differ
// only in normalisation ("café" precomposed and with a combining accent)
// would name one source, and the store refuses a write holding a source
// twice, with every other file of its batch. Conversations are numbered as
// errors name them: element [i] of an array, or line i of JSON lines when
// lines is set.
type exportIDs struct {
	seen  map[string]seenID // by the id in NFC
	lines bool
}

type seenID struct {
	at int
	id string // as written
}

func (ids *exportIDs) check(name string, i int, id string) error {
	one, two := "element [%d]", "elements [%d] and [%d]"
	if ids.lines {
		one, two = "line %d", "lines %d and %d"
	}
	switch {
	case id == "":
		return invalidf(name, one+" has no conversation id", i)
	case len(id) > 200:
		// Not quoted: an id this long may be text, and errors go to sweep.log.
		return invalidf(name, one+" has a conversation id of %d bytes, over the 200 a source id takes", i, len(id))
	case id == "." || id == ".." || strings.ContainsAny(id, `/\`) ||
		strings.IndexFunc(id, unicode.IsControl) >= 0:
		return invalidf(name, one+" has an unusable conversation id %q", i, id)
	}
	key := norm.NFC.String(id)
	if prev, dup := ids.seen[key]; dup {
		if prev.id != id {
			return invalidf(name, two+" have conversation ids that differ only in Unicode normalisation, %+q and %+q: their source ids would be one", prev.at, i, prev.id, id)
		}
		return invalidf(name, two+" have the same conversation id %q", prev.at, i, id)
	}
	if ids.seen == nil {
		ids.seen = map[string]seenID{}
	}
	ids.seen[key] = seenID{i, id}
	return nil
}

// Speaker labels of the JSON formats. Every format renders the person as
// "User" and the model as "Assistant", whatever the export calls them, so a
// search reads the same across ChatGPT, Claude and chat logs.
var speakerNames = map[string]string{
	"user": "User", "human": "User",
	"assistant": "Assistant", "ai": "Assistant", "bot": "Assistant", "model": "Assistant",
	"gpt": "Assistant", "chatgpt": "Assistant", // ShareGPT
}

func speakerLabel(s string) string {
	s = strings.TrimSpace(s)
	if l, ok := speakerNames[strings.ToLower(s)]; ok {
		return l
	}
	return s
}

// renderTurn renders one message as "**Speaker:** text", the form the
// markdown parser reads back. Text that opens with a block (code fence,
// heading, table, list, quote) starts on the next line so that it still
// renders as one.
func renderTurn(speaker, text string) string {
	text = trimBlankLines(normalizeNewlines(text))
	if text == "" {
		return ""
	}
	if speaker == "" {
		return text
	}
	sep := " "
	first, _, _ := strings.Cut(text, "\n")
	if t := strings.TrimLeft(first, " "); len(first)-len(t) >= 4 || strings.HasPrefix(first, "\t") ||
		strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") || strings.HasPrefix(t, "#") ||
		strings.HasPrefix(t, "|") || strings.HasPrefix(t, ">") || strings.HasPrefix(t, "- ") ||
		strings.HasPrefix(t, "* ") || strings.HasPrefix(t, "+ ") || orderedItem(t) {
		sep = "\n"
	}
	return "**" + speaker + ":**" + sep + text
}

// codeBlock renders code as a fenced block in lang (none when the export says
// "unknown" or gives something that would break the fence line), with a
// fence longer than any run of backticks in the code, so that the code
// cannot close it early.
func codeBlock(lang, code string) string {
	if lang == "unknown" || strings.ContainsAny(lang, "`\n") {
		lang = ""
	}
	f := "```"
	for strings.Contains(code, f) {
		f += "`"
	}
	return f + lang + "\n" + trimBlankLines(code) + "\n" + f
}

func orderedItem(s string) bool {
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(s) && (s[i] == '.' || s[i] == ')') && s[i+1] == ' '
}
