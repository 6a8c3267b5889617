package sqlite

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/textindex"
)

// TestTermsAgreeWithFTS5 runs a large, varied word list through SQLite's
// own porter tokenizer (porter over unicode61 with remove_diacritics 2,
// read back through an fts5vocab instance table) and through textindex,
// and requires the same terms for every word; and it requires that the
// full-text index as the migrations create it, given textindex.IndexText,
// holds exactly those terms. The index and the query planner both rest on
// textindex's terms, so a word on which they disagreed with FTS5's stemmer
// would be indexed and looked up under another term than FTS5 gives it.
// RECALL_FTS5_WORDS may name more directories (separated by the OS path
// list separator) whose text files join the list.
func TestTermsAgreeWithFTS5(t *testing.T) {
	if raceEnabled {
		t.Skip("one goroutine, 25 times slower under the race detector: scripts/test.sh runs it without (go test -run TestTermsAgreeWithFTS5 ./internal/store/sqlite/)")
	}
	sets := []struct {
		name  string
		words func(t *testing.T) []string
	}{
		{"inflections", func(*testing.T) []string { return inflections() }},
		{"lengths", func(*testing.T) []string { return lengthWords() }},
		{"mixed", func(*testing.T) []string { return mixedWords() }},
		{"files", fileWords},
		{"code points", func(*testing.T) []string { return codePointWords() }},
		{"split bytes", func(*testing.T) []string { return splitByteWords() }},
	}
	for _, set := range sets {
		t.Run(set.name, func(t *testing.T) {
			words := set.words(t)
			if len(words) == 0 {
				t.Fatal("no words")
			}
			checkTerms(t, words)
		})
	}
}

// agreeMarker starts the numbered token set before each word, so the terms
// of every word can be told apart in one long document. Neither tokenizer
// changes it.
const agreeMarker = "0qzx"

// checkTerms indexes the words, a marker before each, in the reference
// porter table and in chunks_fts, and compares the terms each stored for
// each word with textindex.Terms of the same text.
func checkTerms(t *testing.T, words []string) {
	db := openTest(t, Options{})
	defer db.Close()
	createTermTables(t, db)
	const perDoc = 20000
	var ours [][]string
	for lo := 0; lo < len(words); lo += perDoc {
		var b strings.Builder
		for i := lo; i < min(lo+perDoc, len(words)); i++ {
			fmt.Fprintf(&b, " %s%d %s", agreeMarker, i, words[i])
		}
		text := b.String()
		if _, err := db.rw.Exec(`INSERT INTO temp.ref (rowid, title, body) VALUES (?, '', ?)`, lo/perDoc+1, textindex.Normalize(text)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.rw.Exec(`INSERT INTO chunks_fts (rowid, title, body) VALUES (?, '', ?)`, lo/perDoc+1, textindex.IndexText(text)); err != nil {
			t.Fatal(err)
		}
		ours = append(ours, groupByMarker(t, textindex.Terms(text), len(words))...)
	}
	theirs := groupByMarker(t, vocabTerms(t, db, "temp.refterms"), len(words))
	index := groupByMarker(t, vocabTerms(t, db, "temp.terms"), len(words))
	bad := 0
	for i, w := range words {
		if slices.Equal(ours[i], theirs[i]) && slices.Equal(ours[i], index[i]) {
			continue
		}
		if bad++; bad <= 20 {
			t.Errorf("%q: FTS5 porter terms %q\n\ttextindex terms %q\n\tindex terms %q", w, theirs[i], ours[i], index[i])
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d words disagree", bad, len(words))
	}
	t.Logf("%d words agree", len(words)-bad)
}

// createTermTables adds the reference table temp.ref, tokenized by FTS5's
// porter tokenizer as the index was before terms were made in Go, and the
// instance vocabularies temp.refterms of it and temp.terms of chunks_fts.
func createTermTables(tb testing.TB, db *DB) {
	for _, q := range []string{
		`CREATE VIRTUAL TABLE temp.ref USING fts5 (title, body, tokenize = 'porter unicode61 remove_diacritics 2')`,
		`CREATE VIRTUAL TABLE temp.refterms USING fts5vocab(temp, ref, instance)`,
		`CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, chunks_fts, instance)`,
	} {
		if _, err := db.rw.Exec(q); err != nil {
			tb.Fatal(err)
		}
	}
}

// vocabTerms returns the terms an fts5vocab instance table lists, in order.
func vocabTerms(t *testing.T, db *DB, table string) []string {
	t.Helper()
	rows, err := db.rw.Query(`SELECT term FROM ` + table + ` ORDER BY doc, offset`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var all []string
	for rows.Next() {
		var term string
		if err := rows.Scan(&term); err != nil {
			t.Fatal(err)
		}
		all = append(all, term)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}

// groupByMarker splits a document's terms at the markers, into the terms
// of each word (indexed by word number).
func groupByMarker(t *testing.T, terms []string, nWords int) [][]string {
	t.Helper()
	groups := map[int][]string{}
	first, cur := -1, -1
	for _, term := range terms {
		if n, ok := strings.CutPrefix(term, agreeMarker); ok {
			i, err := strconv.Atoi(n)
			if err != nil || i >= nWords {
				t.Fatalf("bad marker %q", term)
			}
			if first < 0 {
				first = i
			}
			cur = i
			groups[i] = []string{}
			continue
		}
		if cur < 0 {
			t.Fatalf("term %q before the first marker", term)
		}
		groups[cur] = append(groups[cur], term)
	}
	out := make([][]string, len(groups))
	for i := range out {
		g, ok := groups[first+i]
		if !ok {
			t.Fatalf("marker %d missing", first+i)
		}
		out[i] = g
	}
	return out
}

// Stems and suffixes for inflections: common English words and the endings
// Porter's rules name, so every rule fires and misfires.
var (
	agreeStems = strings.Fields(`connect relate general generalize hope happy run swim stop plan agree feed sing
		motor trouble size hop tan fall hiss fizz fail file sky ration condition valence hesitate digit conform
		radical differ vile analog vietnam predicate operate feud decide callous formal sense sensitive sensible
		triplicate form electric revive allow infer airline gyroscope adjust defend irritate replace depend adopt
		homolog commune activate angular effect bowdler probe rate cease control roll oscillate nation organ civil
		beauty care use act create cook bake paint read write garden travel visit study try cry dry fly play enjoy
		employ copy marry carry worry bus box fox church wish kiss class glass quiz city baby lady party story
		memory family friend hike camp climb dance begin admit refer prefer occur commit equip cancel label model
		signal total caress pony tie cat plaster bled conflate size fizz move love live give make take bike ride
		free see agreed need speed breed bleed knee tree guarantee refund argue value continue queue dye eye lie
		die tie toy boy day key grey obey pay say stay bay employ annoy destroy yoyo syzygy rhythm crypt myth gym
		ability possible responsible comfort honor humor color harbor neighbor labor favor rumor tumor vapor
		terror error mirror author doctor actor factor sector vector editor visitor sailor tailor mayor major
		minor senior junior interior exterior superior inferior prior anterior posterior ulterior`)
	agreeSuffixes = strings.Fields(`s es ies ed ing ational tional ization ation ator fulness ousness iveness ness
		ive ize izer ise ly ally ment ement ent ence ance enci anci er ers est ous ously al alism aliti iviti biliti
		bility ability able ible ant ism ist ity iti ic ical icate iciti ful ative alize logi bli alli entli eli
		ousli eed edly ingly ings ion ions ou ate ated ating ure y ie iness ily izing izations ers'`)
)

// inflections returns every stem with every suffix, plainly appended and
// with English spelling changes (final e dropped, consonant doubled, y to
// i), in mixed case.
func inflections() []string {
	seen := map[string]bool{}
	var out []string
	add := func(w string) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, stem := range agreeStems {
		add(stem)
		last := stem[len(stem)-1]
		for _, suf := range agreeSuffixes {
			add(stem + suf)
			switch {
			case last == 'e':
				add(stem[:len(stem)-1] + suf)
			case last == 'y':
				add(stem[:len(stem)-1] + "i" + suf)
			case !strings.ContainsRune("aeiouwxy", rune(last)):
				add(stem + string(last) + suf)
			}
		}
	}
	for i, w := range out {
		switch i % 7 {
		case 3:
			out[i] = strings.ToUpper(w[:1]) + w[1:]
		case 5:
			out[i] = strings.ToUpper(w)
		}
	}
	return out
}

// lengthWords returns words of every length from 1 to 70 bytes, around
// the stemmer's limits of 3 and 64 bytes, ending in suffixes it removes;
// some spelled with accents, whose length the tokenizer counts after
// removing them.
func lengthWords() []string {
	r := rand.New(rand.NewPCG(3, 64))
	letters := "aeiouybcdfghlmnprstvz"
	var out []string
	for n := 1; n <= 70; n++ {
		for range 40 {
			suf := agreeSuffixes[r.IntN(len(agreeSuffixes))]
			var b strings.Builder
			for b.Len() < n-len(suf) {
				b.WriteByte(letters[r.IntN(len(letters))])
			}
			w := (b.String() + suf)[:n]
			out = append(out, w, strings.Repeat("a", n), strings.Repeat("a", max(0, n-3))+"ing")
		}
		out = append(out, strings.Repeat("é", n)+"ing", strings.Repeat("é", n/2)+strings.Repeat("e", n-n/2)+"ed")
	}
	out = append(out, strings.Repeat("b", 40000), strings.Repeat("é", 20000)+"s")
	return out
}

// mixedWords returns words with digits, apostrophes, accents, ligatures,
// CJK, other scripts, emoji and invisible characters, alone and inflected.
func mixedWords() []string {
	out := strings.Fields(`mp3s 2024s covid19 x86ing 1st 3ed 42 3.14 v1.2.3 don't it's I'm won't o'clock
		rock'n'roll Zoë's l'été it’s we’re e-mail foo_bar self-driving state-of-the-art café cafés CAFÉS naïve
		naïveté naïvely résumé résumés Ångström Ångströms façade façades jalapeño jalapeños Zoë über übermensch
		señoritas crème brûlée Dvořák Łódź Kraków Øresund Þórr Ærø straße STRASSE ǅemal ǈubljana İstanbul
		ﬁnancial ﬀort ﬂowers ＡＢＣＤ ｶﾀｶﾅ ①② ½ Ⅻ x² ⓐⓑ ΣΟΦΊΑ σοφία Ελλάδα Привет Москве ёлка
		한국어 텍스트 ไทย हिन्दी العربية עברית 我喜欢薄荷茶 私はミントティーが好き iPhone很好用
		東京タワーing 茶s 薄荷ing 😀 👍🏽great ₽100 ₿ lol🤣 🌶ing ☕️coffee`)
	// The examples of Porter's paper and of textindex's tests.
	out = append(out, strings.Fields(`caresses ponies ties caress cats feed agreed plastered bled motoring sing
		conflated troubled sized hopping tanned falling hissing fizzed failing filing happy sky relational
		conditional rational valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli
		vietnamization predication operator feudalism decisiveness hopefulness callousness formaliti
		sensitiviti sensibiliti triplicate formative formalize electriciti electrical hopeful goodness revival
		allowance inference airliner gyroscopic adjustable defensible irritant replacement adjustment dependent
		adoption homologou communism activate angulariti homologous effective bowdlerize probate rate cease
		controll roll generalizations oscillators ies eed yying ational is as a`)...)
	out = append(out,
		"cafe\u0301s", "nai\u0308vely", "x\u0305y", "q\u0301", "\u0301ing", "a\u0301\u0301ed",
		"zero\u200bwidth", "soft\u00adhyphen", "a\u200db", "tab\there", "nb\u00a0sp", "x·y", "a‿b", "ʼq", "ⅷ", "emoji😀inside",
		"family\U0001F468\u200D\U0001F469\u200D\U0001F467", "flag\U0001F1EB\U0001F1F7s",
	)
	for _, stem := range strings.Fields("café résumé naïve façade jalapeño fiancé protégé señor über crème") {
		for _, suf := range agreeSuffixes {
			out = append(out, stem+suf)
		}
	}
	return out
}

// fileWords returns the words of the repository's example vault and test
// data, and of the directories RECALL_FTS5_WORDS names.
func fileWords(t *testing.T) []string {
	dirs := []string{"../../../examples", "../../convo/testdata", "../../chunk/testdata",
		"../../memory/testdata", "../../search/testdata", "../../server/testdata"}
	if extra := os.Getenv("RECALL_FTS5_WORDS"); extra != "" {
		dirs = append(dirs, filepath.SplitList(extra)...)
	}
	var out []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			// The store takes text only as UTF-8.
			if utf8.Valid(b) {
				out = append(out, strings.Fields(string(b))...)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// codePointWords returns "q" c "q" for every code point c outside ASCII,
// telling which characters each side reads as part of a word and what it
// folds them to, and for every 16th also words the stemmer could change.
// Planes 0, 1 and 14 hold every character unicode61 separates words at;
// the other planes (ideographs, private use, unassigned) are sampled.
func codePointWords() []string {
	var out []string
	for c := rune(utf8.RuneSelf); c <= utf8.MaxRune; c++ {
		if !utf8.ValidRune(c) {
			continue
		}
		if plane := c >> 16; plane != 0 && plane != 1 && plane != 14 && c%257 != 0 {
			continue
		}
		s := string(c)
		out = append(out, "q"+s+"q")
		if c%16 == 0 {
			out = append(out, "b"+s+"ing", "a"+s+s+"ed", s+"ational", s+"ies")
		}
	}
	return out
}

// splitByteWords returns words whose stem ends in a character whose UTF-8
// ends in two equal bytes: the stemmer, which works on bytes, takes them
// for a double consonant and drops one after removing "ed" or "ing".
func splitByteWords() []string {
	var out []string
	for c := rune(0x800); c <= utf8.MaxRune; c++ {
		s := string(c)
		if !utf8.ValidRune(c) || s[len(s)-1] != s[len(s)-2] || c > 0xFFFF && c%61 != 0 {
			continue
		}
		out = append(out, "a"+s+"ed", "e"+s+"ing", "ta"+s+"ing")
	}
	return out
}

// TestPlannerFindsStems checks that the planner's document frequencies are
// those of the index's stems, including a stem that is not valid UTF-8, and
// that words of one stem are searched once.
func TestPlannerFindsStems(t *testing.T) {
	db := openTest(t, Options{})
	defer db.Close()
	split := string(rune(0xB28A)) // UTF-8 EB 8A 8A: "ed" and then one 8A go
	texts := []string{"I was running late", "she runs daily", "the cafés were closed", "a" + split + "ed"}
	for i, text := range texts {
		doc := recall.Document{Source: recall.Source{ID: fmt.Sprint("d", i), Kind: recall.KindArchive},
			Chunks: []recall.Chunk{{Text: text, Hash: recall.TextHash(text)}}}
		if _, err := db.Write(ctx, []recall.Document{doc}, nil); err != nil {
			t.Fatal(err)
		}
	}
	q := textindex.ParseQuery("run Café a" + split + "ing walked")
	freqs, err := db.unitFreqs(ctx, q.Terms)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 1, 1, 0}; !slices.Equal(freqs, want) {
		t.Errorf("document frequencies of %v = %v; want %v", q.Terms, freqs, want)
	}
	exprs, err := db.plan(ctx, textindex.ParseQuery("run running RUNS"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`"run"`}; !slices.Equal(exprs, want) {
		t.Errorf("plan of one stem three times = %q; want %q", exprs, want)
	}
	cands, err := db.Lexical(ctx, recall.LexicalQuery{Text: "runs"})
	if err != nil || len(cands) != 2 {
		t.Errorf("Lexical(runs) = %v, %v; want both chunks about running", cands, err)
	}
}

// FuzzTermsAgree compares the terms of arbitrary text as FTS5's porter
// tokenizer makes them, as textindex.Terms computes them and as the index
// holds them.
func FuzzTermsAgree(f *testing.F) {
	for _, s := range []string{"generalizations", "Caresses ponies", "naïvely résumés", "a\uB28Aed", "iPhone很好用ing",
		"x\u0305y q\u0301", "🌶ing ₽100", strings.Repeat("é", 40) + "ing"} {
		f.Add(s)
	}
	db, err := Open(ctx, filepath.Join(f.TempDir(), "fuzz.db"), Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	createTermTables(f, db)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip("the store takes only UTF-8")
		}
		if _, err := db.rw.Exec(`INSERT INTO temp.ref (rowid, title, body) VALUES (1, '', ?)`, textindex.Normalize(s)); err != nil {
			t.Fatal(err)
		}
		defer db.rw.Exec(`DELETE FROM temp.ref WHERE rowid = 1`)
		if _, err := db.rw.Exec(`INSERT INTO chunks_fts (rowid, title, body) VALUES (1, '', ?)`, textindex.IndexText(s)); err != nil {
			t.Fatal(err)
		}
		defer db.rw.Exec(`DELETE FROM chunks_fts WHERE rowid = 1`)
		theirs, index, ours := vocabTerms(t, db, "temp.refterms"), vocabTerms(t, db, "temp.terms"), textindex.Terms(s)
		if !slices.Equal(ours, theirs) || !slices.Equal(ours, index) {
			t.Fatalf("%q: FTS5 porter terms %q\n\ttextindex terms %q\n\tindex terms %q", s, theirs, ours, index)
		}
	})
}
