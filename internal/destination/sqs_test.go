package destination_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/hookd/hookd/internal/destination"
	"github.com/hookd/hookd/internal/destination/brokertest"
)

// An account's key, as moto takes any until told to check them.
const sqsKey, sqsSecret = "AKIDHOOKDTEST", "sqs-secret-9f3k"

// sqsClient is a consumer's client for the SQS server at addr.
func sqsClient(addr string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://" + addr),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: sqsKey, SecretAccessKey: sqsSecret}, nil
		}),
	})
}

// sqsQueue creates queue (FIFO when its name ends in .fifo) and returns
// hookd's URL for it: sqs://key:secret@addr/account/queue.
func sqsQueue(t *testing.T, c *sqs.Client, addr, queue string) string {
	t.Helper()
	in := &sqs.CreateQueueInput{QueueName: aws.String(queue)}
	if strings.HasSuffix(queue, ".fifo") {
		in.Attributes = map[string]string{"FifoQueue": "true"}
	}
	out, err := c.CreateQueue(ctxFor(t), in)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(*out.QueueUrl)
	if err != nil {
		t.Fatal(err)
	}
	return "sqs://" + sqsKey + ":" + sqsSecret + "@" + addr + u.Path + "?region=us-east-1&tls=false"
}

// receive reads up to n messages of the queue at hookd's url.
func receive(t *testing.T, c *sqs.Client, raw string, n int) []types.Message {
	t.Helper()
	d, err := destination.Parse(raw, loopback)
	if err != nil {
		t.Fatal(err)
	}
	var out []types.Message
	for range 10 {
		got, err := c.ReceiveMessage(ctxFor(t), &sqs.ReceiveMessageInput{
			QueueUrl: &d.QueueURL, MaxNumberOfMessages: int32(min(n-len(out), 10)), WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, got.Messages...)
		if len(out) >= n {
			return out
		}
	}
	t.Fatalf("received %d of %d messages", len(out), n)
	return nil
}

func sqsHeaders(m types.Message) map[string]string {
	h := map[string]string{}
	for k, v := range m.MessageAttributes {
		h[k] = aws.ToString(v.StringValue)
	}
	return h
}

func TestSQS(t *testing.T) {
	addr := brokertest.SQS(t)
	c := sqsClient(addr)
	p := newPool(t, destination.Config{})
	ctx := ctxFor(t)
	raw := sqsQueue(t, c, addr, "orders")
	if err := p.Send(ctx, raw, signed(t, "evt_s1")); err != nil {
		t.Fatalf("Send: %v", err)
	}
	ms := receive(t, c, raw, 1)
	verify(t, sqsHeaders(ms[0]), []byte(aws.ToString(ms[0].Body)), "evt_s1")

	// A FIFO queue: the subject is the group, the event id dedupes (a
	// redelivery of the same event within SQS's 5 minutes is dropped).
	fifo := sqsQueue(t, c, addr, "orders.fifo")
	for _, id := range []string{"evt_f1", "evt_f2", "evt_f1"} {
		if err := p.Send(ctx, fifo, signed(t, id)); err != nil {
			t.Fatalf("Send %s: %v", id, err)
		}
	}
	ms = receive(t, c, fifo, 2)
	for i, want := range []string{"evt_f1", "evt_f2"} {
		verify(t, sqsHeaders(ms[i]), []byte(aws.ToString(ms[i].Body)), want)
		if g := ms[i].Attributes["MessageGroupId"]; g != "orders/1" {
			t.Fatalf("message %d: group %q, want the subject", i, g)
		}
		if g := ms[i].Attributes["MessageDeduplicationId"]; g != want {
			t.Fatalf("message %d: deduplication id %q, want the event id %q", i, g, want)
		}
	}
	if more := receiveNone(t, c, fifo); more != 0 {
		t.Fatalf("%d more messages: the duplicate event was not deduplicated", more)
	}

	// A queue that is not there: as a 404.
	missing := strings.Replace(raw, "/orders?", "/no-such-queue?", 1)
	wantRefused(t, p.Send(ctx, missing, signed(t, "evt_s2")), 404)
}

// receiveNone says how many messages the queue still gives.
func receiveNone(t *testing.T, c *sqs.Client, raw string) int {
	t.Helper()
	d, _ := destination.Parse(raw, loopback)
	got, err := c.ReceiveMessage(ctxFor(t), &sqs.ReceiveMessageInput{QueueUrl: &d.QueueURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		t.Fatal(err)
	}
	return len(got.Messages)
}

// A key the service does not know: refused as 403, the secret in no error.
func TestSQSKeyRefused(t *testing.T) {
	addr := brokertest.SQS(t, "INITIAL_NO_AUTH_ACTION_COUNT=0")
	p := newPool(t, destination.Config{})
	err := p.Send(ctxFor(t), "sqs://AKIDNOBODY:"+sqsSecret+"@"+addr+"/123456789012/orders?region=us-east-1&tls=false", signed(t, "evt_s3"))
	wantRefused(t, err, 403)
	if strings.Contains(err.Error(), sqsSecret) {
		t.Fatalf("the error shows the secret: %v", err)
	}
}

// SQS unreachable: retried; back: delivered.
func TestSQSUnreachable(t *testing.T) {
	addr := brokertest.SQS(t)
	c := sqsClient(addr)
	px := brokertest.NewProxy(t, addr)
	raw := strings.Replace(sqsQueue(t, c, addr, "orders"), addr, px.Addr, 1)
	p := newPool(t, destination.Config{})
	ctx := ctxFor(t)
	if err := p.Send(ctx, raw, signed(t, "evt_1")); err != nil {
		t.Fatal(err)
	}
	px.Stop()
	wantTransient(t, p.Send(ctx, raw, signed(t, "evt_2")))
	px.Start()
	if err := p.Send(ctx, raw, signed(t, "evt_2")); err != nil {
		t.Fatalf("Send once SQS is back: %v", err)
	}
	ms := receive(t, c, raw, 2)
	ids := []string{}
	for _, m := range ms {
		ids = append(ids, sqsHeaders(m)["webhook-id"])
	}
	if strings.Join(ids, ",") != "evt_1,evt_2" {
		t.Fatalf("received %v, want evt_1 then evt_2", ids)
	}
}
