package server

import (
	"errors"

	"golang.org/x/sys/windows"
)

// addrInUse reports whether err is a listen refused because another
// socket holds the address (Winsock's own code: syscall.EADDRINUSE is
// an invented one there).
func addrInUse(err error) bool { return errors.Is(err, windows.WSAEADDRINUSE) }
