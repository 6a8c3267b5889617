package chunk

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSplitRealistic checks every promise of the package on generated
// conversations and that under 1% of chunks begin mid-word, against about
// half for a fixed-size slicer.
func TestSplitRealistic(t *testing.T) {
	n := 100
	if testing.Short() {
		n = 40
	}
	var chunks, midWord, cut, naive, naiveMid, bytes int
	for _, msgs := range conversations(1, n, false) {
		for _, c := range checkSplit(t, msgs, Options{}) {
			chunks++
			if c.MidWord {
				midWord++
			}
		}
		text := Join(msgs)
		bytes += len(text)
		spans := SplitSpans(msgs, Options{})
		for i := 1; i < len(spans); i++ {
			if spans[i].Start >= spans[i-1].End {
				cut++ // no overlap: the chunk starts where the cut was made
			}
		}
		for _, start := range fixedSlices(text, DefaultSize, DefaultSize/10) {
			naive++
			if midWordAt(text, start) {
				naiveMid++
			}
		}
	}
	share := float64(midWord) / float64(chunks)
	t.Logf("%d conversations, %d bytes: %d chunks, %d begin mid-word (%.2f%%), %d without overlap",
		n, bytes, chunks, midWord, 100*share, cut)
	t.Logf("fixed-size slicer: %d chunks, %d begin mid-word (%.1f%%)",
		naive, naiveMid, 100*float64(naiveMid)/float64(naive))
	if share >= 0.01 {
		t.Errorf("%.2f%% of chunks begin mid-word, want under 1%%", 100*share)
	}
}

// fixedSlices returns the byte offsets at which a naive slicer starts its
// chunks: every size-overlap characters, whatever is there.
func fixedSlices(text string, size, overlap int) []int {
	var starts []int
	r := 0
	for b := range text {
		if r > 0 && r%(size-overlap) == 0 {
			starts = append(starts, b)
		}
		r++
	}
	return starts
}

func BenchmarkSplit(b *testing.B) {
	for _, bc := range []struct {
		name string
		msgs [][]string
	}{
		{"english", conversations(2, 100, true)},
		{"mixed", conversations(3, 100, false)},
		// The slow paths: nothing but character cuts.
		{"cjk-unpunctuated", [][]string{{strings.Repeat("天地玄黄宇宙洪荒日月盈昃", 20000)}}},
		{"no-spaces", [][]string{{blob(rand.New(rand.NewPCG(4, 4)), 1<<20, "0123456789abcdef")}}},
	} {
		size := 0
		for _, m := range bc.msgs {
			size += len(Join(m))
		}
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(size))
			cpu := cpuSeconds()
			for b.Loop() {
				for _, m := range bc.msgs {
					Split(m, Options{})
				}
			}
			// MB/s divides by wall time, which on a shared machine counts
			// the neighbours' work too; this divides by our CPU time.
			if cpu = cpuSeconds() - cpu; cpu > 0 {
				b.ReportMetric(float64(size)*float64(b.N)/cpu/1e6, "MB/cpu-s")
			}
		})
	}
}
