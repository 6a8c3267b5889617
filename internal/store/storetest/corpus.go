package storetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
)

// The full-text benchmark corpus every store's benchmarks write, so that
// their figures compare: conversations of two speakers, 10 chunks of about
// 2000 characters each, words drawn from a Zipfian vocabulary whose head is
// real English (function words, then common conversational words) and
// whose tail is made-up words, with each conversation leaning on a few
// topic words of its own, as real conversations do. Everything is drawn
// from fixed seeds: the same corpus and queries on every run.
const (
	CorpusSources         = 4000
	CorpusChunksPerSource = 10
	corpusChunkChars      = 2000
)

// Corpus is the benchmark corpus's plan and its queries; Batches makes
// its documents.
type Corpus struct {
	Queries  []string
	z        *zipf
	topics   [][]string
	speakers [][2]string
}

// NewCorpus plans the corpus and makes its 500 queries. Separate
// generators for the plan, the text and the queries keep the queries the
// same whether the text is built or reused.
func NewCorpus() *Corpus {
	plan := rand.New(rand.NewPCG(7, 11))
	vocab := benchVocabulary(plan)
	c := &Corpus{z: newZipf(vocab, 1.0), topics: make([][]string, CorpusSources), speakers: make([][2]string, CorpusSources)}
	for i := range CorpusSources {
		c.speakers[i] = [2]string{speakerNames[plan.IntN(len(speakerNames))], speakerNames[plan.IntN(len(speakerNames))]}
		for range 5 {
			c.topics[i] = append(c.topics[i], vocab[300+plan.IntN(20000)])
		}
	}
	c.Queries = benchQueries(rand.New(rand.NewPCG(5, 3)), c.z, c.topics, c.speakers, 500)
	return c
}

// Batches calls fn with the corpus's documents, 100 at a time.
func (c *Corpus) Batches(fn func([]recall.Document) error) error {
	text := rand.New(rand.NewPCG(13, 17))
	var batch []recall.Document
	for i := range CorpusSources {
		d := recall.Document{Source: recall.Source{
			ID: fmt.Sprintf("chats/%04d/session-%02d.md", i/10, i%10), Kind: recall.KindArchive,
			Title: fmt.Sprintf("%s and %s on %s", c.speakers[i][0], c.speakers[i][1], c.topics[i][0]),
			Date:  fmt.Sprintf("2024-%02d-%02d", 1+i%12, 1+i%28),
		}}
		for n := range CorpusChunksPerSource {
			t := benchChunk(text, c.z, c.topics[i], c.speakers[i])
			d.Chunks = append(d.Chunks, recall.Chunk{Index: n, Text: t, Hash: recall.TextHash(t)})
		}
		batch = append(batch, d)
		if len(batch) == 100 {
			if err := fn(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}

// WriteLoad makes the documents of a sweep-like write benchmark.
type WriteLoad struct {
	r  *rand.Rand
	vr *rand.Rand // the vectors' values, apart from the text's draws
	z  *zipf
	n  int
}

// NewWriteLoad returns a WriteLoad drawing from a fixed seed.
func NewWriteLoad() *WriteLoad {
	r := rand.New(rand.NewPCG(1, 2))
	return &WriteLoad{r: r, vr: rand.New(rand.NewPCG(3, 4)), z: newZipf(benchVocabulary(r), 1.0)}
}

// Next returns 20 new conversations of 10 chunks (a sweep's batch) and
// the bytes of their text.
func (w *WriteLoad) Next() (docs []recall.Document, bytes int64) {
	for range 20 {
		d := recall.Document{Source: recall.Source{ID: fmt.Sprintf("w/%06d.md", w.n), Kind: recall.KindArchive, Title: "t"}}
		w.n++
		for c := range CorpusChunksPerSource {
			text := benchChunk(w.r, w.z, []string{"topic"}, [2]string{"A", "B"})
			bytes += int64(len(text))
			d.Chunks = append(d.Chunks, recall.Chunk{Index: c, Text: text, Hash: recall.TextHash(text)})
		}
		docs = append(docs, d)
	}
	return docs, bytes
}

// NextWithVectors is Next as a sweep that embeds writes it: each chunk
// with its conversation's context header, and a vector in space of units
// random unit vectors of dim dimensions (a chunk is embedded as its
// paragraphs; the MCP load test's chunks have 7 on average), keyed by the
// chunk's vector key.
func (w *WriteLoad) NextWithVectors(space string, units, dim int) (docs []recall.Document, vecs []recall.Vector, bytes int64) {
	docs, bytes = w.Next()
	for i := range docs {
		d := &docs[i]
		n := w.n - len(docs) + i
		d.Source.Date = fmt.Sprintf("2025-%02d-%02d", 1+n%12, 1+n%28)
		d.Source.IndexState = recall.IndexOK
		header := d.Source.Title + " (" + d.Source.Date + ")"
		for j := range d.Chunks {
			d.Chunks[j].Header = header
			vecs = append(vecs, recall.Vector{Space: space, Key: d.Chunks[j].VectorKey(), Vec: UnitVectors(w.vr, units, dim)})
		}
	}
	return docs, vecs, bytes
}

// UnitVectors returns n random unit vectors of dim dimensions, concatenated.
func UnitVectors(r *rand.Rand, n, dim int) []float32 {
	v := make([]float32, n*dim)
	for u := range n {
		unit := v[u*dim : (u+1)*dim]
		var norm float64
		for i := range unit {
			x := r.NormFloat64()
			unit[i] = float32(x)
			norm += x * x
		}
		for i := range unit {
			unit[i] /= float32(math.Sqrt(norm))
		}
	}
	return v
}

var commonWords = strings.Fields(`like really yeah know think get go just time good one people would
could make want see way day thing things well also back much even new work need first life way
great love feel right going got said say take something look still lot little year years always
never help come thanks thank sure maybe kind pretty last long made home family friends friend
today week tomorrow yesterday morning night best better old big fun place find try tell thought
made everything anything nothing someone everyone around show called keep start next hope glad
awesome amazing cool nice happy hard remember talk talked trip book music movie dinner weekend
kids job school went came lately recently together probably actually especially totally definitely`)

var speakerNames = strings.Fields(`Caroline Melanie Joanna Nate Maria John Audrey Andrew Evan Sam Tim Jolene
Deborah Calvin Gina Jon James Dave Priya Tomas Lena Omar Yuki Chen Fatima Lucas Nina Oscar Rosa Ivan`)

type zipf struct {
	words []string
	cum   []float64
}

func newZipf(words []string, s float64) *zipf {
	z := &zipf{words: words, cum: make([]float64, len(words))}
	total := 0.0
	for i := range words {
		total += 1 / math.Pow(float64(i+1), s)
		z.cum[i] = total
	}
	return z
}

func (z *zipf) draw(r *rand.Rand) string {
	x := r.Float64() * z.cum[len(z.cum)-1]
	return z.words[sort.SearchFloat64s(z.cum, x)]
}

func benchVocabulary(r *rand.Rand) []string {
	seen := map[string]bool{}
	var words []string
	add := func(w string) {
		if !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	for _, w := range strings.Fields(`the i to and a you of it that in is was my for me on with have so but we this be
		it's i'm like what do not are at your all about that's he she they had our know can if there as would an or by
		from been when no how more did were them don't can't then some well their him her his also`) {
		add(w)
	}
	for _, w := range commonWords {
		add(w)
	}
	syll := strings.Fields("ka lo mi ne ru ta pe si do fa gu be ri mo la ve zo ni pa te so nu ke ma li ro da")
	for len(words) < 40000 {
		n := 2 + r.IntN(3)
		var b strings.Builder
		for range n {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		if r.IntN(3) == 0 {
			b.WriteString("n")
		}
		add(b.String())
	}
	return words
}

func benchChunk(r *rand.Rand, z *zipf, topics []string, speakers [2]string) string {
	var b strings.Builder
	turn := 0
	for b.Len() < corpusChunkChars {
		b.WriteString(speakers[turn%2])
		b.WriteString(": ")
		turn++
		sentences := 1 + r.IntN(3)
		for range sentences {
			n := 5 + r.IntN(15)
			for w := range n {
				word := z.draw(r)
				if r.IntN(40) == 0 {
					word = topics[r.IntN(len(topics))]
				}
				if w == 0 {
					word = strings.ToUpper(word[:1]) + word[1:]
				}
				b.WriteString(word)
				if w < n-1 {
					b.WriteByte(' ')
				}
			}
			b.WriteString(". ")
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// benchQueries makes natural-language questions of 3 to 12 words: most ask
// about one conversation (a speaker, a topic word or two, and words drawn
// with their usual frequency); a fifth hold only words drawn by frequency.
func benchQueries(r *rand.Rand, z *zipf, topics [][]string, speakers [][2]string, n int) []string {
	starts := []string{"When did", "What did", "How did", "Why did", "Where did", "Who told", "Did"}
	var qs []string
	for range n {
		size := 3 + r.IntN(10)
		var words []string
		if r.IntN(5) > 0 {
			src := r.IntN(len(topics))
			words = append(words, strings.Fields(starts[r.IntN(len(starts))])...)
			words = append(words, speakers[src][r.IntN(2)])
			for range 1 + r.IntN(2) {
				words = append(words, topics[src][r.IntN(len(topics[src]))])
			}
		}
		for len(words) < size {
			words = append(words, z.draw(r))
		}
		qs = append(qs, strings.Join(words[:size], " ")+"?")
	}
	return qs
}

// WriteBench measures a sweep's writes, the same load on every store:
// one Write per iteration of 20 new conversations of 10 chunks (Next);
// withVectors, as one that embeds makes them (NextWithVectors): each chunk
// with its context header and a vector of 7 units of 384 dimensions (1,400
// unit vectors a write), into a space made first. Every store's
// BenchmarkWrite and BenchmarkWriteVectors run it.
func WriteBench(b *testing.B, st recall.Store, withVectors bool) {
	ctx := b.Context()
	if withVectors {
		if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "bench", Provider: "bench", Model: "bench", Dim: 384, Normalized: true}); err != nil {
			b.Fatal(err)
		}
	}
	load := NewWriteLoad()
	var bytes int64
	for b.Loop() {
		b.StopTimer()
		var docs []recall.Document
		var vecs []recall.Vector
		var n int64
		if withVectors {
			docs, vecs, n = load.NextWithVectors("bench", 7, 384)
		} else {
			docs, n = load.Next()
		}
		bytes += n
		b.StartTimer()
		if _, err := st.Write(ctx, docs, vecs); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(bytes / int64(b.N))
	b.ReportMetric(float64(200*b.N)/b.Elapsed().Seconds(), "chunks/s")
}

// ReplaceBench measures a sweep's writes of files that changed: one Write
// per iteration of 20 conversations already stored (WriteBench's, 500 of
// them written first, rewritten in turn), each with every chunk's text
// changed, so the write removes 200 chunks and their vectors (withVectors)
// and adds 200. Every store's BenchmarkWriteReplace runs it. cpu, when
// not nil, reads the process's CPU time: an in-process store's writes are
// reported by it too ("cpu-ms/op"), steadier than wall time on a busy
// machine.
func ReplaceBench(b *testing.B, st recall.Store, withVectors bool, cpu func() (time.Duration, bool)) {
	ctx := b.Context()
	if withVectors {
		if _, err := st.CreateSpace(ctx, recall.VectorSpace{Name: "bench", Provider: "bench", Model: "bench", Dim: 384, Normalized: true}); err != nil {
			b.Fatal(err)
		}
	}
	const stored = 500
	load := NewWriteLoad()
	next := func() ([]recall.Document, []recall.Vector, int64) {
		if withVectors {
			return load.NextWithVectors("bench", 7, 384)
		}
		docs, n := load.Next()
		return docs, nil, n
	}
	for load.n < stored {
		docs, vecs, _ := next()
		if _, err := st.Write(ctx, docs, vecs); err != nil {
			b.Fatal(err)
		}
	}
	var bytes int64
	var spent time.Duration
	for b.Loop() {
		b.StopTimer()
		// The same ids again; the text generator has moved on, so every
		// chunk's text (and vector key) is new.
		load.n %= stored
		docs, vecs, n := next()
		bytes += n
		var c0 time.Duration
		if cpu != nil {
			c0, _ = cpu()
		}
		b.StartTimer()
		res, err := st.Write(ctx, docs, vecs)
		if err != nil {
			b.Fatal(err)
		}
		if cpu != nil {
			c1, _ := cpu()
			spent += c1 - c0
		}
		if len(res.Removed) != 200 {
			b.Fatalf("write replaced %d chunks, want 200", len(res.Removed))
		}
	}
	if cpu != nil && spent > 0 {
		b.ReportMetric(float64(spent.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
	b.SetBytes(bytes / int64(b.N))
	b.ReportMetric(float64(200*b.N)/b.Elapsed().Seconds(), "chunks/s")
}

// ReportLatencies reports the mean, median and 99th percentile of durs,
// in milliseconds, as metrics named prefix+"mean-ms" and so on.
func ReportLatencies(b *testing.B, prefix string, durs []time.Duration) {
	if len(durs) == 0 {
		return
	}
	slices.Sort(durs)
	var sum time.Duration
	for _, d := range durs {
		sum += d
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(sum/time.Duration(len(durs))), prefix+"mean-ms")
	b.ReportMetric(ms(durs[len(durs)/2]), prefix+"p50-ms")
	b.ReportMetric(ms(durs[len(durs)*99/100]), prefix+"p99-ms")
}

// BenchmarkFirstSpace's database: FirstSpaceSources sources of 10 short
// chunks (200,000), written without vectors, and the space it creates.
const FirstSpaceSources = 20000

// FirstSpace is the space BenchmarkFirstSpace creates.
var FirstSpace = recall.VectorSpace{Name: "bench", Provider: "bench", Model: "bench", Dim: 384, Normalized: true}

// WriteUnembedded writes BenchmarkFirstSpace's database into st, whose
// sources have the index state given: "ok" as a sweep without an embedder
// writes them, "skipped" as stored while no space existed.
func WriteUnembedded(b *testing.B, st recall.Store, state string) {
	const chunks, batch = 10, 200
	for first := 0; first < FirstSpaceSources; first += batch {
		docs := make([]recall.Document, 0, batch)
		for s := first; s < first+batch; s++ {
			d := recall.Document{Source: recall.Source{ID: fmt.Sprintf("chats/%06d.md", s), Kind: recall.KindArchive,
				Title: "t", IndexState: state}}
			for c := range chunks {
				text := fmt.Sprintf("A: conversation %d, passage %d, about the trip and the dinner after it.", s, c)
				d.Chunks = append(d.Chunks, recall.Chunk{Index: c, Text: text, Hash: recall.TextHash(text)})
			}
			docs = append(docs, d)
		}
		if _, err := st.Write(b.Context(), docs, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// FirstSpaceBench times CreateSpace of FirstSpace, the first space, which
// settles every source's index state in its transaction: each iteration
// creates it in a fresh copy of WriteUnembedded's database, which fresh
// opens (untimed; the loop closes it). cpu, when not nil, reads the
// process's CPU time, reported as "cpu-ms/op".
func FirstSpaceBench(b *testing.B, fresh func() recall.Store, cpu func() (time.Duration, bool)) {
	var spent time.Duration
	for b.Loop() {
		b.StopTimer()
		st := fresh()
		var c0 time.Duration
		if cpu != nil {
			c0, _ = cpu()
		}
		b.StartTimer()
		if _, err := st.CreateSpace(b.Context(), FirstSpace); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if cpu != nil {
			c1, _ := cpu()
			spent += c1 - c0
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	if spent > 0 {
		b.ReportMetric(float64(spent.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
}
