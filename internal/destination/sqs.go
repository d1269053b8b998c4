package destination

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// sqsConn is one SQS client for one endpoint, region and access key. Its
// HTTP transport dials through the egress guard and keeps its own
// keep-alive connections, so it never breaks for good.
type sqsConn struct {
	c  *sqs.Client
	tr *http.Transport
}

// sqsMaxAttributes is SQS's limit on a message's attributes.
const sqsMaxAttributes = 10

func dialSQS(_ context.Context, d *Dest, dial *net.Dialer) (conn, error) {
	tr := &http.Transport{
		DialContext:         dial.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second, // as net/http's default
		TLSHandshakeTimeout: dial.Timeout,
	}
	// The endpoint's key, or none: never the credentials of the machine
	// hookd runs on (its instance role or environment), which would let
	// an endpoint's owner send as hookd.
	var creds aws.CredentialsProvider = aws.AnonymousCredentials{}
	if u := d.URL.User; u != nil {
		secret, _ := u.Password()
		key := aws.Credentials{AccessKeyID: u.Username(), SecretAccessKey: secret, Source: "hookd endpoint"}
		creds = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return key, nil })
	}
	base := d.Endpoint
	c := sqs.New(sqs.Options{
		Region:       d.Region,
		BaseEndpoint: &base,
		Credentials:  creds,
		HTTPClient:   &http.Client{Transport: tr},
		Retryer:      aws.NopRetryer{}, // River retries, on the profile's schedule
	})
	return &sqsConn{c: c, tr: tr}, nil
}

// send sends m to the queue. Its attributes are the signature headers
// first (SQS takes at most ten), then the others while there is room. A
// FIFO queue gets the subject as its message group (one subject in
// order) and the event id as its deduplication id.
func (s *sqsConn) send(ctx context.Context, d *Dest, m Message) error {
	in := &sqs.SendMessageInput{QueueUrl: &d.QueueURL, MessageBody: aws.String(string(m.Body)), MessageAttributes: sqsAttributes(m.Headers)}
	if d.FIFO {
		in.MessageGroupId = aws.String(groupID(m.Subject))
		in.MessageDeduplicationId = aws.String(m.EventID)
	}
	_, err := s.c.SendMessage(ctx, in)
	if err == nil {
		return nil
	}
	return sqsError(d, err)
}

// sqsAttributes is h as SQS string attributes, signature headers first.
func sqsAttributes(h http.Header) map[string]types.MessageAttributeValue {
	type header struct{ name, value string }
	var all []header
	eachHeader(h, func(name, value string) { all = append(all, header{name, value}) })
	signature := func(name string) bool {
		return strings.HasPrefix(name, "webhook-") || strings.HasPrefix(name, "x-kwork-")
	}
	slices.SortFunc(all, func(a, b header) int {
		if sa, sb := signature(a.name), signature(b.name); sa != sb {
			if sa {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	out := make(map[string]types.MessageAttributeValue, min(len(all), sqsMaxAttributes))
	for _, x := range all[:min(len(all), sqsMaxAttributes)] {
		out[x.name] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(x.value)}
	}
	return out
}

// groupID is a FIFO message group for subject: the subject itself when
// SQS takes it (at most 128 characters), else its hash; "hookd" for an
// event without one.
func groupID(subject string) string {
	if subject == "" {
		return "hookd"
	}
	if len(subject) <= 128 {
		return subject
	}
	sum := sha256.Sum256([]byte(subject))
	return hex.EncodeToString(sum[:])
}

// sqsError sorts an SQS error: a missing queue, refused credentials or
// permission, and a message SQS will never take are permanent (Refused);
// throttling, a 5xx and a connection that failed are retried.
func sqsError(d *Dest, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		code := api.ErrorCode()
		switch code {
		case "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "ResourceNotFoundException":
			return refused(404, "SQS: no queue %s (%s)", d.QueueURL, code)
		case "AccessDenied", "AccessDeniedException", "InvalidClientTokenId", "SignatureDoesNotMatch",
			"UnrecognizedClientException", "MissingAuthenticationToken", "IncompleteSignature", "InvalidSecurity",
			"KMS.AccessDeniedException", "KmsAccessDenied", "OptInRequired":
			return refused(403, "SQS send to %s: %s: %s", d.QueueURL, code, api.ErrorMessage())
		case "InvalidParameterValue", "InvalidMessageContents", "InvalidAttributeName", "InvalidAttributeValue",
			"MissingParameter", "UnsupportedOperation":
			return refused(400, "SQS send to %s: %s: %s", d.QueueURL, code, api.ErrorMessage())
		}
	}
	// Another code, or an answer whose body is not SQS's error (a
	// proxy's, a gateway's): judged by its status alone.
	var resp *awshttp.ResponseError
	if errors.As(err, &resp) {
		switch st := resp.HTTPStatusCode(); st {
		case 401, 403:
			return refused(403, "SQS send to %s: HTTP %d", d.QueueURL, st)
		case 404:
			return refused(404, "SQS send to %s: HTTP %d", d.QueueURL, st)
		}
	}
	return fmt.Errorf("SQS send to %s: %w", d.QueueURL, err)
}

func (s *sqsConn) broken() bool { return false } // its transport redials by itself

func (s *sqsConn) close() error { s.tr.CloseIdleConnections(); return nil }

// parseSQS reads sqs://[key:secret@]host[:port]/account/queue[?region=r][&tls=false]:
// the queue URL with sqs:// for https://. The region comes from an AWS
// host (sqs.eu-west-1.amazonaws.com) or ?region=.
func parseSQS(d *Dest, q url.Values) error {
	parts := strings.Split(strings.TrimPrefix(d.URL.Path, "/"), "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return bad("queue", "give the queue's path as in its URL: sqs://sqs.eu-west-1.amazonaws.com/123456789012/orders")
	}
	d.Queue = parts[1]
	d.FIFO = strings.HasSuffix(d.Queue, ".fifo")
	d.Region = q.Get("region")
	if d.Region == "" {
		d.Region = awsRegion(d.URL.Hostname())
	}
	if d.Region == "" {
		return bad("region", "missing: give ?region=eu-west-1 (only an AWS host names its region)")
	}
	tls, err := boolParam(q, "tls", true)
	if err != nil {
		return err
	}
	scheme := "https"
	if !tls {
		scheme = "http"
	}
	if u := d.URL.User; u != nil {
		if secret, ok := u.Password(); !ok || secret == "" || u.Username() == "" {
			return bad("credentials", "give both the access key id and the secret access key: sqs://KEY_ID:SECRET@host/…")
		}
	}
	d.Endpoint = scheme + "://" + d.URL.Host
	d.QueueURL = d.Endpoint + d.URL.EscapedPath()
	return onlyParams(q, "region", "tls")
}

// awsRegion is the region an SQS host names: sqs.eu-west-1.amazonaws.com
// (or .amazonaws.com.cn) and eu-west-1.queue.amazonaws.com; "" otherwise.
func awsRegion(host string) string {
	host = strings.ToLower(host)
	rest, ok := strings.CutPrefix(host, "sqs.")
	if ok {
		if region, _, ok := strings.Cut(rest, ".amazonaws.com"); ok && region != "" && !strings.Contains(region, ".") {
			return region
		}
	}
	if region, ok := strings.CutSuffix(host, ".queue.amazonaws.com"); ok && !strings.Contains(region, ".") {
		return region
	}
	return ""
}
