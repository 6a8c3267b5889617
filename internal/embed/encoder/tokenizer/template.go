package tokenizer

import (
	"encoding/json"

	"github.com/recall-mcp/recall"
)

// template is the post-processor for a single text: special tokens before
// and after the content, and the type id the content gets.
type template struct {
	head, tail         []specialToken
	contentType        int32
	headIDs, headTypes []int32
}

type specialToken struct {
	id, typeID int32
}

// parseTemplate reads tokenizer.json's post_processor. Only the part that
// changes ids for a single text matters here: offsets trimming and byte-level
// details do not.
func parseTemplate(raw json.RawMessage) (template, error) {
	if isNull(raw) {
		return template{}, nil
	}
	typ, err := componentType(raw)
	if err != nil {
		return template{}, recall.WrapError(recall.EINVALID, err, "tokenizer post_processor is malformed")
	}
	var t template
	switch typ {
	case "TemplateProcessing":
		t, err = parseTemplateProcessing(raw)
	case "BertProcessing", "RobertaProcessing":
		var p struct {
			CLS [2]json.RawMessage `json:"cls"`
			SEP [2]json.RawMessage `json:"sep"`
		}
		if err = json.Unmarshal(raw, &p); err != nil {
			return template{}, recall.WrapError(recall.EINVALID, err, "tokenizer %s is malformed", typ)
		}
		var cls, sep int32
		if err = json.Unmarshal(p.CLS[1], &cls); err == nil {
			err = json.Unmarshal(p.SEP[1], &sep)
		}
		if err != nil {
			return template{}, recall.WrapError(recall.EINVALID, err, "tokenizer %s ids are malformed", typ)
		}
		t = template{head: []specialToken{{id: cls}}, tail: []specialToken{{id: sep}}}
	case "Sequence":
		t, err = parseTemplateSequence(raw)
	default:
		return template{}, recall.Errorf(recall.EINVALID, "tokenizer post_processor %q is not supported", typ)
	}
	if err != nil {
		return template{}, err
	}
	for _, s := range t.head {
		t.headIDs = append(t.headIDs, s.id)
		t.headTypes = append(t.headTypes, s.typeID)
	}
	return t, nil
}

// parseTemplateSequence accepts a Sequence whose members either do not touch
// ids (ByteLevel) or form the template; two templates would be ambiguous.
func parseTemplateSequence(raw json.RawMessage) (template, error) {
	var seq struct {
		Processors []json.RawMessage `json:"processors"`
	}
	if err := json.Unmarshal(raw, &seq); err != nil {
		return template{}, recall.WrapError(recall.EINVALID, err, "tokenizer post_processor sequence is malformed")
	}
	var out template
	found := false
	for _, p := range seq.Processors {
		typ, err := componentType(p)
		if err != nil {
			return template{}, recall.WrapError(recall.EINVALID, err, "tokenizer post_processor sequence is malformed")
		}
		if typ == "ByteLevel" {
			continue
		}
		if found {
			return template{}, recall.Errorf(recall.EINVALID, "tokenizer post_processor sequence has more than one template")
		}
		t, err := parseTemplate(p)
		if err != nil {
			return template{}, err
		}
		out, found = t, true
	}
	return out, nil
}

func parseTemplateProcessing(raw json.RawMessage) (template, error) {
	type piece struct {
		SpecialToken *struct {
			ID     string `json:"id"`
			TypeID int32  `json:"type_id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID     string `json:"id"`
			TypeID int32  `json:"type_id"`
		} `json:"Sequence"`
	}
	var p struct {
		Single        []piece `json:"single"`
		SpecialTokens map[string]struct {
			IDs []int32 `json:"ids"`
		} `json:"special_tokens"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return template{}, recall.WrapError(recall.EINVALID, err, "tokenizer TemplateProcessing is malformed")
	}
	var t template
	seen := false
	for _, pc := range p.Single {
		switch {
		case pc.Sequence != nil:
			if seen || pc.Sequence.ID != "A" {
				return template{}, recall.Errorf(recall.EINVALID, "tokenizer template for a single text must hold sequence A once")
			}
			seen = true
			t.contentType = pc.Sequence.TypeID
		case pc.SpecialToken != nil:
			st, ok := p.SpecialTokens[pc.SpecialToken.ID]
			if !ok {
				return template{}, recall.Errorf(recall.EINVALID, "tokenizer template names unknown special token %q", pc.SpecialToken.ID)
			}
			for _, id := range st.IDs {
				s := specialToken{id: id, typeID: pc.SpecialToken.TypeID}
				if seen {
					t.tail = append(t.tail, s)
				} else {
					t.head = append(t.head, s)
				}
			}
		default:
			return template{}, recall.Errorf(recall.EINVALID, "tokenizer template has an unknown piece")
		}
	}
	if !seen {
		return template{}, recall.Errorf(recall.EINVALID, "tokenizer template for a single text has no sequence")
	}
	return t, nil
}

// room returns how many content tokens fit in maxLen, or -1 for all of them.
// A maxLen too small for the special tokens alone truncates nothing: the
// reference refuses such a truncation and encodes the whole text.
func (t *template) room(maxLen int) int {
	if maxLen <= 0 || maxLen < len(t.head)+len(t.tail) {
		return -1
	}
	return maxLen - len(t.head) - len(t.tail)
}

// wrap builds the encoding of content ids, which must already be cut to room.
func (t *template) wrap(content []int32) Encoding {
	n := len(t.head) + len(content) + len(t.tail)
	// One allocation for the three slices: an encoding is built per text and
	// its parts live and die together.
	buf := make([]int32, 3*n)
	e := Encoding{IDs: buf[:n:n], TypeIDs: buf[n : 2*n : 2*n], AttentionMask: buf[2*n:]}
	copy(e.IDs, t.headIDs)
	copy(e.TypeIDs, t.headTypes)
	i := len(t.head)
	copy(e.IDs[i:], content)
	for j := range content {
		e.TypeIDs[i+j] = t.contentType
	}
	i += len(content)
	for _, s := range t.tail {
		e.IDs[i], e.TypeIDs[i] = s.id, s.typeID
		i++
	}
	for j := range e.AttentionMask {
		e.AttentionMask[j] = 1
	}
	return e
}
