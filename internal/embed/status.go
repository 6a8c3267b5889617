package embed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
)

// statusError maps a non-2xx answer to an error the caller can act on.
// Failures worth another attempt come back as *retryable, with the pause a
// Retry-After header asks for whatever the status: a proxy's 502 or 504, or
// a server's 500 while it restarts, may ask for one as well as a 429 or 503.
// texts are the request's.
func (e *engine) statusError(status int, header http.Header, body []byte, texts []string) error {
	n := len(texts)
	// msg is read, shown is said: a text that holds the service's words
	// ("maximum context length", in a conversation about models) leaves
	// them out of shown, never out of what tells a refusal's kind.
	msg, shown := e.providerMessage(body, texts)
	detail := strings.TrimSpace(fmt.Sprintf("HTTP %d %s", status, http.StatusText(status)))
	if shown != "" {
		detail += fmt.Sprintf(": %q", shown)
	}
	after := retryAfter(header, time.Now())
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		// The service's own text is left out: some echo part of the key.
		if e.secret == "" {
			return recall.Errorf(recall.EUNAUTHORIZED, "%s refused the request without an API key (HTTP %d): configure one", e.provider, status)
		}
		return recall.Errorf(recall.EUNAUTHORIZED, "%s rejected the API key (HTTP %d)", e.provider, status)
	case status >= 400 && modelMissing(status, msg):
		return recall.Errorf(recall.EINVALID, "%s does not know the model %q (%s)", e.provider, e.model, detail)
	case inputTooLong(status, msg, body):
		if n == 1 {
			return &tooLarge{input: true, err: recall.Errorf(recall.ETOOLARGE, "%s refused a text as too long for the model %q (%s): it is left without a vector", e.provider, e.model, detail)}
		}
		return &tooLarge{input: true, err: recall.Errorf(recall.ETOOLARGE, "%s refused a batch of %d texts for one too long for the model %q (%s)", e.provider, n, e.model, detail)}
	case status == http.StatusNotFound:
		return recall.Errorf(recall.EINVALID, "%s answered 404 Not Found: check the base URL and that the model %q exists", e.provider, e.model)
	case status == http.StatusRequestTimeout:
		return &retryable{err: recall.Errorf(recall.EUNAVAILABLE, "%s timed out (%s)", e.provider, detail), after: after}
	case status == http.StatusTooManyRequests && quotaExhausted(body):
		// Same status as a rate limit, but no wait of seconds ends it:
		// retrying only spends requests until someone adds credit or the
		// period resets.
		return recall.Errorf(recall.ERATELIMIT, "%s says the account's quota or spending limit is used up (%s): retrying will not help until it is raised or resets", e.provider, detail)
	case status == http.StatusTooManyRequests:
		if after == 0 {
			// A hint, not a demand as Retry-After is: the reset of a
			// token budget can be minutes off while some of it frees
			// sooner, so a long one is shortened rather than obeyed.
			after = min(rateLimitReset(header), e.limits.MaxRetryAfter)
		}
		return &retryable{err: recall.Errorf(recall.ERATELIMIT, "%s is rate limiting requests (%s)", e.provider, detail), after: after}
	case (status == http.StatusRequestEntityTooLarge || status >= 400 && cloudflareCode(body) == cloudflareTooLarge) && n == 1:
		return &tooLarge{temporary: after > 0, err: recall.Errorf(recall.ETOOLARGE, "%s refused a text as too large (%s): it is left without a vector; lower MaxInputChars, or raise the service's (or its proxy's) request size limit", e.provider, detail)}
	case status == http.StatusRequestEntityTooLarge || status >= 400 && cloudflareCode(body) == cloudflareTooLarge:
		return &tooLarge{temporary: after > 0, err: recall.Errorf(recall.ETOOLARGE, "%s refused a batch of %d texts as too large (%s): lower MaxBatch or MaxBatchChars", e.provider, n, detail)}
	case status == http.StatusServiceUnavailable:
		return &retryable{err: recall.Errorf(recall.EUNAVAILABLE, "%s is unavailable (%s)", e.provider, detail), after: after}
	case status >= 500:
		return &retryable{err: recall.Errorf(recall.EUNAVAILABLE, "%s failed (%s)", e.provider, detail), after: after}
	case status >= 400:
		return recall.Errorf(recall.EINVALID, "%s refused the request (%s)", e.provider, detail)
	}
	return recall.Errorf(recall.EUNAVAILABLE, "%s answered with unexpected HTTP status %d", e.provider, status)
}

// modelMissing recognises the ways services say a model does not exist:
// Ollama's `model "x" not found`, OpenAI's model_not_found, vLLM's "The model
// `x` does not exist", Cloudflare's "No such model".
func modelMissing(status int, msg string) bool {
	m := strings.ToLower(msg)
	if strings.Contains(m, "model_not_found") || strings.Contains(m, "no such model") || strings.Contains(m, "unknown model") {
		return true
	}
	if !strings.Contains(m, "model") {
		return false
	}
	return strings.Contains(m, "not found") || strings.Contains(m, "does not exist") || (status == http.StatusNotFound && strings.Contains(m, "not exist"))
}

// quotaCodes are the error codes that mean an account is out of quota,
// not sending too fast: OpenAI's insufficient_quota (as type or code) and
// the billing codes that go with it, and Workers AI's 3036 (the daily free
// allocation is used up).
var quotaCodes = map[string]bool{
	"insufficient_quota":                true,
	"credit_balance_exhausted":          true,
	"organization_spend_limit_exceeded": true,
	"project_spend_limit_exceeded":      true,
	"organization_usage_limit_exceeded": true,
	"3036":                              true,
}

// quotaExhausted reports whether a 429's body names one of quotaCodes, in
// OpenAI's {"error":{"type":...,"code":...}} or Cloudflare's
// {"errors":[{"code":...}]}.
func quotaExhausted(body []byte) bool {
	var m struct {
		Error struct {
			Type string          `json:"type"`
			Code json.RawMessage `json:"code"`
		} `json:"error"`
		Errors []struct {
			Code json.RawMessage `json:"code"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &m) != nil {
		return false
	}
	codes := []string{m.Error.Type, jsonScalar(m.Error.Code)}
	for _, x := range m.Errors {
		codes = append(codes, jsonScalar(x.Code))
	}
	for _, c := range codes {
		if quotaCodes[c] {
			return true
		}
	}
	return false
}

// cloudflareTooLarge is Workers AI's code for "Request is too large",
// which its error table gives with HTTP 413
// (developers.cloudflare.com/workers-ai/platform/errors).
const cloudflareTooLarge = "3006"

// cloudflareCode is the first code of a Cloudflare-shaped error body,
// {"errors":[{"code":...}]}; "" when there is none.
func cloudflareCode(body []byte) string {
	var m struct {
		Errors []struct {
			Code json.RawMessage `json:"code"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &m) != nil || len(m.Errors) == 0 {
		return ""
	}
	return jsonScalar(m.Errors[0].Code)
}

// errorCode is the code of an OpenAI-shaped error body,
// {"error":{"code":...}}; "" when there is none.
func errorCode(body []byte) string {
	var m struct {
		Error struct {
			Code json.RawMessage `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	return jsonScalar(m.Error.Code)
}

// jsonScalar is a JSON string's text or a number's digits; "" otherwise.
func jsonScalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// decodeError explains a 2xx answer that could not be used. The body is not
// quoted, as in providerMessage: a wrong endpoint may echo the request; nor
// are the texts sent (texts), which a message it does quote (Workers AI's
// errors beside success false) may hold.
func (e *engine) decodeError(err error, texts []string) error {
	var rf *reportedFailure
	if errors.As(err, &rf) {
		return recall.Errorf(recall.EUNAVAILABLE, "%s reported failure: %q", e.provider, e.excerpt([]byte(rf.message), 200, texts))
	}
	var re *recall.Error
	if errors.As(err, &re) {
		return &recall.Error{Code: re.Code, Message: withoutEcho(e.redact(re.Message), texts), Err: re.Err}
	}
	return recall.Errorf(recall.EUNAVAILABLE, "%s returned a malformed response (%s)", e.provider, withoutEcho(e.redact(err.Error()), texts))
}

// reportedFailure is a 2xx answer that says the request failed (Workers
// AI's success false), with the service's messages, which decodeError
// excerpts as providerMessage does those of a failure status.
type reportedFailure struct{ message string }

func (r *reportedFailure) Error() string { return "reported failure: " + r.message }

// providerMessage digs the human-readable error out of a failure body, in
// the shapes the supported services use: {"error":"..."} (Ollama, TEI),
// {"error":{"message":"..."}} (OpenAI, llama.cpp), {"message":"..."} (vLLM),
// {"detail":"..."} and {"detail":[{"loc":...,"msg":...,"type":...}]}
// (FastAPI servers), {"errors":[{"message":"..."}]} (Cloudflare). Only
// these fields are read, and anything else (an HTML page from a proxy)
// gives "", leaving the status to speak: a body is never quoted, because
// servers echo the request in it (FastAPI's 422 lists each invalid field
// with its "input", the very text sent for embedding), and errors reach
// sweep.log and the server's log, which must not hold archive text. A
// message field may quote the input too ("invalid input: ..."): shown,
// the message to put in errors, leaves out what it quotes of texts, the
// request's (withoutEcho); msg keeps it, for reading the message's kind.
func (e *engine) providerMessage(body []byte, texts []string) (msg, shown string) {
	var m struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Errors  []struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if len(body) == 0 || json.Unmarshal(body, &m) != nil {
		return "", ""
	}
	var parts []string
	var s string
	var obj struct {
		Message string `json:"message"`
	}
	switch {
	case json.Unmarshal(m.Error, &s) == nil && s != "":
		parts = append(parts, s)
	case json.Unmarshal(m.Error, &obj) == nil && obj.Message != "":
		parts = append(parts, obj.Message)
	}
	if m.Message != "" {
		parts = append(parts, m.Message)
	}
	if json.Unmarshal(m.Detail, &s) == nil && s != "" {
		parts = append(parts, s)
	}
	parts = append(parts, validationMessages(m.Detail)...)
	for _, x := range m.Errors {
		parts = append(parts, fmt.Sprintf("%s (code %d)", x.Message, x.Code))
	}
	if len(parts) == 0 {
		return "", ""
	}
	joined := []byte(strings.Join(parts, "; "))
	return e.excerpt(joined, 200, nil), e.excerpt(joined, 200, texts)
}

// validationMessages reads a FastAPI (Pydantic) list of validation errors
// as "loc: msg (type)", leaving out "input" and "ctx", which hold the
// value refused.
func validationMessages(detail json.RawMessage) []string {
	var list []struct {
		Loc  []any  `json:"loc"`
		Msg  string `json:"msg"`
		Type string `json:"type"`
	}
	if json.Unmarshal(detail, &list) != nil {
		return nil
	}
	var out []string
	for _, d := range list {
		if d.Msg == "" {
			continue
		}
		s := d.Msg
		if len(d.Loc) > 0 {
			loc := make([]string, len(d.Loc))
			for i, l := range d.Loc {
				loc[i] = fmt.Sprint(l)
			}
			s = strings.Join(loc, ".") + ": " + s
		}
		if d.Type != "" {
			s += " (" + d.Type + ")"
		}
		out = append(out, s)
	}
	return out
}

// excerpt returns up to max characters from the start of b, valid UTF-8,
// whitespace collapsed, secret removed, and without what it quotes of
// texts (withoutEcho), looked for before the cut so that a quote the cut
// ends is found however short its part before it. The secret is removed from the whole
// of b before anything is cut or collapsed: collapsing a run of spaces can
// pull text from far into the body into the excerpt, so no cut made before
// redaction is safe from leaving part of the secret behind. (b is the
// message fields of a response body read with a size limit.)
func (e *engine) excerpt(b []byte, max int, texts []string) string {
	// Whitespace runs collapse to one space, so text far into the body can
	// reach the excerpt; 64 KiB is plenty and bounds the work on a large
	// error page. A secret the cut splits is dropped with what follows.
	if len(b) > excerptScan {
		b = b[:excerptScan]
		if e.secret != "" {
			for n := min(len(e.secret)-1, len(b)); n > 0; n-- {
				if bytes.HasSuffix(b, []byte(e.secret[:n])) {
					b = b[:len(b)-n]
					break
				}
			}
		}
	}
	s := e.redact(strings.ToValidUTF8(string(b), "\uFFFD"))
	s = strings.Join(strings.Fields(s), " ")
	long := utf8.RuneCountInString(s) > max
	s = withoutEcho(truncate(s, max+echoMin), texts)
	if long {
		s = truncate(s, max) + "…"
	}
	return s
}

// echoMin is the shortest run of bytes of a text sent that withoutEcho
// takes for a quote of it: shorter runs are words and phrases any error
// message may share with a text.
const echoMin = 20

// echoMark stands where withoutEcho left out a quote of a text sent.
const echoMark = "[text sent]"

// withoutEcho returns s with every run of echoMin or more bytes that one
// of texts also holds (their whitespace collapsed, as an excerpt's is)
// replaced by echoMark: a service that quotes the input in its message
// ("invalid input: ...") would otherwise put archive text, memories or a
// query into the logs and the errors shown (shared/SECURITY.md 30). A
// quote the service changed (escaped, cased, cut into pieces shorter than
// echoMin) is not recognised. It costs a map of s's windows and a pass
// over the texts, on an error's path only.
func withoutEcho(s string, texts []string) string {
	if len(s) < echoMin || len(texts) == 0 {
		return s
	}
	at := make(map[string][]int, len(s)-echoMin+1) // window -> where s has it
	// seen has a bit for the first 4 bytes of each window (hashed): most
	// of a text's windows are passed on a bit test, not a map lookup.
	var seen [1 << 10]uint64
	for i := 0; i+echoMin <= len(s); i++ {
		w := s[i : i+echoMin]
		at[w] = append(at[w], i)
		h := head(w)
		seen[h>>6] |= 1 << (h & 63)
	}
	var quoted []bool
	for _, t := range texts {
		if len(t) < echoMin {
			continue
		}
		t = strings.Join(strings.Fields(t), " ")
		for i := 0; i+echoMin <= len(t) && len(at) > 0; i++ {
			if h := head(t[i:]); seen[h>>6]&(1<<(h&63)) == 0 {
				continue
			}
			starts, ok := at[t[i:i+echoMin]]
			if !ok {
				continue
			}
			if quoted == nil {
				quoted = make([]bool, len(s))
			}
			for _, j := range starts {
				for k := j; k < j+echoMin; k++ {
					quoted[k] = true
				}
			}
			delete(at, t[i:i+echoMin])
		}
	}
	if quoted == nil {
		return s
	}
	// A character of which a quote holds a byte is left out whole.
	var b strings.Builder
	inQuote := false
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		q := slices.Contains(quoted[i:i+size], true)
		switch {
		case q && !inQuote:
			b.WriteString(echoMark)
		case !q:
			b.WriteString(s[i : i+size])
		}
		inQuote = q
		i += size
	}
	return b.String()
}

// head hashes the first 4 bytes of w (at least 4 long) to 16 bits.
func head(w string) uint32 {
	return (uint32(w[0]) | uint32(w[1])<<8 | uint32(w[2])<<16 | uint32(w[3])<<24) * 2654435761 >> 16
}

// excerptScan bounds how much of a body an excerpt reads.
const excerptScan = 64 << 10

func (e *engine) redact(s string) string {
	if e.secret == "" {
		return s
	}
	return strings.ReplaceAll(s, e.secret, "[redacted]")
}

// redactErr keeps err's chain (for errors.Is) while removing the secret from
// its text, in case it was put into the base URL.
func (e *engine) redactErr(err error) error {
	if e.secret == "" {
		return err
	}
	return redactedError{err: err, text: e.redact(err.Error())}
}

type redactedError struct {
	err  error
	text string
}

func (r redactedError) Error() string { return r.text }
func (r redactedError) Unwrap() error { return r.err }

// retryAfter reads OpenAI's retry-after-ms (milliseconds, which its SDKs
// prefer) or else Retry-After, in seconds or as an HTTP date; 0 means
// absent, unreadable or already past.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get("Retry-After-Ms")), 64); err == nil && ms > 0 && !math.IsInf(ms, 0) {
		return time.Duration(min(ms, 86400e3) * float64(time.Millisecond))
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		// Beyond a day it is as good as never; clamping avoids overflow.
		return time.Duration(min(secs, 86400)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// rateLimitReset reads OpenAI's x-ratelimit-* headers, which a 429 may carry
// without Retry-After: for each limit whose remaining count is 0, the time
// until it resets ("1s", "6m0s", "20ms"); the longest of these, or 0.
func rateLimitReset(h http.Header) time.Duration {
	var wait time.Duration
	for _, limit := range []string{"requests", "tokens"} {
		if strings.TrimSpace(h.Get("X-Ratelimit-Remaining-"+limit)) != "0" {
			continue
		}
		d, err := time.ParseDuration(strings.TrimSpace(h.Get("X-Ratelimit-Reset-" + limit)))
		if err == nil && d > wait {
			wait = d
		}
	}
	return wait
}
