package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/hub"
	"github.com/recall-mcp/recall/internal/store/postgres"
	"github.com/recall-mcp/recall/internal/store/sqlite"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes.
const (
	exitOK          = 0
	exitFailure     = 1  // an error, or a sweep with failed files
	exitUsage       = 2  // bad flags or arguments
	exitBusy        = 75 // sweep --no-wait: another process is sweeping the vault (sysexits' EX_TEMPFAIL: try again later)
	exitInterrupted = 130
)

// Main is the whole program with its environment made explicit, so tests can
// run any command in-process against a temporary directory.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// IsTerminal reports whether stderr is a terminal (progress output).
	IsTerminal func() bool
	// StdinIsTerminal reports whether stdin is a terminal: someone typed
	// `recall mcp`, which waits for a client's messages there (nil: no).
	StdinIsTerminal func() bool
	// Hurry, closed at a second interrupt (main closes it), tells a
	// server stopping because Run's context ended to stop waiting for
	// requests and background work in flight, and an interrupted sweep
	// to stop committing the files it had finished.
	Hurry <-chan struct{}

	g       globals
	fusion  string // --fusion of search and eval
	serving bool   // serve or mcp: never keep a client waiting on a model
	reading bool   // a one-off command that only reads (openReading)
	asIs    bool   // check or backup: an older database is not upgraded (openAsIs)
	cfg     config
	store   recall.Store
	closers []func() error
	log     *slog.Logger

	// synopsis is the command line of the command being run ("memory save
	// KEY [flags] (VALUE | -)"), and helpFor what `recall help` takes for
	// it ("memory save"): a mistake in the command line is told with them
	// (see exit), not with the whole usage.
	synopsis string
	helpFor  string

	// grace is how long a stopping server waits for requests in flight
	// (0: server.DefaultGrace); tests lengthen it.
	grace time.Duration
	// searchWork is what a command's search budget holds beyond its wait
	// for the embedder (0: search.DefaultBudget); tests shorten it.
	searchWork time.Duration

	// dirModel is the name recall before 2026-11-30 gave the model loaded
	// from a directory (the directory's name); legacySpaces remembers which
	// spaces of that name proved to be this model's (see madeSpace).
	dirModel     string
	legacySpaces map[string]bool
}

// globals are the flags every command accepts.
type globals struct {
	db       string
	embedder string
	model    string
	config   string
}

// NewMain returns a Main wired to the process's standard streams.
func NewMain() *Main {
	return &Main{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		IsTerminal:      func() bool { return isTerminal(os.Stderr) },
		StdinIsTerminal: func() bool { return isTerminal(os.Stdin) },
	}
}

type command struct {
	name    string
	summary string
	run     func(m *Main, ctx context.Context, args []string) error
	// synopsis is the command line of a command with subcommands, for a
	// mistake before the subcommand; every other command line is the one
	// its flags are parsed with (see parse).
	synopsis string
}

func commands() []command {
	return []command{
		{"sweep", "ingest a vault of conversations (only new or changed files)", (*Main).cmdSweep, ""},
		{"search", "search the archive (and memories)", (*Main).cmdSearch, ""},
		{"context", "show the chunks around a search result", (*Main).cmdContext, ""},
		{"stats", "show what the store holds", (*Main).cmdStats, ""},
		{"check", "check the whole database for damage and broken invariants", (*Main).cmdCheck, ""},
		{"eval", "measure retrieval quality on a query set", (*Main).cmdEval, ""},
		{"memory", "save, get, delete and find key-value memories", (*Main).cmdMemory, "memory (save | get | delete | find) [flags] [args]"},
		{"diary", "write and read dated diary entries", (*Main).cmdDiary, "diary (write | read | recent) [flags] [args]"},
		{"repair", "embed chunks that lack vectors (resumable)", (*Main).cmdRepair, ""},
		{"model", "list installed models, pull a known model", (*Main).cmdModel, "model (list | pull NAME)"},
		{"space", "list, create, use and drop vector spaces (switch models without downtime)", (*Main).cmdSpace, "space (list | create | use | drop) [flags] [NAME]"},
		{"serve", "serve MCP (Streamable HTTP at /mcp), the REST API and /ingest", (*Main).cmdServe, ""},
		{"mcp", "serve MCP over stdin/stdout for a local client", (*Main).cmdMCP, ""},
		{"token", "print a fresh random access token (recall token new)", (*Main).cmdToken, ""},
		{"export", "write every source with its chunks as JSONL", (*Main).cmdExport, ""},
		{"backup", "copy the database whole, vectors included, while it is in use", (*Main).cmdBackup, ""},
		{"import", "restore sources from an export file", (*Main).cmdImport, ""},
		{"version", "print the version", (*Main).cmdVersion, ""},
	}
}

// Run runs one command line and returns the process exit status.
func (m *Main) Run(ctx context.Context, args []string) int {
	if m.Getenv == nil {
		m.Getenv = func(string) string { return "" }
	}
	if m.IsTerminal == nil {
		m.IsTerminal = func() bool { return false }
	}
	m.log = slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	fs := flag.NewFlagSet("recall", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	m.globalFlags(fs)
	// `recall --version` is what most tools answer; it was an unknown flag
	// followed by the whole usage.
	showVersion := fs.Bool("version", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			m.usage(m.Stdout)
			return exitOK
		}
		hint := ""
		if strings.HasPrefix(err.Error(), "flag provided but not defined") {
			// `recall --json stats`: the flag is probably the command's.
			hint = ": only the global flags go before the command, its own after it (recall <command> -h lists them)"
		}
		fmt.Fprintf(m.Stderr, "recall: %s%s\n", flagMistake(fs, err), hint)
		m.shortUsage() // stdout is the data channel: a mistake prints nothing there
		return exitUsage
	}
	rest := fs.Args()
	if *showVersion {
		if len(rest) > 0 {
			fmt.Fprintf(m.Stderr, "recall: --version takes no command, got %q: use `recall version`\n", rest[0])
			return exitUsage
		}
		return m.exit(m.cmdVersion(ctx, nil))
	}
	if len(rest) > 0 {
		if path, ok := configFlag(rest[1:]); ok {
			m.g.config = path // read it instead of RECALL_CONFIG or the default file
		}
	}
	cfg, err := m.loadConfig()
	if err != nil {
		fmt.Fprintf(m.Stderr, "recall: %v\n", err)
		// A mistake in the file, or a file named that does not exist, is
		// the command line's; one that cannot be read (a folder, no
		// permission) is a failure, as an unreadable database is.
		var ue usageError
		if errors.As(err, &ue) || errors.Is(err, os.ErrNotExist) {
			return exitUsage
		}
		return exitFailure
	}
	m.cfg = cfg
	if len(rest) == 0 {
		// No command is a mistake, as an unknown one is: a script that
		// lost its arguments must not pass for one that ran.
		fmt.Fprintln(m.Stderr, "recall: no command given")
		m.shortUsage()
		return exitUsage
	}
	if rest[0] == "help" {
		if len(rest) > 1 {
			// `recall help memory save` is memory save's help, not memory's.
			return m.Run(ctx, append(slices.Clone(rest[1:]), "-h"))
		}
		m.usage(m.Stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == rest[0] {
			m.synopsis, m.helpFor = cmp.Or(c.synopsis, c.name), c.name
			return m.exit(c.run(m, ctx, rest[1:]))
		}
	}
	fmt.Fprintf(m.Stderr, "recall: unknown command %q%s\n", rest[0], suggestCommand(rest[0]))
	m.shortUsage()
	return exitUsage
}

// shortUsage follows a mistake made before any command: the command line's
// shape and where the rest is, on stderr. The whole usage, 30 lines, hid
// the one line that said what was wrong.
func (m *Main) shortUsage() {
	fmt.Fprintln(m.Stderr, "usage: recall [global flags] <command> [flags] [args]")
	fmt.Fprintln(m.Stderr, "run `recall help` for the commands")
}

// suggestCommand names the command a mistyped one was probably meant to
// be (`recall serach`), as " (did you mean search?)", or "" when none is
// close: within two edits, or a word people reach for (ingest, index).
func suggestCommand(typed string) string {
	aliases := map[string]string{"ingest": "sweep", "index": "sweep", "find": "search", "query": "search", "server": "serve", "status": "stats"}
	if c, ok := aliases[strings.ToLower(typed)]; ok {
		return " (did you mean " + c + "?)"
	}
	best, bestDist := "", 3
	for _, c := range commands() {
		if d := editDistance(strings.ToLower(typed), c.name); d < bestDist {
			best, bestDist = c.name, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// editDistance is the Levenshtein distance between a and b, by bytes
// (command names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Close releases what Run opened.
func (m *Main) Close() error {
	var errs []error
	for i := len(m.closers) - 1; i >= 0; i-- {
		errs = append(errs, m.closers[i]())
	}
	m.closers = nil
	return errors.Join(errs...)
}

// usageError is a mistake in the command line, or in a setting: exit
// status 2.
type usageError struct {
	msg string
	// setting: the mistake is in a setting (the environment, the config
	// file, or the embedder, model or database a flag names), which the
	// command's synopsis does not show: it is not printed after it.
	setting bool
}

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{msg: fmt.Sprintf(format, args...)} }

// settingf is the usage error of a setting's bad value.
func settingf(format string, args ...any) error {
	return usageError{msg: fmt.Sprintf(format, args...), setting: true}
}

// inputError makes a refusal of what the command line gave a command (a
// query, key or value that is malformed or over its limit: EINVALID,
// ETOOLARGE) a usage error, as a bad flag value is. Other errors pass.
func inputError(err error) error {
	switch recall.ErrorCode(err) {
	case recall.EINVALID, recall.ETOOLARGE:
		return usagef("%s", recall.ErrorMessage(err))
	}
	return err
}

// settingError is inputError for a setting's value refused (see settingf).
func settingError(err error) error {
	switch recall.ErrorCode(err) {
	case recall.EINVALID, recall.ETOOLARGE:
		return settingf("%s", recall.ErrorMessage(err))
	}
	return err
}

// exitError carries a status without a message (already reported).
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit %d", int(e)) }

func (m *Main) exit(err error) int {
	if err == nil {
		return exitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		return int(ee)
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		// The mistake, the command's synopsis and where its help is: the
		// help itself is for -h (stdout, exit 0).
		fmt.Fprintf(m.Stderr, "recall: %s\n", ue.msg)
		if !ue.setting && m.helpFor != "" {
			fmt.Fprintf(m.Stderr, "usage: recall %s\nrun `recall help %s` for more\n", m.synopsis, m.helpFor)
		}
		return exitUsage
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(m.Stderr, "recall: interrupted")
		return exitInterrupted
	}
	var re *recall.Error
	if errors.As(err, &re) {
		fmt.Fprintf(m.Stderr, "recall: %s\n", err)
	} else {
		fmt.Fprintf(m.Stderr, "recall: %v\n", err)
	}
	return exitFailure
}

func (m *Main) globalFlags(fs *flag.FlagSet) {
	// The help shows where the database is when nothing names one, as this
	// environment resolves it (`recall stats` then finds it there).
	dbDefault := "recall.db in the user's data directory"
	if dir, err := m.dataDir(); err == nil {
		dbDefault = filepath.Join(dir, "recall.db")
	}
	fs.StringVar(&m.g.db, "db", m.g.db, "database `path`, or a postgres:// URL (env RECALL_DB; default "+dbDefault+")")
	fs.StringVar(&m.g.embedder, "embedder", m.g.embedder, "embedding `provider`: builtin, ollama, openai, cloudflare or none (env RECALL_EMBEDDER; default builtin)")
	fs.StringVar(&m.g.model, "model", m.g.model, "embedding model `name or directory` (env RECALL_MODEL; default "+hub.DefaultModel+" for builtin, bge-m3 for ollama, text-embedding-3-small for openai, @cf/baai/bge-m3 for cloudflare)")
	fs.StringVar(&m.g.config, "config", m.g.config, "config file `path` (env RECALL_CONFIG; default $XDG_CONFIG_HOME/recall/config, else ~/.config/recall/config)")
}

// parse parses a subcommand's flags, accepting flags before, between and
// after positional arguments, and the global flags anywhere.
func (m *Main) parse(fs *flag.FlagSet, args []string, usage string) ([]string, error) {
	m.globalFlags(fs)
	fs.SetOutput(io.Discard)
	first, _, _ := strings.Cut(usage, "\n")
	m.synopsis, m.helpFor = first, fs.Name()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				m.subUsage(fs, usage)
				return nil, flag.ErrHelp
			}
			return nil, usagef("%s", flagMistake(fs, err))
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			// Parse stopped at "--" (and ate it): what follows is positional.
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return pos, m.checkSettings()
}

// checkSettings refuses a bad value of a checked setting (checkSetting)
// given by a flag or the environment, whatever the command: the config
// file's are refused as it is read, and a command that does not use the
// setting took a flag's or the environment's silently (`recall --embedder
// bogus stats` ran). Every command's flags pass through parse, which
// calls it.
func (m *Main) checkSettings() error {
	flags := map[string]string{"embedder": m.g.embedder, "fusion": m.fusion}
	for _, k := range slices.Sorted(maps.Keys(checkSetting)) {
		if v := flags[k]; v != "" {
			if err := checkSetting[k](v); err != nil {
				return settingf("--%s: %v", k, err)
			}
		}
		env := "RECALL_" + strings.ToUpper(k)
		if v := strings.TrimSpace(m.Getenv(env)); v != "" {
			if err := checkSetting[k](v); err != nil {
				return settingf("%s: %v", env, err)
			}
		}
	}
	return nil
}

// globalsFirst reads the global flags given before a subcommand (`recall
// memory --db X save …`: every command takes them, and a command with
// subcommands took them only after its subcommand) and returns the
// arguments from the subcommand on. -h there asks for the command's help.
func (m *Main) globalsFirst(name string, args []string) ([]string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	m.globalFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return []string{"-h"}, nil
		}
		return nil, usagef("%s: only the global flags (--db, --embedder, --model, --config) go before the subcommand, its own after it", flagMistake(fs, err))
	}
	return fs.Args(), nil
}

// flagMistakes are the flag package's errors, which write a flag -name
// and say "parse error" of a value without saying what it should be.
var flagMistakes = []struct {
	re   *regexp.Regexp
	repl func(fs *flag.FlagSet, m []string) string
}{
	{regexp.MustCompile(`^flag provided but not defined: -(.*)$`), func(_ *flag.FlagSet, m []string) string {
		return "unknown flag --" + m[1]
	}},
	{regexp.MustCompile(`^flag needs an argument: -(.*)$`), func(_ *flag.FlagSet, m []string) string {
		return "--" + m[1] + " needs a value"
	}},
	{regexp.MustCompile(`^invalid boolean (?:value (".*") for -|flag )([^:=]*)(?:=.*)?: .*$`), func(_ *flag.FlagSet, m []string) string {
		return "--" + m[2] + " takes no value (or =true, =false)"
	}},
	{regexp.MustCompile(`^invalid value (".*") for flag -([^:]*): (.*)$`), func(fs *flag.FlagSet, m []string) string {
		why := m[3]
		if why == "parse error" {
			why = "not a number"
			if f := fs.Lookup(m[2]); f != nil {
				if g, ok := f.Value.(flag.Getter); ok {
					switch g.Get().(type) {
					case time.Duration:
						why = "not a duration such as 90s, 10m or 2h"
					case int, int64, uint, uint64:
						why = "not a whole number"
					}
				}
			}
		}
		return "--" + m[2] + " " + m[1] + ": " + why
	}},
}

// flagMistake is the message of fs's error parsing its flags, written as
// recall writes flags (--name) and saying what a value should be.
func flagMistake(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	for _, fm := range flagMistakes {
		if m := fm.re.FindStringSubmatch(msg); m != nil {
			return fm.repl(fs, m)
		}
	}
	return msg
}

// configFlag finds a --config given after the command (the last one, as
// the command's own parsing would), before the config file is read: the
// file it names is read instead of RECALL_CONFIG's or the default one,
// which may be broken. Arguments after "--" are not flags.
func configFlag(args []string) (path string, found bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "config" {
			continue
		}
		if !hasValue {
			if i+1 == len(args) {
				break // the command's parsing reports the missing value
			}
			i++
			value = args[i]
		}
		path, found = value, true
	}
	return path, found
}

// parseNone parses the flags of a command that takes no arguments. An extra
// word is refused, not ignored: `recall export backup.jsonl` wrote to stdout
// and created no file. hint says what was probably meant ("" for none).
func (m *Main) parseNone(fs *flag.FlagSet, args []string, usage, hint string) error {
	pos, err := m.parse(fs, args, usage)
	if err != nil {
		return err
	}
	return noArgs(fs.Name(), pos, hint)
}

// noArgs is the usage error for positional arguments a command does not take.
func noArgs(name string, pos []string, hint string) error {
	if len(pos) == 0 {
		return nil
	}
	if hint != "" {
		hint = ": " + hint
	}
	return usagef("%s takes no arguments, got %q%s", name, pos[0], hint)
}

func (m *Main) subUsage(fs *flag.FlagSet, usage string) {
	fmt.Fprintf(m.Stdout, "usage: recall %s\n\nflags:\n", usage)
	printFlags(m.Stdout, fs)
}

// printFlags lists fs's flags as flag.PrintDefaults does, but written
// --name, as the usage lines, the errors and README write them (the
// package's -name made two spellings of every flag on one screen).
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		line += "\n    \t" + usage
		switch f.DefValue {
		case "", "0", "false":
		default:
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				line += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				line += " (default " + f.DefValue + ")"
			}
		}
		fmt.Fprintln(w, line)
	})
}

// usage prints the commands and global flags to w: stdout when asked for,
// stderr after a mistake.
func (m *Main) usage(w io.Writer) {
	fmt.Fprintln(w, "recall: a searchable long-term memory for AI assistants")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: recall [global flags] <command> [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "global flags (accepted by every command):")
	fmt.Fprintln(w, "  --db PATH|URL    database file, or postgres://user@host/db for PostgreSQL (env RECALL_DB)")
	fmt.Fprintln(w, "  --embedder NAME  builtin, ollama, openai, cloudflare or none (env RECALL_EMBEDDER)")
	fmt.Fprintln(w, "  --model NAME     embedding model name or directory (env RECALL_MODEL)")
	fmt.Fprintln(w, "  --config PATH    config file (env RECALL_CONFIG)")
	fmt.Fprintln(w, "  --version        print the version, as `recall version` does")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `recall <command> -h` for a command's flags.")
}

// dbPath resolves the database location: --db, RECALL_DB, then the user's
// data directory (XDG_DATA_HOME on Linux).
func (m *Main) dbPath() (string, error) {
	if p := m.setting(m.g.db, "db", ""); p != "" {
		return p, nil
	}
	dir, err := m.dataDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "recall.db"), nil
}

// dataDir is where recall keeps its database and models by default:
// $XDG_DATA_HOME/recall (an absolute one, as the XDG spec asks), else the
// platform's place for application data.
func (m *Main) dataDir() (string, error) {
	if d := m.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "recall"), nil
	}
	home, err := m.homeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find a data directory: set --db or RECALL_DB: %w", err)
	}
	switch runtime.GOOS {
	case "darwin":
		return filepath.Join(home, "Library", "Application Support", "recall"), nil
	case "windows":
		if d := m.Getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "recall"), nil
		}
	}
	return filepath.Join(home, ".local", "share", "recall"), nil
}

// homeDir is the user's home directory: HOME as Main sees it, else the
// system's idea of it.
func (m *Main) homeDir() (string, error) {
	if home := m.Getenv("HOME"); home != "" {
		return home, nil
	}
	return os.UserHomeDir()
}

// sitePackages lists the directories where pip may have installed a
// package that ships a known model (see hub.SitePackages).
func (m *Main) sitePackages() []string {
	home, _ := m.homeDir()
	return hub.SitePackages(m.Getenv, home)
}

// isPostgres reports whether a --db / RECALL_DB value names a PostgreSQL
// database rather than a SQLite file: a postgres:// or postgresql:// URL
// (any case), or a libpq key=value string ("host=db dbname=recall"), which
// is never taken for a file name (a file named after it, password and all,
// is not what anyone means).
func isPostgres(loc string) bool {
	l := strings.ToLower(strings.TrimSpace(loc))
	if strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://") {
		return true
	}
	return pgKeyValue.MatchString(l)
}

// pgKeyValue matches a connection string of libpq's key=value form.
var pgKeyValue = regexp.MustCompile(`^(host|hostaddr|port|dbname|user|password|passfile|sslmode|service|connect_timeout|options|application_name)\s*=`)

// dbDisplay is the database location as recall prints it: a connection
// string's password is never shown.
func dbDisplay(loc string) string {
	if !isPostgres(loc) {
		return loc
	}
	return postgres.Describe(loc)
}

// stateDir is the folder for the files that accompany the database
// (sweep.log, eval results, remote manifests): the database file's folder,
// or the data directory when the database is PostgreSQL.
func (m *Main) stateDir() (string, error) {
	loc, err := m.dbPath()
	if err != nil {
		return "", err
	}
	if isPostgres(loc) {
		return m.dataDir()
	}
	return filepath.Dir(loc), nil
}

// openStore opens (creating if needed) the database once per run.
func (m *Main) openStore(ctx context.Context) (recall.Store, error) {
	return m.open(ctx, false)
}

func (m *Main) open(ctx context.Context, existing bool) (recall.Store, error) {
	if m.store != nil {
		return m.store, nil
	}
	loc, err := m.dbPath()
	if err != nil {
		return nil, err
	}
	var st recall.Store
	if isPostgres(loc) {
		if err := postgres.CheckDSN(loc); err != nil {
			return nil, settingf("%s", recall.ErrorMessage(err)) // a mistake in --db or RECALL_DB
		}
		st, err = postgres.Open(ctx, loc, postgres.Options{Existing: existing, KeepSchema: m.asIs, Upgrading: func(from, to int) {
			fmt.Fprintf(m.Stderr, "recall: upgrading %s from schema version %d to %d (older versions of recall cannot open it afterwards)\n",
				postgres.Describe(loc), from, to)
		}})
	} else {
		st, err = sqlite.Open(ctx, loc, sqlite.Options{Check: m.checkMode(), KeepSchema: m.asIs, Upgrading: func(from, to int) {
			fmt.Fprintf(m.Stderr, "recall: upgrading %s from schema version %d to %d (older versions of recall cannot open it afterwards); "+
				"with a large archive this takes a while\n", loc, from, to)
		}, Resuming: func(from, to int) {
			fmt.Fprintf(m.Stderr, "recall: completing the interrupted upgrade of %s (schema version %d to %d)\n", loc, from, to)
		}})
	}
	if err != nil {
		return nil, err
	}
	m.store = st
	m.closers = append(m.closers, st.Close)
	return st, nil
}

// openExisting opens the database for a command that only reads it (or
// changes what must already be there): one that does not exist is refused,
// not created empty, so a mistyped --db is not answered "no results" (a
// PostgreSQL database recall has not set up, likewise).
func (m *Main) openExisting(ctx context.Context) (recall.Store, error) {
	if m.store == nil {
		loc, err := m.dbPath()
		if err != nil {
			return nil, err
		}
		if !isPostgres(loc) {
			if _, err := os.Stat(loc); errors.Is(err, os.ErrNotExist) {
				return nil, recall.Errorf(recall.ENOTFOUND, "no database at %s: sweep a vault or save a memory first, or check --db / RECALL_DB", loc)
			}
		}
	}
	return m.open(ctx, true)
}

// openReading opens the database for a one-off command that only reads
// it: SQLite checks the pages the command reads, not the whole file (see
// sqlite.CheckOnRead), so a search of a large store does not
// first read all of it.
func (m *Main) openReading(ctx context.Context) (recall.Store, error) {
	if m.store == nil {
		m.reading = true
	}
	return m.openExisting(ctx)
}

// openAsIs opens the database for a command that reads the whole file,
// whatever its schema version (check, backup): a database an older recall
// wrote stays as it is, not upgraded, so a backup made before an upgrade
// opens in that recall, and a check changes nothing.
func (m *Main) openAsIs(ctx context.Context) (recall.Store, error) {
	if m.store == nil {
		m.asIs = true
	}
	return m.openReading(ctx)
}

// olderSchema names the schema of a store openAsIs left as an older
// recall wrote it ("version 5 of 7"), "" when it is this binary's.
func olderSchema(st recall.Store) string {
	if o, ok := st.(interface{ OlderSchema() (string, bool) }); ok {
		if schema, older := o.OlderSchema(); older {
			return schema
		}
	}
	return ""
}

// upgradeInterrupted reports whether the older schema of a store openAsIs
// left as it is (olderSchema) is where an upgrade that stopped part-way
// left it, a first open's included, not an older recall's: the next
// command that writes completes it. Only SQLite applies migrations one
// transaction each; PostgreSQL applies them all in one.
func upgradeInterrupted(st recall.Store) bool {
	u, ok := st.(interface{ UpgradeInterrupted() bool })
	return ok && u.UpgradeInterrupted()
}

// checkMode is how much of a SQLite file Open checks: a server opens at
// once and checks the whole file in the background (a client that starts
// it waits on initialize), a one-off read checks what it reads, a command
// that writes checks everything first.
func (m *Main) checkMode() sqlite.CheckMode {
	switch {
	case m.serving:
		return sqlite.CheckInBackground
	case m.reading:
		return sqlite.CheckOnRead
	}
	return sqlite.CheckAtOpen
}

// env returns the first non-empty of a flag value and an environment variable.
func (m *Main) env(flagValue, name string) string {
	if flagValue != "" {
		return flagValue
	}
	return strings.TrimSpace(m.Getenv(name))
}

func (m *Main) cmdVersion(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := m.parseNone(fs, args, "version", ""); err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "recall %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
