package webhook_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hookd/hookd/webhook"
)

// TestAnswerControls: the helpers set the header hookd reads on an answer.
func TestAnswerControls(t *testing.T) {
	for _, c := range []struct {
		set  func(http.Header)
		want string
	}{{webhook.AnswerDisable, "disable"}, {webhook.AnswerAbortMessage, "abort-message"}} {
		w := httptest.NewRecorder()
		c.set(w.Header())
		w.WriteHeader(http.StatusGone)
		if got := w.Result().Header.Get("webhook-delivery"); got != c.want {
			t.Errorf("webhook-delivery %q, want %q", got, c.want)
		}
	}
}
