//go:build !unix

package remote

import (
	"errors"
	"io/fs"
	"os"
)

// lockFile creates p exclusively. A run that crashed leaves it behind;
// the error says to delete it then.
func lockFile(p string) (unlock func(), holder string, err error) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		b, _ := os.ReadFile(p)
		return nil, holderOf(b), errLocked
	}
	if err != nil {
		return nil, "", err
	}
	_, werr := f.WriteString(pidLine())
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(p)
		return nil, "", err
	}
	return func() { os.Remove(p) }, "", nil
}

func staleHint(p string) string { return ", or delete " + p + " if no sweep is running" }
