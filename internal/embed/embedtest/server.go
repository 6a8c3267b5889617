package embedtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TooLongAnswer is OpenAI's answer to a request holding a text longer than
// the model takes (HTTP 400), as its users reported it
// (pingcap/autoflow#265).
const TooLongAnswer = `{"error":{"message":"This model's maximum context length is 8192 tokens, however you requested 8610 tokens (8610 in your prompt; 0 for the completion). Please reduce your prompt; or completion length.","type":"invalid_request_error","param":null,"code":null}}`

// Server is an OpenAI-compatible /v1/embeddings stand-in for the tests of
// packages that use embed's providers: it embeds each text as Vector(text,
// Dim) and answers a request holding a text Refuse reports with
// TooLongAnswer, as OpenAI does for a text over the model's window.
type Server struct {
	*httptest.Server
	Dim      int
	Refuse   func(text string) bool
	requests atomic.Int64
}

// NewServer starts a Server, closed when the test ends.
func NewServer(t testing.TB, dim int, refuse func(text string) bool) *Server {
	s := &Server{Dim: dim, Refuse: refuse}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Requests is how many requests the server answered.
func (s *Server) Requests() int { return int(s.requests.Load()) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	var req struct {
		Input []string `json:"input"`
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"message":"bad JSON","type":"invalid_request_error"}}`))
		return
	}
	data := make([]map[string]any, len(req.Input))
	for i, text := range req.Input {
		if s.Refuse != nil && s.Refuse(text) {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(TooLongAnswer))
			return
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": Vector(text, s.Dim)}
	}
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}
