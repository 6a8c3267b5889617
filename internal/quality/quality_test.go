package quality

import (
	"bytes"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
)

func TestScore(t *testing.T) {
	q := Query{Query: "q", Category: 1, Expect: []Expect{
		{Source: "a.md", Contains: "alpha"}, {Source: "b.md", Contains: "beta"}}}
	hits := []recall.Hit{
		{Source: "x.md", Text: "alpha"},                                      // right text, wrong source
		{Source: "c.md", Text: "the beta passage", AlsoIn: []string{"b.md"}}, // found through also_in
		{Source: "a.md", Text: "alpha and more"},
	}
	o := Score(q, hits, 10)
	if o.Found[0] != 3 || o.Found[1] != 2 || o.RR != 0.5 {
		t.Fatalf("found %v rr %v", o.Found, o.RR)
	}
	if o.Recall[1] != 0 || o.Recall[5] != 1 || o.Recall[10] != 1 {
		t.Fatalf("recall %v", o.Recall)
	}
	// A page of 5 says nothing of recall at 10: it is not reported.
	short := Score(q, hits, 5)
	if _, ok := short.Recall[10]; ok || short.Recall[5] != 1 {
		t.Fatalf("page of 5: recall %v", short.Recall)
	}
	rep := Aggregate("hybrid", []Outcome{short, Score(Query{Query: "none", Category: 2, Expect: q.Expect}, nil, 5)})
	if rep.Overall.N != 2 || rep.Overall.Recall[5] != 0.5 || rep.Overall.MRR != 0.25 {
		t.Fatalf("aggregate %+v", rep.Overall)
	}
	var b bytes.Buffer
	rep.Write(&b)
	if !strings.Contains(b.String(), "all            2  0.000  0.500      -  0.250") {
		t.Fatalf("report:\n%s", b.String())
	}
}
