package embed

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// vector is one embedding as it arrives in JSON. Its decoder refuses null
// and anything out of float32 range, where encoding/json would decode null
// as 0 and hide a service's NaN (JSON has no NaN, so servers send null or a
// string) behind a plausible vector. Parsing the whole array in one method,
// rather than a method per element, allocates a quarter of the memory.
type vector []float32

func (v *vector) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*v = vector{}
		return nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return fmt.Errorf("an embedding is %s, not an array", jsonKind(b))
	}
	body := bytes.TrimSpace(b[1 : len(b)-1])
	out := make([]float32, 0, bytes.Count(body, []byte{','})+1)
	for len(body) > 0 {
		tok := body
		if i := bytes.IndexByte(body, ','); i >= 0 {
			tok, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		tok = bytes.TrimSpace(tok)
		// encoding/json has validated the syntax, so a token is a number,
		// a string, null, true or false; only numbers parse.
		f, err := strconv.ParseFloat(string(tok), 32)
		if err != nil {
			var num *strconv.NumError
			if errors.As(err, &num) && num.Err == strconv.ErrRange {
				return fmt.Errorf("vector component %.24s is out of float32 range", tok)
			}
			return fmt.Errorf("a vector component is %s, not a finite number", jsonKind(tok))
		}
		out = append(out, float32(f))
	}
	*v = out
	return nil
}

// jsonKind names the kind of a JSON value for an error message, without
// quoting it: a malformed response may echo a request's credentials.
func jsonKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "empty"
	case b[0] == '"':
		return "a string"
	case b[0] == '{':
		return "an object"
	case b[0] == '[':
		return "an array"
	case string(b) == "true" || string(b) == "false":
		return "a boolean"
	case string(b) == "null":
		return "null"
	}
	return "a number"
}

func floats(vs []vector) [][]float32 {
	out := make([][]float32, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}
