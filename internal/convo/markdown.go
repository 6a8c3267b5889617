package convo

import (
	"bytes"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// parseMarkdownFile reads a whole text file: it is one conversation, and all
// of its blocks are needed at once by the chunker anyway.
func parseMarkdownFile(name string, r io.Reader, src *sourceReader, fn func(Conversation) error) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return src.fail(name, err)
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return invalidf(name, "binary content (NUL byte at %d), not text", i)
	}
	text := string(data)
	if !utf8.ValidString(text) {
		switch sniffEncoding(data, false) {
		case encUTF8:
			text = strings.ToValidUTF8(text, "\uFFFD")
		case encWindows1252:
			text = decodeWindows1252(data)
		default:
			return legacyError(name)
		}
	}
	c := parseMarkdown(name, withoutDataImages(text))
	if len(c.Messages) == 0 {
		return nil
	}
	return fn(c)
}

var (
	// mdDataImage is a markdown image whose source is a data URI, with
	// an optional title: ![alt](data:image/png;base64,... "title").
	// Base64 may be wrapped over lines.
	// The URI itself is only what a data URI may hold (a media type, its
	// parameters, then base64 or percent-encoded data, wrapped lines
	// included): a "![x](data:" typed in prose must not take the text up
	// to the next parenthesis with it.
	mdDataImage = regexp.MustCompile(`!\[([^\]\n]{0,500})\]\(\s*<?data:[\w.+-]*/?[\w.+-]*(?:;[\w.+-]+(?:=[\w.+-]+)?)*,[A-Za-z0-9+/=%_.~\-\r\n]*>?(?:\s+"[^"\n]*")?\s*\)`)
	// htmlDataImage is an HTML img element whose src is a data URI.
	htmlDataImage = regexp.MustCompile(`(?i)<img\s[^>]*?\bsrc\s*=\s*(?:"data:[^"]*"|'data:[^']*'|data:[^\s>]*)[^>]*>`)
	htmlAlt       = regexp.MustCompile(`(?i)\balt\s*=\s*(?:"([^"]*)"|'([^']*)')`)
)

// withoutDataImages replaces images embedded as data URIs, markdown
// (![alt](data:...)) or HTML (<img src="data:...">), by "[image]" or
// "[image: alt]", as the JSON formats show an image. The base64 of a
// screenshot is hundreds of kilobytes of text that no search can match,
// which would otherwise fill a hundred chunks; images linked by URL are
// kept as written.
func withoutDataImages(text string) string {
	if !strings.Contains(text, "data:") {
		return text
	}
	image := func(alt string) string {
		if alt = strings.Join(strings.Fields(alt), " "); alt != "" {
			return "[image: " + alt + "]"
		}
		return "[image]"
	}
	text = mdDataImage.ReplaceAllStringFunc(text, func(m string) string {
		return image(mdDataImage.FindStringSubmatch(m)[1])
	})
	return htmlDataImage.ReplaceAllStringFunc(text, func(m string) string {
		alt := ""
		if a := htmlAlt.FindStringSubmatch(m); a != nil {
			alt = a[1] + a[2]
		}
		return image(alt)
	})
}

// parseMarkdown splits a transcript into message blocks at its turn markers.
//
// A turn marker is a line (outside fenced code) that starts with a speaker
// label in one of three styles:
//
//	bold     **Caroline:** text   **User**: text   **小明：**text
//	heading  ## User   ### Assistant:   (levels 2 to 4, nothing else on the line)
//	plain    User: text   小明：text
//
// A label is a short name: up to 32 letters (of any script), digits, spaces
// and . - _ ' characters, at most three words, starting with a letter; a plain
// label must not start with a lowercase letter. Which labels split messages:
//
//  1. Role words (User, Assistant, Human, AI, Claude, ChatGPT, Me, You, System,
//     ...) always do, in every style.
//  2. Any other name does when it labels at least two lines of the file, in
//     any style: speakers take turns, while "Example:" or "## Setup" in prose
//     is usually a one-off.
//  3. Once a file has a speaker by rule 1 or 2, a bold or heading label that
//     starts a paragraph (or follows another label line) splits too, so that
//     a speaker who talks once is still a turn.
//
// Common prose and metadata labels (Note, Example, Warning, Tip, Date,
// Title, Summary, From, To, ...) never split. A file without markers is split
// into paragraphs. Text before the first marker becomes blocks of its own,
// one per paragraph, so nothing is lost; YAML front matter is metadata and is
// left out of the blocks.
func parseMarkdown(name, text string) Conversation {
	meta, body := splitFrontMatter(normalizeNewlines(text))
	d := scanLines(body)
	markers := d.markers()
	first := len(d.lines)
	if len(markers) > 0 {
		first = markers[0]
	}
	var c Conversation
	c.Messages = d.paragraphs(0, first, nil)
	for k, m := range markers {
		end := len(d.lines)
		if k+1 < len(markers) {
			end = markers[k+1]
		}
		if b := d.span(m, end); b != "" {
			c.Messages = append(c.Messages, b)
		}
	}
	c.Title = meta.title
	if c.Title == "" {
		c.Title = d.title(first)
	}
	dateText := meta.date
	if dateText == "" {
		dateText = d.dateLine(first)
	}
	c.Date, c.Created = parseDate(dateText)
	// Else a date the title begins with ("# 2024-03-06 Standup"), as a
	// daily note's file name does.
	for _, s := range []string{c.Title, path.Base(strings.ReplaceAll(name, `\`, "/"))} {
		if c.Date != "" {
			break
		}
		if m := fileNameDate.FindStringSubmatch(s); m != nil {
			c.Date, _ = parseDate(m[1])
		}
	}
	return c
}

// fileNameDate finds the date daily notes and exported chats are often named,
// and titled, by.
var fileNameDate = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})(?:\D|$)`)

type mdLine struct {
	start, end int  // byte range in the body, without the newline
	blank      bool // whitespace only
	code       bool // inside a fenced code block, or one of its fences
}

type mdDoc struct {
	body  string
	lines []mdLine
}

func scanLines(body string) *mdDoc {
	d := &mdDoc{body: body}
	for start := 0; start < len(body); {
		end := strings.IndexByte(body[start:], '\n')
		if end < 0 {
			end = len(body)
		} else {
			end += start
		}
		d.lines = append(d.lines, mdLine{start: start, end: end, blank: strings.TrimSpace(body[start:end]) == ""})
		start = end + 1
	}
	d.markFences()
	return d
}

func (d *mdDoc) text(i int) string { return d.body[d.lines[i].start:d.lines[i].end] }

// span is the text of lines a..b-1 with blank lines trimmed at both ends.
func (d *mdDoc) span(a, b int) string {
	return trimBlankLines(d.body[d.lines[a].start:d.lines[b-1].end])
}

// markFences marks fenced code, where nothing is a turn marker or a paragraph
// break. An opening fence that is never closed is taken as text rather than
// running to the end of the file as CommonMark has it: a stray ``` in one
// message must not hide every turn after it.
func (d *mdDoc) markFences() {
	n := len(d.lines)
	// longestClose[i][k] is the longest closing fence of kind k at or after line i.
	longestClose := make([][2]int, n+1)
	for i := n - 1; i >= 0; i-- {
		longestClose[i] = longestClose[i+1]
		if k, l, info := fence(d.text(i)); l > 0 && info == "" && l > longestClose[i][k] {
			longestClose[i][k] = l
		}
	}
	for i := 0; i < n; i++ {
		k, l, _ := fence(d.text(i))
		if l == 0 || longestClose[i+1][k] < l {
			continue
		}
		j := i + 1
		for ; j < n; j++ {
			if k2, l2, info := fence(d.text(j)); k2 == k && l2 >= l && info == "" {
				break
			}
		}
		for ; i <= j; i++ {
			d.lines[i].code = true
		}
		i = j
	}
}

// fence reports whether line is a code fence: its kind (0 for backticks, 1
// for tildes), the length of its run and the info string after it.
func fence(line string) (kind, length int, info string) {
	t, ok := unindent(line)
	if !ok || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return 0, 0, ""
	}
	for length < len(t) && t[length] == t[0] {
		length++
	}
	if length < 3 {
		return 0, 0, ""
	}
	info = strings.TrimSpace(t[length:])
	if t[0] == '`' && strings.Contains(info, "`") {
		return 0, 0, ""
	}
	if t[0] == '~' {
		kind = 1
	}
	return kind, length, info
}

// unindent strips up to three spaces; four or more, or a tab, make an
// indented code line, which holds no markers.
func unindent(line string) (string, bool) {
	i := 0
	for i < len(line) && i < 4 && line[i] == ' ' {
		i++
	}
	if i == 4 || (i < len(line) && line[i] == '\t') {
		return line, false
	}
	return line[i:], true
}

func isHeadingLine(line string) bool {
	t, ok := unindent(line)
	return ok && strings.HasPrefix(t, "#")
}

// paragraphs appends the paragraphs of lines a..b-1 to out. Blank lines split
// paragraphs except inside fenced code.
func (d *mdDoc) paragraphs(a, b int, out []string) []string {
	start := -1
	for i := a; i < b; i++ {
		if d.lines[i].blank && !d.lines[i].code {
			if start >= 0 {
				out = append(out, d.span(start, i))
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, d.span(start, b))
	}
	return out
}

type labelStyle int

const (
	styleBold labelStyle = iota
	styleHeading
	stylePlain
)

// Speaker names that are markers wherever they appear.
var roleWords = map[string]bool{
	"user": true, "assistant": true, "human": true, "ai": true, "claude": true,
	"chatgpt": true, "gpt": true, "gemini": true, "copilot": true, "bot": true,
	"me": true, "you": true, "system": true, "model": true,
}

// Labels of prose and metadata that are never speakers.
var proseLabels = map[string]bool{
	"note": true, "notes": true, "nb": true, "n.b.": true, "example": true, "examples": true,
	"e.g.": true, "warning": true, "caution": true, "danger": true, "tip": true, "tips": true,
	"hint": true, "important": true, "info": true, "todo": true, "fixme": true, "date": true,
	"time": true, "title": true, "subject": true, "summary": true, "tldr": true, "source": true,
	"sources": true, "update": true, "edit": true, "ps": true, "p.s.": true, "fyi": true,
	"re": true, "from": true, "to": true, "cc": true, "bcc": true, "sent": true, "step": true,
	"result": true, "results": true, "output": true, "input": true, "error": true, "usage": true,
	"location": true, "tags": true, "category": true, "status": true, "see also": true,
	"reference": true, "references": true, "link": true, "links": true, "url": true,
}

// markers returns the lines that start a message, by the rule documented at
// parseMarkdown.
func (d *mdDoc) markers() []int {
	type candidate struct {
		line  int
		name  string
		style labelStyle
		lead  bool
	}
	var cands []candidate
	count := map[string]int{}
	prevLabel := false
	for i := range d.lines {
		l := d.lines[i]
		if l.code || l.blank {
			prevLabel = false
			continue
		}
		name, style, ok := parseLabel(d.text(i))
		if !ok {
			prevLabel = false
			continue
		}
		lead := style == styleHeading || prevLabel || i == 0 ||
			d.lines[i-1].blank || d.lines[i-1].code || isHeadingLine(d.text(i-1))
		cands = append(cands, candidate{i, name, style, lead})
		count[name]++
		prevLabel = true
	}
	strong := func(name string) bool {
		low := strings.ToLower(name)
		return roleWords[low] || (count[name] >= 2 && !proseLabels[low])
	}
	conversation := false
	for _, c := range cands {
		if strong(c.name) {
			conversation = true
			break
		}
	}
	var lines []int
	for _, c := range cands {
		if strong(c.name) || (conversation && c.style != stylePlain && c.lead && !proseLabels[strings.ToLower(c.name)]) {
			lines = append(lines, c.line)
		}
	}
	return lines
}

// parseLabel reads a speaker label at the start of line.
func parseLabel(line string) (name string, style labelStyle, ok bool) {
	t, ok := unindent(line)
	if !ok || t == "" {
		return "", 0, false
	}
	switch {
	case t[0] == '#':
		n := 0
		for n < len(t) && t[n] == '#' {
			n++
		}
		if n < 2 || n > 4 || n == len(t) || (t[n] != ' ' && t[n] != '\t') {
			return "", 0, false
		}
		rest := strings.TrimSpace(t[n:])
		if closed := strings.TrimRight(rest, "#"); closed != rest && (closed == "" || strings.HasSuffix(closed, " ")) {
			rest = strings.TrimSpace(closed)
		}
		name = strings.TrimSpace(trimColon(rest))
		return name, styleHeading, validName(name)
	case strings.HasPrefix(t, "**"):
		inner, after, found := strings.Cut(t[2:], "**")
		if !found {
			return "", 0, false
		}
		if n := trimColon(inner); n != inner {
			name = strings.TrimSpace(n)
		} else if _, cut := cutColon(after); cut {
			name = inner
		} else {
			return "", 0, false
		}
		return name, styleBold, validName(name)
	}
	i := strings.IndexAny(t, ":：")
	if i <= 0 || i > 128 {
		return "", 0, false
	}
	name = strings.TrimRight(t[:i], " \t")
	if _, cut := cutColon(t[i:]); !cut {
		return "", 0, false
	}
	if r, _ := utf8.DecodeRuneInString(name); unicode.IsLower(r) {
		return "", 0, false
	}
	return name, stylePlain, validName(name)
}

// trimColon removes one trailing colon, ASCII or full-width.
func trimColon(s string) string {
	if t, ok := strings.CutSuffix(s, ":"); ok {
		return t
	}
	return strings.TrimSuffix(s, "：")
}

// cutColon reports whether s starts with a colon that ends a label: a
// full-width one, or an ASCII one followed by a space or the end of the line
// (so "https://..." and "10:30" are not labels).
func cutColon(s string) (string, bool) {
	if rest, ok := strings.CutPrefix(s, "："); ok {
		return rest, true
	}
	rest, ok := strings.CutPrefix(s, ":")
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return "", false
	}
	return rest, true
}

func validName(name string) bool {
	if name == "" || utf8.RuneCountInString(name) > 32 || len(strings.Fields(name)) > 3 {
		return false
	}
	for i, r := range name {
		switch {
		case unicode.IsLetter(r):
		case i == 0:
			return false
		case unicode.IsDigit(r) || unicode.Is(unicode.M, r) || strings.ContainsRune(" .-_'’", r):
		default:
			return false
		}
	}
	return true
}

// title is the text of the first level-1 heading before line end.
func (d *mdDoc) title(end int) string {
	for i := 0; i < end; i++ {
		if d.lines[i].code {
			continue
		}
		t, ok := unindent(d.text(i))
		if !ok || !strings.HasPrefix(t, "# ") && !strings.HasPrefix(t, "#\t") {
			continue
		}
		t = strings.TrimSpace(t[2:])
		if closed := strings.TrimRight(t, "#"); closed != t && (closed == "" || strings.HasSuffix(closed, " ")) {
			t = strings.TrimSpace(closed)
		}
		if t != "" {
			return t
		}
	}
	return ""
}

// dateLine returns the value of a "Date:" line (bold or not) among the first
// lines of text before line end.
func (d *mdDoc) dateLine(end int) string {
	seen := 0
	for i := 0; i < end && seen < 20; i++ {
		if d.lines[i].code || d.lines[i].blank {
			continue
		}
		seen++
		t := strings.TrimSpace(strings.NewReplacer("*", "", "_", "").Replace(d.text(i)))
		if len(t) < 5 || !strings.EqualFold(t[:4], "date") {
			continue
		}
		rest := strings.TrimLeft(t[4:], " \t")
		if v, ok := strings.CutPrefix(rest, ":"); ok {
			return v
		}
		if v, ok := strings.CutPrefix(rest, "："); ok {
			return v
		}
	}
	return ""
}

type frontMatter struct{ title, date string }

// frontMatterCreated are the keys other than "date" that notes apps and
// chat exporters write a note's creation time under (Obsidian's "created",
// an exporter's "create_time"): a file without "date" is dated by them.
var frontMatterCreated = map[string]bool{"created": true, "created_at": true, "create_time": true, "date_created": true}

// splitFrontMatter separates a leading YAML front matter block ("---" lines
// around "key: value" lines) from the body and reads its title and date. A
// block whose lines do not look like YAML is a thematic break with text, and
// stays in the body. So is one whose "keys" are speakers: a key it repeats
// (a YAML mapping cannot, while "Q: ... A: ... Q:" turns do), or one the
// file's turn markers take for a speaker ("Caroline:" in the block and again
// below it). Left out as metadata, their turns would be lost.
func splitFrontMatter(text string) (frontMatter, string) {
	first, rest, ok := strings.Cut(text, "\n")
	if !ok || strings.TrimRight(first, " \t") != "---" {
		return frontMatter{}, text
	}
	var lines []string
	for off := 0; off < len(rest); {
		end := strings.IndexByte(rest[off:], '\n')
		next := len(rest)
		if end < 0 {
			end = len(rest)
		} else {
			end += off
			next = end + 1
		}
		line := rest[off:end]
		if fence := strings.TrimRight(line, " \t"); fence == "---" || fence == "..." {
			if repeatsKey(lines) || speakerKeys(text, len(lines)) {
				return frontMatter{}, text
			}
			return readFrontMatter(lines), rest[next:]
		}
		if !yamlLine(line) || turnLine(line) {
			return frontMatter{}, text
		}
		lines = append(lines, line)
		off = next
	}
	return frontMatter{}, text
}

var yamlKey = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_ -]*:(?:\s|$)`)

// yamlLine reports whether line can belong to a YAML mapping: a key, an
// indented continuation, a list item, a comment or a blank line.
func yamlLine(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasPrefix(t, "#") || line[0] == ' ' || line[0] == '\t' ||
		strings.HasPrefix(line, "- ") || line == "-" || yamlKey.MatchString(line)
}

// turnLine reports whether a line that looks like a YAML key is a turn
// ("User: what is 2+2?"): a block of those between rules is conversation,
// not front matter.
func turnLine(line string) bool {
	m := yamlKey.FindString(line)
	return m != "" && roleWords[strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m), ":")))]
}

// repeatsKey reports whether a top-level key occurs twice among lines.
func repeatsKey(lines []string) bool {
	keys := map[string]bool{}
	for _, line := range lines {
		m := yamlKey.FindString(line)
		if m == "" {
			continue
		}
		key := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m), ":"))
		if keys[key] {
			return true
		}
		keys[key] = true
	}
	return false
}

// speakerKeys reports whether the turn markers of text, read whole, start a
// message among its lines 1..n, the block that would be front matter.
func speakerKeys(text string, n int) bool {
	markers := scanLines(text).markers()
	return len(markers) > 0 && markers[0] <= n
}

func readFrontMatter(lines []string) frontMatter {
	var fm frontMatter
	var created string // the first of frontMatterCreated's keys, if "date" is not given
	for i, line := range lines {
		m := yamlKey.FindString(line)
		if m == "" {
			continue
		}
		key := strings.ToLower(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m), ":")))
		if key != "title" && key != "date" && !frontMatterCreated[key] {
			continue
		}
		value := yamlScalar(line[len(m):])
		if v := strings.TrimSpace(line[len(m):]); v != "" && strings.Trim(v, "|>-+") == "" {
			// A block scalar: its indented lines, joined as one line.
			var parts []string
			for _, next := range lines[i+1:] {
				if next != "" && next[0] != ' ' && next[0] != '\t' {
					break
				}
				if t := strings.TrimSpace(next); t != "" {
					parts = append(parts, t)
				}
			}
			value = strings.Join(parts, " ")
		}
		switch {
		case key == "title" && fm.title == "":
			fm.title = value
		case key == "date" && fm.date == "":
			fm.date = value
		case frontMatterCreated[key] && created == "":
			created = value
		}
	}
	if fm.date == "" {
		fm.date = created
	}
	return fm
}

// yamlScalar reads a one-line YAML scalar: double-quoted with escapes,
// single-quoted (a quote doubled inside), or plain up to a " #" comment.
func yamlScalar(v string) string {
	v = strings.TrimSpace(v)
	switch {
	case strings.HasPrefix(v, `"`):
		for i := 1; i < len(v); i++ {
			switch v[i] {
			case '\\':
				i++
			case '"':
				if s, err := strconv.Unquote(v[:i+1]); err == nil {
					return s
				}
				return v[1:i]
			}
		}
		return strings.TrimPrefix(v, `"`)
	case strings.HasPrefix(v, "'"):
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			if v[i] == '\'' {
				if i+1 < len(v) && v[i+1] == '\'' {
					b.WriteByte('\'')
					i++
					continue
				}
				break
			}
			b.WriteByte(v[i])
		}
		return b.String()
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v)
}
