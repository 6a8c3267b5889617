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

// sizeRefusals are answers refusing a request for its size, as a proxy's
// body limit (nginx's page, no words about a model) and Workers AI (its
// error 3006, "Request is too large", documented with HTTP 413) give them;
// and 3006 under another status, which says the same.
var sizeRefusals = []struct {
	name     string
	provider string // openai or cloudflare
	status   int
	body     string
}{
	{"proxy 413", "openai", 413, `<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 Request Entity Too Large</h1></center><hr><center>nginx</center></body></html>`},
	{"Workers AI 3006", "cloudflare", 413, `{"result":null,"success":false,"errors":[{"code":3006,"message":"Request is too large"}],"messages":[]}`},
	{"Workers AI 3006 as 400", "cloudflare", 400, `{"result":null,"success":false,"errors":[{"code":3006,"message":"Request is too large"}],"messages":[]}`},
}

// A text the service refuses for its size, alone in its request (already
// cut to MaxInputChars, so nothing else of the request can shrink), is
// refused as a text too long for the model is: the others get their
// vectors and the call returns a *Refused naming it (code too_large). The
// whole call failed before. A probe text tells such a text from a service
// that refuses every request so.
func TestTextRefusedForItsSizeIsIsolated(t *testing.T) {
	for _, tt := range sizeRefusals {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
				in := req.inputs(t)
				for _, s := range in {
					if strings.Contains(s, "zzbig") {
						writeRaw(w, tt.status, tt.body)
						return
					}
				}
				if tt.provider == "cloudflare" {
					cloudflareOK(w, in, 8)
				} else {
					openAIOK(w, in, 8)
				}
			})
			var emb recall.Embedder
			if tt.provider == "cloudflare" {
				emb = newTestCloudflare(t, srv.URL, "@cf/baai/bge-m3")
			} else {
				emb = newTestOpenAI(t, srv.URL, fast)
			}
			texts := []string{"first text", "second text", "a zzbig text", "fourth text", "fifth text"}
			_, err := emb.Embed(context.Background(), recall.InputDocument, texts)
			var refused *Refused
			if !errors.As(err, &refused) {
				t.Fatalf("Embed: %v; want a *Refused for the text refused for its size", err)
			}
			if len(refused.Reasons) != 1 || refused.Reasons[2] == nil || refused.Vecs[2] != nil {
				t.Fatalf("refused %v; want text 2 alone", refused.Reasons)
			}
			wantCode(t, refused.Reasons[2], recall.ETOOLARGE)
			if !strings.Contains(refused.Reasons[2].Message, "too large") || strings.Contains(refused.Reasons[2].Message, "nginx") {
				t.Errorf("reason %q; want the size named and no body quoted", refused.Reasons[2].Message)
			}
			for i, v := range refused.Vecs {
				if i != 2 && v == nil {
					t.Errorf("text %d has no vector", i)
				}
			}
		})
	}
}

// A service that refuses every request for its size (a proxy's body limit
// below any text) says nothing of a text: the call fails, as it did, and
// no text passes for refused; so does one whose 413 carries Retry-After,
// which says the refusal is temporary (RFC 9110, 15.5.14).
func TestSizeRefusalOfEveryRequestFailsTheCall(t *testing.T) {
	for _, every := range []bool{true, false} {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
			in := req.inputs(t)
			if every || !slices.Contains(in, ProbeText) {
				if !every {
					w.Header().Set("Retry-After", "30")
				}
				writeRaw(w, http.StatusRequestEntityTooLarge, `<html><h1>413 Request Entity Too Large</h1></html>`)
				return
			}
			openAIOK(w, in, 8)
		})
		o := newTestOpenAI(t, srv.URL, fast)
		_, err := o.Embed(context.Background(), recall.InputDocument, []string{"a text"})
		var refused *Refused
		if err == nil || errors.As(err, &refused) {
			t.Errorf("every request refused %t: Embed = %v; want the call failed, no text refused", every, err)
		}
		wantCode(t, err, recall.ETOOLARGE)
	}
}

// A text refused for its size does not leave the batch size it was found
// by: the halves that led to it lowered the size to one text, which it
// alone explains, so the next call's 16 texts go in one request, not 16.
func TestTextRefusedForItsSizeKeepsTheBatchSize(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int, req request) {
		in := req.inputs(t)
		for _, s := range in {
			if strings.Contains(s, "zzbig") {
				writeRaw(w, http.StatusRequestEntityTooLarge, `<html><h1>413 Request Entity Too Large</h1></html>`)
				return
			}
		}
		openAIOK(w, in, 8)
	})
	l := fast
	l.MaxBatch = 16
	o := newTestOpenAI(t, srv.URL, l)
	texts := make([]string, 16)
	for i := range texts {
		texts[i] = fmt.Sprintf("text %d", i)
	}
	big := slices.Clone(texts)
	big[5] = "a zzbig text"
	var refused *Refused
	if _, err := o.Embed(context.Background(), recall.InputDocument, big); !errors.As(err, &refused) {
		t.Fatalf("Embed: %v; want the zzbig text refused", err)
	}
	before := len(srv.requests())
	if _, err := o.Embed(context.Background(), recall.InputDocument, texts); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.requests()) - before; n != 1 {
		t.Errorf("the next call of 16 texts took %d requests; want 1", n)
	}
}
