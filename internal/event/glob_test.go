package event

import (
	"testing"
	"time"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		glob, name string
		want       bool
	}{
		{"*", "invoice.paid", true},
		{"invoice.*", "invoice.paid", true},
		{"invoice.*", "invoice.paid.late", true},
		{"invoice.*", "invoices.paid", false},
		{"invoice.paid", "invoice.paid", true},
		{"invoice.paid", "invoice.paidx", false},
		{"*.paid", "invoice.paid", true},
		{"*.paid", "invoice.unpaid", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"", "", true},
	}
	for _, c := range cases {
		if got := Match(c.glob, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.glob, c.name, got, c.want)
		}
	}
}

func TestValidateGlob(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"*", "invoice.*", "a-b_c.d"} {
		if err := ValidateGlob(ok); err != nil {
			t.Errorf("ValidateGlob(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Invoice", "a b", "a/b", "ä"} {
		if err := ValidateGlob(bad); err == nil {
			t.Errorf("ValidateGlob(%q) = nil, want error", bad)
		}
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("invoice.*", "invoice.paid")
	f.Add("*a*b*", "xaxbx")
	f.Fuzz(func(t *testing.T, g, name string) {
		if len(g) > 64 || len(name) > 64 {
			return
		}
		if Match(g, name) && IsLiteral(g) && g != name {
			t.Fatalf("literal %q matched %q", g, name)
		}
		if Match("*", name) != true {
			t.Fatal("* must match everything")
		}
	})
}

func TestNewIDIncreases(t *testing.T) {
	t.Parallel()
	now := time.Now()
	prev := NewID("x_", now)
	for range 1000 {
		id := NewID("x_", now) // same millisecond
		if id <= prev {
			t.Fatalf("%s after %s: ids must increase", id, prev)
		}
		prev = id
	}
}
