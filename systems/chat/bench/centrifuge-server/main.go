// The bench's upper anchor: a server on the centrifuge library (the Go core of Centrifugo,
// Debian's golang-github-centrifugal-centrifuge-dev 0.15), run as its own process like a chat
// gateway or bench/socketio-server.ts, one per "gateway" slot, all on the same Redis through
// the library's Redis broker. It does the same fan-out as the other two sides and, like
// socket.io, writes nothing durable beyond a bounded, expiring history: a client connects over
// WebSocket (/connection/websocket) naming its user in the connect request's data (no real
// auth: this is a bench), subscribes to its channels (its group and its 1:1 rooms), and a
// client's publish goes through Redis to the channel's subscribers on every node. Each
// publication is also kept in the channel's history (a Redis stream, offset + epoch), so a
// client that reconnects after its node died asks for what it missed since its last offset and
// gets it: Centrifugo's recovery, the counterpart of socket.io's connection-state recovery,
// with the same window (2 minutes). `/readyz` answers once the broker is running; `/metrics`
// prints the process's resident memory (VmRSS) the way prom-client names it, so the bench reads
// memory per connection from every side the same way.
//
// Built offline by bench/centrifuge-build.ts (GOPATH mode over Debian's Go sources).
//
// Example:
//
//	PORT=8190 REDIS_URL=redis://127.0.0.1:6379 CF_PREFIX=chat:bench:centrifuge ./centrifuge-server
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/centrifugal/centrifuge"
)

const (
	// Publications kept per channel. At the bench's rates a group channel gets a few messages a
	// second, so the TTL below, not this size, bounds what a client can recover.
	historySize = 1_000
	// How long a channel's history lives after its last publication: socket.io's recovery window
	// (bench/socketio-server.ts, RECOVERY_WINDOW_MS).
	historyTTL = 2 * time.Minute
	// A channel's offset/epoch outlives its history, so a late client learns its position is
	// gone (and re-subscribes from the top) instead of silently starting a new epoch.
	historyMetaTTL = time.Hour
	// Bound on a graceful stop (SIGTERM): the bench kills past its own bound anyway.
	shutdownTimeout = 5 * time.Second
)

// connectData is what the bench's client sends in its connect request: the user it plays.
type connectData struct {
	User string `json:"user"`
}

func env(name, fallback string) string {
	if value, ok := os.LookupEnv(name); ok && value != "" {
		return value
	}
	return fallback
}

// residentBytes reads VmRSS from /proc/self/status (kB), as prom-client's
// process_resident_memory_bytes does for the Node sides.
func residentBytes() (int64, error) {
	file, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) >= 2 && fields[0] == "VmRSS:" {
			var kib int64
			if _, err := fmt.Sscan(fields[1], &kib); err != nil {
				return 0, err
			}
			return kib * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/self/status")
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("centrifuge-server: ")
	port := env("PORT", "0")
	host := env("HOST", "127.0.0.1")
	redisURL := os.Getenv("REDIS_URL")
	if redisURL == "" {
		log.Fatal("REDIS_URL is unset: the Redis broker needs Redis")
	}
	prefix := env("CF_PREFIX", "chat:bench:centrifuge")

	config := centrifuge.DefaultConfig
	config.Name = fmt.Sprintf("bench-%s-%d", port, os.Getpid())
	config.LogLevel = centrifuge.LogLevelError
	config.LogHandler = func(e centrifuge.LogEntry) { log.Printf("%s %v", e.Message, e.Fields) }
	node, err := centrifuge.New(config)
	if err != nil {
		log.Fatalf("node: %v", err)
	}
	shard, err := centrifuge.NewRedisShard(node, centrifuge.RedisShardConfig{Address: redisURL})
	if err != nil {
		log.Fatalf("redis shard: %v", err)
	}
	broker, err := centrifuge.NewRedisBroker(node, centrifuge.RedisBrokerConfig{
		Prefix:         prefix,
		UseStreams:     true,
		HistoryMetaTTL: historyMetaTTL,
		Shards:         []*centrifuge.RedisShard{shard},
	})
	if err != nil {
		log.Fatalf("redis broker: %v", err)
	}
	node.SetBroker(broker)

	// The trivial auth: the user named in the connect data, nothing verified.
	node.OnConnecting(func(_ context.Context, e centrifuge.ConnectEvent) (centrifuge.ConnectReply, error) {
		var data connectData
		if json.Unmarshal(e.Data, &data) != nil || data.User == "" {
			return centrifuge.ConnectReply{}, centrifuge.DisconnectBadRequest
		}
		return centrifuge.ConnectReply{Credentials: &centrifuge.Credentials{UserID: data.User}}, nil
	})
	node.OnConnect(func(client *centrifuge.Client) {
		// Any channel, as socket.io's `join` takes any room; Recover keeps the client's
		// position (offset, epoch) so its next subscribe can ask for what it missed.
		client.OnSubscribe(func(_ centrifuge.SubscribeEvent, cb centrifuge.SubscribeCallback) {
			cb(centrifuge.SubscribeReply{Options: centrifuge.SubscribeOptions{Recover: true}}, nil)
		})
		// The library publishes through the broker once this answers, then replies to the
		// client: the bench's ack. Every publication goes to the channel's history too.
		client.OnPublish(func(_ centrifuge.PublishEvent, cb centrifuge.PublishCallback) {
			cb(centrifuge.PublishReply{
				Options: centrifuge.PublishOptions{HistorySize: historySize, HistoryTTL: historyTTL},
			}, nil)
		})
	})
	if err := node.Run(); err != nil {
		log.Fatalf("run: %v", err)
	}

	var ready atomic.Bool
	mux := http.NewServeMux()
	mux.Handle("/connection/websocket", centrifuge.NewWebsocketHandler(node, centrifuge.WebsocketConfig{
		// The bench's clients send no Origin; anything else on loopback is ours too.
		CheckOrigin: func(*http.Request) bool { return true },
	}))
	health := func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "starting\n", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("content-type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	}
	mux.HandleFunc("/readyz", health)
	mux.HandleFunc("/healthz", health)
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		rss, err := residentBytes()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("content-type", "text/plain")
		fmt.Fprintf(w, "process_resident_memory_bytes %d\ncentrifuge_connections %d\n", rss, node.Hub().NumClients())
	})
	listener, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	server := &http.Server{Handler: mux}
	go func() {
		if err := server.Serve(listener); err != nil && err != http.ErrServerClosed {
			log.Fatalf("serve: %v", err)
		}
	}()
	// node.Run has published this node's control message through Redis: the broker works.
	ready.Store(true)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	_ = server.Shutdown(ctx)
	_ = node.Shutdown(ctx)
}
