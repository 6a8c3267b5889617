package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/lockfile"
)

// Backup writes a consistent copy of the database to path: every source,
// chunk, full-text row, vector and space as of one moment (SQLite's VACUUM
// INTO, a read transaction), while writers go on. An export holds no
// vectors, and embedding a large archive again takes hours; this copy is a
// database to open as it is. It is written beside path under a temporary
// name, synced and renamed onto path only once complete, so path is a
// whole backup or nothing; a path that exists is refused, not replaced.
// What a backup killed while it wrote left under its temporary names is
// removed by the next backup into the same folder.
func (db *DB) Backup(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if abs == db.path {
		return recall.Errorf(recall.EINVALID, "%s is the database itself: give the backup another file", path)
	}
	if _, err := os.Lstat(abs); err == nil {
		return recall.Errorf(recall.ECONFLICT, "%s exists: a backup never replaces a file, give it a new name", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// Written under a hidden name, with a lock held meanwhile: what a
	// backup killed while it wrote left, a file as large as the database
	// and VACUUM INTO's journal, is removed by the next backup into the
	// folder (lockfile.RemoveAbandoned).
	lockfile.RemoveAbandoned(filepath.Dir(abs), partialSuffix, "-journal")
	// Backups of recall before 2026-12-03 wrote under the same names
	// without a lock: theirs are removed once a day old, when they hold a
	// SQLite database (VACUUM INTO's), or nothing and were to be this
	// backup's file.
	lockfile.RemoveUnlocked(filepath.Dir(abs), filepath.Base(abs), partialSuffix, lockfile.LegacyAge, func(head []byte) bool {
		return bytes.HasPrefix(head, []byte(sqliteHeader))
	}, "-journal")
	// VACUUM INTO writes into a file that does not exist or is empty.
	f, release, err := lockfile.CreateTemp(filepath.Dir(abs), filepath.Base(abs), partialSuffix)
	if err != nil {
		// Not the hidden file's name, which the user never gave: the
		// folder, and why it cannot be written in.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("back up to %s: the folder %s does not exist (create it first)", path, filepath.Dir(path))
		}
		return fmt.Errorf("back up to %s: cannot write in %s: %w", path, filepath.Dir(path), err)
	}
	tmp := f.Name()
	f.Close()
	done := false
	defer func() {
		if !done {
			os.Remove(tmp)
		}
		os.Remove(tmp + "-journal") // VACUUM INTO's, left by a failure
		release()
	}()
	// A connection of its own that cannot write to the database: the
	// pool's readers are query_only, which refuses VACUUM INTO, and the
	// writer's read would hold up writes while the copy is made.
	src, err := sql.Open("sqlite", db.dsnMode("mode=ro"))
	if err != nil {
		return err
	}
	defer src.Close()
	if _, err := src.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		return db.fail(ctx, err, "back up to %s", path)
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	// Link, not rename: a file made at path meanwhile is not replaced.
	if err := os.Link(tmp, abs); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return recall.Errorf(recall.ECONFLICT, "%s exists: a backup never replaces a file, give it a new name", path)
		}
		if err := os.Rename(tmp, abs); err != nil { // a file system without hard links
			return err
		}
	}
	done = true
	os.Remove(tmp)
	syncDir(filepath.Dir(abs))
	return nil
}

// partialSuffix ends the hidden name a backup is written under.
const partialSuffix = ".partial"

// syncFile flushes a file's contents to the disk.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a new name in dir durable; failure only weakens
// durability, so it is not reported.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
