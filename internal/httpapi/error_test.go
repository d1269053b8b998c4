package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookd/hookd/internal/apperr"
)

// TestWriteErrorLogLevel: a failure is logged as an error, but the same
// cancellation when the client itself went away is only noted: hookd did
// nothing wrong, and a load balancer's or a client's timeouts would
// otherwise fill the error log.
func TestWriteErrorLogLevel(t *testing.T) {
	t.Parallel()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want string
	}{
		{"client gone", gone, fmt.Errorf("insert events: %w", context.Canceled), `level=INFO msg="request abandoned by the client"`},
		{"client here, the database cancelled", context.Background(), fmt.Errorf("insert events: %w", context.Canceled), `level=ERROR msg="request failed"`},
		{"client gone, another failure", gone, fmt.Errorf("insert events: disk full"), `level=ERROR msg="request failed"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			r := httptest.NewRequestWithContext(c.ctx, http.MethodPost, "/api/v1/events", nil)
			w := httptest.NewRecorder()
			apperr.Write(w, r, log, c.err)
			if !strings.Contains(logs.String(), c.want) || strings.Count(logs.String(), "\n") != 1 {
				t.Errorf("logged %q, want one line with %s", logs.String(), c.want)
			}
			if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), `"internal error"`) {
				t.Errorf("answer %d %s, want 500 internal error", w.Code, w.Body)
			}
		})
	}
}
