// Command loadgen drives one measured phase of benchmarks/side_by_side.py (test tooling,
// never part of the product).
//
// The adapters are called the way the kube-apiserver's aggregator calls them: by a Go
// HTTP client that keeps its connections open. A Python client costs about as much CPU
// per request as the adapter it measures, on the same two cores, so it bounded the rate
// of whichever side needed the CPU; this one costs a fraction of that and is the same
// for every side it drives (both adapters, the aggregator, raw Prometheus).
//
// It reads a JSON spec on stdin, sends the spec's warm-up requests uncounted (they open
// every connection), then the measured requests, `concurrency` at a time, none started
// after `seconds`, and prints one JSON line: the count, the elapsed seconds, the p50 and
// p99 latencies in milliseconds and the CPU clock ticks the process `pid` used over the
// measured window alone. Any failed request ends it with a non-zero status.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type spec struct {
	Base        string            `json:"base"`
	Method      string            `json:"method"`   // GET: each request is a path and query; POST: a form body
	PostPath    string            `json:"postPath"` // where POST bodies go
	Warm        []string          `json:"warm"`
	Requests    []string          `json:"requests"`
	Headers     map[string]string `json:"headers"`
	CA          string            `json:"ca"` // empty: the server's certificate is not verified
	Cert        string            `json:"cert"`
	Key         string            `json:"key"`
	Gzip        bool              `json:"gzip"` // ask for gzip answers (Go's client default)
	Concurrency int               `json:"concurrency"`
	Seconds     float64           `json:"seconds"`
	Items       int               `json:"items"` // items every answer that has them must carry; <0: unchecked
	PID         int               `json:"pid"`   // 0: no CPU figure
}

type result struct {
	Count    int     `json:"count"`
	Seconds  float64 `json:"seconds"`
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	CPUTicks int64   `json:"cpu_ticks"`
}

func main() {
	var s spec
	if err := json.NewDecoder(os.Stdin).Decode(&s); err != nil {
		fail("reading the spec: %v", err)
	}
	client := &http.Client{Transport: transport(s), Timeout: 120 * time.Second}
	drive(client, s, s.Warm)
	cpu0 := cpuTicks(s.PID)
	start := time.Now()
	lat := drive(client, s, s.Requests)
	took := time.Since(start).Seconds()
	cpu := cpuTicks(s.PID) - cpu0
	sort.Float64s(lat)
	r := result{Count: len(lat), Seconds: took, CPUTicks: cpu}
	if len(lat) > 0 {
		r.P50 = lat[len(lat)/2] * 1000
		r.P99 = lat[min(len(lat)-1, len(lat)*99/100)] * 1000
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}

func transport(s spec) *http.Transport {
	t := &tls.Config{InsecureSkipVerify: s.CA == ""} //nolint:gosec // the adapters' self-signed certificates
	if s.CA != "" {
		pem, err := os.ReadFile(s.CA)
		if err != nil {
			fail("%v", err)
		}
		t.RootCAs = x509.NewCertPool()
		t.RootCAs.AppendCertsFromPEM(pem)
	}
	if s.Cert != "" {
		pair, err := tls.LoadX509KeyPair(s.Cert, s.Key)
		if err != nil {
			fail("%v", err)
		}
		t.Certificates = []tls.Certificate{pair}
	}
	return &http.Transport{
		TLSClientConfig:     t,
		MaxIdleConns:        s.Concurrency,
		MaxIdleConnsPerHost: s.Concurrency,
		MaxConnsPerHost:     s.Concurrency,
		DisableCompression:  !s.Gzip,
		// HTTP/1.1, as every client of these benchmarks speaks to every server
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
}

// drive sends reqs, s.Concurrency at a time, and returns each one's latency in seconds.
func drive(client *http.Client, s spec, reqs []string) []float64 {
	deadline := time.Now().Add(time.Duration(s.Seconds * float64(time.Second)))
	var next atomic.Int64
	var mu sync.Mutex
	var all []float64
	var wg sync.WaitGroup
	for w := 0; w < s.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]float64, 0, len(reqs)/s.Concurrency+1)
			for {
				i := int(next.Add(1)) - 1
				if i >= len(reqs) {
					break
				}
				t0 := time.Now()
				if t0.After(deadline) {
					break
				}
				call(client, s, reqs[i])
				mine = append(mine, time.Since(t0).Seconds())
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return all
}

func call(client *http.Client, s spec, r string) {
	var req *http.Request
	var err error
	if s.Method == "POST" {
		req, err = http.NewRequest("POST", s.Base+s.PostPath, strings.NewReader(r))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	} else {
		req, err = http.NewRequest("GET", s.Base+r, nil)
	}
	if err != nil {
		fail("%s: %v", r, err)
	}
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		fail("%s: %v", r, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		fail("%s: %v", r, err)
	}
	if resp.StatusCode != http.StatusOK {
		fail("%s%s: %d %.300s", s.Base, r, resp.StatusCode, body)
	}
	if s.Items >= 0 && bytes.Contains(body, []byte(`"items"`)) {
		var doc struct {
			Items *[]json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			fail("%s: %v", r, err)
		}
		if doc.Items != nil && len(*doc.Items) != s.Items {
			fail("%s: %d items, wanted %d", r, len(*doc.Items), s.Items)
		}
	}
}

// cpuTicks is the process' user + system time in clock ticks, from /proc.
func cpuTicks(pid int) int64 {
	if pid == 0 {
		return 0
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		fail("%v", err)
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "loadgen: "+format+"\n", args...)
	os.Exit(1)
}
