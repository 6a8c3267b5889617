package remote

import (
	"context"
	"errors"
	"fmt"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/ingest"
)

// removeBatch is how many names one removal request carries: well under
// MaxRemoveNames, and, at most MaxSourceIDLen bytes each (twice that with
// every byte escaped), under the server's 2 MiB limit on bodies other than
// /ingest's.
const removeBatch = 500

// removal is one name to remove and what waits on it: a file whose stale
// conversations it is, or a gone file's manifest entry.
type removal struct {
	name string
	file bool     // a gone file: its own source and its conversations'
	of   *pending // a changed file whose stale source this is
	gone string   // a gone file this name is (part of)
	left *int     // names of the same file the server has not confirmed yet
}

// remove asks the server to remove the conversations complete files no
// longer give and, with Prune, the sources of files gone from the vault;
// a file's entry changes only once the server confirms each of its names.
// Any failure stops the run: what the server confirmed is recorded, and
// the next run asks again for the rest.
func (s *sweeper) remove(ctx context.Context, present map[string]bool) error {
	if err := s.ask(ctx, present); err != nil {
		return err
	}
	var todo []removal
	for _, p := range s.all {
		if !p.finished || p.failed || len(p.stale) == 0 {
			continue
		}
		n := len(p.stale)
		for _, id := range p.stale {
			todo = append(todo, removal{name: id, of: p, left: &n})
		}
	}
	if s.opt.Prune {
		// A file in the vault under a gone file's path (an export
		// replaced by a folder of that name) is no conversation of it:
		// such a file is removed by the sources it recorded instead.
		gone := make(map[string]bool, len(s.res.Removed))
		for _, rel := range s.res.Removed {
			gone[rel] = true
		}
		shadowed := map[string]bool{}
		for id := range present {
			for q := ingest.Parent(id); q != ""; q = ingest.Parent(q) {
				if gone[q] {
					shadowed[q] = true
				}
			}
		}
		for _, rel := range s.res.Removed {
			if !shadowed[rel] {
				todo = append(todo, removal{name: rel, file: true, gone: rel, left: new(int(1))})
				continue
			}
			var names []string
			for _, id := range s.man.Files[rel].sources(rel) {
				if !present[id] && !present[ingest.Parent(id)] {
					names = append(names, id)
				}
			}
			if len(names) == 0 {
				delete(s.man.Files, rel)
				continue
			}
			n := len(names)
			for _, id := range names {
				todo = append(todo, removal{name: id, gone: rel, left: &n})
			}
		}
	}
	for len(todo) > 0 {
		batch := todo[:min(removeBatch, len(todo))]
		todo = todo[len(batch):]
		var req RemoveRequest
		for _, r := range batch {
			if r.file {
				req.Files = append(req.Files, r.name)
			} else {
				req.Sources = append(req.Sources, r.name)
			}
		}
		var resp RemoveResponse
		s.res.Batches++
		if err := s.post(ctx, RemovePath, req, &resp); err != nil {
			return s.postFailed(ctx, err, "remove sources", RemovePath, fmt.Sprintf("remove %d sources from the server", len(batch)))
		}
		if len(resp.Files) != len(req.Files) || len(resp.Sources) != len(req.Sources) {
			return fmt.Errorf("the server answered %d of %d removals", len(resp.Files)+len(resp.Sources), len(batch))
		}
		s.res.SourcesRemoved += resp.Removed
		fi, si := 0, 0
		for _, r := range batch {
			var got Removal
			if r.file {
				got, fi = resp.Files[fi], fi+1
			} else {
				got, si = resp.Sources[si], si+1
			}
			s.res.SourcesKept += got.Kept
			if r.of != nil {
				s.res.ConversationsRemoved += got.Removed
			}
			if *r.left--; *r.left > 0 {
				continue
			}
			if r.of != nil {
				s.record(r.of)
			} else {
				delete(s.man.Files, r.gone)
			}
		}
	}
	return nil
}

// ask completes the files whose conversations the manifest did not record
// (pending.list): it pages through the sources the server holds for each,
// and those the file no longer gives are removed with its stale ones. The
// server lists only sources sent through /ingest, and a file is asked
// about only once every source it gives was confirmed. A listed source that
// is a file of its own (in the vault, or recorded: a folder of the file's
// name that was there once) is no conversation of it and is left alone.
func (s *sweeper) ask(ctx context.Context, present map[string]bool) error {
	for _, p := range s.all {
		if !p.list || !p.finished || p.failed {
			continue
		}
		known := map[string]bool{}
		for _, id := range p.entry.sources(p.rel) {
			known[id] = true
		}
		for _, id := range p.stale {
			known[id] = true
		}
		req := SourcesRequest{File: p.rel}
		cursors := map[string]bool{}
		for {
			var resp SourcesResponse
			s.res.Batches++
			if err := s.post(ctx, SourcesPath, req, &resp); err != nil {
				return s.postFailed(ctx, err, "list the sources it holds for a file", SourcesPath, "list the sources the server holds for "+p.rel)
			}
			for _, id := range resp.Sources {
				if _, file := s.man.Files[id]; !known[id] && !file && !present[id] {
					known[id] = true
					p.stale = append(p.stale, id)
				}
			}
			if resp.Next == "" {
				break
			}
			// A cursor seen before would list the same pages for ever.
			cursors[req.Cursor] = true
			if cursors[resp.Next] {
				return fmt.Errorf("the server's list of the sources it holds for %s does not advance past cursor %q", p.rel, resp.Next)
			}
			req.Cursor = resp.Next
		}
		p.list = false
		if len(p.stale) == 0 {
			s.record(p)
		}
	}
	return nil
}

// postFailed is the error that stops a run when a request of its removals
// failed: a server without the route path (older than this client) is
// told to be upgraded.
func (s *sweeper) postFailed(ctx context.Context, err error, cannot, path, doing string) error {
	s.res.BatchesFailed++
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var fatal fatalError
	if errors.As(err, &fatal) {
		err = fatal.err
	}
	if recall.ErrorCode(err) == recall.ENOTFOUND {
		return recall.Errorf(recall.EINVALID, "the server at %s cannot %s (it has no %s): it is older than this client, upgrade it; what it confirmed is recorded", s.opt.URL, cannot, path)
	}
	return fmt.Errorf("%s (what it confirmed is recorded; the next run asks again): %w", doing, err)
}
