package remote

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/recall-mcp/recall"
)

// errLocked is lockFile's answer when another process holds the lock.
var errLocked = errors.New("locked")

// lockManifest takes the manifest's lock for the whole run: each run loads
// the manifest, and saves it whole at the end, so two overlapping runs of
// one vault would leave whichever saved last, which can record a version of
// a file the server does not hold. A second run is refused instead.
func lockManifest(manifest string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(manifest), 0o700); err != nil {
		return nil, err
	}
	p := manifest + ".lock"
	unlock, holder, err := lockFile(p)
	if errors.Is(err, errLocked) {
		if holder != "" {
			holder = " (process " + holder + ")"
		}
		return nil, recall.Errorf(recall.ECONFLICT, "another remote sweep%s is using the manifest %s: wait for it to finish%s", holder, manifest, staleHint(p))
	}
	if err != nil {
		return nil, fmt.Errorf("lock manifest: %w", err)
	}
	return unlock, nil
}

// pidLine is what a lock file holds: the id of the process holding it.
func pidLine() string { return fmt.Sprintf("%d\n", os.Getpid()) }

func holderOf(b []byte) string { return strings.TrimSpace(string(b)) }
