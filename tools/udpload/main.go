// Command udpload is an open-loop UDP DNS load generator for the shed bench (bench/shed.ts): it
// sends one query name at a fixed rate whatever the server answers, and reports the latency of the
// replies. dnsperf is closed-loop: at twice a server's saturating rate, the queries a shedding
// server drops fill its outstanding table until they time out, and its own timeout bookkeeping
// then held its send rate at a fraction of the one asked (22k of 120k queries per second here), so
// the overload the bench meant to apply never happened.
//
// Usage: udpload -server 127.0.0.1:PORT -rate QPS -seconds N [-sockets 4] [-name example.org]
//
//	[-queries FILE] [-timeout 1s] [-version]
//
// -queries takes dnsperf's data file (a `NAME TYPE` line per query), asked in turn; without it,
// every query is -name A.
//
// Prints one JSON line: {"sent":…,"answered":…,"late":…,"p50":…,"p99":…,"seconds":…} (latencies in
// seconds, of the replies that came within the timeout).
//
// A reply's time is the kernel's receive timestamp (SO_TIMESTAMPNS), not when a reader goroutine
// got to it: the generator shares one CPU between its sender and its readers, and at twice a
// server's rate the readers wait behind the sender's bursts, which added the generator's own
// delay to the server's latency (a p99 of about 1 ms against an echo server at 5k queries per
// second, where the server's own share is some 20 µs). Queries go out with sendmmsg and replies come
// in with recvmmsg (golang.org/x/net/ipv4's batches): one CPU then sends 2S for a whoami server with
// room to spare, where a syscall per datagram kept it 80 % busy and, in some runs, short of the rate.
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
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
)

// batch is how many datagrams one sendmmsg or recvmmsg moves at most.
const batch = 64

// sourceHash is the hash of the source the binary was built from (scripts/install-go-tool.sh).
var sourceHash = "dev"

// qtypes are the query types a -queries file may name.
var qtypes = map[string]uint16{
	"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "PTR": 12, "MX": 15, "TXT": 16, "AAAA": 28, "SRV": 33,
	"NAPTR": 35, "DS": 43, "DNSKEY": 48, "HTTPS": 65, "ANY": 255,
}

// question is one query of the load: its name and type.
type question struct {
	name  string
	qtype uint16
}

// readQueries reads dnsperf's data file format: `NAME TYPE` per line, # comments and blanks skipped.
func readQueries(path string) ([]question, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var qs []question
	for i, line := range strings.Split(string(text), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		t := uint16(1)
		if len(f) > 1 {
			var ok bool
			if t, ok = qtypes[strings.ToUpper(f[1])]; !ok {
				return nil, fmt.Errorf("%s:%d: type %q is not one udpload knows", path, i+1, f[1])
			}
		}
		qs = append(qs, question{f[0], t})
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("%s: no queries", path)
	}
	return qs, nil
}

// query is a DNS query for name and qtype with the given ID.
func query(name string, qtype uint16, id uint16) []byte {
	b := make([]byte, 12, 12+len(name)+6)
	binary.BigEndian.PutUint16(b[0:], id)
	binary.BigEndian.PutUint16(b[2:], 0x0100) // RD
	binary.BigEndian.PutUint16(b[4:], 1)
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		b = append(b, byte(len(label)))
		b = append(b, label...)
	}
	b = append(b, 0, byte(qtype>>8), byte(qtype), 0, 1)
	return b
}

// timestamped asks the kernel to stamp every datagram the socket receives (SO_TIMESTAMPNS).
func timestamped(c *net.UDPConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return err
	}
	return serr
}

// receivedAt is the kernel's receive time (Unix ns) in a datagram's control messages; 0 if absent.
func receivedAt(oob []byte) int64 {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS &&
			len(m.Data) >= int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&m.Data[0]))
			return ts.Nano()
		}
	}
	return 0
}

// msgs holds the query for every ID, built once.
var msgs = make([][]byte, 65536)

// flow is one socket: its send times (Unix ns) by query ID and the latencies of its replies.
type flow struct {
	conn      *net.UDPConn
	batches   *ipv4.PacketConn
	out       []ipv4.Message
	sentAt    [65536]atomic.Int64
	mu        sync.Mutex
	latencies []float64
	late      atomic.Int64
}

// send sends queries id, id+1, … (n of them, at most batch) in one sendmmsg, retrying the rest of a
// partial one, stamped with the wall-clock time (as the kernel's receive stamp is) just before.
// A datagram the kernel refuses still counts as sent, as a lost one would.
func (f *flow) send(id uint16, n int) {
	now := time.Now().UnixNano()
	for i := 0; i < n; i++ {
		q := id + uint16(i)
		f.sentAt[q].Store(now)
		f.out[i].Buffers[0] = msgs[q]
	}
	for done := 0; done < n; {
		k, err := f.batches.WriteBatch(f.out[done:n], 0)
		if err != nil || k == 0 {
			break
		}
		done += k
	}
}

func main() {
	server := flag.String("server", "", "HOST:PORT to load")
	rate := flag.Float64("rate", 1000, "queries per second, all sockets together")
	seconds := flag.Float64("seconds", 5, "how long to send")
	sockets := flag.Int("sockets", 4, "UDP sockets (flows) to send from")
	name := flag.String("name", "example.org", "the query name (type A)")
	queriesFile := flag.String("queries", "", "dnsperf data file (NAME TYPE lines) to ask in turn instead of -name")
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
		if err := timestamped(c); err != nil {
			fmt.Fprintln(os.Stderr, "udpload: SO_TIMESTAMPNS:", err)
			os.Exit(1)
		}
		// Room for every reply up front: growing the slice copies it while replies wait.
		want := int(*rate**seconds) / *sockets + 1024
		f := &flow{conn: c, batches: ipv4.NewPacketConn(c), latencies: make([]float64, 0, want)}
		f.out = make([]ipv4.Message, batch)
		for j := range f.out {
			f.out[j].Buffers = make([][]byte, 1)
		}
		flows[i] = f
	}
	var readers sync.WaitGroup
	start := time.Now()
	for _, f := range flows {
		readers.Add(1)
		go func(f *flow) {
			defer readers.Done()
			in := make([]ipv4.Message, batch)
			for j := range in {
				in[j].Buffers = [][]byte{make([]byte, 4096)}
				in[j].OOB = make([]byte, 128)
			}
			for {
				k, err := f.batches.ReadBatch(in, 0)
				if err != nil {
					return
				}
				f.mu.Lock()
				for _, m := range in[:k] {
					if m.N < 12 {
						continue
					}
					now := receivedAt(m.OOB[:m.NN])
					if now == 0 {
						now = time.Now().UnixNano()
					}
					at := f.sentAt[binary.BigEndian.Uint16(m.Buffers[0])].Swap(0)
					if at == 0 {
						continue
					}
					d := time.Duration(now - at)
					if d > *timeout {
						f.late.Add(1)
						continue
					}
					f.latencies = append(f.latencies, d.Seconds())
				}
				f.mu.Unlock()
			}
		}(f)
	}
	// One sender paces all flows: every millisecond, the queries due by then, spread over the
	// flows and sent in batches.
	questions := []question{{*name, 1}}
	if *queriesFile != "" {
		if questions, err = readQueries(*queriesFile); err != nil {
			fmt.Fprintln(os.Stderr, "udpload:", err)
			os.Exit(2)
		}
	}
	for id := range msgs {
		q := questions[id%len(questions)]
		msgs[id] = query(q.name, q.qtype, uint16(id))
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
		for sent < due {
			for k, f := range flows {
				n := int((due - sent) / int64(len(flows)-k))
				if n > batch {
					n = batch
				}
				if n == 0 {
					continue
				}
				f.send(ids[k], n)
				sent += int64(n)
				ids[k] += uint16(n)
			}
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
