package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/hookd/hookd/webhook"
)

// forwardConfig is what `hookd listen --forward` needs to register itself.
type forwardConfig struct {
	hookdURL  string
	key       string
	owner     string
	types     []string
	profile   string // "" picks by the delivery's headers
	tolerance time.Duration
}

const (
	// hookdWait bounds how long --forward waits for hookd to accept
	// connections (it is often started a moment before, in the background).
	hookdWait = 10 * time.Second
	// requestTimeout bounds one admin API call.
	requestTimeout = 10 * time.Second
	// forwardDescription marks the endpoints --forward creates.
	forwardDescription = "hookd listen --forward"
	// pollDescription marks the polling endpoints --poll creates.
	pollDescription = "hookd listen --poll"
)

// forwarding is an endpoint --forward created, and how to verify its
// deliveries.
type forwarding struct {
	cfg        *forwardConfig
	client     *http.Client
	endpointID string
	profile    profile
	pollToken  string // --poll: the polling endpoint's token
}

// start creates an endpoint that delivers to url (none: a polling
// endpoint) and returns it with the verifier its secret gives.
func (c *forwardConfig) start(ctx context.Context, url string) (*forwarding, error) {
	fw := &forwarding{cfg: c, client: &http.Client{Timeout: requestTimeout}}
	fields := map[string]any{"url": url, "event_types": c.types, "description": forwardDescription}
	if url == "" {
		fields = map[string]any{"kind": "poll", "event_types": c.types, "description": pollDescription}
	}
	body, _ := json.Marshal(fields)
	status, answer, err := fw.call(ctx, http.MethodPost, "/api/admin/webhooks", body)
	if err != nil {
		return nil, err
	}
	if status != http.StatusCreated {
		return nil, c.refused(url, status, answer)
	}
	var created struct {
		ID        string `json:"id"`
		Secret    string `json:"secret"`
		PollToken string `json:"poll_token"`
	}
	if err := json.Unmarshal(answer, &created); err != nil || created.ID == "" || created.Secret == "" {
		return nil, fmt.Errorf("create endpoint: hookd answered 201 without an id and secret: %.200s", answer)
	}
	fw.endpointID, fw.pollToken = created.ID, created.PollToken
	if fw.profile, err = c.verifierFor(created.Secret); err != nil {
		_ = fw.stop(ctx) // the endpoint is of no use without its verifier
		return nil, err
	}
	return fw, nil
}

// refused turns a failed create into what the user must do.
func (c *forwardConfig) refused(url string, status int, answer []byte) error {
	var e struct {
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal(answer, &e)
	msg := e.Error.Message
	if msg == "" {
		msg = strings.TrimSpace(string(answer))
	}
	switch {
	case status == http.StatusUnprocessableEntity && strings.Contains(msg, "not reachable by hookd"):
		return fmt.Errorf("hookd refuses to deliver to %s (its egress guard blocks this machine's addresses): start hookd with --egress-allow 127.0.0.1/32 (or HOOKD_EGRESS_ALLOW=127.0.0.1/32) to allow it", url)
	case status == http.StatusUnauthorized:
		return fmt.Errorf("hookd at %s refused --key: %s (create one with 'hookd apikey create --owner ID')", c.hookdURL, msg)
	case status == http.StatusForbidden:
		return fmt.Errorf("hookd at %s: %s (--forward needs an admin key)", c.hookdURL, msg)
	}
	return fmt.Errorf("create endpoint at %s: %d %s", c.hookdURL, status, msg)
}

// verifierFor is the profile that checks the endpoint's deliveries: the
// one --profile names, else whichever scheme each delivery's headers use.
func (c *forwardConfig) verifierFor(secret string) (profile, error) {
	std, err := newProfile("standard", []string{secret}, c.tolerance)
	if err != nil {
		return profile{}, err
	}
	kw, err := newProfile("kwork", []string{secret}, c.tolerance)
	if err != nil {
		return profile{}, err
	}
	switch c.profile {
	case "standard":
		return std, nil
	case "kwork":
		return kw, nil
	}
	return profile{name: "auto", verifier: byHeaders{standard: std, kwork: kw}, deliveryHeader: webhook.HeaderID}, nil
}

// byHeaders verifies a delivery with the scheme its headers show: kwork
// when it carries X-Kwork-Signature, Standard Webhooks otherwise.
type byHeaders struct{ standard, kwork profile }

func (b byHeaders) Verify(h http.Header, body []byte) (webhook.Event, error) {
	if h.Get(webhook.HeaderKworkSignature) != "" {
		return b.kwork.verifier.Verify(h, body)
	}
	return b.standard.verifier.Verify(h, body)
}

// stop deletes the endpoint.
func (fw *forwarding) stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	status, answer, err := fw.call(ctx, http.MethodDelete, "/api/admin/webhooks/"+fw.endpointID, nil)
	if err != nil {
		return fmt.Errorf("delete endpoint %s: %w", fw.endpointID, err)
	}
	if status != http.StatusNoContent && status != http.StatusNotFound {
		return fmt.Errorf("delete endpoint %s: hookd answered %d %.200s; delete it with DELETE /api/admin/webhooks/%s", fw.endpointID, status, answer, fw.endpointID)
	}
	return nil
}

// call makes one admin API request, waiting up to hookdWait for hookd to
// accept connections.
func (fw *forwarding) call(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	deadline := time.Now().Add(hookdWait)
	for {
		status, answer, err := fw.callOnce(ctx, method, path, body)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(deadline) {
			if err != nil {
				return 0, nil, fmt.Errorf("cannot reach hookd at %s: %w (start it with 'hookd serve --egress-allow 127.0.0.1/32', or point --url at it)", fw.cfg.hookdURL, err)
			}
			return status, answer, nil
		}
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (fw *forwarding) callOnce(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(fw.cfg.hookdURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+fw.cfg.key)
	req.Header.Set("Content-Type", "application/json")
	if fw.cfg.owner != "" {
		req.Header.Set("Hookd-Owner", fw.cfg.owner)
	}
	resp, err := fw.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close() //nolint:errcheck // closing a response body reports nothing the caller can act on
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("read hookd's answer: %w", err)
	}
	return resp.StatusCode, answer, nil
}
