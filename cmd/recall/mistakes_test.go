package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A mistake in how a command was called exits 2 and says, on stderr, the
// mistake, the command's synopsis and where its help is, in three lines:
// the whole usage (30 lines) followed a mistake before the command and
// hid the line that said what was wrong, `recall memory` printed its
// usage on stdout, and a bad flag said "flag provided but not defined:
// -x" with a dash recall writes nowhere else. A bad setting (the
// environment, an embedder or model that is none) is told in one line:
// the synopsis does not show settings. `sweep --model nosuch` exited 1
// while `model pull nosuch` exited 2.
func TestMistakesSayTheErrorAndTheSynopsis(t *testing.T) {
	env := emptyStore(t)
	const top = "[global flags] <command> [flags] [args]" // before any command
	for _, c := range []struct {
		args     string
		err      string // the first line, after "recall: "
		synopsis string // "" for a setting's mistake: the error alone
		help     string // what `recall help` takes for the command ("" before any command)
	}{
		{"", "no command given", top, ""},
		{"bogus", `unknown command "bogus"`, top, ""},
		{"--bogus stats", "unknown flag --bogus: only the global flags go before the command", top, ""},
		{"help bogus", `unknown command "bogus"`, top, ""},
		{"search", "search needs a query", "search [flags] QUERY", "search"},
		{"search --bogus q", "unknown flag --bogus", "search [flags] QUERY", "search"},
		{"search --limit x q", `--limit "x": not a whole number`, "search [flags] QUERY", "search"},
		{"search --limit 0 q", "--limit must be between 1 and 20, got 0", "search [flags] QUERY", "search"},
		{"search --json=maybe q", "--json takes no value (or =true, =false)", "search [flags] QUERY", "search"},
		{"search q --limit", "--limit needs a value", "search [flags] QUERY", "search"},
		{"search --mode bogus q", `--mode "bogus": use hybrid, lexical or semantic`, "search [flags] QUERY", "search"},
		{"sweep", "sweep takes one vault directory (got 0 arguments)", "sweep [flags] DIR", "sweep"},
		{"sweep a b", "sweep takes one vault directory (got 2 arguments)", "sweep [flags] DIR", "sweep"},
		{"sweep --remote http://127.0.0.1:1 a b", "sweep takes one vault directory", "sweep --remote URL [flags] DIR", "sweep"},
		{"context a.md", "context takes SOURCE and CHUNK_INDEX", "context [flags] SOURCE CHUNK_INDEX", "context"},
		{"stats x", `stats takes no arguments, got "x"`, "stats [--json]", "stats"},
		{"check --bogus", "unknown flag --bogus", "check [--json]", "check"},
		{"eval", "eval needs --queries FILE.jsonl", "eval --queries FILE.jsonl", "eval"},
		{"repair --limit -1", "--limit must be 0 (all) or more, got -1", "repair [--space NAME]", "repair"},
		{"export x", `export takes no arguments, got "x": use --out FILE`, "export [--out FILE]", "export"},
		{"import", "import takes one export file", "import [--keep-newer]", "import"},
		{"backup", "backup takes the FILE to write the copy to", "backup FILE", "backup"},
		{"serve --sweep-every x", `--sweep-every "x": not a duration such as 90s, 10m or 2h`, "serve [flags]", "serve"},
		{"serve --burst 0", "--burst must be 1 or more, got 0", "serve [flags]", "serve"},
		{"mcp x", `mcp takes no arguments, got "x"`, "mcp [--admin]", "mcp"},
		{"token", "token needs a subcommand: new", "token new", "token"},
		{"token old", `unknown token subcommand "old": use new`, "token new", "token"},
		{"version x", `version takes no arguments, got "x"`, "version", "version"},
		{"memory", "memory needs a subcommand: save, get, delete or find", "memory (save | get | delete | find)", "memory"},
		{"memory bogus", `unknown memory subcommand "bogus"`, "memory (save | get | delete | find)", "memory"},
		{"memory --json get k", "unknown flag --json: only the global flags", "memory (save | get | delete | find)", "memory"},
		{"memory save k", "memory save takes KEY and VALUE", "memory save KEY [flags] (VALUE | -)", "memory save"},
		{"memory get --limit 3 k", "unknown flag --limit", "memory get KEY", "memory get"},
		{"memory delete k", `deleting "k" cannot be undone: run again with --confirm`, "memory delete KEY --confirm", "memory delete"},
		{"memory find --limit 0", "--limit must be between 1 and 20, got 0", "memory find [flags]", "memory find"},
		{"diary", "diary needs a subcommand: write, read or recent", "diary (write | read | recent)", "diary"},
		{"diary read a b", "diary read takes one DATE", "diary read DATE", "diary read"},
		{"diary recent --days 0", "--days must be between 1 and 30, got 0", "diary recent [--days N]", "diary recent"},
		{"space", "space needs a subcommand: list, create, use or drop", "space (list | create | use | drop)", "space"},
		{"space bogus", `unknown space subcommand "bogus"`, "space (list | create | use | drop)", "space"},
		{"space use", "space use takes one space NAME (got 0 arguments)", "space use NAME [--force]", "space use"},
		{"space drop x --force", "unknown flag --force", "space drop NAME", "space drop"},
		{"model", "model needs a subcommand: list or pull", "model (list | pull NAME)", "model"},
		{"model bogus", `unknown model subcommand "bogus": use list or pull`, "model (list | pull NAME)", "model"},
		{"model pull nosuch", `unknown model "nosuch"`, "model pull NAME", "model pull"},
		// Settings: told alone.
		{"--embedder bogus stats", `--embedder: unknown embedder "bogus"`, "", ""},
		{"search --embedder builtin --model nosuch q", `unknown model "nosuch"`, "", ""},
		{"memory save --embedder builtin --model nosuch k v", `unknown model "nosuch"`, "", ""},
		{"sweep --embedder builtin --model ./no/such/dir " + sampleVault, "model directory ./no/such/dir does not exist", "", ""},
		{"space create s --embedder builtin --model nosuch", `unknown model "nosuch"`, "", ""},
		{"serve --cors-origin *", `CORS origin "*" must be a full origin`, "", ""},
		{"serve --cors-origin https://app.example", "--cors-origin https://app.example lets that site's pages call this server", "", ""},
		{"serve --allow-path-token", "--allow-path-token accepts a token in the path, and no token is configured", "", ""},
		{"serve --addr 0.0.0.0:0", "refusing to listen on 0.0.0.0:0 with no token configured", "", ""},
	} {
		out, errs, code := run(t, env, strings.Fields(c.args)...)
		first, rest, _ := strings.Cut(errs, "\n")
		switch {
		case c.synopsis == top:
			if want := "usage: recall " + top + "\nrun `recall help` for the commands\n"; rest != want {
				t.Errorf("%s: after the error %q, want %q", c.args, rest, want)
			}
		case c.synopsis != "":
			if !strings.HasPrefix(rest, "usage: recall "+c.synopsis) || !strings.HasSuffix(rest, "\nrun `recall help "+c.help+"` for more\n") {
				t.Errorf("%s: after the error %q, want the synopsis %q and `recall help %s`", c.args, rest, c.synopsis, c.help)
			}
		case rest != "":
			t.Errorf("%s: after the error %q, want nothing", c.args, rest)
		}
		if code != exitUsage || out != "" || !strings.HasPrefix(first, "recall: "+c.err) || strings.Count(errs, "\n") > 3 ||
			strings.Contains(errs, "commands:") || strings.Contains(errs, "flags:") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, and %q first on stderr, without the usage",
				c.args, code, out, errs, "recall: "+c.err)
		}
	}
}

// A failure while doing the work exits 1 with its one line: what is not
// there (a memory, a space, a source, a file) is no mistake in how the
// command was called, and the synopsis would not help.
func TestFailuresExitOneWithoutTheSynopsis(t *testing.T) {
	env := emptyStore(t)
	for _, c := range []struct{ args, err string }{
		{"memory get note_none", `no memory with key "note_none"`},
		{"space use nosuch", `no vector space "nosuch"`},
		{"context nosuch.md 0", `no source "nosuch.md"`},
		{"import /no/such/export.jsonl", "/no/such/export.jsonl"},
		{"sweep /no/such/vault", "vault /no/such/vault does not exist"},
	} {
		out, errs, code := run(t, env, strings.Fields(c.args)...)
		if code != exitFailure || out != "" || !strings.HasPrefix(errs, "recall: ") || !strings.Contains(errs, c.err) ||
			strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and one line saying %q", c.args, code, out, errs, c.err)
		}
	}
}

// A setting that names no model is refused before the database is
// opened: `sweep --model nosuch` exited 2 but left an empty database
// file behind (or upgraded an older one), as did memory save, diary
// write, space create, import, serve and mcp; search said there was no
// database (exit 1) rather than what was wrong.
func TestAMistakenModelLeavesNoDatabase(t *testing.T) {
	dir := t.TempDir()
	export, queries := filepath.Join(dir, "export.jsonl"), filepath.Join(dir, "queries.jsonl")
	for name, text := range map[string]string{export: `{"end":{"sources":0}}`, queries: `{"query": "q", "expect": [{"source": "a.md"}]}`} {
		if err := os.WriteFile(name, []byte(text+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range []string{
		"sweep " + sampleVault,
		"search q",
		"context a.md 0",
		"memory save k v",
		"diary write v",
		"space create s",
		"import " + export,
		"serve --addr 127.0.0.1:0",
		"mcp",
		"eval --queries " + queries,
		"repair",
	} {
		for _, model := range []string{"nosuch", "./no/such/dir"} {
			env := testEnv(t)
			env["RECALL_MODELS_DIR"] = t.TempDir()
			a := append([]string{"--embedder", "builtin", "--model", model}, strings.Fields(args)...)
			// A command that took the model would run: serve and mcp
			// until stopped.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			out, errs, code := runCtx(t, ctx, env, a...)
			cancel()
			if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 ||
				!(strings.Contains(errs, `unknown model "nosuch"`) || strings.Contains(errs, "model directory ./no/such/dir does not exist")) {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and the model's one line", a, code, out, errs)
			}
			if _, err := os.Stat(env["RECALL_DB"]); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%q: the database %s was made (%v)", a, env["RECALL_DB"], err)
			}
		}
	}
}
