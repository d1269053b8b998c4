package webhook_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/hookd/hookd/webhook"
)

func ExampleSigner_Sign() {
	signer, err := webhook.NewSigner("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		panic(err)
	}
	fmt.Println(signer.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`)))
	// Output: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}

func ExampleNewSecret() {
	secret, err := webhook.NewSecret()
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.HasPrefix(secret, "whsec_"), len(secret))
	// Output: true 50
}

func ExampleNewVerifier() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"id":"evt_01JBC","type":"post.published","subject":"posts/7","data":{"published":true}}`)

	// What hookd sends.
	signer, _ := webhook.NewSigner(secret)
	h := http.Header{}
	h.Set("webhook-id", "msg_1")
	h.Set("webhook-timestamp", "1793188800")
	h.Set("webhook-signature", signer.Sign("msg_1", 1793188800, body))

	// What the receiver does (the clock is fixed only to make the example stable).
	v, err := webhook.NewVerifier(secret, webhook.WithClock(func() time.Time { return time.Unix(1793188830, 0) }))
	if err != nil {
		panic(err)
	}
	ev, err := v.Verify(h, body)
	fmt.Println(ev.Type, ev.ID, ev.Subject, string(ev.Data), err)

	_, err = v.Verify(h, []byte(`{"id":"evt_01JBC","type":"post.deleted"}`))
	fmt.Println(errors.Is(err, webhook.ErrNoMatchingSignature))
	// Output:
	// post.published evt_01JBC posts/7 {"published":true} <nil>
	// true
}

func ExampleVerifyWebhook() {
	const secret = "kw_secret_3f9a"
	body := []byte(`{"id":"evt_01JBCDEF","type":"app.installed","tenant":"acme_corp","environment":"live","app":"shop-sync","data":{"version":"1.0.0"}}`)
	sigHeader := webhook.SignKwork(secret, time.Now().Unix(), body) // X-Kwork-Signature

	ev, err := webhook.VerifyWebhook(body, sigHeader, secret, 300*time.Second)
	fmt.Println(ev.Type, ev.ID, ev.Tenant, err)

	stale := webhook.SignKwork(secret, time.Now().Add(-time.Hour).Unix(), body)
	_, err = webhook.VerifyWebhook(body, stale, secret, 300*time.Second)
	fmt.Println(errors.Is(err, webhook.ErrTimestampTooOld))
	// Output:
	// app.installed evt_01JBCDEF acme_corp <nil>
	// true
}

func ExampleSignKwork() {
	fmt.Println(webhook.SignKwork("kw_secret_3f9a", 1793188800, []byte(`{"id":"evt_1","type":"open.ping","data":{}}`)))
	// Output: t=1793188800,v1=7aaa5b350e3c647a5ba69c615ae52421343b9877e756f4a0e4e6c8fb2ec11a86
}

func ExampleMiddleware() {
	const secret = "kw_secret_3f9a"
	v, err := webhook.NewKworkVerifier(secret)
	if err != nil {
		panic(err)
	}
	handler := webhook.Middleware(v, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, _ := webhook.EventFromContext(r.Context())
		fmt.Println("handled", ev.Type, ev.ID)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv := httptest.NewServer(handler)
	defer srv.Close()

	body := `{"id":"evt_2","type":"open.ping","data":{}}`
	for _, signingSecret := range []string{secret, "not the secret"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("X-Kwork-Signature", webhook.SignKwork(signingSecret, time.Now().Unix(), []byte(body)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		reason, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(strings.TrimSpace(strconv.Itoa(resp.StatusCode) + " " + string(reason)))
	}
	// Output:
	// handled open.ping evt_2
	// 204
	// 401 webhook: no matching signature: X-Kwork-Signature v1 was not made with this secret
}
