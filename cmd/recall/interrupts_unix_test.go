//go:build unix

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestInterrupts: the first SIGINT or SIGTERM ends the context commands
// run in, the second closes Hurry, and the third ends the process at once.
// The signals go to a child running this test, which reports each step
// (and, should it survive the third, exits when this test's process ends).
func TestInterrupts(t *testing.T) {
	if os.Getenv("RECALL_TEST_INTERRUPTS") == "child" {
		ctx, hurry := interrupts()
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		<-ctx.Done()
		select {
		case <-hurry:
			fmt.Println("one signal closed Hurry")
			os.Exit(1)
		default:
		}
		fmt.Println("stopping")
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		<-hurry
		fmt.Println("hurrying")
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		io.Copy(io.Discard, os.Stdin)
		os.Exit(1)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInterrupts$")
	cmd.Env = append(os.Environ(), "RECALL_TEST_INTERRUPTS=child")
	stdin, err := cmd.StdinPipe() // never written: open while this process runs
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.Output()
	if string(out) != "stopping\nhurrying\n" {
		t.Errorf("the child said %q, want stopping, then hurrying", out)
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("the third signal did not end the child (%v)", err)
	}
}
