package event

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// typeNameRule is the rule ValidateTypeName checks byte by byte, as the
// regexp it replaced.
var typeNameRule = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,127}$`)

// TestValidateTypeName: the byte-by-byte check accepts exactly what the
// rule does, on the edges and on random names over an alphabet of valid
// and invalid bytes.
func TestValidateTypeName(t *testing.T) {
	t.Parallel()
	cases := []string{
		"", "a", "0", "invoice.paid", "a_b-c.d", "_a", ".a", "-a", "A", "aB",
		"invoice paid", "é", "a\x00", "hookd.endpoint.failing",
		strings.Repeat("a", 128), strings.Repeat("a", 129), "a" + strings.Repeat(".", 127),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "az09_.-A Z/é*"
	for range 5000 {
		b := make([]byte, rng.IntN(8))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, name := range cases {
		want := typeNameRule.MatchString(name)
		if got := ValidateTypeName(name) == nil; got != want {
			t.Fatalf("ValidateTypeName(%q) valid = %v; the rule says %v", name, got, want)
		}
	}
	if err := ValidateTypeName("Invoice"); err == nil || !strings.Contains(err.Error(), "lowercase") {
		t.Fatalf("a refused name's error says what to fix: %v", err)
	}
}
