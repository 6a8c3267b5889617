//go:build !windows

package server

import (
	"errors"
	"syscall"
)

// addrInUse reports whether err is a listen refused because another
// socket holds the address.
func addrInUse(err error) bool { return errors.Is(err, syscall.EADDRINUSE) }
