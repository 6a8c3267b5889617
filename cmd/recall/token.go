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
	if len(pos) != 1 || pos[0] != "new" {
		return usagef("usage: recall token new   (prints a fresh random token for RECALL_TOKEN or a tokens file line)")
	}
	tok, err := server.NewToken()
	if err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout, tok)
	return nil
}
