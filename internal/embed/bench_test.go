package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/embedtest"
)

// openAIBody is a realistic response: n vectors of dim floats as servers
// print them (full float32 precision).
func openAIBody(b *testing.B, n, dim int) []byte {
	b.Helper()
	data := make([]map[string]any, n)
	for i := range data {
		data[i] = map[string]any{"index": i, "embedding": unit(fakeVec(fmt.Sprint(i), dim))}
	}
	body, err := json.Marshal(map[string]any{"data": data, "model": "m"})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func BenchmarkDecodeOpenAI(b *testing.B) {
	body := openAIBody(b, 64, 1024)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (openAIWire{}).decode(body, 64); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNormalize1024(b *testing.B) {
	v := fakeVec("x", 1024)
	for b.Loop() {
		Normalize(v)
	}
}

func BenchmarkValidate64x1024(b *testing.B) {
	vs := vecs(make([]string, 64), 1024)
	for b.Loop() {
		if err := Validate(vs, 64, 1024); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEmbedRoundTrip measures the client's whole path for one batch of
// 32 texts against a local server that answers at once.
func BenchmarkEmbedRoundTrip(b *testing.B) {
	body := openAIBody(b, 32, 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer srv.Close()
	o, err := NewOpenAI(OpenAIConfig{BaseURL: srv.URL, Model: "m", Limits: Limits{MaxBatch: 32}})
	if err != nil {
		b.Fatal(err)
	}
	texts := make([]string, 32)
	for i := range texts {
		texts[i] = fmt.Sprintf("a passage of a conversation, number %d, of typical chunk length ......", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := o.Embed(context.Background(), recall.InputDocument, texts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQueryCacheHit(b *testing.B) {
	c := WithQueryCache(embedtest.New(1024), 1024, time.Hour)
	q := []string{"what did we decide about the garden"}
	if _, err := c.Embed(context.Background(), recall.InputQuery, q); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Embed(context.Background(), recall.InputQuery, q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWithoutEcho is the cost an error pays to leave out what the
// service's message quotes of the batch: a 200-character message against
// 16 texts of 8 KiB, the last one quoted.
func BenchmarkWithoutEcho(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	texts := make([]string, 16)
	for i := range texts {
		var sb strings.Builder
		for sb.Len() < 8<<10 {
			fmt.Fprintf(&sb, "%s ", fakeWords[rng.IntN(len(fakeWords))])
		}
		texts[i] = sb.String()
	}
	msg := "invalid input: " + texts[15][:185]
	b.ReportAllocs()
	for b.Loop() {
		if withoutEcho(msg, texts) == msg {
			b.Fatal("nothing left out")
		}
	}
}

// fakeWords are the words of BenchmarkWithoutEcho's texts.
var fakeWords = strings.Fields("the a of and to in is it that was for on with as his they be at one have this from or had by word but what some we can out other were all there when up use your how said an each she which do their time if will way about many then them write would like so these her long make thing see him two has look more day could go come did number sound no most people my over know water than call first who may down side been now find any new work part take get place made live where after back little only round man year came show every good me give our under name very through just form sentence great think say help low line differ turn cause much mean before move right boy old too same tell does set three want air well also play small end put home read hand port large spell add even land here must big high such follow act why ask men change went light kind off need house picture try us again animal point mother world near build self earth father")
