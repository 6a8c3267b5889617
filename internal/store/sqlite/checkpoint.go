package sqlite

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"
)

// checkpointer copies committed pages from the write-ahead log into the
// database file on a connection of its own, so that the single writer never
// stops to do it: SQLite's automatic checkpoint runs inside the commit that
// crosses its threshold, which was a tenth of a sweep's writer time. The
// write connection has automatic checkpoints off (see dsn); a checkpoint
// here is PASSIVE, so it never waits for readers or the writer, and SQLite
// restarts the log once a checkpoint has caught up with it. journal_size_limit
// (see dsn) bounds the log file that is left after a large write.
type checkpointer struct {
	conn *sql.DB
	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	// The outcome of the last checkpoint: frames in the log and frames
	// copied into the database (-1 before the first), for tests.
	logFrames, copied atomic.Int64
}

// walRestartBytes is the log size past which the writer empties the log
// before its next transaction (see writeTx). A variable for tests.
var walRestartBytes int64 = 256 << 20

// checkpointGap is the least time between two checkpoints: small writes
// (a memory saved) share one, and the fsyncs of a checkpoint stay rare.
const checkpointGap = 500 * time.Millisecond

func startCheckpointer(dsn string) (*checkpointer, error) {
	conn, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	conn.SetMaxOpenConns(1)
	conn.SetMaxIdleConns(1)
	conn.SetConnMaxIdleTime(0)
	conn.SetConnMaxLifetime(0)
	c := &checkpointer{conn: conn, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	c.logFrames.Store(-1)
	c.copied.Store(-1)
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	for {
		select {
		case <-c.kick:
		case <-c.stop:
			return
		}
		// A failed checkpoint loses nothing: the pages stay in the log,
		// and the next one (or closing the database) copies them.
		var busy, logFrames, copied int64
		err := c.conn.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &logFrames, &copied)
		if err == nil {
			c.logFrames.Store(logFrames)
			c.copied.Store(copied)
		}
		select {
		case <-time.After(checkpointGap):
		case <-c.stop:
			return
		}
	}
}

// notify asks for a checkpoint after a commit; it never blocks.
func (c *checkpointer) notify() {
	if c == nil {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// close stops the checkpointer after the checkpoint it may be running.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.conn.Close()
}
