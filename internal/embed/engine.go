package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/recall-mcp/recall"
)

// Limits are the knobs every provider shares. A zero field takes the
// provider's default; a negative one is an error.
type Limits struct {
	// MaxBatch is the most texts sent in one request.
	MaxBatch int
	// MaxInputChars cuts longer texts (prefix included) to this many
	// characters: services that refuse over-long input rather than truncate
	// it would otherwise fail the whole batch for one text.
	MaxInputChars int
	// MaxBatchChars is the most characters sent in one request; a batch
	// closes early when the next text would pass it.
	MaxBatchChars int
	// Concurrency is the most requests in flight at once, across every
	// caller of one embedder.
	Concurrency int
	// Timeout bounds one request, reading the response included.
	Timeout time.Duration
	// MaxAttempts is how often one batch is tried before giving up.
	MaxAttempts int
	// BaseDelay is the ceiling of the first backoff; it doubles per attempt
	// and the actual wait is drawn uniformly below it (full jitter), so
	// clients that failed together do not retry together.
	BaseDelay time.Duration
	// MaxDelay caps the backoff ceiling.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After honoured. A service asking
	// for a longer pause fails the call at once, so a sweep can leave the
	// vectors pending instead of stalling.
	MaxRetryAfter time.Duration
}

// retryDefaults fill what a provider's defaults leave zero.
var retryDefaults = Limits{
	MaxAttempts:   4,
	BaseDelay:     500 * time.Millisecond,
	MaxDelay:      20 * time.Second,
	MaxRetryAfter: time.Minute,
}

// resolve fills zero fields from d and rejects negative ones.
func (l Limits) resolve(d Limits) (Limits, error) {
	ints := []struct {
		name string
		v    *int
		def  int
	}{
		{"MaxBatch", &l.MaxBatch, d.MaxBatch},
		{"MaxInputChars", &l.MaxInputChars, d.MaxInputChars},
		{"MaxBatchChars", &l.MaxBatchChars, d.MaxBatchChars},
		{"Concurrency", &l.Concurrency, d.Concurrency},
		{"MaxAttempts", &l.MaxAttempts, d.MaxAttempts},
	}
	for _, f := range ints {
		if *f.v < 0 {
			return l, recall.Errorf(recall.EINVALID, "embedder limit %s is negative (%d)", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	durs := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"Timeout", &l.Timeout, d.Timeout},
		{"BaseDelay", &l.BaseDelay, d.BaseDelay},
		{"MaxDelay", &l.MaxDelay, d.MaxDelay},
		{"MaxRetryAfter", &l.MaxRetryAfter, d.MaxRetryAfter},
	}
	for _, f := range durs {
		if *f.v < 0 {
			return l, recall.Errorf(recall.EINVALID, "embedder limit %s is negative (%s)", f.name, *f.v)
		}
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	return l, nil
}

// maxResponse bounds a response body: 256 texts of 4096 dimensions in JSON
// stay well below it, and a misbehaving service cannot exhaust memory.
const maxResponse = 64 << 20

// wire is what differs between providers: the request body and the reading
// of a successful response.
type wire interface {
	body(kind recall.InputKind, texts []string) any
	// decode returns the vectors of a 2xx response in input order. An
	// *recall.Error is reported as is; any other error means malformed JSON.
	decode(body []byte, n int) ([][]float32, error)
}

// engine does everything HTTP providers share: prefixes, batching, the
// concurrency limit, timeouts, retries, error mapping, validation and
// normalisation.
type engine struct {
	provider  string
	model     string
	secret    string
	client    *http.Client
	limits    Limits
	prefixes  Prefixes
	maxTokens int
	sem       chan struct{}

	// route is where requests go and how they are written; it starts as
	// the provider's own and moves to older, for the client's life, when
	// the service answers that it has no such endpoint (see attempt).
	route atomic.Pointer[route]
	older *route

	// sleep waits d or until ctx ends; tests replace it to observe waits.
	sleep func(ctx context.Context, d time.Duration) error

	mu  sync.Mutex
	dim int // configured, or learned from the first valid response
	// batchCap is the most texts a request has been found to take, learned
	// from a 413 (text-embeddings-inference refuses more than its
	// --max-client-batch-size, 32 by default, that way); 0 until then.
	batchCap int
}

type engineConfig struct {
	provider, model, endpoint, secret string
	dim                               int
	client                            *http.Client
	limits, defaults                  Limits
	prefixes                          Prefixes
	wire                              wire
	// older, when set, is the route taken when endpoint answers 404 with
	// a bare "404 page not found" (a server that predates it).
	older *route
}

// route is an endpoint and the way requests to it are written.
type route struct {
	endpoint string
	wire     wire
	// single is set for endpoints that take one text per request
	// (Ollama's /api/embeddings).
	single bool
}

// init sets up e in place (it holds a mutex, so it is never copied).
func (e *engine) init(c engineConfig) error {
	if c.model == "" {
		return recall.Errorf(recall.EINVALID, "%s: no model configured", c.provider)
	}
	if c.dim < 0 {
		return recall.Errorf(recall.EINVALID, "%s: dimension %d is negative", c.provider, c.dim)
	}
	u, err := url.Parse(c.endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return recall.Errorf(recall.EINVALID, "%s: base URL must be an absolute http or https URL", c.provider)
	}
	limits, err := c.limits.resolve(c.defaults)
	if err != nil {
		return err
	}
	limits, _ = limits.resolve(retryDefaults) // nothing negative is left
	client := c.client
	if client == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// The default keeps two idle connections per host; more requests
		// than that in flight would reconnect every time.
		t.MaxIdleConnsPerHost = max(limits.Concurrency, 2)
		client = &http.Client{Transport: t}
	}
	e.provider, e.model, e.secret = c.provider, c.model, c.secret
	e.client, e.limits, e.prefixes = client, limits, c.prefixes
	e.route.Store(&route{endpoint: c.endpoint, wire: c.wire})
	e.older = c.older
	e.maxTokens = KnownMaxTokens(c.model)
	e.sem = make(chan struct{}, limits.Concurrency)
	e.sleep = sleepContext
	e.dim = c.dim
	return nil
}

// Info describes the embedder; Dim is 0 until configured or first learned.
func (e *engine) Info() recall.EmbedderInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	return recall.EmbedderInfo{
		Provider:   e.provider,
		Model:      e.model,
		Dim:        e.dim,
		MaxTokens:  e.maxTokens,
		Normalized: true,
	}
}

// Embed returns one unit vector per text, in order. Texts are sent in
// batches, concurrently up to the embedder's limit; the first failing batch
// cancels the others. Texts the service refuses on their own as too long
// for the model fail only themselves: the call then returns a *Refused
// error holding the other texts' vectors.
func (e *engine) Embed(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	prefix := e.prefixes.For(kind)
	inputs := make([]string, len(texts))
	for i, t := range texts {
		if t == "" {
			return nil, recall.Errorf(recall.EINVALID, "text %d is empty: there is nothing to embed", i)
		}
		inputs[i] = truncate(prefix+t, e.limits.MaxInputChars)
	}
	batches := e.split(inputs)
	out := make([][]float32, len(inputs))
	why := make([]*recall.Error, len(inputs))
	if len(batches) == 1 {
		vecs, refused, err := e.embedBatch(ctx, kind, inputs)
		if err != nil {
			return nil, err
		}
		copy(out, vecs)
		copy(why, refused)
		return refusals(out, why)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, b := range batches {
		wg.Go(func() {
			vecs, refused, err := e.embedBatch(ctx, kind, inputs[b.lo:b.hi])
			if err != nil {
				once.Do(func() { first = err; cancel() })
				return
			}
			copy(out[b.lo:b.hi], vecs)
			copy(why[b.lo:b.hi], refused)
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return refusals(out, why)
}

type span struct{ lo, hi int }

// split cuts inputs into batches of at most MaxBatch texts and MaxBatchChars
// characters; a text longer than MaxBatchChars goes alone.
func (e *engine) split(inputs []string) []span {
	maxBatch := e.maxBatch()
	var spans []span
	lo, chars := 0, 0
	for i, s := range inputs {
		n := utf8.RuneCountInString(s)
		if i > lo && (i-lo == maxBatch || chars+n > e.limits.MaxBatchChars) {
			spans = append(spans, span{lo, i})
			lo, chars = i, 0
		}
		chars += n
	}
	return append(spans, span{lo, len(inputs)})
}

// retryable marks a failure worth another attempt; after is the pause the
// service asked for (0 when it did not).
type retryable struct {
	err   *recall.Error
	after time.Duration
}

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// maxBatch is MaxBatch, or less once the service has refused that many.
func (e *engine) maxBatch() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.batchCap > 0 && e.batchCap < e.limits.MaxBatch {
		return e.batchCap
	}
	return e.limits.MaxBatch
}

// tooLarge marks a request the service refused for its size: the same
// texts in smaller requests may pass. input is set when the service said
// a text is too long for the model (see inputTooLong), not that the batch
// is too big (413): splitting then isolates that text, and later batches
// keep their size. temporary is set when the service said, with
// Retry-After, that it is refusing the size for a while (RFC 9110
// 15.5.14), not for good.
type tooLarge struct {
	err       *recall.Error
	input     bool
	temporary bool
}

func (t *tooLarge) Error() string { return t.err.Error() }
func (t *tooLarge) Unwrap() error { return t.err }

// embedBatch embeds texts in one request, or, when the service refuses that
// as too large, in requests of half as many texts (split again as needed).
// A batch refused for its size (413) lowers the size of later batches; one
// refused for a text too long for the model does not. A single text
// refused as too long for the model is refused alone: its vector is nil
// and refused holds why at its index (refused is nil when none was), while
// the others get their vectors.
func (e *engine) embedBatch(ctx context.Context, kind recall.InputKind, texts []string) (vecs [][]float32, refused []*recall.Error, err error) {
	if len(texts) > 1 && e.route.Load().single {
		return e.embedEach(ctx, kind, texts)
	}
	vecs, err = e.sendBatch(ctx, kind, texts)
	if errors.Is(err, errRerouted) {
		return e.embedBatch(ctx, kind, texts)
	}
	var tl *tooLarge
	if !errors.As(err, &tl) {
		return vecs, nil, err
	}
	switch {
	case len(texts) == 1 && tl.input:
		return [][]float32{nil}, []*recall.Error{tl.err}, nil
	case len(texts) == 1:
		// A request refused for its size (413, or Workers AI's 3006,
		// "Request is too large", which it answers with 413), holding
		// one text already cut to MaxInputChars: nothing of it but the
		// text can shrink, so the service refuses that text, and will
		// every time it is sent, as it does a text too long for the
		// model. Unless the service refuses every request so (a proxy's
		// body limit below any text, which says nothing of this one),
		// or said the refusal is temporary: then the call fails as it is.
		if !tl.temporary && e.takesProbe(ctx, kind) {
			return [][]float32{nil}, []*recall.Error{tl.err}, nil
		}
		return nil, nil, tl.err
	}
	half := len(texts) / 2
	lowered, prev := false, 0
	if !tl.input {
		e.mu.Lock()
		if e.batchCap == 0 || half < e.batchCap {
			lowered, prev, e.batchCap = true, e.batchCap, half
		}
		e.mu.Unlock()
	}
	// The size is read again for each piece: a refused piece lowers it
	// for the pieces after it too.
	vecs = make([][]float32, len(texts))
	for lo := 0; lo < len(texts); {
		hi := min(len(texts), lo+min(half, e.maxBatch()))
		v, r, err := e.embedBatch(ctx, kind, texts[lo:hi])
		if err != nil {
			return nil, nil, err
		}
		copy(vecs[lo:hi], v)
		if r != nil {
			if refused == nil {
				refused = make([]*recall.Error, len(texts))
			}
			copy(refused[lo:hi], r)
		}
		lo = hi
	}
	if lowered && refused != nil {
		// A text refused alone for its size explains the batch's refusal:
		// the size this batch lowered the cap to is given back (unless
		// another batch lowered it since), or one such text would leave
		// every later request at one text. A batch size the service does
		// refuse is learned again, at the cost of one request.
		e.mu.Lock()
		if e.batchCap == half {
			e.batchCap = prev
		}
		e.mu.Unlock()
	}
	return vecs, refused, nil
}

// takesProbe reports whether the service embeds ProbeText, a text any
// model takes, in a request of its own: whether a size refusal of one text
// was about that text.
func (e *engine) takesProbe(ctx context.Context, kind recall.InputKind) bool {
	_, err := e.sendBatch(ctx, kind, []string{e.prefixes.For(kind) + ProbeText})
	return err == nil
}

// embedEach embeds texts one per request, for a route that takes no more,
// as many at once as the concurrency limit lets through (exchange holds a
// slot per request); the first failure cancels the rest.
func (e *engine) embedEach(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, []*recall.Error, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	vecs := make([][]float32, len(texts))
	why := make([]*recall.Error, len(texts))
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for i := range texts {
		wg.Go(func() {
			v, r, err := e.embedBatch(ctx, kind, texts[i:i+1])
			if err != nil {
				once.Do(func() { first = err; cancel() })
				return
			}
			vecs[i] = v[0]
			if r != nil {
				why[i] = r[0]
			}
		})
	}
	wg.Wait()
	if first != nil {
		return nil, nil, first
	}
	for _, w := range why {
		if w != nil {
			return vecs, why, nil
		}
	}
	return vecs, nil, nil
}

// errRerouted says a batch was not sent, or not taken, on the route it
// was meant for because the route changed (attempt moved it to e.older):
// embedBatch sends it again on the new route.
var errRerouted = errors.New("rerouted")

// sendBatch embeds texts in one request, retrying what is worth retrying.
func (e *engine) sendBatch(ctx context.Context, kind recall.InputKind, texts []string) ([][]float32, error) {
	rt := e.route.Load()
	if rt.single && len(texts) > 1 {
		return nil, errRerouted // the route moved since embedBatch looked
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rt.wire.body(kind, texts)); err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", e.provider, err)
	}
	payload := buf.Bytes()
	for attempt := 1; ; attempt++ {
		vecs, err := e.attempt(ctx, rt, payload, texts)
		if err == nil {
			return vecs, nil
		}
		if errors.Is(err, errRerouted) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, e.canceled(ctx)
		}
		var r *retryable
		if !errors.As(err, &r) {
			return nil, err
		}
		if attempt >= e.limits.MaxAttempts {
			return nil, &recall.Error{Code: r.err.Code, Message: fmt.Sprintf("%s (gave up after %d attempts)", r.err.Message, attempt), Err: r.err.Err}
		}
		wait := r.after
		if wait > e.limits.MaxRetryAfter {
			return nil, &recall.Error{Code: r.err.Code, Message: fmt.Sprintf("%s; it asks to wait %s, longer than the %s allowed", r.err.Message, wait, e.limits.MaxRetryAfter), Err: r.err.Err}
		}
		if wait == 0 {
			wait = e.backoff(attempt)
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return nil, &recall.Error{Code: r.err.Code, Message: r.err.Message + " (no time left to retry)", Err: r.err.Err}
		}
		if err := e.sleep(ctx, wait); err != nil {
			return nil, e.canceled(ctx)
		}
	}
}

// backoff draws the wait before retry number attempt (1-based) uniformly
// from [0, min(MaxDelay, BaseDelay·2^(attempt-1))).
func (e *engine) backoff(attempt int) time.Duration {
	ceiling := e.limits.MaxDelay
	// BaseDelay·2^shift below MaxDelay, tested without overflowing.
	if shift := attempt - 1; shift < 63 && e.limits.BaseDelay <= e.limits.MaxDelay>>shift {
		ceiling = e.limits.BaseDelay << shift
	}
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling)
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *engine) canceled(ctx context.Context) error {
	return fmt.Errorf("%s embedding: %w", e.provider, ctx.Err())
}

// attempt makes one request on route r and turns its outcome into vectors
// or an error. A 404 whose body is a bare "404 page not found" (the answer
// of Go's and Gin's routers to a path they do not serve, where a missing
// model gets a JSON error) moves the client to e.older for its life:
// Ollama before 0.3 has no /api/embed, only /api/embeddings. texts are
// what payload holds: the service's words never quote them (withoutEcho).
func (e *engine) attempt(ctx context.Context, r *route, payload []byte, texts []string) ([][]float32, error) {
	n := len(texts)
	status, header, body, err := e.exchange(ctx, r.endpoint, payload)
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotFound && e.older != nil && r != e.older && strings.TrimSpace(string(body)) == "404 page not found" {
		e.route.CompareAndSwap(r, e.older)
		return nil, errRerouted
	}
	if status < 200 || status > 299 {
		return nil, e.statusError(status, header, body, texts)
	}
	vecs, err := r.wire.decode(body, n)
	if err != nil {
		return nil, e.decodeError(err, texts)
	}
	if err := e.accept(vecs, n); err != nil {
		return nil, err
	}
	return vecs, nil
}

// exchange holds a concurrency slot only while the request is on the wire,
// never while waiting to retry.
func (e *engine) exchange(ctx context.Context, endpoint string, payload []byte) (int, http.Header, []byte, error) {
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return 0, nil, nil, ctx.Err()
	}
	defer func() { <-e.sem }()

	rctx, cancel := context.WithTimeout(ctx, e.limits.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, endpoint, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s: build request: %w", e.provider, e.redactErr(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.secret != "" {
		req.Header.Set("Authorization", "Bearer "+e.secret)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, nil, nil, e.transportError(ctx, rctx, endpoint, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return 0, nil, nil, e.transportError(ctx, rctx, endpoint, err)
	}
	if len(body) > maxResponse {
		return 0, nil, nil, recall.Errorf(recall.EUNAVAILABLE, "%s sent a response larger than %d MiB", e.provider, maxResponse>>20)
	}
	return resp.StatusCode, resp.Header, body, nil
}

func (e *engine) transportError(ctx, rctx context.Context, endpoint string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if rctx.Err() != nil {
		return &retryable{err: recall.Errorf(recall.EUNAVAILABLE, "%s did not answer within %s", e.provider, e.limits.Timeout)}
	}
	return &retryable{err: recall.WrapError(recall.EUNAVAILABLE, e.redactErr(reachFailure(endpoint, err)), "cannot reach %s", e.provider)}
}

// reachFailure tells where and why a request got no answer, as a user
// reads it: Go's chain (Post "http://host:11434/api/embed": dial tcp
// 127.0.0.1:11434: connect: connection refused) becomes
// "http://host:11434: connection refused", and a name that does not
// resolve "http://host:11434: no such host". The endpoint is shown by its
// scheme and host only (no path, no user or password); the error still
// unwraps to err.
func reachFailure(endpoint string, err error) error {
	why := err
	var ue *url.Error
	if errors.As(why, &ue) {
		why = ue.Err
	}
	text := why.Error()
	var dns *net.DNSError
	var sys *os.SyscallError
	var op *net.OpError
	switch {
	case errors.As(why, &dns):
		text = dns.Err
	case errors.As(why, &sys):
		text = sys.Err.Error()
	case errors.As(why, &op) && op.Err != nil:
		text = op.Err.Error()
	}
	where := "the service"
	if u, perr := url.Parse(endpoint); perr == nil && u.Host != "" {
		where = u.Scheme + "://" + u.Host
	}
	return redactedError{err: err, text: where + ": " + text}
}

// accept validates a batch's vectors against the embedder's dimension,
// learning it from the first valid batch, and normalises them.
func (e *engine) accept(vecs [][]float32, n int) error {
	e.mu.Lock()
	dim := e.dim
	e.mu.Unlock()
	if err := Validate(vecs, n, dim); err != nil {
		return e.named(err)
	}
	if dim == 0 {
		e.mu.Lock()
		if e.dim == 0 {
			e.dim = len(vecs[0])
		}
		dim = e.dim
		e.mu.Unlock()
		if len(vecs[0]) != dim {
			return recall.Errorf(recall.ECONFLICT, "%s (%s) returned vectors of dimension %d, earlier ones had %d", e.provider, e.model, len(vecs[0]), dim)
		}
	}
	for _, v := range vecs {
		Normalize(v) // cannot fail: Validate refused zero and non-finite vectors
	}
	return nil
}

// named puts the provider and model in front of a validation message.
func (e *engine) named(err error) error {
	var re *recall.Error
	if !errors.As(err, &re) {
		return err
	}
	return &recall.Error{Code: re.Code, Message: fmt.Sprintf("%s (%s): %s", e.provider, e.model, re.Message), Err: re.Err}
}
