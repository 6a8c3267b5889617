package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/memory"
	"github.com/recall-mcp/recall/internal/server"
)

// stringList is a flag that may be given several times.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// serveUsage heads serve -h. Tokens are settings, not flags (a flag's
// value shows in the process list), so the help names them: it named none,
// and a user reading it could not learn how to require one.
const serveUsage = `serve [flags]

Clients send "Authorization: Bearer <token>". Tokens are set in the environment
or the config file, never as flags:
  RECALL_TOKEN        one user token (config key token); make one with ` + "`recall token new`" + `
  RECALL_TOKENS_FILE  a file of "name token [owner]" lines (config key tokens_file)
  RECALL_ADMIN_TOKEN  the token of the admin tools and /admin/ (config key admin_token)
With no user token, requests need none and only a loopback --addr is accepted.`

func (m *Main) cmdServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8787", "listen `address` (host:port; port 0 picks a free one)")
	allowPath := fs.Bool("allow-path-token", false, "also accept the token in the URL path, /mcp/<token> (for clients that cannot set a header; the token is redacted from logs)")
	auditPath := fs.String("audit", "", "append one JSON line per request to `FILE` (no tokens, queries or stored text; default: the audit setting)")
	var cors, hosts stringList
	fs.Var(&cors, "cors-origin", "allow browser requests from this `origin`, e.g. https://app.example (repeatable)")
	fs.Var(&hosts, "allowed-host", "also accept requests naming this `host` (a reverse proxy's name; repeatable)")
	var vaults stringList
	fs.Var(&vaults, "vault", "sweep this `folder` of conversations at start and then every --sweep-every, as `recall sweep` does without --prune (repeatable)")
	sweepEvery := fs.Duration("sweep-every", 10*time.Minute, "time between sweeps of the --vault folders (0: only at start)")
	perSec := fs.Float64("rate", server.DefaultRate, "requests per second per token (0: unlimited)")
	burst := fs.Int("burst", server.DefaultBurst, "requests a token may make at once before the rate applies")
	if err := m.parseNone(fs, args, serveUsage, "use --vault DIR to keep a folder swept"); err != nil {
		return err
	}
	opt := server.Options{AllowPathToken: *allowPath, CORSOrigins: cors, AllowedHosts: hosts,
		Rate: rate.Limit(*perSec), Burst: *burst, Grace: m.grace}
	if *perSec == 0 {
		opt.Rate = rate.Inf
	}
	if *perSec < 0 {
		return usagef("--rate must be 0 (unlimited) or more")
	}
	if *sweepEvery < 0 {
		return usagef("--sweep-every must be 0 (only at start) or more")
	}
	if *burst < 1 { // the server would take 0 for its default
		return usagef("--burst must be 1 or more, got %d", *burst)
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usagef("--addr %q: use host:port, e.g. 127.0.0.1:8787 (port 0 picks a free one)", *addr)
	}
	for _, v := range vaults {
		if fi, err := os.Stat(v); err != nil || !fi.IsDir() {
			return usagef("--vault %s is not a readable folder", v)
		}
	}
	if err := m.serverTokens(&opt); err != nil {
		return settingError(err)
	}
	// A mistake in the tokens or origins is the configuration's (exit 2,
	// told in its one line), found before the database is opened, which
	// would create or upgrade it; so is a model that is none.
	if err := server.CheckAccess(opt, *addr); err != nil {
		return settingError(err)
	}
	if err := m.checkModel(); err != nil {
		return err
	}
	if len(vaults) > 0 {
		opt.Vaults, opt.SweepEvery = vaults, *sweepEvery
		logf, err := m.openSweepLog("")
		if err != nil {
			return err
		}
		m.closers = append(m.closers, logf.Close)
		opt.SweepLog = logf
	}
	audit, err := m.openAudit(*auditPath)
	if err != nil {
		return err
	}
	opt.Audit = audit
	srv, err := m.newServer(ctx, &opt)
	if err != nil {
		return err
	}
	ln, err := srv.Listen(*addr)
	if err != nil {
		return err
	}
	if srv.Open() {
		fmt.Fprintln(m.Stderr, "recall: no token configured: accepting token-less requests on loopback only (set RECALL_TOKEN or RECALL_TOKENS_FILE)")
	}
	// Scripts wait for this line and read the port from it. The host is
	// the one given: Go reports 0.0.0.0 as [::] when the system has IPv6.
	shown := ln.Addr().String()
	if a, ok := ln.Addr().(*net.TCPAddr); ok && host != "" {
		shown = net.JoinHostPort(host, strconv.Itoa(a.Port))
	}
	fmt.Fprintf(m.Stderr, "recall: serving %s\n", m.servingSummary(ctx, opt))
	fmt.Fprintf(m.Stderr, "listening on http://%s\n", shown)
	bctx, stop := context.WithCancel(ctx)
	srv.Start(bctx)
	defer m.onHurry(srv.Hurry)()
	err = srv.Serve(ctx, ln)
	stop()
	finished := srv.Wait(5 * time.Second) // an interrupted sweep records itself before the store closes
	if err == nil {
		// Said, so that a log tells a clean stop from a crash.
		if finished {
			fmt.Fprintln(m.Stderr, "recall: stopped")
		} else {
			fmt.Fprintln(m.Stderr, "recall: stopped; background work (a sweep, a repair) was cut short, keeping what it had committed")
		}
	}
	return err
}

// onHurry calls f if m.Hurry closes before the returned function is called.
func (m *Main) onHurry(f func()) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-m.Hurry: // nil: never
			f()
		case <-done:
		}
	}()
	return func() { close(done) }
}

// serverTokens reads the credentials: RECALL_TOKEN, the tokens file
// (RECALL_TOKENS_FILE or tokens_file) and RECALL_ADMIN_TOKEN (admin_token).
func (m *Main) serverTokens(opt *server.Options) error {
	if tok := m.setting("", "token", ""); tok != "" {
		if err := server.CheckSecret(tok); err != nil {
			return recall.Errorf(recall.EINVALID, "%s: %s", m.settingName("token"), recall.ErrorMessage(err))
		}
		opt.Tokens = append(opt.Tokens, server.Token{Name: "default", Secret: tok})
	}
	if path := m.setting("", "tokens_file", ""); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("tokens file: %w", err)
		}
		toks, err := server.ParseTokens(f)
		f.Close()
		if err != nil {
			return err
		}
		opt.Tokens = append(opt.Tokens, toks...)
	}
	opt.AdminToken = m.setting("", "admin_token", "")
	if opt.AdminToken != "" {
		if err := server.CheckSecret(opt.AdminToken); err != nil {
			return recall.Errorf(recall.EINVALID, "%s: %s", m.settingName("admin_token"), recall.ErrorMessage(err))
		}
	}
	return nil
}

// settingName names where a setting without a flag was read from, for an
// error about its value: its RECALL_* variable, else the config file (a
// server's refusal of "user token 1" did not say that was RECALL_TOKEN).
func (m *Main) settingName(key string) string {
	env := "RECALL_" + strings.ToUpper(key)
	if strings.TrimSpace(m.Getenv(env)) != "" {
		return env
	}
	return "the config file's " + key
}

// newServer wires the store, one search engine (which holds the vector
// index, so everything must write through it) and the memory service into
// a server. The vector index is loaded by Start, in the background.
func (m *Main) newServer(ctx context.Context, opt *server.Options) (*server.Server, error) {
	m.serving = true
	st, err := m.openStore(ctx)
	if err != nil {
		return nil, err
	}
	eng, emb, space, err := m.engine(ctx, st, noVectors)
	if err != nil {
		return nil, err
	}
	opt.Engine, opt.Store, opt.Embedder, opt.Space = eng, st, emb, space
	mopt, err := m.memoryOptions(ctx, st, emb, space)
	if err != nil {
		return nil, err
	}
	opt.Memory = memory.New(st, eng, mopt)
	opt.Zone = mopt.Location
	opt.Version = version
	opt.Logger = slog.New(slog.NewTextHandler(server.RedactWriter(m.Stderr), &slog.HandlerOptions{Level: slog.LevelInfo}))
	return server.New(*opt)
}

// servingSummary says what a server serves, for its start-up log: the database
// (a connection string without its password), the vector space searches
// read and how many tokens are configured, never their values. An
// operator whose config file, RECALL_* variables and flags all have a say
// sees what they came to.
func (m *Main) servingSummary(ctx context.Context, opt server.Options) string {
	loc, err := m.dbPath()
	if err != nil { // opened already, so not expected
		loc = "the database"
	} else if abs, err := filepath.Abs(loc); err == nil && !isPostgres(loc) {
		loc = abs
	}
	search := "full text only (no embedding model)"
	if opt.Space != "" {
		search = "full text and vector space " + opt.Space
		// Searches read the read space, which may be another model's
		// (`space use`); new text is embedded with the configured one.
		if read, err := readSpace(ctx, opt.Store); err == nil && read != nil && read.Name != opt.Space {
			search = "full text and vector space " + read.Name + " (new text is embedded into " + opt.Space + ", of the configured model)"
		}
	}
	// No user token is said on a line of its own, with what it means.
	var toks []string
	switch n := len(opt.Tokens); n {
	case 0:
	case 1:
		toks = append(toks, "1 user token")
	default:
		toks = append(toks, fmt.Sprintf("%d user tokens", n))
	}
	if opt.AdminToken != "" {
		toks = append(toks, "the admin token")
	}
	summary := fmt.Sprintf("%s; searches %s", dbDisplay(loc), search)
	if len(toks) > 0 {
		summary += "; " + strings.Join(toks, " and ")
	}
	return summary
}

// openAudit opens the audit log a server writes to (the flag, else the
// audit setting), or returns nil when there is none.
func (m *Main) openAudit(flagValue string) (io.Writer, error) {
	path := m.setting(flagValue, "audit", "")
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	m.closers = append(m.closers, f.Close)
	return f, nil
}
