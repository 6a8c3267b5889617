package chunk

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
)

// prose returns exactly n characters of words separated by spaces, ending
// in a letter, different for each seed.
func prose(n, seed int) string {
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega")
	var b strings.Builder
	for i := seed; b.Len() < n; i++ {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[i%len(words)])
	}
	s := b.String()[:n]
	if strings.HasSuffix(s, " ") {
		s = s[:n-1] + "x"
	}
	return s
}

const family = "👨\u200d👩\u200d👧\u200d👦" // one grapheme cluster of 7 characters

func TestSplitCuts(t *testing.T) {
	p1 := "The first paragraph talks about one thing. It has two sentences, this one too."
	p2 := "Short one. The second paragraph goes on about another thing. It ends."
	url := "https://example.com/" + strings.Repeat("abcdefghi/", 12) + "end"
	blob := strings.Repeat("abcdefghij", 25)
	han := strings.Repeat("天地玄黄宇宙洪荒日月", 25)
	jp := strings.Repeat("今日は良い天気です。", 12)
	hangul := strings.Repeat("한국어문장", 30)
	recipe := "Rinse the rice well. Soak it for twenty minutes. Boil the water with salt. Add the rice and stir it once. Cover and simmer on low heat. Let it rest off the heat."
	a, b, c := prose(40, 0), prose(40, 1), prose(40, 2)
	tests := []struct {
		name string
		msgs []string
		want []string
	}{
		{"packs whole messages", []string{a, b, c}, []string{a + "\n\n" + b, c}},
		{"message that fits starts a new chunk", []string{prose(30, 0), prose(90, 1)},
			[]string{prose(30, 0), prose(90, 1)}},
		{"surrounding whitespace trimmed", []string{"  hello  ", "\n", "world\n"}, []string{"hello  \n\n\n\n\nworld"}},
		{"blank line before a later sentence end", []string{p1 + "\n\n" + p2}, []string{p1, p2}},
		{"sentence end", []string{"Alpha beta gamma delta epsilon. Zeta eta theta iota kappa lambda mu! Nu xi omicron pi rho sigma tau upsilon phi chi psi omega and so on to the end"},
			[]string{"Alpha beta gamma delta epsilon. Zeta eta theta iota kappa lambda mu!", "Nu xi omicron pi rho sigma tau upsilon phi chi psi omega and so on to the end"}},
		{"sentence end before closing quote", []string{`The guard looked at us and said "you may not pass here today." Then he turned away and walked back to the gate without another word`},
			[]string{`The guard looked at us and said "you may not pass here today."`, "Then he turned away and walked back to the gate without another word"}},
		{"list number is not a sentence end", []string{"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi 12. omicron pi rho sigma tau upsilon phi chi psi omega"},
			[]string{"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi 12. omicron pi rho sigma", "tau upsilon phi chi psi omega"}},
		{"ideographic full stop", []string{jp}, []string{jp[:len(jp)/12*10], jp[len(jp)/12*10:]}},
		{"fullwidth marks", []string{strings.Repeat("你好吗？我很好！谢谢你", 10)},
			[]string{strings.Repeat("你好吗？我很好！谢谢你", 8) + "你好吗？我很好！", "谢谢你" + "你好吗？我很好！谢谢你"}},
		{"ellipsis without space", []string{prose(60, 0) + "…" + prose(60, 1)}, []string{prose(60, 0) + "…", prose(60, 1)}},
		{"three dots without space", []string{prose(60, 0) + "..." + prose(60, 1)}, []string{prose(60, 0) + "...", prose(60, 1)}},
		{"line break before a later space", []string{"first item\nsecond item\nthird item\nfourth item\nfifth item\nsixth item\nseventh item\neighth item\nninth item\ntenth item"},
			[]string{"first item\nsecond item\nthird item\nfourth item\nfifth item\nsixth item\nseventh item\neighth item", "ninth item\ntenth item"}},
		{"space", []string{prose(150, 0)}, []string{
			"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau",
			"upsilon phi chi psi omega alpha beta gamma delta eps"}},
		{"url after a slash", []string{url}, []string{url[:100], url[100:]}},
		{"no boundary at all", []string{blob}, []string{blob[:100], blob[100:200], blob[200:]}},
		{"emoji sequences kept whole", []string{strings.Repeat(family, 30)},
			[]string{strings.Repeat(family, 14), strings.Repeat(family, 14), strings.Repeat(family, 2)}},
		{"combining accents kept on their letter", []string{strings.Repeat("e\u0301", 80)},
			[]string{strings.Repeat("e\u0301", 50), strings.Repeat("e\u0301", 30)}},
		{"flags kept whole", []string{strings.Repeat("🇯🇵", 60)}, []string{strings.Repeat("🇯🇵", 50), strings.Repeat("🇯🇵", 10)}},
		{"ideographs", []string{han}, []string{string([]rune(han)[:100]), string([]rune(han)[100:200]), string([]rune(han)[200:])}},
		{"speaker label before ideographs", []string{"**User:** " + han}, []string{
			"**User:** " + string([]rune(han)[:90]), string([]rune(han)[90:190]), string([]rune(han)[190:])}},
		{"hangul without spaces", []string{hangul}, []string{string([]rune(hangul)[:100]), string([]rune(hangul)[100:])}},
		{"short message shares its chunk with the start of one longer than a chunk",
			[]string{"How do I cook rice?", recipe},
			[]string{"How do I cook rice?\n\nRinse the rice well. Soak it for twenty minutes. Boil the water with salt.",
				"Add the rice and stir it once. Cover and simmer on low heat. Let it rest off the heat."}},
		{"too little room left for the longer message: the chunk ends between messages",
			[]string{prose(80, 0), recipe},
			[]string{prose(80, 0), "Rinse the rice well. Soak it for twenty minutes. Boil the water with salt.",
				"Add the rice and stir it once. Cover and simmer on low heat. Let it rest off the heat."}},
		{"no sentence end in the room: the chunk ends between messages",
			[]string{"How do I cook rice?", prose(150, 0)},
			[]string{"How do I cook rice?", "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau",
				"upsilon phi chi psi omega alpha beta gamma delta eps"}},
		{"no messages", nil, nil},
		{"blank messages", []string{"", " \n\t", "\u3000"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := checkSplit(t, tt.msgs, Options{Size: 100, Overlap: NoOverlap})
			if got := texts(chunks); !slices.Equal(got, tt.want) {
				t.Errorf("chunks:\n%s\nwant:\n%s", show(got), show(tt.want))
			}
		})
	}
}

func TestSplitMidWord(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want []bool
	}{
		{"space", prose(150, 0), []bool{false, false}},
		{"url after a slash", "https://example.com/" + strings.Repeat("abcdefghi/", 12), []bool{false, false}},
		{"letters", strings.Repeat("abcdefghij", 15), []bool{false, true}},
		{"accented letters", strings.Repeat("e\u0301", 80), []bool{false, true}},
		{"ideographs", strings.Repeat("天地玄黄宇宙洪荒日月", 15), []bool{false, false}},
		{"kana", strings.Repeat("ひらがなカタカナ", 20), []bool{false, false}},
		{"hangul", strings.Repeat("한국어문장", 30), []bool{false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := checkSplit(t, []string{tt.msg}, Options{Size: 100, Overlap: NoOverlap})
			var got []bool
			for _, c := range chunks {
				got = append(got, c.MidWord)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d chunks, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("chunk %d MidWord = %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestSplitOverlap(t *testing.T) {
	sentences := "One two three four five six. Seven eight nine ten eleven twelve. Thirteen fourteen fifteen. Sixteen seventeen eighteen nineteen twenty. Twenty-one twenty-two."
	words := prose(180, 0)
	tests := []struct {
		name    string
		msgs    []string
		overlap int
		want    []string
	}{
		{"starts at a sentence", []string{sentences}, 40, []string{
			"One two three four five six. Seven eight nine ten eleven twelve. Thirteen fourteen fifteen.",
			"Thirteen fourteen fifteen. Sixteen seventeen eighteen nineteen twenty. Twenty-one twenty-two.",
		}},
		{"starts at a word when no sentence starts in reach", []string{words}, 20, []string{
			"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau",
			"pi rho sigma tau upsilon phi chi psi omega alpha beta gamma delta epsilon zeta eta theta iota kappa",
		}},
		{"none when no word starts in reach", []string{strings.Repeat("abcdefghij", 15)}, 30, []string{
			strings.Repeat("abcdefghij", 10), strings.Repeat("abcdefghij", 5),
		}},
		{"none when it would cut a message that fits", []string{prose(60, 0), prose(97, 1)}, 20, []string{
			prose(60, 0), prose(97, 1),
		}},
		{"carries the end of the previous message", []string{prose(50, 0) + ". Then a short one.", prose(60, 1)}, 30, []string{
			prose(50, 0) + ". Then a short one.", "Then a short one.\n\n" + prose(60, 1),
		}},
		{"none when the gap between chunks fills it", []string{prose(90, 0), strings.Repeat("\n", 40), prose(90, 1)}, 30, []string{
			prose(90, 0), prose(90, 1),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := checkSplit(t, tt.msgs, Options{Size: 100, Overlap: tt.overlap})
			if got := texts(chunks); !slices.Equal(got, tt.want) {
				t.Errorf("chunks:\n%s\nwant:\n%s", show(got), show(tt.want))
			}
		})
	}
}

// TestSplitOverlapKeepsCutClean checks that overlap gives way when the room
// it takes would move a cut from a sentence end to the middle of a sentence.
func TestSplitOverlapKeepsCutClean(t *testing.T) {
	first := prose(85, 0) + "."
	second := prose(97, 3) + "." // fits alone, not after an overlap
	msg := first + " " + second + " " + prose(30, 5)
	chunks := checkSplit(t, []string{msg}, Options{Size: 100, Overlap: 50})
	got := texts(chunks)
	if len(got) < 2 || got[1] != second {
		t.Errorf("chunks:\n%s\nwant the second to be %q", show(got), second)
	}
}

// A message that fits in a chunk stays whole when a long message after it
// starts in the room it leaves and the overlap is large (the audit's
// case: with an overlap of more than a quarter of the chunk, the cut in
// the long message had let an overlap start that cut the short one).
func TestSplitLongMessageAfterOneThatFits(t *testing.T) {
	long := "**Assistant:** " + strings.Repeat("Long answer sentence here. ", 37)
	mid := "**User:** " + strings.Repeat("A medium follow up, fits in a chunk. ", 7)
	msgs := []string{"**User:** Short question?", long, mid, long}
	for _, opt := range []Options{{Size: 400, Overlap: 150}, {Size: 400, Overlap: 200}, {Size: 400}, {Size: 400, Overlap: NoOverlap}} {
		checkSplit(t, msgs, opt) // fails on a message that fits in a chunk but was cut
	}
}

// Random conversations of short, medium and over-long messages, with
// overlaps up to half the chunk: every promise of checkSplit holds.
func TestSplitRandomLargeOverlaps(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for range 2000 {
		size := 200 + r.IntN(400)
		var msgs []string
		for range 2 + r.IntN(8) {
			var n int
			switch r.IntN(3) {
			case 0:
				n = 10 + r.IntN(size/4)
			case 1:
				n = size/4 + r.IntN(size*3/4)
			default:
				n = size + r.IntN(2*size)
			}
			var b strings.Builder
			for b.Len() < n {
				b.WriteString(prose(20+r.IntN(60), r.IntN(24)) + ". ")
			}
			msgs = append(msgs, "**User:** "+strings.TrimSpace(b.String()))
		}
		checkSplit(t, msgs, Options{Size: size, Overlap: size / (2 + r.IntN(3))})
		if t.Failed() {
			return
		}
	}
}

func TestSplitSizeIncludesOverlap(t *testing.T) {
	var msgs []string
	for i := range 40 {
		msgs = append(msgs, prose(20+i*37%260, i)+". "+prose(10+i*13%90, i+1)+".")
	}
	for _, opt := range []Options{{}, {Size: 100}, {Size: 150, Overlap: 75}, {Size: 300, Overlap: 100}, {Size: 120, Overlap: NoOverlap}} {
		chunks := checkSplit(t, msgs, opt)
		size := opt.withDefaults().Size
		for _, c := range chunks {
			if n := utf8.RuneCountInString(c.Text); n > size {
				t.Errorf("%+v: chunk %d has %d characters", opt, c.Index, n)
			}
		}
	}
}

func TestSplitDefaults(t *testing.T) {
	var sentences []string
	for i := range 60 {
		sentences = append(sentences, prose(90, i)+".")
	}
	msgs := []string{strings.Join(sentences, " ")} // 5519 characters
	chunks := checkSplit(t, msgs, Options{})
	spans := SplitSpans(msgs, Options{})
	if len(chunks) != 3 {
		t.Fatalf("got %d chunks, want 3", len(chunks))
	}
	for _, c := range chunks {
		if n := utf8.RuneCountInString(c.Text); n < DefaultSize/2 || n > DefaultSize {
			t.Errorf("chunk %d has %d characters", c.Index, n)
		}
	}
	// Two sentences and a space (184 characters) fit in the default overlap
	// of 200, three do not. The last chunk repeats only one sentence: with
	// two, the rest of the message would not fit and would need another cut.
	for i, want := range []int{1: 183, 2: 91} {
		if i == 0 {
			continue
		}
		repeated := Join(msgs)[spans[i].Start:spans[i-1].End]
		if n := utf8.RuneCountInString(repeated); n != want || !slices.Contains(sentences, repeated[:91]) {
			t.Errorf("chunk %d repeats %d characters: %q", i, n, repeated)
		}
	}
}

func TestSplitInvalidUTF8(t *testing.T) {
	chunks := checkSplit(t, []string{"caf\xe9 au lait", "ok"}, Options{})
	if len(chunks) != 1 || chunks[0].Text != "caf\uFFFD au lait\n\nok" {
		t.Errorf("got %q", texts(chunks))
	}
}

func TestSplitPanicsOnInvalidOptions(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Split accepted a chunk size of 10")
		}
	}()
	Split([]string{"hello"}, Options{Size: 10})
}

func TestValidate(t *testing.T) {
	tests := []struct {
		opt  Options
		fail string // part of the message, "" for valid
	}{
		{Options{}, ""},
		{Options{Size: 100}, ""},
		{Options{Size: 4000, Overlap: 2000}, ""},
		{Options{Overlap: NoOverlap}, ""},
		{Options{Size: 99}, "at least 100"},
		{Options{Size: -5}, "at least 100"},
		{Options{Overlap: -2}, "negative"},
		{Options{Size: 500, Overlap: 251}, "at most half"},
		{Options{Overlap: 2000}, "at most half"},
	}
	for _, tt := range tests {
		err := tt.opt.Validate()
		switch {
		case tt.fail == "" && err != nil:
			t.Errorf("%+v: %v", tt.opt, err)
		case tt.fail != "" && err == nil:
			t.Errorf("%+v: valid, want an error", tt.opt)
		case tt.fail != "":
			var e *recall.Error
			if !errors.As(err, &e) || e.Code != recall.EINVALID || !strings.Contains(e.Message, tt.fail) {
				t.Errorf("%+v: %v, want EINVALID mentioning %q", tt.opt, err, tt.fail)
			}
		}
	}
}

func texts(chunks []recall.Chunk) []string {
	var out []string
	for _, c := range chunks {
		out = append(out, c.Text)
	}
	return out
}

func show(chunks []string) string {
	var b strings.Builder
	for i, c := range chunks {
		fmt.Fprintf(&b, "  %d: %q\n", i, c)
	}
	return b.String()
}

func TestRuneCount(t *testing.T) {
	for _, s := range []string{"", "a", "abcdefgh", "abcdefghi", "é", "日本語のテキスト", family + "x" + strings.Repeat("ü", 9), "\U0010FFFF\u0080abcdefg"} {
		if got, want := runeCount(s), utf8.RuneCountInString(s); got != want {
			t.Errorf("runeCount(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestPairExact checks the claim charCut relies on: after a character that
// pairExact accepts, the two characters around a place decide whether it
// is a grapheme boundary, whatever came before them.
func TestPairExact(t *testing.T) {
	before := []string{"", "a", "\u200d", "👩", "👩\u200d", "🇺", "क्", "\u0301", "\r", "\u0600"}
	after := []string{"a", " ", "\n", "👩", "🇺", "\u0301", "\u200d", "क", "\u0903", "ᄀ", "ᅡ", "\uff9e", "🏽", "天"}
	var xs []rune
	for x := rune(0); x <= unicode.MaxRune; x += 101 {
		xs = append(xs, x)
	}
	xs = append(xs, 'a', '天', 'ー', '々', 'क', '\uff9e', '\uff9f', '\u0e33', '\u0d4e')
	checked := 0
	for _, x := range xs {
		if !pairExact(x) || !utf8.ValidRune(x) {
			continue
		}
		for _, w := range before {
			for _, y := range after {
				text := w + string(x) + y
				at := len(w) + utf8.RuneLen(x)
				_, inside := graphemeBounds(text).inside(at)
				if pairBreaks(text, at) == inside {
					t.Fatalf("after %q: pairBreaks says %v, the segmenter %v", text, !inside, inside)
				}
				checked++
			}
		}
	}
	t.Logf("%d places checked", checked)
}
