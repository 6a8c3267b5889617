package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed"
	"github.com/recall-mcp/recall/internal/repair"
)

func (m *Main) cmdRepair(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("repair", flag.ContinueOnError)
	spaceName := fs.String("space", "", "repair only this vector `SPACE` (default: every space)")
	limit := fs.Int("limit", 0, "embed at most N texts per space this run (0: all)")
	asJSON := fs.Bool("json", false, "print one JSON object per space")
	retry := fs.Bool("retry-refused", false, "send again the texts refused for their size, as too long for the model or too large for its service or a proxy (they are otherwise never sent to it again): after raising the limit")
	if err := m.parseNone(fs, args, "repair [--space NAME] [--limit N] [--retry-refused] [--json]", "use --space NAME to repair one space"); err != nil {
		return err
	}
	if *limit < 0 { // Run would embed nothing and call that stopping at the limit
		return usagef("--limit must be 0 (all) or more, got %d", *limit)
	}
	if err := m.checkModel(); err != nil {
		return err
	}
	st, err := m.openExisting(ctx)
	if err != nil {
		return err
	}
	// The engine only writes the vectors here: no search reads an index.
	eng, configured, _, err := m.engine(ctx, st, noVectors)
	if err != nil {
		return err
	}
	spaces, err := st.Spaces(ctx)
	if err != nil {
		return err
	}
	if len(spaces) == 0 {
		return recall.Errorf(recall.EINVALID, "there is no vector space to repair (embedder none, or nothing swept with an embedder yet)")
	}
	found := false
	for _, sp := range spaces {
		if *spaceName != "" && sp.Name != *spaceName {
			continue
		}
		found = true
		emb, err := m.spaceEmbedder(ctx, st, sp, configured)
		if err != nil {
			return fmt.Errorf("space %s: %w", sp.Name, err)
		}
		if emb == nil {
			return recall.Errorf(recall.EINVALID, "space %s has no embedder (%s/%s)", sp.Name, sp.Provider, sp.Model)
		}
		opt := repair.Options{Limit: *limit, RetryRefused: *retry}
		if m.IsTerminal() && !*asJSON {
			opt.Progress = func(p repair.Progress) {
				fmt.Fprintf(m.Stderr, "\r\033[Kspace %s: embedded %d", p.Space, p.Embedded)
			}
		}
		start := time.Now()
		p, err := repair.Run(ctx, st, eng, sp.Name, emb, opt)
		if opt.Progress != nil {
			fmt.Fprint(m.Stderr, "\r\033[K")
		}
		if err != nil {
			return fmt.Errorf("repair of space %s stopped (the next run resumes at chunk %d): %w", sp.Name, p.Cursor, err)
		}
		if *asJSON {
			json.NewEncoder(m.Stdout).Encode(p)
			continue
		}
		state := "complete"
		switch {
		case p.Missing == 0:
		case !p.Done:
			state = fmt.Sprintf("stopped at the limit; %d still missing, run again to continue", p.Missing)
		default:
			var parts []string
			if other := p.Missing - p.Refusals; other > 0 {
				parts = append(parts, fmt.Sprintf("%s the embedder failed on alone %s without a vector (tried again on the next run; see its log)",
					plural(other, "text", "texts"), agree(other, "remains", "remain")))
			}
			if p.Refusals > 0 {
				// Said apart: no retry helps these; a model with a longer
				// window, a larger context setting or a higher body limit
				// does.
				why := ""
				if p.TooLongReason != "" {
					why = " (" + p.TooLongReason + ")"
				}
				parts = append(parts, fmt.Sprintf("%s refused for %s size by the model or its service%s: %s without a vector and not sent to it again (--retry-refused sends %s)",
					plural(p.Refusals, "text", "texts"), agree(p.Refusals, "its", "their"), why, agree(p.Refusals, "it stays", "they stay"), agree(p.Refusals, "it", "them")))
			}
			state = strings.Join(parts, "; ")
		}
		fmt.Fprintf(m.Stdout, "space %s: embedded %s in %.1fs, %s\n", sp.Name, plural(p.Embedded, "text", "texts"), time.Since(start).Seconds(), state)
	}
	if !found {
		return recall.Errorf(recall.ENOTFOUND, "no vector space %q", *spaceName)
	}
	return nil
}

// spaceUsage is each space subcommand's command line.
var spaceUsage = map[string]string{
	"list":   "space list [--json]",
	"create": "space create NAME --embedder PROVIDER [--model MODEL] [--force]",
	"use":    "space use NAME [--force]",
	"drop":   "space drop NAME",
}

func (m *Main) cmdSpace(ctx context.Context, args []string) error {
	args, err := m.globalsFirst("space", args)
	if err != nil {
		return err
	}
	usage := "usage:"
	for _, sub := range []string{"list", "create", "use", "drop"} {
		usage += "\n  recall " + spaceUsage[sub]
	}
	if len(args) == 0 {
		return usagef("space needs a subcommand: list, create, use or drop")
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(m.Stdout, usage)
		return nil
	}
	sub, args := args[0], args[1:]
	if spaceUsage[sub] == "" {
		return usagef("unknown space subcommand %q: use list, create, use or drop", sub)
	}
	// Each subcommand takes only the flags it uses.
	fs := flag.NewFlagSet("space "+sub, flag.ContinueOnError)
	var asJSON, force *bool
	switch sub {
	case "list":
		asJSON = fs.Bool("json", false, "print JSON")
	case "create":
		force = fs.Bool("force", false, "create the space even though one of the same model and size exists (its vectors are made again)")
	case "use":
		force = fs.Bool("force", false, "use the space even though its coverage is incomplete")
	}
	pos, err := m.parse(fs, args, spaceUsage[sub])
	if err != nil {
		return err
	}
	if sub == "list" {
		err = noArgs(fs.Name(), pos, "")
	} else if len(pos) != 1 {
		err = usagef("space %s takes one space NAME (got %d arguments)", sub, len(pos))
	}
	if err != nil {
		return err
	}
	if sub == "create" {
		return m.spaceCreate(ctx, pos[0], *force)
	}
	st, err := m.openExisting(ctx) // a space is made in a database, new or not, but used in one that is there
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		return m.spaceList(ctx, st, *asJSON)
	case "use":
		return m.spaceUse(ctx, st, pos[0], *force)
	}
	return m.spaceDrop(ctx, st, pos[0])
}

func (m *Main) spaceList(ctx context.Context, st recall.Store, asJSON bool) error {
	stats, err := st.Stats(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		if stats.Spaces == nil {
			stats.Spaces = []recall.SpaceStats{} // [], not null: a list, empty
		}
		return m.printJSON(stats.Spaces)
	}
	if len(stats.Spaces) == 0 {
		fmt.Fprintln(m.Stdout, "no vector spaces: a sweep, memory save or diary write with an embedding model makes the first")
	}
	for _, s := range stats.Spaces {
		read := ""
		if s.Read {
			read = "  <- searches read this space"
		}
		fmt.Fprintf(m.Stdout, "%s %s/%s %d-dim  %s, %d missing (%.1f%%)%s\n",
			padColumns(s.Name, 28), s.Provider, s.Model, s.Dim, plural(s.Vectors, "vector", "vectors"), s.Missing, 100*s.Coverage, read)
	}
	return nil
}

// spaceCreate makes the space in the database, creating it if needed,
// once the model is made and has told its vector size: a model that is
// none or cannot be reached leaves no empty database behind.
func (m *Main) spaceCreate(ctx context.Context, name string, force bool) error {
	if m.g.embedder == "" || strings.EqualFold(m.g.embedder, "none") {
		return usagef("space create needs --embedder (builtin, ollama, openai or cloudflare)")
	}
	emb, err := m.configuredEmbedder(strings.ToLower(m.g.embedder), m.g.model)
	if err != nil {
		return err
	}
	info := emb.Info()
	dim, err := embed.Dim(ctx, emb)
	if err != nil {
		return vectorSizeError(info, err)
	}
	st, err := m.openStore(ctx)
	if err != nil {
		return err
	}
	if !force {
		// A second space of one model and size holds the same vectors:
		// filling it embeds the whole archive again for nothing.
		spaces, err := st.Spaces(ctx)
		if err != nil {
			return err
		}
		for _, s := range spaces {
			if s.Provider == info.Provider && s.Model == info.Model && s.Dim == dim && s.Name != name {
				return recall.Errorf(recall.ECONFLICT, "space %s already holds %s/%s vectors of %d dimensions: use it (`recall space use %s`), or pass --force to make a second copy",
					s.Name, s.Provider, s.Model, s.Dim, s.Name)
			}
		}
	}
	sp, err := st.CreateSpace(ctx, recall.VectorSpace{Name: name, Provider: info.Provider, Model: info.Model, Dim: dim, Normalized: info.Normalized})
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "created space %s (%s/%s, %d-dim). Fill it with `recall repair --space %s`, then `recall space use %s`.\n",
		sp.Name, sp.Provider, sp.Model, sp.Dim, sp.Name, sp.Name)
	return nil
}

func (m *Main) spaceUse(ctx context.Context, st recall.Store, name string, force bool) error {
	stats, err := st.Stats(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(stats.Spaces, func(s recall.SpaceStats) bool { return s.Name == name })
	if i < 0 {
		return recall.Errorf(recall.ENOTFOUND, "no vector space %q", name)
	}
	s := stats.Spaces[i]
	if s.Missing > 0 && !force {
		return recall.Errorf(recall.ECONFLICT, "space %s is missing %s (coverage %.1f%%): run `recall repair --space %s` first, or pass --force",
			s.Name, plural(s.Missing, "vector", "vectors"), 100*s.Coverage, s.Name)
	}
	if err := st.UseSpace(ctx, s.Name); err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "searches now read space %s\n", s.Name)
	return nil
}

func (m *Main) spaceDrop(ctx context.Context, st recall.Store, name string) error {
	dropped, start := 0, time.Now()
	err := st.DropSpace(ctx, name)
	if err == nil {
		dropped = 1
	}
	m.audit("cli space drop", start, &dropped, &err)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "dropped space %s\n", name)
	return nil
}
