package embed

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

// A service that quotes the input in its message field ("invalid input:
// ...") would put the text sent (archive text, a memory's value) into the
// error, which sweep.log and the server's log keep, and which a refusal
// stores as its reason: every provider's error leaves out what the message
// quotes of any text of the batch (a run of echoMin bytes or more, found
// with the text's whitespace collapsed as the excerpt's is), and keeps the
// rest of the message. The fake service of each provider echoes the
// batch's last text in its own error shape.
func TestErrorsLeaveOutTheInputAMessageQuotes(t *testing.T) {
	texts := []string{"a first text that is fine to send",
		"my  doctor said\nthe results came back and I have to tell my sister before Sunday"}
	echoed := texts[1]
	// Each answer's QUOTE is the echoed text, as JSON.
	answers := map[string]struct {
		status int
		body   string
	}{
		"ollama":          {400, `{"error":"invalid input: QUOTE"}`},
		"openai":          {400, `{"error":{"message":"invalid input: QUOTE","type":"invalid_request_error"}}`},
		"cloudflare":      {400, `{"success":false,"errors":[{"code":5006,"message":"invalid input: QUOTE"}]}`},
		"cloudflare, 2xx": {200, `{"success":false,"errors":[{"code":5006,"message":"invalid input: QUOTE"}]}`},
	}
	quote := strings.NewReplacer("\n", `\n`, `"`, `\"`).Replace(echoed)
	for name, a := range answers {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				writeRaw(w, a.status, strings.Replace(a.body, "QUOTE", quote, 1))
			})
			var emb recall.Embedder
			var err error
			switch {
			case name == "ollama":
				emb, err = NewOllama(OllamaConfig{BaseURL: srv.URL, Model: "bge-m3", Limits: fast})
			case name == "openai":
				emb = newTestOpenAI(t, srv.URL, fast)
			default:
				emb = newTestCloudflare(t, srv.URL, "@cf/baai/bge-m3")
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = emb.Embed(context.Background(), recall.InputDocument, texts)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if p := quotedPart(msg, echoed); p != "" {
				t.Errorf("the error quotes %q of the text sent: %s", p, msg)
			}
			if !strings.Contains(msg, "invalid input: "+echoMark) {
				t.Errorf("the error %q should keep the message's own words and mark what it left out", msg)
			}
		})
	}
}

// quotedPart returns the first echoMin bytes of text (whitespace
// collapsed) that s holds, or "".
func quotedPart(s, text string) string {
	text = strings.Join(strings.Fields(text), " ")
	for i := 0; i+echoMin <= len(text); i++ {
		if strings.Contains(s, text[i:i+echoMin]) {
			return text[i : i+echoMin]
		}
	}
	return ""
}

// A text that holds the service's own words (a conversation about models'
// limits) takes them out of the error shown, never out of what tells the
// refusal's kind: the text is still refused alone as too long for the
// model, the other one embedded.
func TestAnEchoedWordingStillTellsTheRefusal(t *testing.T) {
	long := "I pasted the error: This model's maximum context length is 8192 tokens, however you requested 8610 tokens"
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		in := req.inputs(t)
		for _, s := range in {
			if strings.HasPrefix(s, "I pasted") {
				writeRaw(w, 400, `{"error":{"message":"This model's maximum context length is 8192 tokens, however you requested 8610 tokens (8610 in your prompt; 0 for the completion). Please reduce your prompt; or completion length.","type":"invalid_request_error","param":null,"code":null}}`)
				return
			}
		}
		openAIOK(w, in, 8)
	})
	o := newTestOpenAI(t, srv.URL, fast)
	vecs, why, err := Partial(o.Embed(context.Background(), recall.InputDocument, []string{"fine text", long}))
	if err != nil || len(why) != 1 || why[1] == nil || vecs[0] == nil || vecs[1] != nil {
		t.Fatalf("vectors %d, refusals %v, error %v; want the second text refused alone", len(vecs), why, err)
	}
	if r := why[1].Error(); !strings.Contains(r, "too long for the model") || quotedPart(r, long) != "" {
		t.Errorf("the refusal says %q; want it too long for the model, without the text's words", r)
	}
}
