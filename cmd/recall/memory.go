package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/chunk"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/server"
	"github.com/rivo/uniseg"
)

// memoryService builds the memory service over the configured store and
// embedder; open is m.openStore for a command that writes, creating the
// database if needed, m.openReading for one that only reads, else
// m.openExisting.
func (m *Main) memoryService(ctx context.Context, open func(context.Context) (recall.Store, error)) (*memory.Service, error) {
	if err := m.checkModel(); err != nil {
		return nil, err
	}
	st, err := open(ctx)
	if err != nil {
		return nil, err
	}
	eng, emb, space, err := m.engine(ctx, st, noVectors)
	if err != nil {
		return nil, err
	}
	opt, err := m.memoryOptions(ctx, st, emb, space)
	if err != nil {
		return nil, err
	}
	return memory.New(st, eng, opt), nil
}

// memoryOptions are the memory service's settings: time zone and the key
// prefixes that give categories (RECALL_CATEGORIES / config `categories`,
// e.g. "project_=project, proj_=project, person_=person").
func (m *Main) memoryOptions(ctx context.Context, st recall.Store, emb recall.Embedder, space string) (memory.Options, error) {
	loc, err := m.location()
	if err != nil {
		return memory.Options{}, err
	}
	dim, err := spaceDim(ctx, st, space)
	if err != nil {
		return memory.Options{}, err
	}
	opt := memory.Options{Embedder: emb, Space: space, Dim: dim, Chunk: chunk.Options{}, Location: loc}
	if spec := m.setting("", "categories", ""); spec != "" {
		if opt.Categories, err = parseCategories(spec); err != nil {
			return memory.Options{}, settingf("categories: %v", err)
		}
	}
	return opt, nil
}

// parseCategories reads a categories setting: "prefix=category" pairs
// separated by commas.
func parseCategories(spec string) ([]memory.CategoryRule, error) {
	var rules []memory.CategoryRule
	for _, pair := range strings.Split(spec, ",") {
		prefix, cat, ok := strings.Cut(strings.TrimSpace(pair), "=")
		prefix, cat = strings.TrimSpace(prefix), strings.TrimSpace(cat)
		if !ok || prefix == "" || cat == "" {
			return nil, fmt.Errorf("%q is not prefix=category", pair)
		}
		rules = append(rules, memory.CategoryRule{Prefix: prefix, Category: cat})
	}
	return rules, nil
}

// location is the configured time zone for "today" (RECALL_TIMEZONE, default local).
func (m *Main) location() (*time.Location, error) {
	tz := m.setting("", "timezone", "")
	if tz == "" {
		return time.Local, nil
	}
	if err := checkSetting["timezone"](tz); err != nil {
		return nil, settingf("%v", err)
	}
	return time.LoadLocation(tz)
}

// cliScope: the command line is the database's owner, so it acts as admin in
// the owner namespace it names.
func cliScope() memory.Scope { return memory.Scope{Admin: true} }

func (m *Main) printJSON(v any) error {
	enc := json.NewEncoder(m.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// readValue returns the value argument, or stdin for "-".
func (m *Main) readValue(arg string) (string, error) {
	if arg != "-" {
		return arg, nil
	}
	const most = 4 * memory.MaxValueLen // bytes MaxValueLen characters can take
	b, err := io.ReadAll(io.LimitReader(m.Stdin, most+1))
	if err != nil {
		return "", err
	}
	if len(b) > most {
		// Said here: the cut may split a character, and the value would
		// be refused as not UTF-8 rather than as too long.
		return "", recall.Errorf(recall.ETOOLARGE, "the value on standard input is over %d bytes; the limit is %d characters", most, memory.MaxValueLen)
	}
	return strings.TrimRight(string(b), "\n"), nil
}

func (m *Main) cmdMemory(ctx context.Context, args []string) error {
	args, err := m.globalsFirst("memory", args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usagef("memory needs a subcommand: save, get, delete or find")
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(m.Stdout, `usage:
  recall memory save KEY [--category C] [--owner O] [--date YYYY-MM-DD] [--json] (VALUE | -)
  recall memory get KEY [--owner O] [--json]
  recall memory delete KEY --confirm [--owner O] [--json]
  recall memory find [--prefix P] [--category C] [--owner O] [--since D] [--until D] [--limit N] [--cursor C] [--json]`)
		return nil
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("memory "+sub, flag.ContinueOnError)
	owner := fs.String("owner", "", "the `OWNER` whose memories and diary these are (default: unowned)")
	asJSON := fs.Bool("json", false, "print JSON")
	switch sub {
	case "save":
		category := fs.String("category", "", "the memory's `CATEGORY` (default: the saved memory's; for a new key, from the key prefix)")
		date := fs.String("date", "", "date of the memory, `YYYY-MM-DD` (default: the saved memory's; today for a new key)")
		pos, err := m.parse(fs, args, "memory save KEY [flags] (VALUE | -)")
		if err != nil {
			return err
		}
		if len(pos) != 2 {
			return usagef("memory save takes KEY and VALUE (or - to read the value from stdin)")
		}
		value, err := m.readValue(pos[1])
		if err != nil {
			return inputError(err)
		}
		svc, err := m.memoryService(ctx, m.openStore)
		if err != nil {
			return err
		}
		res, err := svc.Save(ctx, memory.SaveRequest{Key: pos[0], Value: value, Category: *category, Owner: *owner, Date: *date}, cliScope())
		if err != nil {
			return inputError(err)
		}
		m.indexPending(res.IndexError)
		if *asJSON {
			return m.printJSON(res)
		}
		fmt.Fprintf(m.Stdout, "saved %s: %s, index %s\n", res.Key, plural(res.Chunks, "chunk", "chunks"), res.Index)
		return nil
	case "get":
		pos, err := m.parse(fs, args, "memory get KEY [--owner O] [--json]")
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usagef("memory get takes one KEY")
		}
		svc, err := m.memoryService(ctx, m.openReading)
		if err != nil {
			return err
		}
		mem, err := svc.Read(ctx, pos[0], *owner, cliScope())
		if err != nil {
			return inputError(m.ownerHint(ctx, err, *owner, recall.KindMemory, pos[0]))
		}
		if *asJSON {
			return m.printJSON(mem)
		}
		fmt.Fprintln(m.Stdout, mem.Value)
		return nil
	case "delete":
		confirm := fs.Bool("confirm", false, "really delete (required)")
		pos, err := m.parse(fs, args, "memory delete KEY --confirm [--owner O] [--json]")
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usagef("memory delete takes one KEY")
		}
		if !*confirm {
			// The service's refusal speaks to MCP and REST clients; here the switch is a flag.
			if err := memory.ValidateKey(pos[0]); err != nil {
				return inputError(err)
			}
			return usagef("deleting %q cannot be undone: run again with --confirm", pos[0])
		}
		svc, err := m.memoryService(ctx, m.openExisting)
		if err != nil {
			return err
		}
		deleted, start := 0, time.Now()
		err = svc.Delete(ctx, pos[0], *owner, *confirm, cliScope())
		if err == nil {
			deleted = 1
		}
		m.audit("cli memory delete", start, &deleted, &err)
		if err != nil {
			return inputError(m.ownerHint(ctx, err, *owner, recall.KindMemory, pos[0]))
		}
		if *asJSON { // what delete_memory and the REST API answer
			return m.printJSON(server.DeleteOutput{Key: pos[0], Deleted: true})
		}
		fmt.Fprintf(m.Stdout, "deleted %s\n", pos[0])
		return nil
	case "find":
		prefix := fs.String("prefix", "", "keys starting with `P`")
		category := fs.String("category", "", "only this `CATEGORY`")
		since := fs.String("since", "", "dated on or after `DATE`")
		until := fs.String("until", "", "dated on or before `DATE`")
		limit := fs.Int("limit", 20, "page size (at most 20)")
		cursor := fs.String("cursor", "", "continue after a previous page: the `CURSOR` it printed")
		if err := m.parseNone(fs, args, "memory find [flags]", "use --prefix P for keys starting with P"); err != nil {
			return err
		}
		if *limit < 1 || *limit > memory.MaxFindLimit { // 0 would mean the service's default
			return usagef("--limit must be between 1 and %d, got %d", memory.MaxFindLimit, *limit)
		}
		svc, err := m.memoryService(ctx, m.openReading)
		if err != nil {
			return err
		}
		page, err := svc.Find(ctx, memory.FindRequest{Prefix: *prefix, Category: *category, Owner: *owner,
			Since: *since, Until: *until, Limit: *limit, Cursor: *cursor}, cliScope())
		if err != nil {
			return inputError(err)
		}
		if *asJSON {
			return m.printJSON(page)
		}
		if len(page.Items) == 0 && *cursor == "" {
			// Said, as search says "no results": a silent exit 0 read as
			// a command that did nothing.
			fmt.Fprintln(m.Stdout, "no memories match")
		}
		for _, it := range page.Items {
			fmt.Fprintf(m.Stdout, "%s %s %s  %s\n", padColumns(it.Key, 32), padColumns(it.Category, 10), it.Date, it.Preview)
		}
		if page.Next != "" {
			fmt.Fprintf(m.Stdout, "(more: --cursor %s)\n", page.Next)
		}
		return nil
	}
	return usagef("unknown memory subcommand %q: use save, get, delete or find", sub)
}

func (m *Main) cmdDiary(ctx context.Context, args []string) error {
	args, err := m.globalsFirst("diary", args)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usagef("diary needs a subcommand: write, read or recent")
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(m.Stdout, `usage:
  recall diary write [--date YYYY-MM-DD] [--replace] [--owner O] [--json] (TEXT | -)
  recall diary read DATE [--owner O] [--json]
  recall diary recent [--days N] [--owner O] [--json]`)
		return nil
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("diary "+sub, flag.ContinueOnError)
	owner := fs.String("owner", "", "the `OWNER` whose memories and diary these are (default: unowned)")
	asJSON := fs.Bool("json", false, "print JSON")
	// --json prints what the REST API and the MCP tools answer: a day for
	// read, {"days": [...]} for recent.
	printDays := func(days []memory.Day, asAPI any) error {
		if *asJSON {
			return m.printJSON(asAPI)
		}
		for _, d := range days {
			fmt.Fprintf(m.Stdout, "== %s\n", d.Date)
			for _, e := range d.Entries {
				fmt.Fprintf(m.Stdout, "[%s] %s\n", e.Time, e.Text)
			}
		}
		return nil
	}
	switch sub {
	case "write":
		date := fs.String("date", "", "day to write to, `YYYY-MM-DD` (default today)")
		replace := fs.Bool("replace", false, "replace the whole day instead of appending")
		pos, err := m.parse(fs, args, "diary write [flags] (TEXT | -)")
		if err != nil {
			return err
		}
		if len(pos) == 0 {
			return usagef("diary write needs TEXT (or - for stdin)")
		}
		text, err := m.readValue(strings.Join(pos, " "))
		if err != nil {
			return inputError(err)
		}
		svc, err := m.memoryService(ctx, m.openStore)
		if err != nil {
			return err
		}
		res, err := svc.WriteDiary(ctx, text, *date, *owner, *replace, cliScope())
		if err != nil {
			return inputError(err)
		}
		m.indexPending(res.IndexError)
		if *asJSON {
			return m.printJSON(res)
		}
		fmt.Fprintf(m.Stdout, "%s now holds %s (index %s)\n", res.Source, plural(res.Entries, "entry", "entries"), res.Index)
		return nil
	case "read":
		pos, err := m.parse(fs, args, "diary read DATE [--owner O] [--json]")
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usagef("diary read takes one DATE")
		}
		svc, err := m.memoryService(ctx, m.openReading)
		if err != nil {
			return err
		}
		d, err := svc.ReadDiary(ctx, pos[0], *owner, cliScope())
		if err != nil {
			return inputError(m.ownerHint(ctx, err, *owner, recall.KindDiary, "diary/"+pos[0]))
		}
		return printDays([]memory.Day{d}, d)
	case "recent":
		days := fs.Int("days", 7, "how many days back (at most 30)")
		if err := m.parseNone(fs, args, "diary recent [--days N] [--owner O] [--json]", "use --days N for the last N days"); err != nil {
			return err
		}
		if *days < 1 || *days > memory.MaxRecentDays { // 0 would mean the service's default
			return usagef("--days must be between 1 and %d, got %d", memory.MaxRecentDays, *days)
		}
		svc, err := m.memoryService(ctx, m.openReading)
		if err != nil {
			return err
		}
		ds, err := svc.RecentDiary(ctx, *days, *owner, cliScope())
		if err != nil {
			return inputError(err)
		}
		if ds == nil {
			ds = []memory.Day{}
		}
		if len(ds) == 0 && !*asJSON {
			fmt.Fprintf(m.Stdout, "no diary entries in the last %s\n", plural(*days, "day", "days"))
			return nil
		}
		return printDays(ds, struct {
			Days []memory.Day `json:"days"`
		}{ds})
	}
	return usagef("unknown diary subcommand %q: use write, read or recent", sub)
}

// ownerHint adds to a "not found" of a memory or diary day named without
// --owner (name as a client names it: "plan", "diary/2026-01-05") the
// owners who hold one of that name, as a search result shows them. The
// command line is the database's owner and may name them; the server and
// its MCP tools never do, as another owner's key must read exactly like a
// missing one there.
func (m *Main) ownerHint(ctx context.Context, err error, owner string, kind recall.Kind, name string) error {
	if owner != "" || !recall.IsNotFound(err) || m.store == nil {
		return err
	}
	owners, oerr := memory.OwnersOf(ctx, m.store, kind, name)
	switch {
	case oerr != nil || len(owners) == 0:
		return err
	case len(owners) == 1:
		return recall.Errorf(recall.ENOTFOUND, "%s without an owner; owner %s has one: add --owner %s", recall.ErrorMessage(err), owners[0], owners[0])
	}
	return recall.Errorf(recall.ENOTFOUND, "%s without an owner; owners %s each have one: add --owner with one of them", recall.ErrorMessage(err), strings.Join(owners, ", "))
}

// indexPending says on stderr why a memory or diary day was stored
// without its vectors ("index pending" alone leaves the user guessing
// between a wrong key, an embedder down and a model missing).
func (m *Main) indexPending(why error) {
	if why != nil {
		fmt.Fprintf(m.Stderr, "recall: stored without its vectors, searchable by text only until `recall repair` embeds it once the embedder works: %v\n", why)
	}
}

// padColumns pads s with spaces to cols columns of a terminal. fmt's %-32s
// counts characters, and a Chinese or Japanese character takes two
// columns, so keys in those scripts pushed the columns after them out of
// line.
func padColumns(s string, cols int) string {
	return s + strings.Repeat(" ", max(0, cols-uniseg.StringWidth(s)))
}
