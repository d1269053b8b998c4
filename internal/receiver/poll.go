package receiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hookd/hookd/webhook"
)

// pollWait is how long one long-poll of --poll waits for a message.
const pollWait = 30 * time.Second

// listenPoll is `hookd listen --poll`: it creates a polling endpoint,
// long-polls it, prints each message (verified like a push) and
// acknowledges each answer, until ctx ends; then it deletes the endpoint.
func listenPoll(ctx context.Context, c *forwardConfig, stdout, stderr io.Writer) error {
	out := newPrinter(stdout)
	fw, err := c.start(ctx, "")
	if err != nil {
		return err
	}
	defer func() {
		if err := fw.stop(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(stderr, "hookd listen: %v\n", err)
			return
		}
		out.write(fmt.Appendf(nil, "deleted endpoint %s\n", fw.endpointID))
	}()
	out.write(fmt.Appendf(nil, "polling endpoint %s at %s receives %s (deleted when this stops, Ctrl-C to stop)\n\n", fw.endpointID, c.hookdURL, strings.Join(c.types, ", ")))
	p := &webhook.Poller{URL: c.hookdURL, EndpointID: fw.endpointID, Token: fw.pollToken, Wait: pollWait}
	for ctx.Err() == nil {
		page, err := p.Poll(ctx, "")
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			var refused *webhook.PollError
			if errors.As(err, &refused) && refused.Status < 500 {
				return fmt.Errorf("poll %s: %w", fw.endpointID, err)
			}
			fmt.Fprintf(stderr, "hookd listen: poll: %v (again in 1s)\n", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		for _, m := range page.Data {
			ev, err := fw.profile.verifier.Verify(m.Header(), []byte(m.Body))
			if err != nil {
				out.rejected(time.Now(), fmt.Errorf("message %s: %w", m.ID, err))
				continue
			}
			out.accepted(time.Now(), ev, m.ID, []byte(m.Body))
		}
		if len(page.Data) > 0 {
			if err := p.Ack(ctx, page.Next); err != nil && ctx.Err() == nil {
				return fmt.Errorf("ack %s: %w", fw.endpointID, err)
			}
		}
	}
	return nil
}
