package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/chunk"
	"github.com/recall-mcp/recall/internal/ingest"
	"github.com/recall-mcp/recall/internal/remote"
)

// wantsRemote reports whether a sweep command line names --remote, so
// cmdSweep can hand it to sweepRemote before parsing its own flags.
func wantsRemote(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name := strings.TrimLeft(a, "-")
		if strings.HasPrefix(a, "-") && (name == "remote" || strings.HasPrefix(name, "remote=")) {
			return true
		}
	}
	return false
}

// sweepRemote sweeps a local vault into a recall server through /ingest:
// `recall sweep DIR --remote URL`, with the token from RECALL_TOKEN.
func (m *Main) sweepRemote(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	url := fs.String("remote", "", "send the vault to the recall server at `URL` (token from RECALL_TOKEN)")
	full := fs.Bool("full", false, "send every file, even those the server already confirmed")
	prune := fs.Bool("prune", false, "remove from the server the sources of files gone from the vault")
	pruneEmpty := fs.Bool("prune-empty", false, "with --prune, also when the vault holds no files at all (refused otherwise: an unmounted disk looks the same)")
	size := fs.Int("chunk-size", 2000, "chunk size limit in characters")
	overlap := fs.Int("overlap", 0, "characters of the previous chunk carried into the next (-1: none; 0: a tenth of --chunk-size, 200 for the default size)")
	manifest := fs.String("manifest", "", "manifest `file` of confirmed files (default: under the data directory, one per server and vault)")
	logPath := fs.String("log", "", "failure log `file` (default: sweep.log next to the database)")
	asJSON := fs.Bool("json", false, "print one JSON summary object as the last line of stdout")
	pos, err := m.parse(fs, args, "sweep --remote URL [flags] DIR")
	if err != nil {
		return err
	}
	if err := sweepArgs(pos, *prune, *pruneEmpty); err != nil {
		return err
	}
	if !strings.HasPrefix(*url, "http://") && !strings.HasPrefix(*url, "https://") {
		return usagef("--remote must be an http:// or https:// URL")
	}
	// The manifest records the options files were sent with: the default
	// is written out as the tenth of the size it stands for, as it was
	// recorded when the flag defaulted to 200.
	ov := *overlap
	if ov == 0 {
		ov = *size / 10
	}
	opt := remote.Options{URL: *url, Token: m.setting("", "token", ""), Full: *full, Prune: *prune, PruneEmpty: *pruneEmpty,
		Chunk: chunk.Options{Size: *size, Overlap: ov}, Manifest: *manifest}
	if err := opt.Chunk.Validate(); err != nil {
		return usagef("%s", recall.ErrorMessage(err))
	}
	if opt.Zone, err = m.location(); err != nil {
		return err
	}
	opt.Rereading = func(files int) { rereadNote(m.Stderr, "sending", files) }
	opt.Redating = func(files int) { redateNote(m.Stderr, "reading", files, opt.Zone) }
	// The vault as sweeps name it (a symbolic link is the folder it points
	// to), so a run through a link uses the folder's manifest.
	abs, err := ingest.VaultPath(pos[0])
	if err != nil {
		return err
	}
	if opt.Manifest == "" {
		dir, err := m.dataDir()
		if err != nil {
			return err
		}
		sum := sha256.Sum256([]byte(strings.TrimRight(*url, "/") + "\x00" + abs))
		opt.Manifest = filepath.Join(dir, "remote", hex.EncodeToString(sum[:8])+".json")
	}
	logf, err := m.openSweepLog(*logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	opt.Failures = lockedWriter{&sync.Mutex{}, logf}

	res, err := remote.Sweep(ctx, abs, opt)
	// Without a token, a 401 means one is needed: say where it goes rather
	// than pass on the server's words about an Authorization header.
	if opt.Token == "" && recall.ErrorCode(err) == recall.EUNAUTHORIZED {
		return recall.Errorf(recall.EUNAUTHORIZED, "%s needs a token: set RECALL_TOKEN (or token in the config file) to one the server accepts", *url)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(m.Stdout, string(b))
	} else {
		fmt.Fprintf(m.Stdout, "sent %d of %s to %s (%d unchanged, %d failed), %s, %s in %s, %.2fs\n",
			res.FilesChanged, plural(res.FilesSeen, "file", "files"), *url, res.FilesSkipped, res.FilesFailed,
			plural(res.Sources, "source", "sources"), plural(res.ChunksWritten, "chunk", "chunks"),
			plural(res.Batches, "request", "requests"), res.Seconds)
		if res.FilesRemoved > 0 {
			them := agree(res.FilesRemoved, "it", "them")
			action := "the server keeps " + them + ": run with --prune to remove " + them + " there"
			if *prune {
				action = "removed from the server"
			}
			printRemoved(m.Stdout, res.Removed, action)
		}
		if res.ConversationsRemoved > 0 {
			fmt.Fprintf(m.Stdout, "%s removed from the server\n", plural(res.ConversationsRemoved,
				"conversation no longer in its export was", "conversations no longer in their exports were"))
		}
		if res.SourcesKept > 0 {
			fmt.Fprintf(m.Stdout, "the server kept %s of those: it sweeps %s from a folder of its own, or %s stored there again since\n",
				plural(res.SourcesKept, "source", "sources"), agree(res.SourcesKept, "it", "them"), agree(res.SourcesKept, "it was", "they were"))
		}
		if res.FilesRedated > 0 {
			fmt.Fprintf(m.Stdout, "%s sent again to date %s conversations in this time zone\n",
				plural(res.FilesRedated, "unchanged file was", "unchanged files were"), agree(res.FilesRedated, "its", "their"))
		}
		printLinks(m.Stdout, res.Links)
		if res.FilesFailed > 0 {
			fmt.Fprintf(m.Stdout, "failures are listed in %s; they are sent again on the next run\n", logf.Name())
		}
	}
	if res.FilesFailed > 0 {
		return exitError(exitFailure)
	}
	return nil
}
