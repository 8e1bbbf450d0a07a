// Command zipkin-collector is a small Zipkin v2 collector for the trace plugin's tests: it takes
// spans as Zipkin's HTTP API does (POST /api/v2/spans, JSON v2, gzip allowed), decodes and checks
// them with zipkin-go's own span model (the one CoreDNS's reporter encodes with), keeps them in
// memory and answers Zipkin's query API over them (/api/v2/services, /api/v2/spans,
// /api/v2/traces, /api/v2/trace/{id}). The real Zipkin server is Java and Jaeger's all-in-one
// takes far longer than the test suite's budget to build (docs/testing.md, "Trace collector").
//
// Usage: zipkin-collector [-listen 127.0.0.1:0] [-version]
// Prints "zipkin-collector listening on HOST:PORT" once it accepts connections.
package main

import (
	"compress/gzip"
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
	"strings"
	"sync"

	"github.com/openzipkin/zipkin-go/model"
)

// sourceHash is the hash of the source the binary was built from (scripts/install-zipkin-collector.sh).
var sourceHash = "dev"

// maxSpans bounds the store: the oldest spans go first.
const maxSpans = 200000

type store struct {
	mu    sync.Mutex
	spans []model.SpanModel
	posts int
}

func (s *store) add(spans []model.SpanModel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.posts++
	s.spans = append(s.spans, spans...)
	if over := len(s.spans) - maxSpans; over > 0 {
		s.spans = append([]model.SpanModel(nil), s.spans[over:]...)
	}
}

func (s *store) snapshot() []model.SpanModel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]model.SpanModel(nil), s.spans...)
}

func serviceOf(sp model.SpanModel) string {
	if sp.LocalEndpoint == nil {
		return ""
	}
	return strings.ToLower(sp.LocalEndpoint.ServiceName)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("encode: %v", err)
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:9411", "address to listen on (port 0: any free port)")
	version := flag.Bool("version", false, "print the source hash the binary was built from and exit")
	flag.Parse()
	if *version {
		fmt.Println(sourceHash)
		return
	}
	st := &store{}
	mux := http.NewServeMux()

	mux.HandleFunc("POST /api/v2/spans", func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if strings.EqualFold(r.Header.Get("Content-Encoding"), "gzip") {
			gz, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, "bad gzip body: "+err.Error(), http.StatusBadRequest)
				return
			}
			defer gz.Close()
			body = gz
		}
		if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
			http.Error(w, "unsupported content type "+ct+" (this collector reads JSON v2 only)", http.StatusUnsupportedMediaType)
			return
		}
		var spans []model.SpanModel
		if err := json.NewDecoder(body).Decode(&spans); err != nil {
			http.Error(w, "malformed JSON v2 spans: "+err.Error(), http.StatusBadRequest)
			return
		}
		st.add(spans)
		w.WriteHeader(http.StatusAccepted)
	})

	mux.HandleFunc("GET /api/v2/services", func(w http.ResponseWriter, r *http.Request) {
		seen := map[string]bool{}
		for _, sp := range st.snapshot() {
			if n := serviceOf(sp); n != "" {
				seen[n] = true
			}
		}
		names := make([]string, 0, len(seen))
		for n := range seen {
			names = append(names, n)
		}
		sort.Strings(names)
		writeJSON(w, names)
	})

	mux.HandleFunc("GET /api/v2/spans", func(w http.ResponseWriter, r *http.Request) {
		svc := strings.ToLower(r.URL.Query().Get("serviceName"))
		if svc == "" {
			http.Error(w, "serviceName is required", http.StatusBadRequest)
			return
		}
		seen := map[string]bool{}
		for _, sp := range st.snapshot() {
			if serviceOf(sp) == svc {
				seen[strings.ToLower(sp.Name)] = true
			}
		}
		names := make([]string, 0, len(seen))
		for n := range seen {
			names = append(names, n)
		}
		sort.Strings(names)
		writeJSON(w, names)
	})

	// Traces with at least one span matching the filters, oldest first (Zipkin returns newest
	// first; tests read them in the order the queries were sent).
	mux.HandleFunc("GET /api/v2/traces", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		svc := strings.ToLower(q.Get("serviceName"))
		spanName := strings.ToLower(q.Get("spanName"))
		limit := 1 << 30
		if l := q.Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil || n < 1 {
				http.Error(w, "limit must be a positive integer", http.StatusBadRequest)
				return
			}
			limit = n
		}
		byTrace := map[model.TraceID][]model.SpanModel{}
		var order []model.TraceID
		for _, sp := range st.snapshot() {
			if _, ok := byTrace[sp.TraceID]; !ok {
				order = append(order, sp.TraceID)
			}
			byTrace[sp.TraceID] = append(byTrace[sp.TraceID], sp)
		}
		out := [][]model.SpanModel{}
		for _, id := range order {
			spans := byTrace[id]
			match := false
			for _, sp := range spans {
				if (svc == "" || serviceOf(sp) == svc) && (spanName == "" || strings.ToLower(sp.Name) == spanName) {
					match = true
					break
				}
			}
			if match && len(out) < limit {
				out = append(out, spans)
			}
		}
		writeJSON(w, out)
	})

	mux.HandleFunc("GET /api/v2/trace/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := model.TraceIDFromHex(r.PathValue("id"))
		if err != nil {
			http.Error(w, "bad trace id: "+err.Error(), http.StatusBadRequest)
			return
		}
		var out []model.SpanModel
		for _, sp := range st.snapshot() {
			if sp.TraceID == id {
				out = append(out, sp)
			}
		}
		if len(out) == 0 {
			http.Error(w, "trace not found", http.StatusNotFound)
			return
		}
		writeJSON(w, out)
	})

	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		st.mu.Lock()
		posts, spans := st.posts, len(st.spans)
		st.mu.Unlock()
		writeJSON(w, map[string]any{"status": "UP", "posts": posts, "spans": spans})
	})

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "zipkin-collector: listen %s: %v\n", *listen, err)
		os.Exit(1)
	}
	fmt.Printf("zipkin-collector listening on %s\n", ln.Addr())
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintf(os.Stderr, "zipkin-collector: %v\n", err)
		os.Exit(1)
	}
}
