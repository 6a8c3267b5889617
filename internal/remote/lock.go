package remote

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/lockfile"
)

// lockManifest takes the manifest's lock for the whole run: each run loads
// the manifest, and saves it whole at the end, so two overlapping runs of
// one vault would leave whichever saved last, which can record a version of
// a file the server does not hold. A second run is refused instead.
func lockManifest(manifest string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(manifest), 0o700); err != nil {
		return nil, err
	}
	p := manifest + ".lock"
	l, holder, err := lockfile.TryLock(p, strconv.Itoa(os.Getpid()), 0o600)
	if errors.Is(err, lockfile.ErrLocked) {
		who, stale := lockfile.Busy(p, holder, "sweep")
		return nil, recall.Errorf(recall.ECONFLICT, "another remote sweep%s is using the manifest %s: wait for it to finish%s", who, manifest, stale)
	}
	if err != nil {
		return nil, fmt.Errorf("lock manifest: %w", err)
	}
	return l.Unlock, nil
}
