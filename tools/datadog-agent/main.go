// Command datadog-agent is a small stand-in for the Datadog agent's trace intake, for the trace
// plugin's datadog tests: it takes traces as the agent's receiver does (PUT or POST
// /v0.4/traces, msgpack, an array of traces, each an array of spans), decodes them with the
// agent's own span type and msgpack code (datadog-agent/pkg/proto/pbgo/trace, tinylib/msgp: what
// the agent runs on the same bytes), keeps them in memory and shows them as JSON
// (GET /test/traces, /test/requests). /info advertises /v0.4/traces only, as an agent without the
// v1.0 protocol does, so dd-trace-go (CoreDNS 1.15.0's tracer) sends v0.4 as clusterdns does. The
// real agent needs an API key and a Datadog site and is far larger (docs/testing.md, "Trace
// collector").
//
// Usage: datadog-agent [-listen 127.0.0.1:0] [-version]
// Prints "datadog-agent listening on HOST:PORT" once it accepts connections.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"

	pb "github.com/DataDog/datadog-agent/pkg/proto/pbgo/trace"
)

// sourceHash is the hash of the source the binary was built from (scripts/install-go-tool.sh).
var sourceHash = "dev"

// maxSpans bounds the store: the oldest traces go first.
const maxSpans = 200000

// Span is one decoded span as the test reads it. Ids are decimal strings: JSON numbers lose
// 64-bit precision in JavaScript.
type Span struct {
	Service  string             `json:"service"`
	Name     string             `json:"name"`
	Resource string             `json:"resource"`
	TraceID  string             `json:"trace_id"`
	SpanID   string             `json:"span_id"`
	ParentID string             `json:"parent_id"`
	Start    int64              `json:"start"`
	Duration int64              `json:"duration"`
	Error    int32              `json:"error"`
	Meta     map[string]string  `json:"meta"`
	Metrics  map[string]float64 `json:"metrics"`
	Type     string             `json:"type"`
}

// Request is what one trace request carried besides the spans.
type Request struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Traces  int               `json:"traces"`
	Spans   int               `json:"spans"`
}

type store struct {
	mu       sync.Mutex
	traces   [][]Span
	spans    int
	requests []Request
	other    map[string]int
}

func (s *store) add(req Request, traces [][]Span) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	for _, t := range traces {
		s.traces = append(s.traces, t)
		s.spans += len(t)
	}
	for s.spans > maxSpans && len(s.traces) > 0 {
		s.spans -= len(s.traces[0])
		s.traces = s.traces[1:]
	}
}

func convert(t pb.Trace) []Span {
	out := make([]Span, 0, len(t))
	for _, sp := range t {
		if sp == nil {
			continue
		}
		meta := sp.Meta
		if meta == nil {
			meta = map[string]string{}
		}
		metrics := sp.Metrics
		if metrics == nil {
			metrics = map[string]float64{}
		}
		out = append(out, Span{
			Service:  sp.Service,
			Name:     sp.Name,
			Resource: sp.Resource,
			TraceID:  strconv.FormatUint(sp.TraceID, 10),
			SpanID:   strconv.FormatUint(sp.SpanID, 10),
			ParentID: strconv.FormatUint(sp.ParentID, 10),
			Start:    sp.Start,
			Duration: sp.Duration,
			Error:    sp.Error,
			Meta:     meta,
			Metrics:  metrics,
			Type:     sp.Type,
		})
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("encode: %v", err)
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8126", "address to listen on (port 0: any free port)")
	version := flag.Bool("version", false, "print the source hash the binary was built from and exit")
	flag.Parse()
	if *version {
		fmt.Println(sourceHash)
		return
	}
	st := &store{other: map[string]int{}}
	mux := http.NewServeMux()

	// The agent's receiver takes v0.4 traces on PUT and POST alike.
	traces := func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); ct != "application/msgpack" {
			http.Error(w, "unsupported content type "+ct+" (this agent reads application/msgpack only)", http.StatusUnsupportedMediaType)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 50<<20))
		if err != nil {
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var ts pb.Traces
		rest, err := ts.UnmarshalMsg(body)
		if err != nil {
			http.Error(w, "malformed msgpack traces: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(rest) != 0 {
			http.Error(w, fmt.Sprintf("%d bytes after the traces", len(rest)), http.StatusBadRequest)
			return
		}
		// The agent trusts X-Datadog-Trace-Count for its stats; a tracer must send the true count.
		if n, err := strconv.Atoi(r.Header.Get("X-Datadog-Trace-Count")); err != nil || n != len(ts) {
			http.Error(w, fmt.Sprintf("X-Datadog-Trace-Count %q for %d traces", r.Header.Get("X-Datadog-Trace-Count"), len(ts)), http.StatusBadRequest)
			return
		}
		req := Request{Method: r.Method, Path: r.URL.Path, Headers: map[string]string{}, Traces: len(ts)}
		for k := range r.Header {
			req.Headers[k] = r.Header.Get(k)
		}
		got := make([][]Span, 0, len(ts))
		for _, t := range ts {
			got = append(got, convert(t))
			req.Spans += len(t)
		}
		st.add(req, got)
		// The agent's answer: the sampling rates by service (none configured here).
		writeJSON(w, map[string]any{"rate_by_service": map[string]float64{"service:,env:": 1}})
	}
	mux.HandleFunc("PUT /v0.4/traces", traces)
	mux.HandleFunc("POST /v0.4/traces", traces)

	mux.HandleFunc("GET /info", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"version":         "clusterdns-test-agent",
			"endpoints":       []string{"/v0.4/traces"},
			"client_drop_p0s": false,
			"config":          map[string]any{},
		})
	})

	// Every trace received, in the order received.
	mux.HandleFunc("GET /test/traces", func(w http.ResponseWriter, r *http.Request) {
		st.mu.Lock()
		defer st.mu.Unlock()
		writeJSON(w, append([][]Span{}, st.traces...))
	})
	mux.HandleFunc("GET /test/requests", func(w http.ResponseWriter, r *http.Request) {
		st.mu.Lock()
		defer st.mu.Unlock()
		other := make([]string, 0, len(st.other))
		for p := range st.other {
			other = append(other, p)
		}
		sort.Strings(other)
		writeJSON(w, map[string]any{"traces": append([]Request{}, st.requests...), "other": other})
	})
	// Anything else the tracer asks (stats, telemetry, remote config): not here, as for an agent
	// that has them off; the paths are kept for the test to see.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		st.mu.Lock()
		st.other[r.Method+" "+r.URL.Path]++
		st.mu.Unlock()
		http.NotFound(w, r)
	})

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "datadog-agent: listen %s: %v\n", *listen, err)
		os.Exit(1)
	}
	fmt.Printf("datadog-agent listening on %s\n", ln.Addr())
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintf(os.Stderr, "datadog-agent: %v\n", err)
		os.Exit(1)
	}
}
