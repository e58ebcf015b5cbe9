package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/copse-dev/copse/e2e/process"
)

// probe checks a component's health endpoint once.
type probe func(ctx context.Context) error

// probeClient skips TLS verification: the components serve self-signed
// certificates generated at start, and a health probe on loopback needs no
// server authentication.
var probeClient = &http.Client{
	Timeout: 5 * time.Second,
	Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe only
	},
}

// httpProbe expects 200 from url; if want is set the body must contain it.
func httpProbe(url, bearer, want string) probe {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := probeClient.Do(req)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		if want != "" && !strings.Contains(string(body), want) {
			return fmt.Errorf("GET %s: unexpected body %q", url, strings.TrimSpace(string(body)))
		}
		return nil
	}
}

// waitHealthy polls check until it passes, the process exits, or timeout
// passes. Both failures carry the end of the component's log.
func waitHealthy(ctx context.Context, p *process.Process, check probe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	var lastErr error
	for {
		if err := p.CheckHealthy(); err != nil {
			return err
		}
		if lastErr = check(ctx); lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			// One more look: a component that crashed while we waited should
			// be reported as a crash, not a timeout.
			if err := p.CheckHealthy(); err != nil {
				return err
			}
			return fmt.Errorf("%s not healthy after %s: %w; last log lines (%s):\n%s",
				p.Name(), timeout, lastErr, p.LogPath(), p.LogTail(20))
		case <-ticker.C:
		}
	}
}
