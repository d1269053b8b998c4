// Package receiver implements the developer-side commands `hookd listen` and
// `hookd verify`: a local endpoint that checks and prints every delivery, and
// a one-shot check of a captured request. Both verify with package webhook,
// the same code receivers use.
package receiver

import (
	"errors"
	"flag"
	"fmt"
	"strings"
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

// keyList collects repeated --secret flags: a receiver holds the old and the
// new key while the sender's rotation overlaps.
type keyList []string

func (k *keyList) String() string { return "" } // never print keys

func (k *keyList) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("empty key")
	}
	*k = append(*k, s)
	return nil
}

// secretFlag declares --secret on fs.
func secretFlag(fs *flag.FlagSet) *keyList {
	k := &keyList{}
	fs.Var(k, "secret", "the endpoint's key (required): a whsec_ secret or whpk_ public key for --profile standard, the subscription secret for --profile kwork; repeat it to accept several (the old and the new key during a rotation)")
	return k
}

func newProfile(name string, secrets []string, tolerance time.Duration) (profile, error) {
	if len(secrets) == 0 {
		return profile{}, fmt.Errorf("--secret is required: pass the endpoint's signing secret (whsec_... or its whpk_... public key for --profile standard, the subscription secret for --profile kwork)")
	}
	secret := secrets[0]
	opts := []webhook.VerifierOption{webhook.WithTolerance(tolerance), webhook.WithKeys(secrets[1:]...)}
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
