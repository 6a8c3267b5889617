package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/recall-mcp/recall/internal/server"
)

func (m *Main) cmdToken(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	pos, err := m.parse(fs, args, "token new")
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return usagef("token needs a subcommand: new (prints a fresh random token for RECALL_TOKEN or a tokens file line)")
	case pos[0] != "new":
		return usagef("unknown token subcommand %q: use new", pos[0])
	case len(pos) > 1:
		return noArgs("token new", pos[1:], "")
	}
	tok, err := server.NewToken()
	if err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout, tok)
	return nil
}
