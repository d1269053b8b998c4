// Package receiver implements the developer-side commands `hookd listen` and
// `hookd verify`: a local endpoint that checks and prints every delivery, and
// a one-shot check of a captured request. Both verify with package webhook,
// the same code receivers use.
package receiver

import (
	"fmt"
	"time"

	"github.com/hookd/hookd/webhook"
)

// profile is the wire scheme a command checks.
type profile struct {
	name     string
	verifier webhook.RequestVerifier
	// deliveryHeader names the header that identifies the delivery.
	deliveryHeader string
}

const profileUsage = "wire scheme: standard (Standard Webhooks, whsec_ secret) or kwork (X-Kwork-Signature)"

func newProfile(name, secret string, tolerance time.Duration) (profile, error) {
	if secret == "" {
		return profile{}, fmt.Errorf("--secret is required: pass the endpoint's signing secret (whsec_... for --profile standard, the subscription secret for --profile kwork)")
	}
	opts := []webhook.VerifierOption{webhook.WithTolerance(tolerance)}
	switch name {
	case "standard":
		v, err := webhook.NewVerifier(secret, opts...)
		if err != nil {
			return profile{}, fmt.Errorf("--secret: %w", err)
		}
		return profile{name: name, verifier: v, deliveryHeader: webhook.HeaderID}, nil
	case "kwork":
		v, err := webhook.NewKworkVerifier(secret, opts...)
		if err != nil {
			return profile{}, fmt.Errorf("--secret: %w", err)
		}
		return profile{name: name, verifier: v, deliveryHeader: webhook.HeaderKworkDelivery}, nil
	}
	return profile{}, fmt.Errorf("--profile %q: want standard or kwork", name)
}
