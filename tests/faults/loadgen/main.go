// Command loadgen drives SAND's invoke route at a fixed rate (open loop: a request starts on
// schedule whether or not earlier ones were answered) or with a fixed number of clients
// (closed loop), and prints one JSON line per request on stdout: when it started, how long
// its answer took, the status (0: no answer within the timeout or a transport error), the
// mode, the execution id and status of an accepted one and the Retry-After of a refused one.
//
// It uses the standard library only, so `go build` needs no module download. The overload
// test (tests/faults/test_overload.py) builds and runs it: a Go client costs the shared two
// cores far less per request than a Python one, so the stack, not the load generator, is
// what saturates.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

type record struct {
	StartMs    float64 `json:"start_ms"`
	LatencyMs  float64 `json:"latency_ms"`
	Status     int     `json:"status"`
	Mode       string  `json:"mode"`
	Execution  string  `json:"execution_id,omitempty"`
	ExecStatus string  `json:"execution_status,omitempty"`
	RetryAfter string  `json:"retry_after,omitempty"`
	Error      string  `json:"error,omitempty"`
}

func main() {
	url := flag.String("url", "", "invoke URL, e.g. http://127.0.0.1:18080/v1/apps/hello/invoke")
	token := flag.String("token", "", "bearer token")
	rate := flag.Float64("rate", 0, "requests per second (open loop); 0: closed loop")
	clients := flag.Int("clients", 1, "concurrent clients (closed loop)")
	duration := flag.Float64("duration", 5, "seconds of load")
	asyncEvery := flag.Int("async-every", 0, "every Nth request is asynchronous (0: none)")
	timeout := flag.Float64("timeout", 30, "seconds a request may take to be answered")
	body := flag.String("body", "{}", "the input document")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "loadgen: -url is required")
		os.Exit(2)
	}
	client := &http.Client{
		Timeout: time.Duration(*timeout * float64(time.Second)),
		Transport: &http.Transport{
			MaxIdleConns:        4096,
			MaxIdleConnsPerHost: 4096,
			IdleConnTimeout:     30 * time.Second,
		},
	}
	out := json.NewEncoder(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(time.Duration(*duration * float64(time.Second)))
	one := func(n int) {
		mode := "sync"
		if *asyncEvery > 0 && n%*asyncEvery == 0 {
			mode = "async"
		}
		rec := call(client, *url+"?mode="+mode, *token, *body)
		rec.Mode = mode
		rec.StartMs = float64(rec.started.Sub(start).Microseconds()) / 1000
		mu.Lock()
		out.Encode(rec.record)
		mu.Unlock()
	}
	if *rate > 0 {
		gap := time.Duration(float64(time.Second) / *rate)
		for n := 0; ; n++ {
			at := start.Add(time.Duration(n) * gap)
			if !at.Before(end) {
				break
			}
			time.Sleep(time.Until(at))
			wg.Add(1)
			go func(n int) { defer wg.Done(); one(n) }(n)
		}
	} else {
		var next int
		var nextMu sync.Mutex
		for c := 0; c < *clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(end) {
					nextMu.Lock()
					n := next
					next++
					nextMu.Unlock()
					one(n)
				}
			}()
		}
	}
	wg.Wait()
}

type timed struct {
	record
	started time.Time
}

func call(client *http.Client, url, token, body string) timed {
	started := time.Now()
	req, err := http.NewRequest("POST", url, bytes.NewBufferString(body))
	if err != nil {
		return timed{record{Error: err.Error()}, started}
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return timed{record{LatencyMs: since(started), Error: err.Error()}, started}
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	rec := record{LatencyMs: since(started), Status: resp.StatusCode,
		RetryAfter: resp.Header.Get("Retry-After")}
	if resp.StatusCode == 200 || resp.StatusCode == 202 {
		var doc struct {
			ExecutionID string `json:"execution_id"`
			Status      string `json:"status"`
		}
		if json.Unmarshal(data, &doc) == nil {
			rec.Execution = doc.ExecutionID
			rec.ExecStatus = doc.Status
		}
	}
	return timed{rec, started}
}

func since(t time.Time) float64 {
	return float64(time.Since(t).Microseconds()) / 1000
}
