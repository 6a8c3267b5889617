package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/recall-mcp/recall"
	"github.com/recall-mcp/recall/internal/lockfile"
)

// DefaultEndpoint is where models come from unless HF_ENDPOINT says
// otherwise (the variable huggingface_hub reads, so one mirror setting
// serves both).
const DefaultEndpoint = "https://huggingface.co"

// Endpoint returns the base URL to download from: HF_ENDPOINT when set,
// else DefaultEndpoint. getenv is os.Getenv in the program.
func Endpoint(getenv func(string) string) string {
	if e := strings.TrimRight(strings.TrimSpace(getenv("HF_ENDPOINT")), "/"); e != "" {
		return e
	}
	return DefaultEndpoint
}

// manifestName marks a model directory whose every file was downloaded and
// verified; it records what was fetched.
const manifestName = ".recall-model.json"

// lockPath is the lock held while a pull writes into the directory of the
// model called name under dir. It lies beside the model's directory, not
// in it, as it stays after the pull (deleting it could let two pulls lock
// two files of one name): a pull that fetched nothing leaves no folder.
func lockPath(dir, name string) string {
	return filepath.Join(dir, "."+name+".pull.lock")
}

// Puller downloads models. The zero value works: it downloads from
// DefaultEndpoint with its own timeouts and reports nothing.
type Puller struct {
	Endpoint string       // base URL; "" means DefaultEndpoint
	Client   *http.Client // nil: a client with connect and header timeouts
	// Progress receives progress output; nil means none. Terminal selects
	// a bar redrawn in place; otherwise plain lines are written.
	Progress io.Writer
	Terminal bool
	// StallTimeout aborts a download that receives nothing for this long
	// (default one minute); the .part file stays for the next attempt.
	StallTimeout time.Duration
	// Retries is how many times a failed transfer is resumed before Pull
	// gives up (default 2; negative: none).
	Retries int
	// RetryDelay is the pause before the first retry, doubled after each
	// (default one second).
	RetryDelay time.Duration
}

var defaultClient = &http.Client{
	Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   20 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	},
}

// Pull downloads every file of m into dir/<m.Name>, resuming files a
// previous run left as <file>.part, verifying size and sha256 before each
// file takes its final name. Files already in place from a verified pull
// are kept. Two pulls of the same model at once are refused (ECONFLICT).
func (p *Puller) Pull(ctx context.Context, m Model, dir string) (string, error) {
	modelDir := filepath.Join(dir, m.Name)
	if err := os.MkdirAll(modelDir, 0o755); err != nil {
		return "", fmt.Errorf("create model directory: %w", err)
	}
	unlock, err := lockModel(dir, m.Name)
	if err != nil {
		return "", err
	}
	defer unlock()

	prev, _ := readManifest(modelDir)
	for _, f := range m.Files {
		dst := filepath.Join(modelDir, filepath.FromSlash(f.Path))
		// A file from a verified pull of this revision is kept; one that got
		// there otherwise is kept when its hash proves it.
		if fileMatches(dst, f) && ((prev != nil && prev.Revision == m.Revision) || (f.SHA256 != "" && hashMatches(dst, f.SHA256))) {
			p.report(m.Name, f, f.Size, f.Size, 0, true)
			continue
		}
		if err := p.pullFile(ctx, m, f, dst); err != nil {
			return "", err
		}
	}
	if err := writeManifest(modelDir, m); err != nil {
		return "", err
	}
	return modelDir, nil
}

// fileMatches reports whether dst is a file of the expected size (any size
// when unknown): files only ever get their final name after verification.
func fileMatches(dst string, f File) bool {
	st, err := os.Stat(dst)
	return err == nil && st.Mode().IsRegular() && (f.Size == 0 || st.Size() == f.Size)
}

// pullFile fetches one file, resuming and retrying transfers that break.
func (p *Puller) pullFile(ctx context.Context, m Model, f File, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("create directory for %s: %w", f.Path, err)
	}
	retries := p.Retries
	if retries == 0 {
		retries = 2
	}
	delay := p.RetryDelay
	if delay <= 0 {
		delay = time.Second
	}
	for attempt := 0; ; attempt++ {
		err := p.transfer(ctx, m, f, dst)
		if err == nil {
			return nil
		}
		var perm *permanentError
		if errors.As(err, &perm) || ctx.Err() != nil || attempt >= retries {
			if perm != nil {
				return perm.err
			}
			return err
		}
		if p.Progress != nil {
			fmt.Fprintf(p.Progress, "%s %s: %v; resuming in %s\n", m.Name, f.Path, err, delay)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay *= 2
	}
}

// permanentError is a failure that retrying cannot fix (404, bad hash).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }

// transfer makes one attempt: it continues dst.part from where it ends,
// then verifies the whole file and renames it into place.
func (p *Puller) transfer(ctx context.Context, m Model, f File, dst string) error {
	part := dst + ".part"
	fh, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", part, err)
	}
	defer fh.Close()
	sum := sha256.New()
	have, err := io.Copy(sum, fh)
	if err != nil {
		return fmt.Errorf("read %s: %w", part, err)
	}
	if f.Size > 0 && have > f.Size {
		// Longer than the file can be: start over.
		if have, err = restart(fh, sum); err != nil {
			return err
		}
	}

	if f.Size == 0 || have < f.Size {
		if err := p.fetch(ctx, m, f, fh, sum, &have); err != nil {
			return err
		}
	}
	if err := verify(f, have, sum); err != nil {
		fh.Close()
		os.Remove(part)
		return &permanentError{recall.WrapError(recall.EUNAVAILABLE, err,
			"download of %s %s is corrupt and was deleted; run the pull again", m.Name, f.Path)}
	}
	if err := fh.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", part, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("close %s: %w", part, err)
	}
	if err := os.Rename(part, dst); err != nil {
		return fmt.Errorf("install %s: %w", dst, err)
	}
	syncDir(filepath.Dir(dst))
	return nil
}

func restart(fh *os.File, sum hash.Hash) (int64, error) {
	sum.Reset()
	if err := fh.Truncate(0); err != nil {
		return 0, fmt.Errorf("truncate %s: %w", fh.Name(), err)
	}
	if _, err := fh.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	return 0, nil
}

func verify(f File, have int64, sum hash.Hash) error {
	if f.Size > 0 && have != f.Size {
		return fmt.Errorf("got %d bytes, want %d", have, f.Size)
	}
	if f.SHA256 != "" {
		if got := hex.EncodeToString(sum.Sum(nil)); !strings.EqualFold(got, f.SHA256) {
			return fmt.Errorf("sha256 %s, want %s", got, f.SHA256)
		}
	}
	return nil
}

// fileURL is where a file of m lives on the endpoint.
func (p *Puller) fileURL(m Model, f File) string {
	base := p.Endpoint
	if base == "" {
		base = DefaultEndpoint
	}
	elems := strings.Split(path.Join(m.Repo, "resolve", m.Revision, f.Path), "/")
	for i, e := range elems {
		elems[i] = url.PathEscape(e)
	}
	return strings.TrimRight(base, "/") + "/" + strings.Join(elems, "/")
}

// fetch appends the rest of the file to fh (positioned at its end, have
// bytes long, already hashed into sum). A server that ignores the Range
// request sends the whole file, which then replaces the partial one.
func (p *Puller) fetch(ctx context.Context, m Model, f File, fh *os.File, sum hash.Hash, have *int64) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.fileURL(m, f), nil)
	if err != nil {
		return &permanentError{recall.WrapError(recall.EINVALID, err, "model endpoint %q is not a valid URL", p.Endpoint)}
	}
	req.Header.Set("User-Agent", "recall")
	if *have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(*have, 10)+"-")
	}
	client := p.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return recall.WrapError(recall.EUNAVAILABLE, err, "download %s %s", m.Name, f.Path)
	}
	defer resp.Body.Close()

	switch resp.StatusCode {
	case http.StatusPartialContent:
		if start, ok := rangeStart(resp.Header.Get("Content-Range")); !ok || start != *have {
			// Not the range asked for: take nothing from it and start over.
			if *have, err = restart(fh, sum); err != nil {
				return err
			}
			return fmt.Errorf("download %s %s: server sent an unexpected range %q", m.Name, f.Path, resp.Header.Get("Content-Range"))
		}
	case http.StatusOK:
		if *have > 0 {
			if *have, err = restart(fh, sum); err != nil {
				return err
			}
		}
	case http.StatusRequestedRangeNotSatisfiable:
		// The part file may already be whole (size unknown to us); verify
		// decides. Otherwise the next attempt starts from scratch.
		if f.Size == 0 {
			return nil
		}
		if _, err := restart(fh, sum); err != nil {
			return err
		}
		*have = 0
		return fmt.Errorf("download %s %s: server refused to resume", m.Name, f.Path)
	case http.StatusNotFound:
		return &permanentError{recall.Errorf(recall.ENOTFOUND,
			"%s %s not found at %s (HTTP 404): the endpoint does not hold revision %s of %s",
			m.Name, f.Path, p.endpointName(), m.Revision, m.Repo)}
	case http.StatusUnauthorized, http.StatusForbidden:
		return &permanentError{recall.Errorf(recall.EUNAVAILABLE,
			"%s refused %s %s (HTTP %d)", p.endpointName(), m.Name, f.Path, resp.StatusCode)}
	default:
		return recall.Errorf(recall.EUNAVAILABLE, "download %s %s: HTTP %d from %s", m.Name, f.Path, resp.StatusCode, p.endpointName())
	}

	total := f.Size
	if total == 0 && resp.ContentLength > 0 {
		total = *have + resp.ContentLength
	}
	stall := p.StallTimeout
	if stall <= 0 {
		stall = time.Minute
	}
	timer := time.AfterFunc(stall, func() { cancel(errStalled) })
	defer timer.Stop()

	start, startHave := time.Now(), *have
	lastReport := time.Time{}
	buf := make([]byte, 256<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			timer.Reset(stall)
			if f.Size > 0 && *have+int64(n) > f.Size {
				return &permanentError{recall.Errorf(recall.EUNAVAILABLE,
					"download %s %s: server sent more than the expected %d bytes", m.Name, f.Path, f.Size)}
			}
			if _, err := fh.Write(buf[:n]); err != nil {
				return fmt.Errorf("write %s: %w", fh.Name(), err)
			}
			sum.Write(buf[:n])
			*have += int64(n)
			if now := time.Now(); now.Sub(lastReport) >= p.reportEvery() {
				lastReport = now
				p.report(m.Name, f, *have, total, rate(*have-startHave, now.Sub(start)), false)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if cause := context.Cause(ctx); errors.Is(cause, errStalled) {
				rerr = cause
			}
			return recall.WrapError(recall.EUNAVAILABLE, rerr, "download %s %s interrupted after %d bytes", m.Name, f.Path, *have)
		}
	}
	p.report(m.Name, f, *have, total, rate(*have-startHave, time.Since(start)), true)
	return nil
}

var errStalled = errors.New("no data received within the stall timeout")

func (p *Puller) endpointName() string {
	if p.Endpoint == "" {
		return DefaultEndpoint
	}
	return p.Endpoint
}

// rangeStart reads the first byte offset of a Content-Range header
// ("bytes 100-199/200").
func rangeStart(h string) (int64, bool) {
	rest, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return 0, false
	}
	first, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(first, 10, 64)
	return n, err == nil
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// manifest is what a finished pull writes next to the model's files.
type manifest struct {
	Name     string    `json:"name"`
	Repo     string    `json:"repo"`
	Revision string    `json:"revision"`
	Files    []File    `json:"files"`
	Pulled   time.Time `json:"pulled"`
}

func readManifest(dir string) (*manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return nil, err
	}
	var mf manifest
	if err := json.Unmarshal(data, &mf); err != nil {
		return nil, err
	}
	return &mf, nil
}

func writeManifest(dir string, m Model) error {
	data, err := json.MarshalIndent(manifest{Name: m.Name, Repo: m.Repo, Revision: m.Revision, Files: m.Files, Pulled: time.Now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, manifestName+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write model manifest: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, manifestName)); err != nil {
		return fmt.Errorf("write model manifest: %w", err)
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename durable; failure only weakens durability, so it
// is not reported.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// lockModel takes the pull lock of the model called name under dir: a
// file lock the system releases when its holder ends, however it ends, so
// a pull that crashed leaves none behind and two pulls can never both take
// it.
func lockModel(dir, name string) (func(), error) {
	path := lockPath(dir, name)
	l, holder, err := lockfile.TryLock(path, strconv.Itoa(os.Getpid()), 0o644)
	if errors.Is(err, lockfile.ErrLocked) {
		who, stale := lockfile.Busy(path, holder, "pull")
		return nil, recall.Errorf(recall.ECONFLICT, "another pull of %s is running%s: wait for it%s", name, who, stale)
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return l.Unlock, nil
}
