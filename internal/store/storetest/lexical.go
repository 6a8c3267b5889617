package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/recall-mcp/recall"
)

func testLexicalBasics(t *testing.T, s recall.Store) {
	write(t, s,
		doc("tea.md", recall.KindArchive, "We talked about peppermint tea and green tea."),
		doc("coffee.md", recall.KindArchive, "Espresso in the morning, filter coffee after lunch."),
	)
	if got := search(t, s, "peppermint", recall.Filter{}); !slices.Equal(got, []string{"tea.md"}) {
		t.Errorf("peppermint: %v; want [tea.md]", got)
	}
	if got := search(t, s, "coffee tea", recall.Filter{}); !sameSet(got, []string{"tea.md", "coffee.md"}) {
		t.Errorf("coffee tea: %v; want both (terms are alternatives)", got)
	}
	if got := search(t, s, "When did we discuss espresso?", recall.Filter{}); !slices.Equal(got, []string{"coffee.md"}) {
		t.Errorf("question: %v; want [coffee.md] (stopwords must not match everything)", got)
	}
	if got := search(t, s, "chamomile", recall.Filter{}); len(got) != 0 {
		t.Errorf("chamomile: %v; want nothing", got)
	}
	cands, err := s.Lexical(ctx, recall.LexicalQuery{Text: "tea", Limit: 1})
	if err != nil || len(cands) != 1 || cands[0].Score <= 0 {
		t.Errorf("Lexical(limit 1) = %+v, %v; want one candidate with a positive score", cands, err)
	}
}

func testLexicalFilters(t *testing.T, s recall.Store) {
	word := "marmalade"
	mk := func(id string, kind recall.Kind, edit func(*recall.Source)) recall.Document {
		d := doc(id, kind, word+" in "+id)
		if edit != nil {
			edit(&d.Source)
		}
		return d
	}
	all := []recall.Document{
		mk("notes/2024/a.md", recall.KindArchive, func(s *recall.Source) { s.Date = "2024-12-31" }),
		mk("notes/2025/b.md", recall.KindArchive, func(s *recall.Source) { s.Date = "2025-07" }),
		mk("notes/undated.md", recall.KindArchive, nil),
		mk("100%_done/c.md", recall.KindArchive, func(s *recall.Source) { s.Date = "2025" }),
		mk("100xxdone/d.md", recall.KindArchive, nil),
		mk("alice-jam", recall.KindMemory, func(s *recall.Source) { s.Owner, s.Category = "alice", "food" }),
		mk("bob-jam", recall.KindMemory, func(s *recall.Source) { s.Owner, s.Category = "bob", "food" }),
		mk("shared-jam", recall.KindMemory, func(s *recall.Source) { s.Category = "misc" }),
		mk("diary/2025-07-14", recall.KindDiary, func(s *recall.Source) { s.Owner, s.Date = "bob", "2025-07-14" }),
	}
	write(t, s, all...)
	cases := []struct {
		name string
		f    recall.Filter
		want []string
	}{
		{"no filter", recall.Filter{}, []string{"notes/2024/a.md", "notes/2025/b.md", "notes/undated.md", "100%_done/c.md",
			"100xxdone/d.md", "alice-jam", "bob-jam", "shared-jam", "diary/2025-07-14"}},
		{"kind", recall.Filter{Kinds: []recall.Kind{recall.KindMemory}}, []string{"alice-jam", "bob-jam", "shared-jam"}},
		{"kinds", recall.Filter{Kinds: []recall.Kind{recall.KindMemory, recall.KindDiary}},
			[]string{"alice-jam", "bob-jam", "shared-jam", "diary/2025-07-14"}},
		{"prefix", recall.Filter{SourcePrefix: "notes/"}, []string{"notes/2024/a.md", "notes/2025/b.md", "notes/undated.md"}},
		{"prefix with % and _", recall.Filter{SourcePrefix: "100%_"}, []string{"100%_done/c.md"}},
		{"prefix is not a pattern", recall.Filter{SourcePrefix: "_"}, nil},
		{"since year", recall.Filter{Since: "2025"}, []string{"notes/2025/b.md", "100%_done/c.md", "diary/2025-07-14"}},
		{"since day inside a month", recall.Filter{Since: "2025-07-20"}, []string{"notes/2025/b.md", "100%_done/c.md"}},
		{"until month", recall.Filter{Until: "2024-12"}, []string{"notes/2024/a.md"}},
		{"until day inside a year", recall.Filter{Until: "2025-01-01"}, []string{"notes/2024/a.md", "100%_done/c.md"}},
		{"range", recall.Filter{Since: "2025-07-14", Until: "2025-07-14"}, []string{"notes/2025/b.md", "100%_done/c.md", "diary/2025-07-14"}},
		{"category", recall.Filter{Category: "food"}, []string{"alice-jam", "bob-jam"}},
		{"owner alice", recall.Filter{OwnerScoped: true, Owner: "alice"}, []string{"notes/2024/a.md", "notes/2025/b.md",
			"notes/undated.md", "100%_done/c.md", "100xxdone/d.md", "alice-jam"}},
		{"owner bob", recall.Filter{OwnerScoped: true, Owner: "bob"}, []string{"notes/2024/a.md", "notes/2025/b.md",
			"notes/undated.md", "100%_done/c.md", "100xxdone/d.md", "bob-jam", "diary/2025-07-14"}},
		{"unowned only", recall.Filter{OwnerScoped: true}, []string{"notes/2024/a.md", "notes/2025/b.md",
			"notes/undated.md", "100%_done/c.md", "100xxdone/d.md", "shared-jam"}},
		{"owner and kind", recall.Filter{OwnerScoped: true, Owner: "alice", Kinds: []recall.Kind{recall.KindMemory}}, []string{"alice-jam"}},
	}
	for _, c := range cases {
		// The table agrees with the domain's reference semantics.
		var ref []string
		for _, d := range all {
			src := d.Source
			if c.f.Allows(&recall.SourceMeta{ID: src.ID, Kind: src.Kind, Title: src.Title, Date: src.Date, Owner: src.Owner, Category: src.Category}) {
				ref = append(ref, src.ID)
			}
		}
		if !sameSet(ref, c.want) {
			t.Fatalf("%s: test table wants %v; recall.Filter.Allows passes %v", c.name, c.want, ref)
		}
		if got := search(t, s, word, c.f); !sameSet(got, c.want) || len(got) != len(c.want) {
			t.Errorf("%s: %v; want %v", c.name, got, c.want)
		}
		// Listings apply the same filters.
		page, _, err := s.ListSources(ctx, recall.ListOptions{Filter: c.f, Limit: 100})
		if err != nil {
			t.Fatalf("%s: ListSources: %v", c.name, err)
		}
		var ids []string
		for _, src := range page {
			ids = append(ids, src.ID)
		}
		if !sameSet(ids, c.want) {
			t.Errorf("%s: ListSources %v; want %v", c.name, ids, c.want)
		}
	}

	// Filters apply before the limit: with many better-ranked chunks of
	// other owners, the one visible chunk still comes back.
	var many []recall.Document
	for i := range 30 {
		d := doc(fmt.Sprintf("carol-%02d", i), recall.KindMemory, "quince quince quince")
		d.Source.Owner = "carol"
		many = append(many, d)
	}
	dave := doc("dave-1", recall.KindMemory, "a long passage that mentions quince only once among many other words")
	dave.Source.Owner = "dave"
	write(t, s, append(many, dave)...)
	cands, err := s.Lexical(ctx, recall.LexicalQuery{Text: "quince", Limit: 5,
		Filter: recall.Filter{OwnerScoped: true, Owner: "dave"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := sourcesOf(t, s, cands); !slices.Equal(got, []string{"dave-1"}) {
		t.Errorf("owner-scoped quince: %v; want [dave-1]", got)
	}

	for _, f := range []recall.Filter{{Since: "yesterday"}, {Until: "2025-02-30"}, {Kinds: []recall.Kind{"note"}}, {Since: "2025", Until: "2024-12"}} {
		_, err := s.Lexical(ctx, recall.LexicalQuery{Text: word, Filter: f})
		wantCode(t, err, recall.EINVALID, fmt.Sprintf("filter %+v", f))
	}
}

var hostile = []string{
	`"`, `""`, `"""`, `"tea`, `tea"`, `"mint" "`, `NEAR(`, `NEAR(tea mint)`, `NEAR(tea, 2)`, `*`, `tea*`, `*tea`,
	`^`, `^tea`, `') OR 1=1 --`, `'; DROP TABLE sources; --`, `-`, `-tea`, `:`, `body:tea`, `title:tea`,
	`{title body}: tea`, `(`, `)`, `(tea`, `tea)`, `()`, `AND`, `OR`, `NOT`, `tea AND`, `OR tea`, `NOT tea`,
	`tea NOT mint`, `+`, `tea + mint`, `\`, `\"`, `%`, `_`, `the of and`, `!!! ... ???`, ``, ` `, "\x00", "\t\n",
	"\xff\xfe", `chunks_fts`, `rank:tea`, `rowid:1`, `ＮＥＡＲ（`, "“", "tea\u201D",
}

func testLexicalHostile(t *testing.T, s recall.Store) {
	write(t, s, doc("t.md", recall.KindArchive, "mint tea with honey; near the body of the title"))
	for _, q := range hostile {
		if _, err := s.Lexical(ctx, recall.LexicalQuery{Text: q, Limit: 5}); err != nil {
			t.Errorf("Lexical(%q) = %v; hostile input must not fail", q, err)
		}
	}
	for _, q := range []string{"", " ", "!!! ... ???", `"`, `()`} {
		if got := search(t, s, q, recall.Filter{}); len(got) != 0 {
			t.Errorf("Lexical(%q) = %v; a query without words has no candidates", q, got)
		}
	}
	if got := search(t, s, "the of and", recall.Filter{}); len(got) != 1 {
		t.Errorf("a query of only stopwords: %v; want the chunk holding them", got)
	}
}

func testLexicalLiteralMeaning(t *testing.T, s recall.Store) {
	colon := doc("colon.md", recall.KindArchive, "the title: pears and more")
	colon.Source.Title = "Fruit"
	write(t, s,
		doc("both.md", recall.KindArchive, "apples and pears"),
		doc("apples.md", recall.KindArchive, "apples only"),
		doc("kw.md", recall.KindArchive, "NEAR the river, NOT far"),
		colon,
	)
	cases := []struct {
		q    string
		want []string
	}{
		// Operators are words: NOT excludes nothing, - negates nothing.
		{"apples NOT pears", []string{"both.md", "apples.md", "colon.md"}},
		{"-pears apples", []string{"both.md", "apples.md", "colon.md"}},
		{"pears*", []string{"both.md", "colon.md"}},
		{"pea*", nil}, // no prefix search outside CJK ("pear*" finds the stem of "pears")
		// A column filter would find pears in bodies; the literal words
		// "title pears" are only in colon.md.
		{"title:pears", []string{"colon.md"}},
		{"body:pears", nil},
		{"fruit", []string{"colon.md"}},
		// NEAR(...) is the word near next to apples, or pears.
		{"NEAR(apples pears)", []string{"both.md", "colon.md"}},
		{"river NEAR", []string{"kw.md"}},
		{`"apples and pears"`, []string{"both.md"}},
		{`"apples pears"`, nil}, // a quoted phrase keeps its stopwords
	}
	for _, c := range cases {
		if got := search(t, s, c.q, recall.Filter{}); !sameSet(got, c.want) {
			t.Errorf("Lexical(%q) = %v; want %v", c.q, got, c.want)
		}
	}
}

func testLexicalPhrase(t *testing.T, s recall.Store) {
	write(t, s,
		doc("a.md", recall.KindArchive, "a cup of mint tea every evening"),
		doc("b.md", recall.KindArchive, "tea with fresh mint leaves"),
		doc("c.md", recall.KindArchive, "mint tea recipe: boil water, add mint"),
	)
	if got := search(t, s, `"mint tea"`, recall.Filter{}); !sameSet(got, []string{"a.md", "c.md"}) {
		t.Errorf(`"mint tea": %v; want a.md and c.md (adjacent words only)`, got)
	}
	if got := search(t, s, `mint tea`, recall.Filter{}); !sameSet(got, []string{"a.md", "b.md", "c.md"}) {
		t.Errorf(`mint tea: %v; want all three`, got)
	}
	// A phrase is required; other words rank but do not exclude.
	got := search(t, s, `"mint tea" recipe`, recall.Filter{})
	if !slices.Equal(got, []string{"c.md", "a.md"}) {
		t.Errorf(`"mint tea" recipe: %v; want [c.md a.md]`, got)
	}
	// Every phrase is required.
	if got := search(t, s, `"mint tea" "every evening"`, recall.Filter{}); !slices.Equal(got, []string{"a.md"}) {
		t.Errorf(`"mint tea" "every evening": %v; want [a.md]`, got)
	}
	if got := search(t, s, `"mint tea" "fresh mint"`, recall.Filter{}); len(got) != 0 {
		t.Errorf(`"mint tea" "fresh mint": %v; want nothing (no chunk has both)`, got)
	}
	if got := search(t, s, `"tea mint"`, recall.Filter{}); len(got) != 0 {
		t.Errorf(`"tea mint": %v; want nothing (order matters)`, got)
	}
}

func testLexicalCJK(t *testing.T, s recall.Store) {
	write(t, s,
		doc("zh-tea.md", recall.KindArchive, "我喜欢喝薄荷茶，也喜欢咖啡。"),
		doc("zh-weather.md", recall.KindArchive, "今天天气很好，我们去公园散步吧"),
		doc("ja-tea.md", recall.KindArchive, "私はミントティーが好きです。毎朝飲みます。"),
		doc("mixed.md", recall.KindArchive, "新しいiPhone很好用, battery lasts all day"),
		doc("ko.md", recall.KindArchive, "저는 박하차를 좋아합니다"),
	)
	cases := []struct {
		q    string
		want []string
	}{
		{"薄荷", []string{"zh-tea.md"}},
		{"薄荷茶", []string{"zh-tea.md"}},
		{"喜欢喝薄荷茶", []string{"zh-tea.md"}},
		{"茶", []string{"zh-tea.md"}}, // one character: a prefix of bigrams
		{"荷", []string{"zh-tea.md"}}, // one character inside a run
		{"啡", []string{"zh-tea.md"}}, // the last character of a run
		{"天气", []string{"zh-weather.md"}},
		{"公园", []string{"zh-weather.md"}},
		{"荷薄", nil}, // characters in the wrong order
		{"薄茶", nil}, // not adjacent
		{"ミント", []string{"ja-tea.md"}},
		{"ティー", []string{"ja-tea.md"}},
		{"好き", []string{"ja-tea.md"}},
		{"飲", []string{"ja-tea.md"}},
		{"很好", []string{"zh-weather.md", "mixed.md"}},
		{"iphone", []string{"mixed.md"}},
		{"iPhone很好用", []string{"mixed.md"}},
		{"battery 薄荷", []string{"mixed.md", "zh-tea.md"}},
		{"박하차를", []string{"ko.md"}},
		{`"薄荷茶"`, []string{"zh-tea.md"}},
		{"ﾐﾝﾄ", []string{"ja-tea.md"}}, // half-width katakana
	}
	for _, c := range cases {
		if got := search(t, s, c.q, recall.Filter{}); !sameSet(got, c.want) {
			t.Errorf("Lexical(%q) = %v; want %v", c.q, got, c.want)
		}
	}
}

func testLexicalCaseFolding(t *testing.T, s recall.Store) {
	write(t, s,
		doc("de.md", recall.KindArchive, "ÄRGER über die Straße in MÜNCHEN"),
		doc("el.md", recall.KindArchive, "Η ΣΟΦΙΑ του Σωκράτη, σοφος"),
		doc("fr.md", recall.KindArchive, "un café crème à Paris"),
		doc("wide.md", recall.KindArchive, "ＦＵＬＬＷＩＤＴＨ text"),
	)
	cases := []struct {
		q    string
		want []string
	}{
		{"ärger", []string{"de.md"}},
		{"ÄRGER", []string{"de.md"}},
		{"münchen", []string{"de.md"}},
		{"STRASSE", []string{"de.md"}},
		{"straße", []string{"de.md"}},
		{"σοφια", []string{"el.md"}},
		{"ΣΟΦΟΣ", []string{"el.md"}},
		{"σωκράτη", []string{"el.md"}},
		{"cafe", []string{"fr.md"}},
		{"CAFÉ", []string{"fr.md"}},
		{"fullwidth", []string{"wide.md"}},
		{"ｆｕｌｌｗｉｄｔｈ", []string{"wide.md"}},
	}
	for _, c := range cases {
		if got := search(t, s, c.q, recall.Filter{}); !sameSet(got, c.want) {
			t.Errorf("Lexical(%q) = %v; want %v", c.q, got, c.want)
		}
	}
}

func testLexicalRanking(t *testing.T, s recall.Store) {
	titled := func(d recall.Document, title string) recall.Document {
		d.Source.Title = title
		return d
	}
	write(t, s,
		titled(doc("garden-plan", recall.KindMemory, "plant the beds in april, water twice a week, order seeds early"), "tomatoes"),
		titled(doc("long.md", recall.KindArchive, "we talked about many things that day, the weather, work, music, travel plans, and tomatoes briefly"), "Catch-up call with Sam"),
		titled(doc("two.md", recall.KindArchive, "basil and tomatoes grow well together in the sun"), "Gardening notes"),
		titled(doc("other1.md", recall.KindArchive, "a walk by the lake with the dog"), "Weekend walk"),
		titled(doc("other2.md", recall.KindArchive, "planning the budget for next year"), "Budget meeting"),
		titled(doc("other3.md", recall.KindArchive, "notes on the novel I am reading"), "Book club"),
	)
	if got := search(t, s, "tomatoes", recall.Filter{}); len(got) != 3 || got[0] != "garden-plan" {
		t.Errorf("tomatoes: %v; want the source titled tomatoes first", got)
	}
	if got := search(t, s, "basil tomatoes", recall.Filter{}); len(got) != 3 || got[0] != "two.md" {
		t.Errorf("basil tomatoes: %v; want two.md (both words) first", got)
	}
}

// testLexicalDistinctTexts: a passage held by many sources is one
// candidate, its best-ranked chunk (ties to the newer chunk), so the limit
// counts distinct texts and its copies do not crowd out the rest.
func testLexicalDistinctTexts(t *testing.T, s recall.Store) {
	const copies = 30
	var docs []recall.Document
	for i := range copies {
		d := doc(fmt.Sprintf("dup/%02d.md", i), recall.KindArchive, "lanterns along the river at dusk")
		if i == 7 {
			d.Source.Title = "lanterns"
		}
		docs = append(docs, d)
	}
	for i := range 3 {
		docs = append(docs, doc(fmt.Sprintf("own/%d.md", i), recall.KindArchive, fmt.Sprintf("paper lanterns for the party, list %d of many lists", i)))
	}
	write(t, s, docs...)
	cands, err := s.Lexical(ctx, recall.LexicalQuery{Text: "lanterns", Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	got := sourcesOf(t, s, cands)
	if want := []string{"dup/07.md", "own/0.md", "own/1.md", "own/2.md"}; len(got) != 4 || got[0] != want[0] || !sameSet(got, want) {
		t.Errorf("lanterns, limit 4: %v; want the shared passage once, from the source titled lanterns, then %v", got, want[1:])
	}
	// Of chunks that rank alike, the newer stands for the text.
	cands, err = s.Lexical(ctx, recall.LexicalQuery{Text: "lanterns", Limit: 4, Filter: recall.Filter{SourcePrefix: "dup/1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := sourcesOf(t, s, cands); !slices.Equal(got, []string{"dup/19.md"}) {
		t.Errorf("lanterns in dup/1: %v; want [dup/19.md], the newest of ten equal copies", got)
	}
}

// testLexicalCommonWords fills a store with more matching chunks than any
// reasonable query budget, so that a backend planning queries by document
// frequency walks its common-word paths; the best chunk must still win.
func testLexicalCommonWords(t *testing.T, s recall.Store) {
	var docs []recall.Document
	for i := range 300 {
		text := fmt.Sprintf("conversation %d: we talked about the weather and the plans for the weekend", i)
		if i%3 == 0 {
			text += ", and the garden"
		}
		docs = append(docs, doc(fmt.Sprintf("c%03d.md", i), recall.KindArchive, text))
	}
	docs = append(docs, doc("target.md", recall.KindArchive, "we talked about the weather, the garden, and a zeppelin over the weekend plans"))
	write(t, s, docs...)
	// How many chunks that hold only common words come back is the
	// backend's trade-off; the chunk with the rare word must come first.
	for _, q := range []string{"zeppelin", "weather zeppelin", "talked weather weekend plans zeppelin garden"} {
		if got := search(t, s, q, recall.Filter{}); len(got) == 0 || got[0] != "target.md" {
			t.Errorf("Lexical(%q) = %v; want target.md first", q, got[:min(3, len(got))])
		}
	}
	// Words that every chunk holds still fill the limit.
	for _, q := range []string{"weather garden", "talked weather weekend plans", "weather"} {
		if got := search(t, s, q, recall.Filter{}); len(got) != 20 {
			t.Errorf("Lexical(%q): %d results; want 20", q, len(got))
		}
	}
}

// testLexicalDateWords: every chunk of a dated source is found by its date
// as people write it, not only a chunk whose text holds the date.
func testLexicalDateWords(t *testing.T, s recall.Store) {
	dated := doc("s17.md", recall.KindArchive, "Date: 13 October, 2023. We talked about pottery.", "Later I showed a painting of a sunset.")
	dated.Source.Date = "2023-10-13"
	other := doc("s16.md", recall.KindArchive, "Date: 2 October, 2023.", "I showed a painting of a lake.")
	other.Source.Date = "2023-10-02"
	write(t, s, dated, other)
	cands, err := s.Lexical(ctx, recall.LexicalQuery{Text: "painting October 13, 2023", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) == 0 {
		t.Fatal("no results")
	}
	chunks, err := s.ChunksByID(ctx, []int64{cands[0].ChunkID})
	if err != nil || len(chunks) != 1 {
		t.Fatalf("ChunksByID: %v %v", chunks, err)
	}
	if c := chunks[0]; c.Source.ID != "s17.md" || c.Index != 1 {
		t.Errorf("best match for the painting of October 13, 2023 is %s#%d; want s17.md#1", c.Source.ID, c.Index)
	}
}

// testUnstorableFilters: filter values no source can hold (a NUL, invalid
// UTF-8), as a request may send them, match nothing, not fail: an owner so
// named owns nothing, and archive chunks, which have no owner, still pass.
func testUnstorableFilters(t *testing.T, s recall.Store) {
	m := doc("memory:ann:tea", recall.KindMemory, "mint tea")
	m.Source.Owner, m.Source.Category = "ann", "drinks"
	write(t, s, doc("a.md", recall.KindArchive, "mint tea"), m)
	for _, v := range []string{"\x00", "a\x00", "\xff", "dr\xffinks"} {
		for _, f := range []recall.Filter{{SourcePrefix: v}, {Category: v}} {
			if got := search(t, s, "tea", f); len(got) != 0 {
				t.Errorf("Lexical with %+v: %v; want nothing", f, got)
			}
			if got, _, err := s.ListSources(ctx, recall.ListOptions{Filter: f}); len(got) != 0 || err != nil {
				t.Errorf("ListSources with %+v: %d sources, %v; want none", f, len(got), err)
			}
		}
		f := recall.Filter{OwnerScoped: true, Owner: v}
		if got := search(t, s, "tea", f); !sameSet(got, []string{"a.md"}) {
			t.Errorf("Lexical with %+v: %v; want the archive chunk", f, got)
		}
	}
}
