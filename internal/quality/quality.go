// Package quality measures retrieval quality on a query set: evidence
// recall@k (the share of a question's expected passages found inside the
// top-k results) and the reciprocal rank of the first result holding any of
// them, overall and per category.
package quality

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/recall-mcp/recall"
)

// Expect is one passage a question needs.
type Expect struct {
	Source   string `json:"source"`
	Contains string `json:"contains"`
}

// Query is one line of a query set.
type Query struct {
	Query    string   `json:"query"`
	Expect   []Expect `json:"expect"`
	Category int      `json:"category"`
}

// Load reads a JSONL query set.
func Load(r io.Reader) ([]Query, error) {
	var qs []Query
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var q Query
		if err := json.Unmarshal([]byte(line), &q); err != nil {
			return nil, recall.Errorf(recall.EINVALID, "query set line %d: %v", n, err)
		}
		if q.Query == "" || len(q.Expect) == 0 {
			return nil, recall.Errorf(recall.EINVALID, "query set line %d: needs a query and at least one expected passage", n)
		}
		qs = append(qs, q)
	}
	return qs, sc.Err()
}

// Ks are the cut-offs reported.
var Ks = []int{1, 5, 10}

// Outcome is how one query did.
type Outcome struct {
	Query    string          `json:"query"`
	Category int             `json:"category"`
	Recall   map[int]float64 `json:"recall"` // by k
	RR       float64         `json:"rr"`     // reciprocal rank of the first hit holding an expected passage
	Found    []int           `json:"found"`  // per expected passage: 1-based rank of the result holding it, 0 if none
	Top      []string        `json:"top"`    // "source#chunk" of the results, best first
}

// found reports whether hit h holds expected passage e. Duplicates collapsed
// into a hit count: a passage is found if its source is the hit's source or
// one of its also_in sources.
func found(h recall.Hit, e Expect) bool {
	if !strings.Contains(h.Text, e.Contains) {
		return false
	}
	if h.Source == e.Source {
		return true
	}
	for _, s := range h.AlsoIn {
		if s == e.Source {
			return true
		}
	}
	return false
}

// Score scores one query's results (best first), a page of at most limit:
// recall is reported at the cut-offs in Ks up to limit only, since a page
// of 5 says nothing of recall at 10.
func Score(q Query, hits []recall.Hit, limit int) Outcome {
	o := Outcome{Query: q.Query, Category: q.Category, Recall: map[int]float64{}, Found: make([]int, len(q.Expect))}
	for i, h := range hits {
		o.Top = append(o.Top, fmt.Sprintf("%s#%d", h.Source, h.ChunkIndex))
		for j, e := range q.Expect {
			if o.Found[j] == 0 && found(h, e) {
				o.Found[j] = i + 1
				if o.RR == 0 {
					o.RR = 1 / float64(i+1)
				}
			}
		}
	}
	for _, k := range Ks {
		if k > limit {
			break
		}
		n := 0
		for _, r := range o.Found {
			if r > 0 && r <= k {
				n++
			}
		}
		o.Recall[k] = float64(n) / float64(len(q.Expect))
	}
	return o
}

// Summary aggregates outcomes.
type Summary struct {
	N      int             `json:"n"`
	Recall map[int]float64 `json:"recall"`
	MRR    float64         `json:"mrr"`
	// Interval is a 95% bootstrap confidence interval of recall at 5
	// (overall only): how far the figure could move on another sample of
	// questions like these.
	Interval *[2]float64 `json:"recall5_ci95,omitempty"`
}

// bootstrapRounds is how many resamples Interval is drawn from.
const bootstrapRounds = 10000

// interval returns the 2.5th and 97.5th percentiles of mean recall at 5
// over bootstrap resamples of outs (with a fixed seed: the same outcomes
// give the same interval), or nil when recall at 5 was not measured.
func interval(outs []Outcome) *[2]float64 {
	r := make([]float64, 0, len(outs))
	for _, o := range outs {
		v, ok := o.Recall[5]
		if !ok {
			return nil
		}
		r = append(r, v)
	}
	if len(r) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(1, 2))
	means := make([]float64, bootstrapRounds)
	for i := range means {
		sum := 0.0
		for range r {
			sum += r[rng.IntN(len(r))]
		}
		means[i] = sum / float64(len(r))
	}
	slices.Sort(means)
	return &[2]float64{means[bootstrapRounds*25/1000], means[bootstrapRounds*975/1000-1]}
}

// Report is a whole evaluation.
type Report struct {
	Mode       string           `json:"mode"`
	Overall    Summary          `json:"overall"`
	ByCategory map[int]*Summary `json:"by_category"`
}

// Aggregate averages outcomes overall and per category.
func Aggregate(mode string, outs []Outcome) Report {
	r := Report{Mode: mode, Overall: Summary{Recall: map[int]float64{}}, ByCategory: map[int]*Summary{}}
	add := func(s *Summary, o Outcome) {
		s.N++
		s.MRR += o.RR
		for k, r := range o.Recall {
			s.Recall[k] += r
		}
	}
	for _, o := range outs {
		add(&r.Overall, o)
		c := r.ByCategory[o.Category]
		if c == nil {
			c = &Summary{Recall: map[int]float64{}}
			r.ByCategory[o.Category] = c
		}
		add(c, o)
	}
	norm := func(s *Summary) {
		if s.N == 0 {
			return
		}
		s.MRR /= float64(s.N)
		for k := range s.Recall {
			s.Recall[k] /= float64(s.N)
		}
	}
	norm(&r.Overall)
	r.Overall.Interval = interval(outs)
	for _, c := range r.ByCategory {
		norm(c)
	}
	return r
}

// Write prints a report as a small table.
func (r Report) Write(w io.Writer) {
	fmt.Fprintf(w, "mode %s\n", r.Mode)
	fmt.Fprintf(w, "%-10s %5s %6s %6s %6s %6s\n", "category", "n", "R@1", "R@5", "R@10", "MRR")
	line := func(name string, s Summary) {
		fmt.Fprintf(w, "%-10s %5d", name, s.N)
		for _, k := range Ks {
			if r, ok := s.Recall[k]; ok {
				fmt.Fprintf(w, " %6.3f", r)
			} else {
				fmt.Fprintf(w, " %6s", "-") // past the page size
			}
		}
		fmt.Fprintf(w, " %6.3f\n", s.MRR)
	}
	cats := make([]int, 0, len(r.ByCategory))
	for c := range r.ByCategory {
		cats = append(cats, c)
	}
	sort.Ints(cats)
	for _, c := range cats {
		line(fmt.Sprintf("%d", c), *r.ByCategory[c])
	}
	line("all", r.Overall)
	if ci := r.Overall.Interval; ci != nil {
		fmt.Fprintf(w, "R@5 95%% bootstrap interval over the questions: %.3f – %.3f\n", ci[0], ci[1])
	}
}
