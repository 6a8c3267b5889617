package embed

import (
	"context"

	"github.com/recall-mcp/recall"
)

// RefusalStore is the part of recall.Store that keeps, by vector key, the
// texts a space's model refused as too long for it.
type RefusalStore interface {
	Refusals(ctx context.Context, space string, keys []string) (map[string]string, error)
	RecordRefusals(ctx context.Context, space string, reasons map[string]string) error
}

// Refusals is the step every caller that embeds stored texts (a sweep, a
// memory write, repair) takes around its embedder calls: it passes over
// the texts the space's model refused as too long for it before, whichever
// process recorded them (Pass), and records those it refuses now (Record),
// so that no process sends them to that model again.
type Refusals struct {
	Store RefusalStore
	Space string
}

// Pass returns those of keys to send, in their order, and the others (the
// texts refused before) with the provider's reasons, by key, as
// recall.ETOOLARGE errors. A store that cannot say returns its error with
// every key to send: a caller that sends them anyway pays one more call
// for each text refused before, and loses nothing.
func (r Refusals) Pass(ctx context.Context, keys []string) (send []string, known map[string]*recall.Error, err error) {
	if len(keys) == 0 {
		return keys, nil, nil
	}
	why, err := r.Store.Refusals(ctx, r.Space, keys)
	if err != nil || len(why) == 0 {
		return keys, nil, err
	}
	send = make([]string, 0, len(keys))
	known = make(map[string]*recall.Error, len(why))
	for _, k := range keys {
		if w, ok := why[k]; ok {
			known[k] = recall.Errorf(recall.ETOOLARGE, "%s", w)
			continue
		}
		send = append(send, k)
	}
	return send, known, nil
}

// Record records the texts an embedder call refused as too long for the
// model: keys are the keys of the call's texts in their order, refused the
// reasons by index as Partial returns them. A call that refused none
// writes nothing.
func (r Refusals) Record(ctx context.Context, keys []string, refused map[int]*recall.Error) error {
	if len(refused) == 0 {
		return nil
	}
	reasons := make(map[string]string, len(refused))
	for i, why := range refused {
		reasons[keys[i]] = why.Message
	}
	return r.Store.RecordRefusals(ctx, r.Space, reasons)
}
