// Package webhook signs and verifies hookd's webhook deliveries. It has no
// dependencies outside the standard library; hookd's server signs with the
// same code receivers verify with.
//
// Two wire schemes (profiles) are supported.
//
// Standard Webhooks (https://www.standardwebhooks.com), the "standard"
// profile. Each request carries
//
//	webhook-id:        msg_... (identical on every retry: deduplicate on it)
//	webhook-timestamp: Unix seconds of this attempt
//	webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>
//
// The secret is "whsec_" + base64(32 random bytes) (see NewSecret) and the
// HMAC key is the decoded bytes. webhook-signature is a space-delimited list
// so a secret can be rotated without downtime: any v1 entry that matches
// passes; entries with other labels (such as v1a, Ed25519) are ignored.
//
// Kwork, the "kwork" profile of a developer platform. Each request carries
//
//	X-Kwork-Signature: t=<Unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
//	X-Kwork-Event:     the event type
//	X-Kwork-Delivery:  the delivery id (identical on every retry)
//
// where the secret is used as the raw bytes of the string given to the owner.
//
// Both schemes sign the raw body bytes: verify before parsing, never a
// re-serialised body. Both reject a timestamp more than the tolerance
// (default 300 s) away from the receiver's clock, in either direction.
//
// Receiving with net/http:
//
//	v, err := webhook.NewVerifier(os.Getenv("WEBHOOK_SECRET")) // or NewKworkVerifier
//	if err != nil {
//		log.Fatal(err)
//	}
//	http.Handle("/webhooks", webhook.Middleware(v, http.HandlerFunc(
//		func(w http.ResponseWriter, r *http.Request) {
//			ev, _ := webhook.EventFromContext(r.Context())
//			log.Printf("%s %s", ev.Type, ev.ID) // dedupe on ev.ID
//			w.WriteHeader(http.StatusNoContent)
//		})))
//
// Or without middleware: Verifier.Verify(r.Header, body) or, for kwork,
// VerifyWebhook(body, r.Header.Get("X-Kwork-Signature"), secret, 300*time.Second).
//
// Sending: keep one Signer (or KworkSigner) per secret and call Sign for
// every attempt with the current time; Sign does not allocate beyond the
// returned string, and AppendSign not at all.
//
// Failures wrap ErrMissingHeader, ErrMalformedHeader, ErrTimestampTooOld,
// ErrTimestampTooNew, ErrNoMatchingSignature or ErrMalformedBody; test them
// with errors.Is.
package webhook
