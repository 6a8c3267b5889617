// Command genvault writes a vault of generated conversations
// (internal/testvault) for bench/mcp-load.sh: markdown transcripts with a
// Zipf-distributed vocabulary, deterministic for a seed.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/recall-mcp/recall/internal/testvault"
)

func main() {
	files := flag.Int("files", 25000, "conversation files to write")
	avg := flag.Int("bytes", 8000, "average bytes per file")
	seed := flag.Uint64("seed", 1, "seed")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: genvault [-files N] [-bytes B] [-seed S] DIR")
		os.Exit(2)
	}
	total, err := testvault.Generate(flag.Arg(0), *files, *avg, *seed)
	if err != nil {
		fmt.Fprintln(os.Stderr, "genvault:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "genvault: %d files, %d bytes in %s\n", *files, total, flag.Arg(0))
}
