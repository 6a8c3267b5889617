package chunk

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// This file generates realistic conversations for the quality test and the
// benchmarks: alternating user and assistant turns of English prose of
// varied lengths, with lists, code, URLs (a few of them longer than a
// chunk), over-long answers and some Chinese and Japanese turns.

var vocabulary = strings.Fields(`the of and to a in is it you that he was for on are with as I his they be at
one have this from or had by hot word but what some we can out other were all there when up use your how said
an each she which do their time if will way about many then them write would like so these her long make thing
see him two has look more day could go come did number sound no most people my over know water than call first
who may down side been now find any new work part take get place made live where after back little only round
man year came show every good me give our under name very through just form sentence great think say help low
line differ turn cause much mean before move right boy old too same tell does set three want air well also play
small end put home read hand port large spell add even land here must big high such follow act why ask men
change went light kind off need house picture try us again animal point mother world near build self earth
father head stand own page should country found answer school grow study still learn plant cover food sun four
between state keep eye never last let thought city tree cross farm hard start might story saw far sea draw left
late run don't while press close night real life few north open seem together next white children begin got
walk example ease paper group always music those both mark often letter until mile river car feet care second
book carry took science eat room friend began idea fish mountain stop once base hear horse cut sure watch color
face wood main enough plain girl usual young ready above ever red list though feel talk bird soon body dog
family direct pose leave song measure door product black short numeral class wind question happen complete
ship area half rock order fire south problem piece told knew pass since top whole king space heard best hour
better true during hundred five remember step early hold west ground interest reach fast verb sing listen six
table travel less morning ten simple several vowel toward war lay against pattern slow center love person money
serve appear road map rain rule govern pull cold notice voice unit power town fine certain fly fall lead cry
dark machine note wait plan figure star box noun field rest correct able pound done beauty drive stood contain
front teach week final gave green oh quick develop ocean warm free minute strong special mind behind clear tail
produce fact street inch multiply nothing course stay wheel full force blue object decide surface deep moon
island foot system busy test record boat common gold possible plane stead dry wonder laugh thousand ago ran
check game shape equate miss brought heat snow tire bring yes distant fill east paint language among database
server configuration function variable Kubernetes PostgreSQL embedding vector latency throughput deployment`)

var cjkSentences = []string{
	"今日は良い天気ですね。", "明日の会議は十時から始まります。", "この問題について詳しく説明してください。",
	"データベースの設定を確認しました！", "本当にそれで大丈夫ですか？", "我们明天去北京出差。",
	"这个函数的返回值是什么？", "请把文件发给我，谢谢！", "服务器在凌晨三点重启了。", "東京タワーに行きました。",
}

func sentence(r *rand.Rand) string {
	n := 5 + r.IntN(20)
	var b strings.Builder
	for i := range n {
		w := vocabulary[r.IntN(len(vocabulary))]
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		if i < n-1 && r.IntN(12) == 0 {
			b.WriteByte(',')
		}
	}
	b.WriteString([]string{".", ".", ".", ".", ".", "?", "!", "...", `."`}[r.IntN(9)])
	return b.String()
}

func paragraph(r *rand.Rand, sentences int) string {
	s := make([]string, sentences)
	for i := range s {
		s[i] = sentence(r)
	}
	return strings.Join(s, " ")
}

func url(r *rand.Rand, length int) string {
	var b strings.Builder
	b.WriteString("https://docs.example.com/")
	for b.Len() < length {
		switch r.IntN(4) {
		case 0:
			fmt.Fprintf(&b, "%s/", vocabulary[r.IntN(len(vocabulary))])
		case 1:
			fmt.Fprintf(&b, "%s-%s_%d", vocabulary[r.IntN(len(vocabulary))], vocabulary[r.IntN(len(vocabulary))], r.IntN(1000))
		case 2:
			fmt.Fprintf(&b, "?%s=%x&", vocabulary[r.IntN(len(vocabulary))], r.Uint64())
		default:
			fmt.Fprintf(&b, "%x", r.Uint64())
		}
	}
	return b.String()
}

// blob is a token with no space in it, as a pasted key, hash dump or
// inline image: with alphabet "0123456789abcdef" it has nowhere to cut but
// between two letters or digits.
func blob(r *rand.Rand, length int, alphabet string) string {
	b := make([]byte, length)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func cjkParagraph(r *rand.Rand, sentences int, punctuated bool) string {
	var b strings.Builder
	for range sentences {
		s := cjkSentences[r.IntN(len(cjkSentences))]
		if !punctuated {
			s = strings.TrimRight(s, "。！？")
		}
		b.WriteString(s)
	}
	return b.String()
}

const codeBlock = "```go\nfunc main() {\n\tdb, err := sql.Open(\"sqlite\", \"recall.db\")\n\tif err != nil {\n\t\tlog.Fatal(err)\n\t}\n\tdefer db.Close()\n}\n```"

// assistantTurn writes an answer: mostly a few paragraphs, sometimes with a
// list, code or URLs, now and then far longer than a chunk.
func assistantTurn(r *rand.Rand) string {
	var parts []string
	paragraphs := 1 + r.IntN(4)
	if r.IntN(6) == 0 {
		paragraphs = 6 + r.IntN(10) // an over-long answer
	}
	for range paragraphs {
		switch k := r.IntN(20); {
		case k == 0:
			var items []string
			for i := range 3 + r.IntN(6) {
				items = append(items, fmt.Sprintf("%d. %s", i+1, sentence(r)))
			}
			parts = append(parts, strings.Join(items, "\n"))
		case k == 1:
			var items []string
			for range 3 + r.IntN(6) {
				items = append(items, "- "+strings.TrimRight(sentence(r), ".?!\""))
			}
			parts = append(parts, strings.Join(items, "\n"))
		case k == 2:
			parts = append(parts, codeBlock)
		case k == 3:
			parts = append(parts, paragraph(r, 1)+" See "+url(r, 40+r.IntN(200))+" for details.")
		case k == 5:
			parts = append(parts, paragraph(r, 15+r.IntN(20))) // a wall of text with no blank line
		default:
			parts = append(parts, paragraph(r, 1+r.IntN(6)))
		}
	}
	return "**Assistant:** " + strings.Join(parts, "\n\n")
}

func userTurn(r *rand.Rand) string {
	if r.IntN(5) == 0 {
		return "**User:** " + strings.TrimRight(sentence(r), ".!\"")
	}
	return "**User:** " + paragraph(r, 1+r.IntN(4))
}

func cjkTurn(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return "**User:** " + cjkParagraph(r, 1+r.IntN(5), true)
	}
	var parts []string
	for range 1 + r.IntN(8) {
		parts = append(parts, cjkParagraph(r, 2+r.IntN(40), r.IntN(4) > 0))
	}
	return "**Assistant:** " + strings.Join(parts, "\n\n")
}

// conversation generates one conversation. Unless english, some turns
// are Chinese or Japanese, one conversation in five quotes a URL longer than
// a chunk, one in ten an inline image in base64 and one in fifty a hex key
// longer than a chunk: tokens with no space to cut at.
func conversation(r *rand.Rand, english bool) []string {
	turns := 2 + r.IntN(40)
	msgs := make([]string, 0, turns)
	for i := range turns {
		switch {
		case !english && r.IntN(10) == 0:
			msgs = append(msgs, cjkTurn(r))
		case i%2 == 0:
			msgs = append(msgs, userTurn(r))
		default:
			msgs = append(msgs, assistantTurn(r))
		}
	}
	if english {
		return msgs
	}
	var long []string
	if r.IntN(5) == 0 {
		long = append(long, "The full link is "+url(r, 2500+r.IntN(3000)))
	}
	if r.IntN(10) == 0 {
		long = append(long, "![chart](data:image/png;base64,"+blob(r, 3000+r.IntN(6000), base64Alphabet)+")")
	}
	if r.IntN(50) == 0 {
		long = append(long, "The key is "+blob(r, 2100+r.IntN(2000), "0123456789abcdef")+" and it has no spaces.")
	}
	for _, l := range long {
		i := r.IntN(len(msgs))
		msgs[i] += "\n\n" + l
	}
	return msgs
}

const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// conversations generates n conversations from a fixed seed.
func conversations(seed uint64, n int, english bool) [][]string {
	r := rand.New(rand.NewPCG(seed, seed))
	out := make([][]string, n)
	for i := range out {
		out[i] = conversation(r, english)
	}
	return out
}
