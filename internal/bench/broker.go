package bench

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The destinations the bench can point its endpoints at (--destination):
// the machine's RabbitMQ, NATS JetStream and Redis on their usual ports,
// and Kafka in the bench's process (franz-go's kfake).
const (
	DestinationAMQP  = "amqp"
	DestinationNATS  = "nats"
	DestinationKafka = "kafka"
	DestinationRedis = "redis"
)

const (
	benchRabbit = "127.0.0.1:5672"
	benchNATS   = "127.0.0.1:4222"
	benchRedis  = "127.0.0.1:6379"
)

// consumer reads what hookd sent to the broker destination of each
// endpoint j (a queue, subject, stream or topic of its own) and hands each
// message to the receiver, which verifies its signature and counts it as
// it counts an HTTP delivery.
type consumer struct {
	url  func(j int) string
	stop func()
}

// startConsumer sets up kind's per-endpoint destinations for a run and
// starts reading them.
func startConsumer(ctx context.Context, kind string, rcv *receiver, endpoints int) (*consumer, error) {
	run := "hookd-bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	switch kind {
	case DestinationAMQP:
		return consumeAMQP(rcv, endpoints, run)
	case DestinationNATS:
		return consumeNATS(ctx, rcv, run)
	case DestinationRedis:
		return consumeRedis(ctx, rcv, endpoints, run)
	case DestinationKafka:
		return consumeKafka(rcv, endpoints)
	}
	return nil, fmt.Errorf("destination %q: use amqp, nats, kafka or redis", kind)
}

func headerOf[V any](m map[string]V, skip string) http.Header {
	h := http.Header{}
	for k, v := range m {
		if k == skip {
			continue
		}
		switch x := any(v).(type) {
		case []string:
			if len(x) > 0 {
				h.Set(k, x[0])
			}
		case []byte:
			h.Set(k, string(x))
		default:
			h.Set(k, fmt.Sprint(x))
		}
	}
	return h
}

func consumeAMQP(rcv *receiver, endpoints int, run string) (*consumer, error) {
	c, err := amqp.Dial("amqp://guest:guest@" + benchRabbit + "/")
	if err != nil {
		return nil, fmt.Errorf("RabbitMQ at %s: %w", benchRabbit, err)
	}
	var wg sync.WaitGroup
	for j := range endpoints {
		ch, err := c.Channel()
		if err == nil {
			_, err = ch.QueueDeclare(run+"-"+strconv.Itoa(j), false, true, true, false, nil) // exclusive, auto-deleted
		}
		var msgs <-chan amqp.Delivery
		if err == nil {
			msgs, err = ch.Consume(run+"-"+strconv.Itoa(j), "", true, true, false, false, nil)
		}
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("RabbitMQ queue %d: %w", j, err)
		}
		wg.Go(func() {
			for d := range msgs {
				_ = rcv.accept(j, headerOf(d.Headers, ""), d.Body, time.Now()) // counted bad when it fails
			}
		})
	}
	return &consumer{
		url: func(j int) string {
			return "amqp://guest:guest@" + benchRabbit + "/?routing_key=" + run + "-" + strconv.Itoa(j)
		},
		stop: func() { _ = c.Close(); wg.Wait() },
	}, nil
}

func consumeNATS(ctx context.Context, rcv *receiver, run string) (*consumer, error) {
	nc, err := nats.Connect("nats://"+benchNATS, nats.Name("hookd bench"))
	if err != nil {
		return nil, fmt.Errorf("NATS at %s: %w", benchNATS, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	name := strings.ToUpper(strings.ReplaceAll(run, "-", "_"))
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{run + ".>"}, Storage: jetstream.MemoryStorage}); err != nil {
		nc.Close()
		return nil, fmt.Errorf("NATS stream: %w", err)
	}
	sub, err := nc.Subscribe(run+".>", func(m *nats.Msg) {
		j, err := strconv.Atoi(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
		if err != nil {
			j = -1
		}
		_ = rcv.accept(j, headerOf(map[string][]string(m.Header), ""), m.Data, time.Now())
	})
	if err == nil {
		err = sub.SetPendingLimits(-1, -1)
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &consumer{
		url: func(j int) string { return "nats://" + benchNATS + "/" + run + "." + strconv.Itoa(j) },
		stop: func() {
			_ = sub.Drain()
			_ = js.DeleteStream(context.Background(), name)
			nc.Close()
		},
	}, nil
}

func consumeRedis(ctx context.Context, rcv *receiver, endpoints int, run string) (*consumer, error) {
	c := redis.NewClient(&redis.Options{Addr: benchRedis})
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redis at %s: %w", benchRedis, err)
	}
	streams := make([]string, 2*endpoints)
	for j := range endpoints {
		streams[j], streams[endpoints+j] = run+":"+strconv.Itoa(j), "0"
	}
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for rctx.Err() == nil {
			res, err := c.XRead(rctx, &redis.XReadArgs{Streams: streams, Count: 1000, Block: 200 * time.Millisecond}).Result()
			if err != nil {
				continue // redis.Nil: nothing new within the block; a cancelled context ends the loop
			}
			for _, s := range res {
				j, _ := strconv.Atoi(s.Stream[strings.LastIndexByte(s.Stream, ':')+1:])
				for _, m := range s.Messages {
					body, _ := m.Values["body"].(string)
					_ = rcv.accept(j, headerOf(m.Values, "body"), []byte(body), time.Now())
					streams[endpoints+j] = m.ID
				}
			}
		}
	}()
	return &consumer{
		url: func(j int) string {
			return "redis://" + benchRedis + "?stream=" + run + ":" + strconv.Itoa(j) + "&maxlen=1000000"
		},
		stop: func() {
			cancel()
			<-done
			_ = c.Del(context.Background(), streams[:endpoints]...).Err()
			_ = c.Close()
		},
	}, nil
}

func consumeKafka(rcv *receiver, endpoints int) (*consumer, error) {
	topics := make([]string, endpoints)
	for j := range topics {
		topics[j] = "bench-" + strconv.Itoa(j)
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	if err != nil {
		return nil, err
	}
	addr := cluster.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topics...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		cluster.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				j, _ := strconv.Atoi(strings.TrimPrefix(r.Topic, "bench-"))
				h := http.Header{}
				for _, x := range r.Headers {
					h.Set(x.Key, string(x.Value))
				}
				_ = rcv.accept(j, h, r.Value, time.Now())
			})
		}
	}()
	return &consumer{
		url: func(j int) string { return "kafka://" + addr + "/bench-" + strconv.Itoa(j) },
		stop: func() {
			cancel()
			<-done
			cl.Close()
			cluster.Close()
		},
	}, nil
}
