package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

// tooLongAnswers are the answers services give a request holding a text
// longer than the model takes, as their users reported them (see
// inputTooLong for the sources).
var tooLongAnswers = []struct {
	name     string
	provider string // ollama or openai
	status   int
	body     string
}{
	{"OpenAI", "openai", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens, however you requested 8610 tokens (8610 in your prompt; 0 for the completion). Please reduce your prompt; or completion length.","type":"invalid_request_error","param":null,"code":null}}`},
	{"OpenAI code", "openai", 400, `{"error":{"message":"Invalid 'input': too long.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`},
	{"vLLM", "openai", 400, `{"object":"error","message":"This model's maximum context length is 512 tokens. However, you requested 1451 tokens in the input for embedding generation. Please reduce the length of the input.","type":"BadRequestError","param":null,"code":400}`},
	{"TEI", "openai", 413, "{\"message\":\"Input validation error: `inputs` must have less than 512 tokens. Given: 534\",\"code\":413,\"type\":\"Validation\"}"},
	{"TEI characters", "openai", 413, "{\"error\":\"Input validation error: `inputs` must have less than 32000 characters. Given: 67337\",\"error_type\":\"Validation\"}"},
	{"llama.cpp", "openai", 500, `{"error":{"code":500,"message":"input is too large to process. increase the physical batch size","type":"server_error"}}`},
	{"LM Studio", "openai", 400, `{"error":"Input length 6491 exceeds context length 1500"}`},
	{"Ollama", "ollama", 400, `{"error":"the input length exceeds the context length"}`},
	{"Ollama older", "ollama", 400, `{"error":"input length exceeds maximum context length"}`},
}

// A text too long for the model fails only itself: the batch holding it
// is split in halves until it is alone, the other texts get their vectors,
// the call returns a *Refused naming it, nothing is retried, and later
// batches keep their full size (the service did not refuse their size).
func TestTextTooLongForTheModelIsIsolated(t *testing.T) {
	for _, tt := range tooLongAnswers {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				in := req.inputs(t)
				if slices.ContainsFunc(in, func(s string) bool { return strings.Contains(s, "LONG") }) {
					writeRaw(w, tt.status, tt.body)
					return
				}
				if tt.provider == "ollama" {
					ollamaOK(w, in, 4)
				} else {
					openAIOK(w, in, 4)
				}
			})
			var emb recall.Embedder
			var err error
			if tt.provider == "ollama" {
				emb, err = NewOllama(OllamaConfig{BaseURL: srv.URL, Model: "all-minilm", Prefixes: &Prefixes{}, Limits: fast})
			} else {
				emb, err = NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Model: "bge", Prefixes: &Prefixes{}, Limits: fast})
			}
			if err != nil {
				t.Fatal(err)
			}
			texts := make([]string, 8)
			for i := range texts {
				texts[i] = fmt.Sprintf("text %d", i)
			}
			texts[5] = "a LONG text"
			got, err := emb.Embed(context.Background(), recall.InputDocument, texts)
			if got != nil {
				t.Errorf("returned vectors along with the failure")
			}
			wantCode(t, err, recall.ETOOLARGE)
			var refused *Refused
			if !errors.As(err, &refused) {
				t.Fatalf("error %v is not a *Refused", err)
			}
			if len(refused.Reasons) != 1 || refused.Reasons[5] == nil {
				t.Fatalf("refused %v, want text 5 alone", refused.Reasons)
			}
			if msg := recall.ErrorMessage(err); !strings.Contains(msg, "too long for the model") {
				t.Errorf("message %q should say the text is too long for the model", msg)
			}
			if refused.Vecs[5] != nil {
				t.Errorf("the refused text has a vector")
			}
			ok := slices.Delete(slices.Clone(refused.Vecs), 5, 6)
			assertVectors(t, ok, slices.Delete(slices.Clone(texts), 5, 6), 4)
			var sizes []int
			for _, r := range srv.requests() {
				sizes = append(sizes, len(r.inputs(t)))
			}
			if want := []int{8, 4, 4, 2, 1, 1, 2}; !slices.Equal(sizes, want) {
				t.Errorf("request sizes %v, want %v (halves down to the long text, no retry)", sizes, want)
			}
			before := len(srv.requests())
			if _, err := emb.Embed(context.Background(), recall.InputDocument, texts[:5]); err != nil {
				t.Fatal(err)
			}
			if n := len(srv.requests()) - before; n != 1 {
				t.Errorf("5 texts later took %d requests, want 1: a text too long must not lower the batch size", n)
			}
		})
	}
}

// A too-long text among several batches sent at once fails only itself,
// and EmbedChunks refuses the chunk holding it, giving the other chunks
// their vectors.
func TestEmbedChunksRefusesTheChunkWithATooLongUnit(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		in := req.inputs(t)
		if slices.ContainsFunc(in, func(s string) bool { return strings.Contains(s, "LONG") }) {
			writeRaw(w, 400, tooLongAnswers[0].body)
			return
		}
		openAIOK(w, in, 4)
	})
	l := fast
	l.MaxBatch = 3
	o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Model: "m", Prefixes: &Prefixes{}, Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("word ", 70) + "LONG"
	chunks := []ChunkText{
		{Header: "h", Text: "first"},
		{Header: "h", Text: "second paragraph one\n\n" + long},
		{Header: "h", Text: "third"},
		{Header: "h", Text: "fourth"},
	}
	_, err = EmbedChunks(context.Background(), o, 4, chunks)
	var refused *Refused
	if !errors.As(err, &refused) {
		t.Fatalf("error %v is not a *Refused", err)
	}
	if len(refused.Reasons) != 1 || refused.Reasons[1] == nil || len(refused.Vecs) != 4 {
		t.Fatalf("refused %v of %d, want chunk 1 alone of 4", refused.Reasons, len(refused.Vecs))
	}
	for _, i := range []int{0, 2, 3} {
		want := unit(fakeVec(Units(chunks[i].Header, chunks[i].Text)[0], 4))
		if !slices.Equal(refused.Vecs[i], want) {
			t.Errorf("chunk %d: vector %v, want %v", i, refused.Vecs[i], want)
		}
	}
	if refused.Vecs[1] != nil {
		t.Errorf("the refused chunk has a vector")
	}
}
