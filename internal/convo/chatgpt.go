package convo

import (
	"encoding/json"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The parts of a ChatGPT export (conversations.json) that make up what the
// user saw; everything else in it is ignored.
type gptConversation struct {
	ID             string `json:"id"`
	ConversationID string `json:"conversation_id"`
	Title          string `json:"title"`
	CreateTime     stamp  `json:"create_time"`
	UpdateTime     stamp  `json:"update_time"`
	// Mapping decodes through a pointer set beforehand, as Claude's
	// chat_messages does, which tells absent (the pointer kept, its map
	// nil: not a ChatGPT conversation) from null (the pointer set to nil:
	// a conversation with nothing in it).
	Mapping     *map[string]gptNode `json:"mapping"`
	CurrentNode string              `json:"current_node"`
	nodes       map[string]gptNode  // what Mapping holds
}

type gptNode struct {
	Message  *gptMessage `json:"message"`
	Parent   string      `json:"parent"`
	Children []string    `json:"children"`
}

type gptMessage struct {
	Author struct {
		Role string `json:"role"`
	} `json:"author"`
	CreateTime stamp `json:"create_time"`
	Content    struct {
		ContentType string            `json:"content_type"`
		Parts       []json.RawMessage `json:"parts"`
		Text        string            `json:"text"`
		Language    string            `json:"language"`
	} `json:"content"`
	Metadata struct {
		Hidden bool `json:"is_visually_hidden_from_conversation"`
	} `json:"metadata"`
	// Recipient is "all" for a message to the conversation, and names the
	// tool an assistant message calls ("web.run", "dalle.text2im", "bio",
	// "python" ...).
	Recipient string `json:"recipient"`
}

// gptPlaceholderTitle is the title ChatGPT gives a conversation until it
// names one, which many in an export keep: it says nothing of the
// conversation, and a list of results titled by it tells none apart.
const gptPlaceholderTitle = "New chat"

// Content types that never show as a message: custom instructions, saved
// memories and the model's hidden reasoning.
var gptHiddenContent = map[string]bool{
	"user_editable_context":  true,
	"model_editable_context": true,
	"thoughts":               true,
	"reasoning_recap":        true,
}

func parseChatGPT(name string, r io.Reader, src *sourceReader, fn func(Conversation) error) error {
	ids := exportIDs{}
	return walkArray(name, r, src, func(i int, dec *json.Decoder) error {
		var nodes map[string]gptNode
		g := gptConversation{Mapping: &nodes}
		if err := decodeElement(name, src, i, dec, &g); err != nil {
			return err
		}
		if g.Mapping != nil && nodes == nil {
			return invalidf(name, "element [%d] has no \"mapping\": not a ChatGPT conversation", i)
		}
		g.nodes = nodes
		id := g.ID
		if id == "" {
			id = g.ConversationID
		}
		if err := ids.check(name, i, id); err != nil {
			return err
		}
		title := strings.TrimSpace(g.Title)
		if title == gptPlaceholderTitle {
			title = "" // titled by its first line, as an untitled one is
		}
		c := Conversation{ID: id, Title: title, Created: time.Time(g.CreateTime), Updated: time.Time(g.UpdateTime)}
		var firstMessage, lastMessage time.Time
		var doc gptCanvas // the canvas document last created on the branch
		for _, nodeID := range g.branch() {
			m := g.nodes[nodeID].Message
			if at := time.Time(m.CreateTime); !at.IsZero() {
				if firstMessage.IsZero() {
					firstMessage = at
				}
				lastMessage = at
			}
			var text string
			switch m.Recipient {
			case gptCanvasCreate, gptCanvasUpdate:
				text = doc.apply(m.Recipient, m.payload())
			default:
				text = m.text()
			}
			if m.Author.Role == "assistant" {
				text = withoutGPTMarkers(text)
			}
			if b := renderTurn(speakerLabel(m.Author.Role), text); b != "" {
				c.Messages = append(c.Messages, b)
			}
		}
		if len(c.Messages) == 0 {
			return nil
		}
		if c.Created.IsZero() {
			c.Created = firstMessage
		}
		if c.Updated.IsZero() {
			c.Updated = lastMessage
		}
		c.Date = dateOf(c.Created)
		return fn(c)
	})
}

// branch returns the ids of the visible messages of the branch the user last
// looked at: from current_node up through the parents to the root, reversed.
// Edits and regenerations leave other branches in the mapping; they are not
// what the conversation showed. Without a usable current_node it follows the
// newest child from the root.
//
// A parent missing from the mapping (a node pruned from the export) does
// not end the walk, which would drop every message above it: it goes on
// from the node whose children list the missing one (or, failing that, the
// node it came from), and where none does, the branch below the gap follows
// the path of newest children from the root, as far as it goes.
func (g *gptConversation) branch() []string {
	leaf := g.CurrentNode
	if _, ok := g.nodes[leaf]; !ok {
		leaf = g.newestLeaf()
	}
	var path, above []string
	var listedBy map[string]string // each node's parent by the children lists, made at a gap
	seen := map[string]bool{}
	for id := leaf; id != "" && !seen[id]; {
		n, ok := g.nodes[id]
		if !ok {
			break
		}
		seen[id] = true
		if n.Message != nil && n.Message.visible() {
			path = append(path, id)
		}
		next := n.Parent
		if _, ok := g.nodes[next]; !ok && next != "" {
			if listedBy == nil {
				listedBy = g.listedBy()
			}
			p, ok := listedBy[next]
			if !ok {
				p, ok = listedBy[id]
			}
			if !ok {
				roots, _ := g.roots()
				_, above = g.followBest(roots, seen)
				break
			}
			next = p
		}
		id = next
	}
	slices.Reverse(path)
	return append(above, path...)
}

// listedBy maps each node listed among another's children to that other.
func (g *gptConversation) listedBy() map[string]string {
	by := map[string]string{}
	for id, n := range g.nodes {
		for _, c := range n.Children {
			by[c] = id
		}
	}
	return by
}

// newestLeaf finds the displayed branch's end when the export does not name
// it (no current_node): the newest child at every step, from the root. A
// node whose parent is missing from the mapping (pruned) is a root only when
// there is no true one (no parent at all), and among several roots the one
// whose branch shows the most messages wins, so a stray node never stands
// for the conversation.
func (g *gptConversation) newestLeaf() string {
	roots, orphans := g.roots()
	if len(roots) == 0 {
		roots = orphans
	}
	leaf, _ := g.followBest(roots, nil)
	return leaf
}

// roots returns the nodes without a parent and, apart, those whose parent
// is missing from the mapping, each sorted: map order is random, and the
// same root must win every time.
func (g *gptConversation) roots() (roots, orphans []string) {
	for id, n := range g.nodes {
		if _, ok := g.nodes[n.Parent]; !ok {
			if n.Parent == "" {
				roots = append(roots, id)
			} else {
				orphans = append(orphans, id)
			}
		}
	}
	slices.Sort(roots)
	slices.Sort(orphans)
	return roots, orphans
}

// followBest follows the newest children from each of roots and returns
// the walk that shows the most messages: where it ended, and its visible
// messages in order.
func (g *gptConversation) followBest(roots []string, stop map[string]bool) (leaf string, shown []string) {
	most := -1
	for _, root := range roots {
		l, s := g.followNewest(root, stop)
		if len(s) > most {
			leaf, shown, most = l, s, len(s)
		}
	}
	return leaf, shown
}

// followNewest walks from id through each node's newest child to a leaf,
// or to the last node before one missing from the mapping or in stop, and
// returns where it ended and the visible messages on the way.
func (g *gptConversation) followNewest(id string, stop map[string]bool) (leaf string, shown []string) {
	seen := map[string]bool{}
	for !seen[id] && !stop[id] {
		seen[id] = true
		n := g.nodes[id]
		if n.Message != nil && n.Message.visible() {
			shown = append(shown, id)
		}
		if len(n.Children) == 0 {
			break
		}
		next := n.Children[len(n.Children)-1]
		if _, ok := g.nodes[next]; !ok || stop[next] {
			break
		}
		id = next
	}
	return id, shown
}

func (m *gptMessage) visible() bool {
	role := m.Author.Role
	return role != "system" && role != "tool" && !m.Metadata.Hidden && !gptHiddenContent[m.Content.ContentType] &&
		(role != "assistant" || gptShownRecipient(m.Recipient))
}

// gptShownRecipient reports whether an assistant message to recipient is
// part of the conversation. One to a tool is a call the user never read as
// an answer: a search query, an image prompt, a memory the model saves.
// Code for the code interpreter ("python") is an exception: the
// conversation shows it (collapsed under "Analyzed"), and it is often what
// the user asked for, so it is kept, fenced, as Claude's artifacts are.
// So are the documents the model writes in a canvas (see gptCanvas).
func gptShownRecipient(r string) bool {
	return r == "" || strings.EqualFold(r, "all") || strings.EqualFold(r, "python") || r == gptCanvasCreate || r == gptCanvasUpdate
}

// text joins the string parts of a message. An image part shows as
// "[image]"; a part object with text (a voice transcript) gives its text;
// other objects (audio, files) are left out. Messages without parts (code,
// execution output, quotes) carry their text in content.text; code the
// model ran is fenced, as the conversation showed it.
func (m *gptMessage) text() string {
	if m.Content.ContentType == "code" && strings.TrimSpace(m.Content.Text) != "" {
		return codeBlock(m.Content.Language, m.Content.Text)
	}
	var parts []string
	for _, raw := range m.Content.Parts {
		if len(raw) == 0 {
			continue
		}
		switch raw[0] {
		case '"':
			var s string
			if json.Unmarshal(raw, &s) == nil && strings.TrimSpace(s) != "" {
				parts = append(parts, s)
			}
		case '{':
			var p struct {
				ContentType string `json:"content_type"`
				Text        string `json:"text"`
			}
			if json.Unmarshal(raw, &p) != nil {
				continue
			}
			switch {
			case strings.Contains(p.ContentType, "image"):
				parts = append(parts, "[image]")
			case strings.TrimSpace(p.Text) != "":
				parts = append(parts, p.Text)
			}
		}
	}
	if len(parts) == 0 {
		return m.Content.Text
	}
	return strings.Join(parts, "\n")
}

// The calls that write a canvas document: create one, or change the one
// open.
const (
	gptCanvasCreate = "canmore.create_textdoc"
	gptCanvasUpdate = "canmore.update_textdoc"
)

// gptCanvas is a canvas document: what the user saw beside the
// conversation, and often what they asked for (a letter, a program). The
// model writes it in a call whose JSON input is, to create one, its name,
// its type ("document", or "code/<language>") and its content, and to
// change it, updates each replacing what a regular expression matches.
// The export keeps only the calls, not the document they made.
type gptCanvas struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Content string `json:"content"`
	Updates []struct {
		Pattern     string `json:"pattern"`
		Replacement string `json:"replacement"`
	} `json:"updates"`
}

// apply reads a call to recipient with input payload, and renders the
// document it shows as Claude's artifacts are: "[canvas: name]", then the
// content, code fenced in its language, a document as written (it is
// prose the canvas shows formatted). An update that rewrites the whole
// document (one pattern matching everything, as the model is told to write
// code updates) shows the new version under the name of the document last
// created; any other update is left out, as Claude's artifact updates are:
// its replacement is a piece whose place the export does not keep, and
// may refer to what the pattern matched (\1). A call whose input does not
// read is left out, as it never fails the export.
func (doc *gptCanvas) apply(recipient, payload string) string {
	var call gptCanvas
	if json.Unmarshal([]byte(payload), &call) != nil {
		return ""
	}
	if recipient == gptCanvasCreate {
		call.Updates = nil
		*doc = call
	} else {
		if len(call.Updates) != 1 || !gptWholeDocument(call.Updates[0].Pattern) {
			return ""
		}
		doc.Content = call.Updates[0].Replacement
	}
	if strings.TrimSpace(doc.Content) == "" {
		return ""
	}
	out := doc.Content
	if lang, ok := strings.CutPrefix(doc.Type, "code/"); ok {
		out = codeBlock(lang, doc.Content)
	}
	if n := strings.TrimSpace(doc.Name); n != "" && !strings.Contains(n, "\n") {
		out = "[canvas: " + n + "]\n" + out
	}
	return out
}

// gptWholeDocument reports whether an update's pattern matches a whole
// document: ".*", which the model is told to use to rewrite one, with
// anchors or a dotall flag.
func gptWholeDocument(pattern string) bool {
	p := strings.TrimPrefix(strings.TrimSpace(pattern), "(?s)")
	p = strings.TrimSuffix(strings.TrimPrefix(p, "^"), "$")
	return p == ".*" || p == "[\\s\\S]*"
}

// payload is the input of a call to a tool: the text of a code message, or
// its parts.
func (m *gptMessage) payload() string {
	if m.Content.Text != "" {
		return m.Content.Text
	}
	var parts []string
	for _, raw := range m.Content.Parts {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "")
}

// The private-use characters that delimit ChatGPT's inline references in
// an answer's text: start, kind, separator, fields, end, as in
// "\ue200cite\ue202turn0search1\ue201" or
// "\ue200entity\ue202[\"city\",\"Panaji\"]\ue201". The app renders them as
// links, chips or image strips; in the text they are noise a search would
// match ("turn0search1").
const (
	gptRefStart = '\ue200'
	gptRefEnd   = '\ue201'
	gptRefSep   = '\ue202'
)

// gptOldCitation is the inline citation of ChatGPT's earlier browsing and
// file search, in plain text: "【11†source】", "【4:0†report.pdf】",
// "【8†L12-L20】".
var gptOldCitation = regexp.MustCompile(`【\d+(?::\d+)?†[^】\n]{0,200}】`)

// withoutGPTMarkers replaces each inline reference of an answer by what
// reads naturally in its place: an entity by its display name (the second
// element of its JSON array), anything else (citations, image groups,
// navigation lists) by nothing, with the space before it when a space or
// punctuation follows. Stray delimiters, from a reference cut short, are dropped.
func withoutGPTMarkers(s string) string {
	if strings.Contains(s, "†") {
		s = withoutOldCitations(s)
	}
	if !strings.ContainsRune(s, gptRefStart) && !strings.ContainsRune(s, gptRefEnd) {
		return s
	}
	var out []byte
	for {
		start := strings.IndexRune(s, gptRefStart)
		if start < 0 {
			break
		}
		end := strings.IndexRune(s[start:], gptRefEnd)
		if end < 0 {
			break
		}
		ref, rest := s[start+len(string(gptRefStart)):start+end], s[start+end+len(string(gptRefEnd)):]
		if name := gptEntityName(ref); name != "" {
			out = append(append(out, s[:start]...), name...)
		} else {
			out = appendBeforeDropped(out, s[:start], rest)
		}
		s = rest
	}
	out = append(out, s...)
	return strings.Map(func(r rune) rune {
		if r == gptRefStart || r == gptRefEnd || r == gptRefSep {
			return -1
		}
		return r
	}, string(out))
}

// gptEntityName is the display name of an entity reference
// ("entity\ue202[\"city\",\"Panaji\", ...]"), or "" for any other kind.
func gptEntityName(ref string) string {
	kind, fields, _ := strings.Cut(ref, string(gptRefSep))
	if kind != "entity" {
		return ""
	}
	var entity []json.RawMessage
	var name string
	if json.Unmarshal([]byte(fields), &entity) != nil || len(entity) < 2 || json.Unmarshal(entity[1], &name) != nil {
		return ""
	}
	return strings.TrimSpace(name)
}

// withoutOldCitations drops each earlier-style citation (gptOldCitation).
func withoutOldCitations(s string) string {
	var out []byte
	last := 0
	for _, m := range gptOldCitation.FindAllStringIndex(s, -1) {
		out = appendBeforeDropped(out, s[last:m[0]], s[m[1]:])
		last = m[1]
	}
	return string(append(out, s[last:]...))
}

// appendBeforeDropped appends to out the text before a reference that is
// dropped, and drops the space that then ends out when what follows the
// reference (rest) is a space, punctuation or nothing: "rose 【1】【2】."
// reads "rose.".
func appendBeforeDropped(out []byte, before, rest string) []byte {
	out = append(out, before...)
	if len(out) > 0 && out[len(out)-1] == ' ' && (rest == "" || strings.ContainsAny(rest[:1], " .,;:!?)\n")) {
		out = out[:len(out)-1]
	}
	return out
}
