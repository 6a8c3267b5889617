// Command recall is a searchable long-term memory for AI assistants: it
// sweeps a vault of past conversations into an embedded store and serves
// search, memories and a diary over MCP. Run `recall help` for commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	// The IANA zone database, built in: a `timezone` setting names a zone
	// on machines without one of their own (Windows, scratch containers).
	_ "time/tzdata"
)

func main() {
	ctx, hurry := interrupts()
	stopProfile := startProfile()
	m := NewMain()
	m.Hurry = hurry
	code := m.Run(ctx, os.Args[1:])
	m.Close()
	stopProfile()
	os.Exit(code)
}

// interrupts returns a context that ends at the first SIGINT or SIGTERM
// (commands stop, finishing what is in flight) and a channel closed at
// the second (a server stops waiting for requests in flight). A third
// has its default effect: the process ends at once, which the stores
// survive as they survive a crash.
func interrupts() (context.Context, <-chan struct{}) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	hurry := make(chan struct{})
	go func() {
		<-sigs
		cancel()
		<-sigs
		signal.Stop(sigs)
		close(hurry)
	}()
	return ctx, hurry
}
