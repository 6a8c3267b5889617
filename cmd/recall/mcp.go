package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/recall-mcp/recall/internal/server"
)

// cmdMCP serves the tools over stdin/stdout for a local client (Claude
// Desktop, Claude Code, Cursor). Stdout carries nothing but protocol;
// every log line goes to stderr.
func (m *Main) cmdMCP(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	admin := fs.Bool("admin", false, "also serve the admin tools (repair_archive, list_memories, reindex_memory, memory_index_status)")
	if err := m.parseNone(fs, args, "mcp [--admin]", ""); err != nil {
		return err
	}
	if m.StdinIsTerminal != nil && m.StdinIsTerminal() {
		// Typed at a prompt, as README's list of commands invites, it
		// seemed to hang: it waits for a client's JSON-RPC on stdin.
		fmt.Fprintln(m.Stderr, "recall: mcp serves MCP over stdin/stdout to a client that starts it (Claude Desktop, Claude Code, Cursor): "+
			"waiting for JSON-RPC messages on stdin; Ctrl-C or Ctrl-D to stop (`recall serve` serves over HTTP)")
	}
	if err := m.checkModel(); err != nil {
		return err
	}
	audit, err := m.openAudit("")
	if err != nil {
		return err
	}
	srv, err := m.newServer(ctx, &server.Options{Audit: audit})
	if err != nil {
		return err
	}
	bctx, stop := context.WithCancel(ctx)
	srv.Start(bctx)
	err = srv.RunStdio(ctx, m.Stdin, m.Stdout, *admin)
	stop()
	srv.Wait(5 * time.Second)
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil // the client went away or we were told to stop
	}
	return err
}
