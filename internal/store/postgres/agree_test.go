package postgres

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// agreeCorpus is a small corpus with every kind of text the full-text
// index treats specially: common and rare words, titles and dates, CJK
// runs, accents and case.
func agreeCorpus() []recall.Document {
	r := rand.New(rand.NewPCG(3, 9))
	common := strings.Fields("we talked about the weather and plans for weekend garden tea coffee music trip book dinner work")
	rare := strings.Fields("zeppelin quince marmalade harpsichord origami basil tomatoes peppermint espresso kayak")
	cjk := []string{"我喜欢喝薄荷茶", "今天天气很好", "私はミントティーが好きです", "公园散步", "薄荷茶很好喝"}
	var docs []recall.Document
	for i := range 120 {
		d := recall.Document{Source: recall.Source{ID: fmt.Sprintf("c/%03d.md", i), Kind: recall.KindArchive,
			Title: fmt.Sprintf("Chat about %s", rare[r.IntN(len(rare))])}}
		if i%3 == 0 {
			d.Source.Date = fmt.Sprintf("2024-%02d-%02d", 1+i%12, 1+i%28)
		}
		for c := range 1 + r.IntN(4) {
			var words []string
			for range 8 + r.IntN(30) {
				switch x := r.IntN(20); {
				case x == 0:
					words = append(words, rare[r.IntN(len(rare))])
				case x == 1:
					words = append(words, cjk[r.IntN(len(cjk))])
				case x == 2:
					words = append(words, "Café", "CRÈME")
				default:
					words = append(words, common[r.IntN(len(common))])
				}
			}
			text := strings.Join(words, " ")
			d.Chunks = append(d.Chunks, recall.Chunk{Index: c, Text: text, Hash: recall.TextHash(text)})
		}
		docs = append(docs, d)
	}
	return docs
}

var agreeQueries = []string{
	"zeppelin", "weather", "weather garden", "talked weather weekend plans zeppelin garden",
	"the weather", "When did we talk about the kayak?", "quince marmalade", "Chat", "chat quince",
	`"mint tea"`, `"the weather" zeppelin`, `"talked about" "the weather"`, `"weather and plans" kayak origami`,
	"薄荷", "茶", "天气", "薄荷茶", "ミント", "好", `"薄荷茶"`, "cafe", "crème",
	"January 2024", "3 April 2024", "2024", "tea coffee music trip book dinner work",
}

// TestRankingAgreesWithSQLite: the same writes and queries give the same
// candidates with the same scores in both stores. Chunk ids agree too: both
// number chunks from 1 in the order they are written. Where the SQLite
// store's plan is exact (the default budget), scores must agree to 1e-9;
// with a small budget, queries of plain words only (phrases then count
// their document frequency here only up to four budgets; see Lexical).
func TestRankingAgreesWithSQLite(t *testing.T) {
	for _, budget := range []int{0, 20} {
		t.Run(fmt.Sprintf("budget%d", budget), func(t *testing.T) {
			pg, lite := openBoth(t, budget)
			docs := agreeCorpus()
			for i := 0; i < len(docs); i += 25 {
				batch := docs[i:min(i+25, len(docs))]
				if _, err := lite.Write(ctx, batch, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := pg.Write(ctx, batch, nil); err != nil {
					t.Fatal(err)
				}
			}
			// Removals too: document frequencies and lengths must follow.
			for _, s := range []recall.Store{lite, pg} {
				if _, _, err := s.Delete(ctx, "c/001.md", "c/050.md"); err != nil {
					t.Fatal(err)
				}
			}
			for _, q := range agreeQueries {
				if budget > 0 && (strings.ContainsAny(q, `"`) || strings.ContainsFunc(q, func(r rune) bool { return r > 0x2E80 })) {
					continue
				}
				for _, f := range []recall.Filter{{}, {Since: "2024-03"}, {SourcePrefix: "c/0"}} {
					want, err := lite.Lexical(ctx, recall.LexicalQuery{Text: q, Filter: f, Limit: 20})
					if err != nil {
						t.Fatal(err)
					}
					got, err := pg.Lexical(ctx, recall.LexicalQuery{Text: q, Filter: f, Limit: 20})
					if err != nil {
						t.Fatal(err)
					}
					compareCandidates(t, fmt.Sprintf("%q %+v", q, f), want, got)
				}
			}
		})
	}
}

// openBoth opens a PostgreSQL store on a fresh database and a SQLite store
// in a temporary folder, both with the full-text budget given (0: the
// default), closed when the test ends.
func openBoth(t *testing.T, budget int) (*DB, *sqlite.DB) {
	t.Helper()
	pg := openTest(t, pgtest.Server(t), Options{LexicalBudget: budget})
	t.Cleanup(func() { pg.Close() })
	lite, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "r.db"), sqlite.Options{LexicalBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	return pg, lite
}

// compareCandidates checks that two stores' candidates have the same
// scores in the same order, and that every chunk both return has the same
// score; chunks of equal score may come in either order and may be cut
// differently at the limit.
func compareCandidates(t *testing.T, what string, want, got []recall.Candidate) {
	t.Helper()
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(a)) }
	if len(want) != len(got) {
		t.Errorf("%s: %d candidates; SQLite has %d\n got %v\nwant %v", what, len(got), len(want), got, want)
		return
	}
	scores := map[int64]float64{}
	for _, c := range want {
		scores[c.ChunkID] = c.Score
	}
	for i := range want {
		if !close(want[i].Score, got[i].Score) {
			t.Errorf("%s: candidate %d scores %v; SQLite's %v\n got %v\nwant %v", what, i, got[i].Score, want[i].Score, got, want)
			return
		}
		if s, ok := scores[got[i].ChunkID]; ok && !close(s, got[i].Score) {
			t.Errorf("%s: chunk %d scores %v; in SQLite %v", what, got[i].ChunkID, got[i].Score, s)
		}
	}
}

// longWords are words longer than a B-tree entry can hold (about 2,700
// bytes), as a base64 blob or a run of Cyrillic without spaces gives,
// and two that differ only after their first maxTermBytes bytes.
func longWords() []string {
	r := rand.New(rand.NewPCG(1, 2))
	random := func(alphabet string, n int) string {
		rs := []rune(alphabet)
		var b strings.Builder
		for range n {
			b.WriteRune(rs[r.IntN(len(rs))])
		}
		return b.String()
	}
	b64 := "abcdefghijklmnopqrstuvwxyz0123456789"
	shared := random(b64, 400)
	return []string{
		random(b64, 3000),
		random("абвгдежзийклмнопрстуфхцчшщыэюя", 2000), // 4,000 bytes
		random("αβγδεζηθικλμνξοπρστυφχψω", 1500),
		shared + "q" + random(b64, 50),
		shared + "z" + random(b64, 50),
		random(b64, maxTermBytes+1),
	}
}

// TestLongWords: a chunk holding a word too long for a B-tree entry is
// stored, with the rest of its batch, and the word is found by a query for
// it, alone or in a phrase, ranked as SQLite ranks it; two long words that
// differ only near their end stay two terms.
func TestLongWords(t *testing.T) {
	pg, lite := openBoth(t, 0)
	words := longWords()
	var docs []recall.Document
	for i, w := range words {
		docs = append(docs, textDoc(fmt.Sprintf("long%d.md", i), "short words here "+w+" and after", "more short words"))
	}
	docs = append(docs, textDoc("plain.md", "short words only"), textDoc("twice.md", words[0]+" "+words[0]+" again"))
	for _, s := range []recall.Store{lite, pg} {
		if _, err := s.Write(ctx, docs, nil); err != nil {
			t.Fatalf("%T: write of long words: %v", s, err)
		}
	}
	queries := []string{"short", `"here ` + words[1] + ` and"`}
	for _, w := range words {
		queries = append(queries, w, w+" words")
	}
	for _, q := range queries {
		want, err := lite.Lexical(ctx, recall.LexicalQuery{Text: q, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		got, err := pg.Lexical(ctx, recall.LexicalQuery{Text: q, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Errorf("query %.40q…: SQLite finds nothing", q)
		}
		compareCandidates(t, fmt.Sprintf("%.40q…", q), want, got)
	}
	if _, _, err := pg.Delete(ctx, "long0.md", "long3.md"); err != nil {
		t.Fatal(err)
	}
	if got, err := pg.Lexical(ctx, recall.LexicalQuery{Text: words[4]}); err != nil || len(got) != 1 {
		t.Errorf("the other of two words alike once one is deleted: %v, %v; want its chunk", got, err)
	}
	if err := pg.IntegrityCheck(ctx); err != nil {
		t.Error(err)
	}
}

// TestPhrasesBeyondRankedChunks: a quoted phrase, or a CJK word (checked
// by position alike), whose words stand apart in more newer chunks than a
// query ranks still finds the older chunks holding it, as FTS5 checks a
// phrase before its newest-first cut; only the chunks holding all the
// words were cut before, and the phrase checked after, which left none.
func TestPhrasesBeyondRankedChunks(t *testing.T) {
	const budget = 5 // ranks at most max(2*5, limit) chunks
	pg, lite := openBoth(t, budget)
	docs := []recall.Document{textDoc("old.md", "we flew to new york in may"), textDoc("cjk-old.md", "我喜欢喝薄荷茶")}
	// More than maxRanked (10 at limit 5), fewer than four budgets, so
	// the phrases' document frequencies are counted, not estimated.
	for i := range 15 {
		docs = append(docs, textDoc(fmt.Sprintf("n%02d.md", i), "york is old, the city of new ideas"), textDoc(fmt.Sprintf("c%02d.md", i), "薄荷很香，荷茶也好"))
	}
	docs = append(docs, textDoc("new.md", "new york again"))
	for _, s := range []recall.Store{lite, pg} {
		for _, d := range docs { // one write each: newer chunks get larger ids
			if _, err := s.Write(ctx, []recall.Document{d}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range []string{`"new york"`, `"new york" flew`, "薄荷茶", "薄荷茶 york"} {
		for _, limit := range []int{5, 40} {
			want, err := lite.Lexical(ctx, recall.LexicalQuery{Text: q, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			got, err := pg.Lexical(ctx, recall.LexicalQuery{Text: q, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			compareCandidates(t, fmt.Sprintf("%s, limit %d", q, limit), want, got)
		}
	}
}
