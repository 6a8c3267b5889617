package postgres

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
)

// The benchmark corpus is the SQLite store's (internal/store/sqlite
// bench_test.go), built by the same generators with the same seeds, so
// the two stores' figures compare: conversations of two speakers, 10
// chunks of about 2000 characters each, words from a Zipfian vocabulary.
// It is written once per test binary into a database of its own.
const (
	benchSources      = 4000
	benchChunksPerSrc = 10
	benchChunkChars   = 2000
)

var (
	benchOnce sync.Once
	benchErr  error
	benchQs   []string
)

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

// benchCorpus builds (once per run) the corpus database and the queries,
// and returns the database's URL.
func benchCorpus(b *testing.B) string {
	dsn := pgtest.Shared(b, "bench")
	benchOnce.Do(func() {
		start := time.Now()
		plan := rand.New(rand.NewPCG(7, 11))
		vocab := benchVocabulary(plan)
		z := newZipf(vocab, 1.0)
		topics := make([][]string, benchSources)
		speakers := make([][2]string, benchSources)
		for i := range benchSources {
			speakers[i] = [2]string{speakerNames[plan.IntN(len(speakerNames))], speakerNames[plan.IntN(len(speakerNames))]}
			for range 5 {
				topics[i] = append(topics[i], vocab[300+plan.IntN(20000)])
			}
		}
		benchQs = benchQueries(rand.New(rand.NewPCG(5, 3)), z, topics, speakers, 500)
		db, err := Open(ctx, dsn, Options{})
		if err != nil {
			benchErr = err
			return
		}
		defer db.Close()
		text := rand.New(rand.NewPCG(13, 17))
		var batch []recall.Document
		for i := range benchSources {
			d := recall.Document{Source: recall.Source{
				ID: fmt.Sprintf("chats/%04d/session-%02d.md", i/10, i%10), Kind: recall.KindArchive,
				Title: fmt.Sprintf("%s and %s on %s", speakers[i][0], speakers[i][1], topics[i][0]),
				Date:  fmt.Sprintf("2024-%02d-%02d", 1+i%12, 1+i%28),
			}}
			for c := range benchChunksPerSrc {
				t := benchChunk(text, z, topics[i], speakers[i])
				d.Chunks = append(d.Chunks, recall.Chunk{Index: c, Text: t, Hash: recall.TextHash(t)})
			}
			batch = append(batch, d)
			if len(batch) == 100 {
				if _, benchErr = db.Write(ctx, batch, nil); benchErr != nil {
					return
				}
				batch = batch[:0]
			}
		}
		// Statistics and the visibility map as autovacuum leaves them on a
		// server that has run for a while.
		if _, benchErr = db.pool.Exec(ctx, `VACUUM ANALYZE`); benchErr != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "bench corpus: %d chunks built in %v\n", benchSources*benchChunksPerSrc, time.Since(start).Round(time.Millisecond))
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return dsn
}

func benchChunk(r *rand.Rand, z *zipf, topics []string, speakers [2]string) string {
	var b strings.Builder
	turn := 0
	for b.Len() < benchChunkChars {
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

// BenchmarkLexical measures full-text queries over the 40,000-chunk corpus,
// one query per iteration, and reports the mean, median and 99th percentile
// latency (wall clock: the work is mostly the server's, which the client
// thread's CPU time would leave out). Run with a fixed count so the
// percentiles come from one run:
//
//	go test -run '^$' -bench Lexical -benchtime 1000x ./internal/store/postgres/
func BenchmarkLexical(b *testing.B) {
	db, err := Open(ctx, benchCorpus(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, bc := range []struct {
		name string
		f    recall.Filter
	}{
		{"all", recall.Filter{}},
		{"owner-scoped", recall.Filter{OwnerScoped: true, Owner: "alice"}},
		{"prefix", recall.Filter{SourcePrefix: "chats/01"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			// Warm the server's cache the way a running server has it.
			for _, q := range benchQs[:50] {
				if _, err := db.Lexical(ctx, recall.LexicalQuery{Text: q, Filter: bc.f, Limit: 20}); err != nil {
					b.Fatal(err)
				}
			}
			durs := make([]time.Duration, 0, b.N)
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				if _, err := db.Lexical(ctx, recall.LexicalQuery{Text: benchQs[i%len(benchQs)], Filter: bc.f, Limit: 20}); err != nil {
					b.Fatal(err)
				}
				durs = append(durs, time.Since(t0))
			}
			reportLatencies(b, "", durs)
		})
	}
}

func reportLatencies(b *testing.B, prefix string, durs []time.Duration) {
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

// BenchmarkWrite measures a sweep's writes: one Write of 20 new
// conversations of 10 chunks per iteration.
func BenchmarkWrite(b *testing.B) {
	db, err := Open(ctx, pgtest.Server(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	r := rand.New(rand.NewPCG(1, 2))
	z := newZipf(benchVocabulary(r), 1.0)
	n := 0
	var bytes int64
	for b.Loop() {
		b.StopTimer()
		var docs []recall.Document
		for range 20 {
			d := recall.Document{Source: recall.Source{ID: fmt.Sprintf("w/%06d.md", n), Kind: recall.KindArchive, Title: "t"}}
			n++
			for c := range benchChunksPerSrc {
				text := benchChunk(r, z, []string{"topic"}, [2]string{"A", "B"})
				bytes += int64(len(text))
				d.Chunks = append(d.Chunks, recall.Chunk{Index: c, Text: text, Hash: recall.TextHash(text)})
			}
			docs = append(docs, d)
		}
		b.StartTimer()
		if _, err := db.Write(ctx, docs, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(bytes / int64(b.N))
	b.ReportMetric(float64(200*b.N)/b.Elapsed().Seconds(), "chunks/s")
}

// BenchmarkSmallWrite writes one short one-chunk document per transaction,
// as a memory save does.
func BenchmarkSmallWrite(b *testing.B) {
	db, err := Open(ctx, pgtest.Server(b), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	n := 0
	for b.Loop() {
		text := fmt.Sprintf("memory %d: tea with oat milk, no sugar", n)
		d := recall.Document{Source: recall.Source{ID: fmt.Sprintf("m/%06d", n), Kind: recall.KindMemory},
			Chunks: []recall.Chunk{{Index: 0, Text: text, Hash: recall.TextHash(text)}}}
		n++
		if _, err := db.Write(ctx, []recall.Document{d}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
