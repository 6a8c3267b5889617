package main

import (
	"strings"
	"testing"
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
