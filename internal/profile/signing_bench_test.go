package profile_test

import (
	"testing"
	"time"

	"github.com/hookd/hookd/internal/endpoint"
	"github.com/hookd/hookd/internal/profile"
)

// The hot path for the other signature schemes (hmac is
// BenchmarkStandardSignEnvelope): recorded, not budgeted, since one Ed25519
// signature costs an order of magnitude more than the HMAC budget.

func benchKeys(b *testing.B, scheme string, overlap bool) string {
	keys := endpoint.Keys{Current: newKeySet(b, scheme)}
	if overlap {
		// The benchmark's clock is 1_700_000_000: a day's overlap covers it.
		keys = endpoint.Keys{Current: newKeySet(b, scheme)}.Rotate(keys.Current, time.Unix(1_700_000_000, 0), 24*time.Hour)
	}
	return encodeKeys(b, keys)
}

func BenchmarkStandardSignEnvelopeEd25519(b *testing.B) {
	benchSignEnvelope(b, profile.Standard{}, benchKeys(b, endpoint.SignEd25519, false))
}

func BenchmarkStandardSignEnvelopeBoth(b *testing.B) {
	benchSignEnvelope(b, profile.Standard{}, benchKeys(b, endpoint.SignBoth, false))
}

// BenchmarkStandardSignEnvelopeOverlap: hmac during a rotation's overlap,
// two v1 entries.
func BenchmarkStandardSignEnvelopeOverlap(b *testing.B) {
	benchSignEnvelope(b, profile.Standard{}, benchKeys(b, endpoint.SignHMAC, true))
}
