// Package webhook signs and verifies hookd's webhook deliveries. It has no
// dependencies outside the standard library; hookd's server signs with the
// same code receivers verify with.
//
// Two wire schemes (profiles) are supported.
//
// Standard Webhooks (https://www.standardwebhooks.com), the "standard"
// profile. Each request carries
//
//	webhook-id:        evt_... (the event's id: identical on every retry and
//	                   for every endpoint of one event; deduplicate on it)
//	webhook-timestamp: Unix seconds of this attempt
//	webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>
//
// The secret is "whsec_" + base64(32 random bytes) (see NewSecret) and the
// HMAC key is the decoded bytes. Endpoints may instead (or also) be signed
// with Ed25519: the sender keeps a "whsk_" signing key, the receiver holds
// only its "whpk_" public key (see NewSigningKey), and the entry is
//
//	webhook-signature: v1a,<base64 Ed25519(signing key, "<id>.<timestamp>.<body>")>
//
// webhook-signature is a space-delimited list, so a key can be rotated
// without downtime: during an overlap the sender signs with the new and the
// old key ("v1,<new> v1,<old>"), and any entry that matches any of the
// verifier's keys passes. A verifier given a whsec_ secret checks v1 entries
// only, one given a whpk_ key v1a entries only; WithKeys gives it several.
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
//	v, err := webhook.NewVerifier(os.Getenv("WEBHOOK_SECRET")) // whsec_… or whpk_…; or NewKworkVerifier
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
// While a sender rotates, hold both keys:
//
//	v, err := webhook.NewVerifier(newSecret, webhook.WithKeys(oldSecret))
//
// Sending: keep one Signer (or KworkSigner) per key and call Sign for
// every attempt with the current time; Sign does not allocate beyond the
// returned string, and AppendSign not at all. A Signer made from a whsk_
// key signs v1a; join several signers' entries with a space to sign with
// several keys.
//
// Failures wrap ErrMissingHeader, ErrMalformedHeader, ErrTimestampTooOld,
// ErrTimestampTooNew, ErrNoMatchingSignature or ErrMalformedBody; test them
// with errors.Is.
package webhook
