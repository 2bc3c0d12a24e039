// Package hub is a client for Hugging Face–compatible hubs: it resolves
// revisions to commits and downloads files at a commit with resume, hashing
// while streaming. The token is only ever sent to the configured endpoint's
// host: redirects are followed by hand and lose it when they leave.
package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultEndpoint is used when neither a flag nor HF_ENDPOINT names one.
const DefaultEndpoint = "https://huggingface.co"

// The default slow-drip rule: below 32 KiB/s averaged over a minute, a
// request fails (docs/OPERATIONS.md, limits).
const (
	DefaultMinRate    = 32 << 10
	DefaultRateWindow = time.Minute
)

// Client talks to one hub endpoint.
type Client struct {
	Endpoint     string
	Token        string        // sent as "Authorization: Bearer …" to Endpoint's host only
	HTTP         *http.Client  // redirects must not be followed by it (see New)
	MaxRetries   int           // attempts per file without progress
	Backoff      time.Duration // first 5xx/network backoff, doubled per attempt
	MaxBackoff   time.Duration
	StallTimeout time.Duration // no body bytes for this long = retry
	// PartSize is the interval of resume checkpoints. They save hashing
	// only: a restart re-hashes the bytes on disk beyond the last one and
	// continues from their end (Fetch), so a crash costs what was in flight.
	PartSize int64
	// MinRate and RateWindow are the slow-drip rule beside StallTimeout: a
	// request whose body brings fewer than MinRate bytes a second, averaged
	// over each RateWindow, fails and is not retried (a dripping server
	// "makes progress" forever). MinRate 0 turns the rule off.
	MinRate    int64
	RateWindow time.Duration
	// MinRateFunc, if set, gives the minimum for each request instead of
	// MinRate (a client behind a bandwidth limiter lowers it to its share).
	MinRateFunc func() int64
	// Streams is the number of parallel ranged requests for one large
	// file (1 = a single stream). They fetch PartSize/Streams segments.
	Streams   int
	UserAgent string

	// wait sleeps between attempts (replaced in tests to observe backoff).
	wait func(ctx context.Context, d time.Duration) error
}

// New returns a client with production defaults.
func New(endpoint, token string) *Client {
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	return &Client{
		Endpoint: strings.TrimRight(endpoint, "/"),
		Token:    token,
		HTTP: &http.Client{
			// Redirects are followed in do, so the token policy lives in one place.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport:     &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 8, DisableCompression: true},
		},
		MaxRetries:   6,
		Backoff:      time.Second,
		MaxBackoff:   30 * time.Second,
		StallTimeout: 30 * time.Second,
		PartSize:     64 << 20,
		MinRate:      DefaultMinRate,
		RateWindow:   DefaultRateWindow,
		Streams:      1,
		UserAgent:    "forged",
	}
}

// EndpointFromEnv returns flag if set, else $HF_ENDPOINT, else the default.
func EndpointFromEnv(flag string) string {
	if flag != "" {
		return flag
	}
	if e := os.Getenv("HF_ENDPOINT"); e != "" {
		return e
	}
	return DefaultEndpoint
}

// TokenFromEnv returns $HF_TOKEN, else the token file ($HF_HOME/token,
// else ~/.cache/huggingface/token), else "".
func TokenFromEnv() string {
	if t := strings.TrimSpace(os.Getenv("HF_TOKEN")); t != "" {
		return t
	}
	var file string
	if home := os.Getenv("HF_HOME"); home != "" {
		file = filepath.Join(home, "token")
	} else if dir, err := os.UserHomeDir(); err == nil {
		file = filepath.Join(dir, ".cache", "huggingface", "token")
	}
	if file == "" {
		return ""
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

var (
	commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)
	repoRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// CheckRepo rejects names that are not "owner/name".
func CheckRepo(repo string) error {
	if !repoRE.MatchString(repo) || strings.Contains(repo, "..") {
		return fmt.Errorf("repository %q is not of the form owner/name", repo)
	}
	return nil
}

// IsCommit reports whether rev is a full 40-hex commit id.
func IsCommit(rev string) bool { return commitRE.MatchString(rev) }

// StatusError is an HTTP failure from the hub, with its error code header.
type StatusError struct {
	URL        string
	Status     int
	Code       string // X-Error-Code
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d", e.URL, e.Status)
	if e.Code != "" {
		msg += " (" + e.Code + ")"
	}
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg += ": check the token (HF_TOKEN or the token file)"
	}
	return msg
}

// retryable: rate limits and server errors are worth another attempt.
func (e *StatusError) retryable() bool {
	return e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// sameHost reports whether u is on the endpoint's scheme and host:port.
func (c *Client) sameHost(u *url.URL) bool {
	ep, err := url.Parse(c.Endpoint)
	return err == nil && strings.EqualFold(ep.Scheme, u.Scheme) && strings.EqualFold(ep.Host, u.Host)
}

// do sends a request and follows up to 10 redirects by hand. first is the
// first response's headers (the hub's: X-Repo-Commit, X-Linked-*), which
// the redirect target does not repeat.
// check, if set, vets the first response's headers before any redirect is
// followed or any body byte is read.
func (c *Client) do(ctx context.Context, method, rawURL string, hdr http.Header, check func(http.Header) error) (resp *http.Response, first http.Header, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, err
	}
	for hop := 0; hop < 10; hop++ {
		req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
		if err != nil {
			return nil, nil, err
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		req.Header.Set("User-Agent", c.UserAgent)
		req.Header.Set("Accept-Encoding", "identity")
		if c.Token != "" && c.sameHost(u) {
			req.Header.Set("Authorization", "Bearer "+c.Token)
		}
		resp, err := c.HTTP.Do(req)
		if err != nil {
			return nil, nil, err
		}
		if first == nil && resp.StatusCode < 400 {
			first = resp.Header.Clone()
			if check != nil {
				if err := check(first); err != nil {
					resp.Body.Close()
					return nil, nil, &finalError{err}
				}
			}
		}
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
			http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			loc := resp.Header.Get("Location")
			resp.Body.Close()
			next, err := u.Parse(loc)
			if err != nil || loc == "" {
				return nil, nil, fmt.Errorf("%s: bad redirect location %q", u.Redacted(), loc)
			}
			u = next
			continue
		}
		if resp.StatusCode >= 400 {
			resp.Body.Close()
			se := &StatusError{URL: u.Redacted(), Status: resp.StatusCode, Code: resp.Header.Get("X-Error-Code")}
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
				se.RetryAfter = time.Duration(s) * time.Second
			}
			return nil, nil, se
		}
		return resp, first, nil
	}
	return nil, nil, fmt.Errorf("%s: too many redirects", rawURL)
}

// ResolveRevision turns a branch, tag or commit into a 40-hex commit with
// GET /api/models/{repo}/revision/{rev}.
func (c *Client) ResolveRevision(ctx context.Context, repo, rev string) (string, error) {
	if err := CheckRepo(repo); err != nil {
		return "", err
	}
	if rev == "" {
		rev = "main"
	}
	u := c.Endpoint + "/api/models/" + repo + "/revision/" + url.PathEscape(rev)
	var out struct {
		SHA string `json:"sha"`
	}
	err := c.retry(ctx, func() error {
		resp, _, err := c.do(ctx, http.MethodGet, u, nil, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		return json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&out)
	})
	if err != nil {
		return "", fmt.Errorf("resolve %s@%s: %w", repo, rev, err)
	}
	if !IsCommit(out.SHA) {
		return "", fmt.Errorf("resolve %s@%s: hub answered sha %q, not a 40-hex commit", repo, rev, out.SHA)
	}
	return out.SHA, nil
}

// FileURL is the resolve URL of a file at a commit.
func (c *Client) FileURL(repo, commit, p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return c.Endpoint + "/" + repo + "/resolve/" + commit + "/" + strings.Join(segs, "/")
}

// FetchSmall downloads a small file at a commit into memory, refusing
// more than limit bytes.
func (c *Client) FetchSmall(ctx context.Context, repo, commit, p string, limit int64) ([]byte, error) {
	var data []byte
	err := c.retry(ctx, func() error {
		resp, _, err := c.do(ctx, http.MethodGet, c.FileURL(repo, commit, p), nil, func(h http.Header) error {
			if rc := h.Get("X-Repo-Commit"); rc != "" && rc != commit {
				return fmt.Errorf("%s: hub served commit %s, asked for %s", p, rc, commit)
			}
			return nil
		})
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > limit {
			return fmt.Errorf("%s is larger than %d bytes", p, limit)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", p, err)
	}
	return data, nil
}

// retry runs fn until it succeeds, fails for good, or runs out of attempts.
func (c *Client) retry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := 0; attempt <= c.MaxRetries; attempt++ {
		if err = fn(); err == nil {
			return nil
		}
		wait, ok := c.backoff(err, attempt)
		if !ok {
			return err
		}
		if werr := c.sleep(ctx, wait); werr != nil {
			return werr
		}
	}
	return err
}

// backoff returns how long to wait before retrying after err, or false
// when err is final (4xx other than 429, cancellation).
func (c *Client) backoff(err error, attempt int) (time.Duration, bool) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return 0, false
	}
	d := c.Backoff << min(attempt, 20)
	if d > c.MaxBackoff {
		d = c.MaxBackoff
	}
	var se *StatusError
	if errors.As(err, &se) {
		if !se.retryable() {
			return 0, false
		}
		if se.RetryAfter > 0 {
			d = min(se.RetryAfter, c.MaxBackoff*4)
		}
	}
	var final *finalError
	if errors.As(err, &final) {
		return 0, false
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return 0, false // a host name that does not exist will not appear by waiting
	}
	return d, true
}

// finalError marks a download error that retrying cannot fix.
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }
func (e *finalError) Unwrap() error { return e.err }

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.wait != nil {
		return c.wait(ctx, d)
	}
	return sleep(ctx, d)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
