package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/recall-mcp/recall"
)

// backupStore is a store that can copy itself whole (SQLite).
type backupStore interface {
	Backup(ctx context.Context, path string) error
}

// cmdBackup writes a consistent copy of the database, vectors included,
// while servers and sweeps go on: `recall backup FILE`. An export is the
// portable backup; this one is restored by using the file as the database.
func (m *Main) cmdBackup(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	pos, err := m.parse(fs, args, "backup FILE")
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("backup takes the FILE to write the copy to")
	}
	// Not upgraded first: a backup made before an upgrade is the way back
	// to the recall that wrote the database.
	st, err := m.openAsIs(ctx)
	if err != nil {
		return err
	}
	b, ok := st.(backupStore)
	if !ok {
		return recall.Errorf(recall.EINVALID, "backup copies a SQLite database; back up PostgreSQL with pg_dump (or use `recall export`)")
	}
	if err := b.Backup(ctx, pos[0]); err != nil {
		return inputError(err)
	}
	size := int64(0)
	if info, err := os.Stat(pos[0]); err == nil {
		size = info.Size()
	}
	fmt.Fprintf(m.Stderr, "backed up to %s (%.1f MB): every source, chunk and vector as of now; restore it by using it as the database (--db), after `recall --db %s check`\n",
		pos[0], float64(size)/1e6, pos[0])
	if schema := olderSchema(st); schema != "" && upgradeInterrupted(st) {
		fmt.Fprintf(m.Stderr, "recall: the copy is at schema %s, where an interrupted upgrade left the database; the next command that writes to it completes the upgrade\n", schema)
	} else if schema != "" {
		fmt.Fprintf(m.Stderr, "recall: the copy is at schema %s, as the older recall that wrote the database left it: that recall opens it; this one upgrades it when it opens it for anything but check or backup\n", schema)
	}
	return nil
}
