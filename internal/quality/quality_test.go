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

func TestInterval(t *testing.T) {
	q := Query{Query: "q", Expect: []Expect{{Source: "a.md", Contains: "alpha"}}}
	hit, miss := Score(q, []recall.Hit{{Source: "a.md", Text: "alpha"}}, 5), Score(q, nil, 5)
	same := Aggregate("m", []Outcome{hit, hit, hit}).Overall.Interval
	if same == nil || same[0] != 1 || same[1] != 1 {
		t.Errorf("all found: interval %v, want [1, 1]", same)
	}
	var mixed []Outcome
	for i := range 200 {
		if i%4 == 0 {
			mixed = append(mixed, miss)
		} else {
			mixed = append(mixed, hit)
		}
	}
	ci := Aggregate("m", mixed).Overall.Interval
	if ci == nil || !(ci[0] < 0.75 && 0.75 < ci[1]) || ci[0] < 0.6 || ci[1] > 0.9 {
		t.Errorf("three in four found, 200 questions: interval %v", ci)
	}
	if again := Aggregate("m", mixed).Overall.Interval; *again != *ci {
		t.Errorf("the interval is not reproducible: %v then %v", ci, again)
	}
	if Aggregate("m", []Outcome{Score(q, nil, 1)}).Overall.Interval != nil {
		t.Error("an interval of recall at 5 from pages of 1")
	}
}
