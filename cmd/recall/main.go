// Command recall is a searchable long-term memory for AI assistants: it
// sweeps a vault of past conversations into an embedded store and serves
// search, memories and a diary over MCP. Run `recall help` for commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := startProfile()
	m := NewMain()
	code := m.Run(ctx, os.Args[1:])
	stop()
	m.Close()
	stopProfile()
	os.Exit(code)
}
