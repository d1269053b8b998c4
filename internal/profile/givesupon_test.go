package profile

import "testing"

// TestGivesUpOn: the standard profile discards a 4xx other than 408 and
// 429 (403, 409 and 422 included) and an unfollowed 3xx, and retries 408,
// 429 and every 5xx; kwork retries every non-2xx answer.
func TestGivesUpOn(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status          int
		standard, kwork bool // gives up
	}{
		{301, true, false}, {302, true, false}, {304, true, false},
		{400, true, false}, {401, true, false}, {403, true, false}, {404, true, false},
		{405, true, false}, {409, true, false}, {410, true, false}, {413, true, false},
		{415, true, false}, {422, true, false}, {451, true, false},
		{408, false, false}, {429, false, false},
		{500, false, false}, {501, false, false}, {502, false, false},
		{503, false, false}, {504, false, false}, {599, false, false},
	} {
		if got := (Standard{}).GivesUpOn(c.status); got != c.standard {
			t.Errorf("standard GivesUpOn(%d) = %v, want %v", c.status, got, c.standard)
		}
		if got := (Kwork{}).GivesUpOn(c.status); got != c.kwork {
			t.Errorf("kwork GivesUpOn(%d) = %v, want %v", c.status, got, c.kwork)
		}
	}
}
