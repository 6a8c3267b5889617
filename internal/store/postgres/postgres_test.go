package postgres

import (
	"context"
	"os"
	"testing"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/store/postgres/pgtest"
	"github.com/recall-mcp/recall/internal/store/storetest"
)

var ctx = context.Background()

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func openTest(t *testing.T, dsn string, opts Options) *DB {
	t.Helper()
	db, err := Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) recall.Store { return openTest(t, pgtest.Server(t), Options{}) })
}

// TestContractSmallBudget runs the contract with a full-text budget so small
// that multi-word queries take the planned paths for common words.
func TestContractSmallBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("the contract already ran with the default budget")
	}
	storetest.Run(t, func(t *testing.T) recall.Store { return openTest(t, pgtest.Server(t), Options{LexicalBudget: 20}) })
}
