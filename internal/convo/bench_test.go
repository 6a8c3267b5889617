package convo

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writeChatGPTExport writes a ChatGPT export of about size bytes: many
// conversations of ~24 turns with a hidden system root, an edited question
// (a dead branch) and the metadata real exports carry.
func writeChatGPTExport(tb testing.TB, path string, size int64) int64 {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the a tomato plant water rain fence sourdough starter cron job backup path river ecology " +
		"kiln glaze bowl conference Lisbon Ghent litres week morning feed ratio peak test clock retry flaky")
	sentence := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String() + "."
	}
	type msg = map[string]any
	var written int64
	w.WriteString("[")
	for i := 0; written < size; i++ {
		mapping := map[string]any{}
		add := func(id, parent string, m msg) {
			mapping[id] = map[string]any{"id": id, "parent": parent, "children": []string{}, "message": m}
			if p, ok := mapping[parent].(map[string]any); ok {
				p["children"] = append(p["children"].([]string), id)
			}
		}
		message := func(role, text string, t float64) msg {
			return msg{
				"id": fmt.Sprint(rng.Uint64()), "author": msg{"role": role, "name": nil, "metadata": msg{}},
				"create_time": t, "update_time": nil, "status": "finished_successfully", "weight": 1.0,
				"content":   msg{"content_type": "text", "parts": []string{text}},
				"metadata":  msg{"model_slug": "gpt-4o", "request_id": "8a1f0c2b3d4e5f60-AMS", "timestamp_": "absolute"},
				"recipient": "all",
			}
		}
		mapping["root"] = map[string]any{"id": "root", "parent": nil, "children": []string{}, "message": nil}
		sys := message("system", "", 0)
		sys["metadata"] = msg{"is_visually_hidden_from_conversation": true}
		add("sys", "root", sys)
		parent := "sys"
		t0 := 1.7e9 + float64(i)*3600
		for turn := 0; turn < 24; turn++ {
			role := "user"
			text := sentence(10 + rng.IntN(30))
			if turn%2 == 1 {
				role = "assistant"
				text = sentence(40+rng.IntN(80)) + "\n\n" + sentence(40+rng.IntN(80))
			}
			id := fmt.Sprintf("n%d", turn)
			if turn == 2 {
				add("n2-old", parent, message(role, text, t0)) // the question before an edit
			}
			add(id, parent, message(role, text, t0+float64(turn)))
			parent = id
		}
		conv, err := json.Marshal(map[string]any{
			"title": sentence(4), "create_time": t0, "update_time": t0 + 30, "mapping": mapping,
			"moderation_results": []any{}, "current_node": parent, "plugin_ids": nil,
			"conversation_id": fmt.Sprintf("conv-%08d", i), "id": fmt.Sprintf("conv-%08d", i),
			"default_model_slug": "gpt-4o", "is_archived": false, "safe_urls": []any{},
		})
		if err != nil {
			tb.Fatal(err)
		}
		if i > 0 {
			w.WriteString(",\n")
		}
		w.Write(conv)
		written += int64(len(conv)) + 2
	}
	w.WriteString("]\n")
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}

// BenchmarkParseChatGPTExport parses generated exports of 5 and 50 MB from
// disk and reports throughput (MB/s) and the largest heap seen while parsing
// (peak-heap-MB): memory must stay flat as the file grows tenfold.
//
//	go test ./internal/convo -run '^$' -bench ParseChatGPTExport -count 5
func BenchmarkParseChatGPTExport(b *testing.B) {
	dir := b.TempDir()
	for _, mb := range []int64{5, 50} {
		path := filepath.Join(dir, fmt.Sprintf("export-%dMB.json", mb))
		size := writeChatGPTExport(b, path, mb<<20)
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			b.SetBytes(size)
			var peak uint64
			var ms runtime.MemStats
			runtime.GC()
			b.ResetTimer()
			for b.Loop() {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				err = Parse("conversations.json", f, nil, func(c Conversation) error {
					if n++; n%16 == 0 {
						runtime.ReadMemStats(&ms)
						peak = max(peak, ms.HeapAlloc)
					}
					return nil
				})
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}
