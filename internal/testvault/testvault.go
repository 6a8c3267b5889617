// Package testvault generates vaults of fictional conversations for tests
// and benchmarks: markdown transcripts with varied turn lengths and a
// Zipf-distributed vocabulary, so full-text statistics look like real chat.
package testvault

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// vocabulary is common English words; rank order drives the Zipf draw.
var vocabulary = strings.Fields(`the be to of and a in that have i it for not on with he as you do at this but his by
from they we say her she or an will my one all would there their what so up out if about who get which go me when
make can like time no just him know take people into year your good some could them see other than then now look
only come its over think also back after use two how our work first well way even new want because any these give
day most us garden kettle river morning sister winter letter code bridge quiet lamp orange train paper window coffee
mountain story night doctor project deadline budget recipe flour starter marathon knee physio laptop database backup
python rust compiler borrow lifetime thread memory server deploy kubernetes invoice client meeting holiday flight
hotel museum painting guitar piano concert book chapter novel poem therapy anxiety friend partner wedding birthday
cake dinner lunch breakfast tea mint basil tomato balcony weather rain snow sunshine beach lake forest hike camping
tent bicycle car engine insurance mortgage apartment rent landlord neighbour dog cat puppy kitten vet walk park
school teacher homework exam university thesis research paper experiment data graph model training loss accuracy`)

// Generate writes n conversation files under dir (YYYY/MM/chat-N.md) with
// about avgBytes bytes each, deterministically from seed. It returns the
// total bytes written.
func Generate(dir string, n, avgBytes int, seed uint64) (int64, error) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(vocabulary)-1))
	sentence := func() string {
		k := 5 + r.IntN(16)
		var b strings.Builder
		for i := range k {
			w := vocabulary[zipf.Uint64()]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		b.WriteString([]string{".", ".", ".", "?", "!"}[r.IntN(5)])
		return b.String()
	}
	var total int64
	for i := range n {
		target := avgBytes/2 + r.IntN(avgBytes+1)
		var b strings.Builder
		fmt.Fprintf(&b, "# Conversation %d about %s\n\n", i, vocabulary[zipf.Uint64()])
		for turn := 0; b.Len() < target; turn++ {
			who := "User"
			if turn%2 == 1 {
				who = "Assistant"
			}
			fmt.Fprintf(&b, "**%s:**", who)
			paras := 1
			if who == "Assistant" {
				paras = 1 + r.IntN(4)
			}
			for p := range paras {
				if p > 0 {
					b.WriteString("\n\n")
				}
				for range 1 + r.IntN(6) {
					b.WriteString(" " + sentence())
				}
			}
			b.WriteString("\n\n")
		}
		p := filepath.Join(dir, fmt.Sprintf("%04d", 2018+i%8), fmt.Sprintf("%02d", 1+i%12), fmt.Sprintf("chat-%d.md", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return total, err
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			return total, err
		}
		total += int64(b.Len())
	}
	return total, nil
}

// Cached returns a generated vault in the system temp directory, creating
// it on first use, so repeated benchmark runs share one copy.
func Cached(name string, n, avgBytes int, seed uint64) (string, int64, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("recall-testvault-%s-%d-%d-%d", name, n, avgBytes, seed))
	done := filepath.Join(dir, ".complete")
	if b, err := os.ReadFile(done); err == nil {
		var total int64
		fmt.Sscan(string(b), &total)
		return dir, total, nil
	}
	os.RemoveAll(dir)
	total, err := Generate(dir, n, avgBytes, seed)
	if err != nil {
		return "", 0, err
	}
	return dir, total, os.WriteFile(done, []byte(fmt.Sprint(total)), 0o644)
}

// WriteFile writes text to the file at path, making its folders, and gives
// it the mtime given. A test of what a sweep makes of a file's mtime sets
// one; a test of anything else gives an older one (Settled), since a file a
// sweep reads within ingest.RacyWindow of its mtime is read again by the
// next sweep.
func WriteFile(path, text string, mtime time.Time) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return err
	}
	return os.Chtimes(path, mtime, mtime)
}

// Settled is an mtime an hour back, as a vault's files are older than the
// sweep that reads them; each call gives another.
func Settled() time.Time { return time.Now().Add(-time.Hour) }
