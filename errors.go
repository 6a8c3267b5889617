package recall

import (
	"errors"
	"fmt"
)

// Error codes. Each transport (CLI exit status, HTTP status, MCP tool error)
// maps them in exactly one place.
const (
	EINVALID      = "invalid"      // bad input: the message says what to fix
	ENOTFOUND     = "not_found"    // no such source, key, space or chunk
	ECONFLICT     = "conflict"     // the request contradicts stored state (e.g. mixing vector dimensions)
	EUNAUTHORIZED = "unauthorized" // no or wrong credentials
	EFORBIDDEN    = "forbidden"    // credentials valid but not allowed
	ETOOLARGE     = "too_large"    // input over a size limit
	ERATELIMIT    = "rate_limited" // too many requests
	EUNAVAILABLE  = "unavailable"  // a dependency (embedder, model) is not available right now
	EDAMAGED      = "damaged"      // the stored data is damaged: retrying cannot help, restoring a backup does
	EINTERNAL     = "internal"     // a bug or an I/O failure: details are logged, never shown
	ECANCELED     = "canceled"     // the caller gave up (context canceled or deadline)
)

// Error is an application error with a code that transports map to a status
// and a message that is safe to show to the caller.
type Error struct {
	Code    string
	Message string
	Err     error // the underlying cause, for logs and errors.Is; never shown to clients
}

func (e *Error) Error() string {
	switch {
	case e.Message != "" && e.Err != nil:
		return e.Message + ": " + e.Err.Error()
	case e.Message != "":
		return e.Message
	case e.Err != nil:
		return e.Err.Error()
	}
	return e.Code
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted, client-safe message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WrapError returns an *Error with the given code and message that wraps err.
func WrapError(code string, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain, ECANCELED for
// context cancellation, and EINTERNAL for anything else (nil gives "").
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if isCanceled(err) {
		return ECANCELED
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of the first *Error in err's
// chain. Internal errors get a generic message: their detail belongs in logs.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	if isCanceled(err) {
		return "the request was canceled or ran out of time"
	}
	return "internal error"
}

// IsNotFound reports whether err carries ENOTFOUND.
func IsNotFound(err error) bool { return ErrorCode(err) == ENOTFOUND }
