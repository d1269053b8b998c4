package webhook

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/internal/kworkref"
)

// addVectorSeeds calls add for every vector in testdata that has a signature
// header, so fuzzing starts from real-world shapes.
func addVectorSeeds(f *testing.F, add func(v vector)) {
	vf := loadVectors(f)
	for _, group := range [][]vector{vf.Cases, vf.ExtraCases, vf.AsymmetricCases} {
		for _, v := range group {
			if v.SignatureHeader != nil {
				add(v)
			}
		}
	}
}

func FuzzParseStandardSignatureHeader(f *testing.F) {
	addVectorSeeds(f, func(v vector) { f.Add(*v.SignatureHeader) })
	f.Add("")
	f.Add("   ")
	f.Add("v1, v1,, ,v1")
	f.Fuzz(func(t *testing.T, header string) {
		n := 0
		for label, value := range standardSignatures(header) {
			n++
			if strings.ContainsAny(label, " ,") || strings.Contains(value, " ") {
				t.Fatalf("entry (%q, %q) of %q crosses a separator", label, value, header)
			}
			if !strings.Contains(header, label+","+value) {
				t.Fatalf("entry (%q, %q) is not in %q", label, value, header)
			}
		}
		if n > strings.Count(header, ",") {
			t.Fatalf("%d entries from %d commas in %q", n, strings.Count(header, ","), header)
		}
	})
}

func FuzzVerifyStandard(f *testing.F) {
	addVectorSeeds(f, func(v vector) {
		if v.Secret == testSecret && v.MsgID != nil && v.Timestamp != nil {
			f.Add(*v.MsgID, *v.Timestamp, *v.SignatureHeader, []byte(v.Payload), v.Now)
		}
	})
	signer, err := NewSigner(testSecret)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, msgID, timestamp, sigHeader string, body []byte, now int64) {
		err := VerifyStandard(testSecret, msgID, timestamp, sigHeader, body, time.Unix(now, 0), DefaultTolerance)
		if err != nil {
			for _, sentinel := range []error{ErrMissingHeader, ErrMalformedHeader, ErrTimestampTooOld, ErrTimestampTooNew, ErrNoMatchingSignature} {
				if errors.Is(err, sentinel) {
					return
				}
			}
			t.Fatalf("error without a sentinel: %v", err)
		}
		// Accepted: the header must carry exactly what Sign produces.
		ts, perr := strconv.ParseInt(timestamp, 10, 64)
		if perr != nil {
			t.Fatalf("accepted an unparsable timestamp %q", timestamp)
		}
		want := signer.Sign(msgID, ts, body)
		if !strings.Contains(" "+sigHeader+" ", " "+want+" ") {
			t.Fatalf("accepted %q without the entry %q", sigHeader, want)
		}
	})
}

// FuzzParseKworkHeader checks the kwork parser and verifier against the
// kwork specification's reference check (internal/kworkref): both must accept exactly the same inputs.
func FuzzParseKworkHeader(f *testing.F) {
	const secret = kworkSecret
	const ts = int64(1793188800)
	now := time.Unix(ts, 0)
	body := []byte(`{"id":"evt_1","type":"open.ping","data":{}}`)
	valid := SignKwork(secret, ts, body)
	for _, h := range []string{
		valid,
		SignKwork(secret, ts-300, body),
		SignKwork(secret, ts+301, body),
		"v1=" + hexOf(valid) + ",t=1793188800",
		valid + ",v1=00",
		"t=+1793188800,v1=" + hexOf(valid),
		"t=,v1=",
		"=,=,,t",
		"",
	} {
		f.Add(h, body)
	}
	addVectorSeeds(f, func(v vector) { f.Add(*v.SignatureHeader, []byte(v.Payload)) })
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		parsed := parseKworkHeader(header)
		if parsed.hasT && !strings.Contains(header, "t="+parsed.t) {
			t.Fatalf("t=%q not in %q", parsed.t, header)
		}
		if parsed.hasV1 && !strings.Contains(header, "v1="+parsed.v1) {
			t.Fatalf("v1=%q not in %q", parsed.v1, header)
		}
		_, err := VerifyWebhookAt(body, header, secret, DefaultTolerance, now)
		accepted := err == nil || errors.Is(err, ErrMalformedBody)
		if ref := kworkref.VerifyPlainHMACAt(body, header, secret, DefaultTolerance, now); ref != accepted {
			t.Fatalf("header %q body %q: reference accepts=%v, VerifyWebhookAt err=%v", header, body, ref, err)
		}
	})
}
