// Command embedstandin is a BENCHMARK STAND-IN for a remote embedding
// service, for bench/mcp-load.sh only. It answers Ollama's POST /api/embed
// with deterministic feature-hashing vectors (internal/embed/embedtest):
// texts sharing words point in similar directions, and nothing else of
// meaning is in them. It lets the load benchmark fill a vector index of
// 100,000 chunks in minutes, where the built-in encoder would need hours on
// two cores, while recall runs unchanged: its real Ollama client embeds
// every chunk and query through this server over loopback HTTP.
//
// Search cost does not depend on what the vectors hold (the vector index
// scans every vector exactly), so latencies measured with it are those of
// the real thing minus the embedding model's time per query.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"

	"github.com/recall-mcp/recall/internal/embed/embedtest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen `address`")
	dim := flag.Int("dim", 384, "vector dimension")
	flag.Parse()

	var n counts
	h := handler(*dim, &n)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	// The bench script waits for this line and reads the port from it.
	fmt.Fprintf(os.Stderr, "embedstandin: BENCHMARK STAND-IN embedding service (not a model), %d dims, listening on http://%s\n", *dim, ln.Addr())
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, os.Interrupt)
		<-stop
		fmt.Fprintf(os.Stderr, "embedstandin: %d requests, %d texts embedded\n", n.requests.Load(), n.texts.Load())
		os.Exit(0)
	}()
	log.Fatal(http.Serve(ln, h))
}

type counts struct{ requests, texts atomic.Int64 }

// handler answers POST /api/embed as Ollama does, with embedtest vectors.
func handler(dim int, n *counts) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/embed", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Input) == 0 {
			http.Error(w, `{"error":"send {\"model\": ..., \"input\": [texts]}"}`, http.StatusBadRequest)
			return
		}
		out := struct {
			Model      string      `json:"model"`
			Embeddings [][]float32 `json:"embeddings"`
		}{Model: req.Model, Embeddings: make([][]float32, len(req.Input))}
		for i, t := range req.Input {
			out.Embeddings[i] = embedtest.Vector(t, dim)
		}
		n.requests.Add(1)
		n.texts.Add(int64(len(req.Input)))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	})
	return mux
}
