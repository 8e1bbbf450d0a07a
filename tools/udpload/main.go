// Command udpload is an open-loop UDP DNS load generator for the shed bench (bench/shed.ts): it
// sends one query name at a fixed rate whatever the server answers, and reports the latency of the
// replies. dnsperf is closed-loop: at twice a server's saturating rate, the queries a shedding
// server drops fill its outstanding table until they time out, and its own timeout bookkeeping
// then held its send rate at a fraction of the one asked (22k of 120k queries per second here), so
// the overload the bench meant to apply never happened.
//
// Usage: udpload -server 127.0.0.1:PORT -rate QPS -seconds N [-sockets 4] [-name example.org]
//
//	[-timeout 1s] [-version]
//
// Prints one JSON line: {"sent":…,"answered":…,"late":…,"p50":…,"p99":…,"seconds":…} (latencies in
// seconds, of the replies that came within the timeout).
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// sourceHash is the hash of the source the binary was built from (scripts/install-go-tool.sh).
var sourceHash = "dev"

// query is a DNS query for name A with the given ID.
func query(name string, id uint16) []byte {
	b := make([]byte, 12, 12+len(name)+6)
	binary.BigEndian.PutUint16(b[0:], id)
	binary.BigEndian.PutUint16(b[2:], 0x0100) // RD
	binary.BigEndian.PutUint16(b[4:], 1)
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		b = append(b, byte(len(label)))
		b = append(b, label...)
	}
	b = append(b, 0, 0, 1, 0, 1)
	return b
}

// flow is one socket: its send times by query ID and the latencies of its replies.
type flow struct {
	conn      *net.UDPConn
	sentAt    [65536]atomic.Int64
	mu        sync.Mutex
	latencies []float64
	late      atomic.Int64
}

func main() {
	server := flag.String("server", "", "HOST:PORT to load")
	rate := flag.Float64("rate", 1000, "queries per second, all sockets together")
	seconds := flag.Float64("seconds", 5, "how long to send")
	sockets := flag.Int("sockets", 4, "UDP sockets (flows) to send from")
	name := flag.String("name", "example.org", "the query name (type A)")
	timeout := flag.Duration("timeout", time.Second, "a reply later than this is not counted")
	version := flag.Bool("version", false, "print the source hash and exit")
	flag.Parse()
	if *version {
		fmt.Println(sourceHash)
		return
	}
	addr, err := net.ResolveUDPAddr("udp", *server)
	if err != nil || *server == "" {
		fmt.Fprintln(os.Stderr, "udpload: -server HOST:PORT is needed:", err)
		os.Exit(2)
	}
	flows := make([]*flow, *sockets)
	for i := range flows {
		c, err := net.DialUDP("udp", nil, addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "udpload:", err)
			os.Exit(1)
		}
		_ = c.SetReadBuffer(4 << 20)
		flows[i] = &flow{conn: c}
	}
	var readers sync.WaitGroup
	start := time.Now()
	for _, f := range flows {
		readers.Add(1)
		go func(f *flow) {
			defer readers.Done()
			buf := make([]byte, 4096)
			for {
				n, err := f.conn.Read(buf)
				if err != nil {
					return
				}
				if n < 12 {
					continue
				}
				now := time.Since(start).Nanoseconds()
				at := f.sentAt[binary.BigEndian.Uint16(buf)].Swap(0)
				if at == 0 {
					continue
				}
				d := time.Duration(now - at)
				if d > *timeout {
					f.late.Add(1)
					continue
				}
				f.mu.Lock()
				f.latencies = append(f.latencies, d.Seconds())
				f.mu.Unlock()
			}
		}(f)
	}
	// One sender paces all flows: every millisecond, the queries due by then, round robin.
	msgs := make([][]byte, 65536)
	for id := range msgs {
		msgs[id] = query(*name, uint16(id))
	}
	var sent int64
	ids := make([]uint16, len(flows))
	end := time.Duration(*seconds * float64(time.Second))
	tick := time.NewTicker(time.Millisecond)
	for now := range tick.C {
		elapsed := now.Sub(start)
		if elapsed >= end {
			break
		}
		due := int64(elapsed.Seconds() * *rate)
		for ; sent < due; sent++ {
			f := flows[sent%int64(len(flows))]
			k := sent % int64(len(flows))
			id := ids[k]
			ids[k]++
			f.sentAt[id].Store(time.Since(start).Nanoseconds())
			_, _ = f.conn.Write(msgs[id])
		}
	}
	tick.Stop()
	sendSeconds := time.Since(start).Seconds()
	time.Sleep(*timeout)
	var all []float64
	var late int64
	for _, f := range flows {
		_ = f.conn.Close()
	}
	readers.Wait()
	for _, f := range flows {
		all = append(all, f.latencies...)
		late += f.late.Load()
	}
	sort.Float64s(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return -1
		}
		i := int(p / 100 * float64(len(all)-1))
		return all[i]
	}
	out, _ := json.Marshal(map[string]any{
		"sent": sent, "answered": len(all), "late": late, "p50": pct(50), "p99": pct(99), "seconds": sendSeconds,
	})
	fmt.Println(string(out))
}
