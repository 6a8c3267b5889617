package chunk

import (
	"strings"
	"testing"
)

// FuzzSplit feeds random conversations and options to Split and checks
// every promise of the package (see checkSplit). Messages are separated by
// the ASCII record separator in the fuzzed text.
func FuzzSplit(f *testing.F) {
	seeds := []string{
		"**User:** hello\x1e**Assistant:** Hi! How can I help you today?",
		strings.Repeat("One sentence here. Another one there! A question? ", 12),
		strings.Repeat("今日は良い天気です。明日も晴れるでしょう！", 10) + "\x1e" + strings.Repeat("天地玄黄宇宙洪荒", 30),
		"see https://example.com/" + strings.Repeat("path/seg-ment_", 30) + "?q=1&r=2 done",
		strings.Repeat(family, 40) + " " + strings.Repeat("🇯🇵🇫🇷", 30),
		strings.Repeat("e\u0301", 150) + "\x1e" + strings.Repeat("a\u0301\u0302\u0303", 60),
		"line\r\nline\r\n\r\nparagraph " + strings.Repeat("word ", 60) + "\u2029next",
		" \u0301start" + strings.Repeat(" x\u0300", 80) + "\u0600 \u0600\n" + strings.Repeat("\u0600 ", 60),
		"1. first item\n2. second item\n" + strings.Repeat("12. another item in the list\n", 10),
		"wait…what" + strings.Repeat("well...I think so… ", 20) + "\x1e\x1e  \x1e\t",
		"caf\xe9 \xff\xfe" + strings.Repeat("x", 300),
		strings.Repeat("한국어문장 ", 50) + strings.Repeat("ภาษาไทย", 40),
		strings.Repeat("a\u00a0b ", 100),
		// Places where two characters do not tell a grapheme boundary:
		// halfwidth kana voicing marks, skin tones, a conjunct, flags
		// after text, a ZWJ before a pictograph.
		strings.Repeat("ｶﾞｷﾞｸﾞ", 60) + strings.Repeat("👍🏽", 50) + strings.Repeat("क्षत्रि", 40),
		"x" + strings.Repeat("🇺🇸", 61) + strings.Repeat("a\u200d👩", 70) + strings.Repeat("々ー", 80),
	}
	for i, s := range seeds {
		f.Add(s, uint16(i*97), int16(i*31-40))
	}
	f.Fuzz(func(t *testing.T, data string, size uint16, overlap int16) {
		opt := Options{Size: MinSize + int(size)%900}
		opt.Overlap = int(overlap) % (opt.Size/2 + 1)
		if opt.Overlap < 0 {
			opt.Overlap = NoOverlap
		}
		checkSplit(t, strings.Split(data, "\x1e"), opt)
	})
}
