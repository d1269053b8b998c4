package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Poller reads a hookd polling endpoint (an endpoint of kind poll): for a
// receiver with no public address, behind a firewall or in a batch job.
// Each message carries the body and the signature headers a push would
// have sent; verify it with the endpoint's secret as a push:
//
//	p := &webhook.Poller{URL: "https://hookd.example", EndpointID: id, Token: token, Wait: 30 * time.Second}
//	for {
//		page, err := p.Poll(ctx, "") // "": after the acknowledged position
//		...
//		for _, m := range page.Data {
//			ev, err := verifier.Verify(m.Header(), []byte(m.Body))
//			...
//		}
//		err = p.Ack(ctx, page.Next) // the next Poll("") reads after it
//	}
type Poller struct {
	URL        string        // hookd's address, e.g. https://hookd.example
	EndpointID string        // the polling endpoint's id (ep_…)
	Token      string        // its poll token (hkp_…)
	Wait       time.Duration // long-poll: how long hookd may hold an empty answer (at most 60 s)
	Limit      int           // messages per answer (0: hookd's default, 100)
	Client     *http.Client  // nil: a client with a timeout of Wait + 30 s
}

// PolledMessage is one message of a polling endpoint.
type PolledMessage struct {
	Cursor  string            `json:"cursor"`
	ID      string            `json:"id"`
	EventID string            `json:"event_id"`
	Type    string            `json:"type"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// Header is the message's signature headers, for a Verifier.
func (m PolledMessage) Header() http.Header {
	h := make(http.Header, len(m.Headers))
	for k, v := range m.Headers {
		h.Set(k, v)
	}
	return h
}

// PollPage is one answer: its messages in order and the cursor after them.
type PollPage struct {
	Data []PolledMessage `json:"data"`
	Next string          `json:"next"`
}

// Poll reads the messages after the cursor after ("" : after the
// endpoint's acknowledged position), waiting up to Wait for one.
func (p *Poller) Poll(ctx context.Context, after string) (PollPage, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Wait > 0 {
		q.Set("wait", p.Wait.String())
	}
	var page PollPage
	err := p.call(ctx, http.MethodGet, "?"+q.Encode(), nil, &page)
	return page, err
}

// Ack moves the endpoint's acknowledged position on to cursor.
func (p *Poller) Ack(ctx context.Context, cursor string) error {
	body, _ := json.Marshal(map[string]string{"cursor": cursor})
	return p.call(ctx, http.MethodPost, "/ack", body, nil)
}

// PollError is hookd's refusal of a poll: its status and message.
type PollError struct {
	Status  int
	Message string
}

func (e *PollError) Error() string { return fmt.Sprintf("hookd answered %d: %s", e.Status, e.Message) }

func (p *Poller) call(ctx context.Context, method, suffix string, body []byte, out any) error {
	client := p.Client
	if client == nil {
		client = &http.Client{Timeout: p.Wait + 30*time.Second}
	}
	u := strings.TrimRight(p.URL, "/") + "/api/v1/poll/" + url.PathEscape(p.EndpointID) + suffix
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close() //nolint:errcheck // nothing to act on
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		if e.Error.Message == "" {
			e.Error.Message = strings.TrimSpace(string(raw))
		}
		return &PollError{Status: resp.StatusCode, Message: e.Error.Message}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}
