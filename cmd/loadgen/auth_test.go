package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fairsched/fairsched/facade"
	"github.com/fairsched/fairsched/facade/facadetest"
	"github.com/fairsched/fairsched/loadgen"
)

// TestEndToEndWithTokenOverTLS: the load runs against a server with
// tokens and HTTPS (--token, --ca), with no error; without the token every
// request is refused.
func TestEndToEndWithTokenOverTLS(t *testing.T) {
	const token = "loadgen-admin-0123456789"
	tokens, err := facade.ParseTokens([]byte(`{"users": [{"name": "load", "token": "` + token + `", "roles": ["admin"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	certPEM, _, cfg := facadetest.SelfSigned(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	target := facadetest.Start(t, "", facadetest.WallClock, func(o *facade.Options) {
		o.Tokens, o.TLS, o.Pprof = tokens, cfg, true
	}).URL
	report := filepath.Join(t.TempDir(), "load.json")
	args := []string{"--target", target, "--ca", ca, "--nodes", "10", "--pools", "2", "--operations", "4",
		"--duration", "3s", "--max-heartbeats", "500", "--connections", "2", "--heartbeat-period", "20ms",
		"--job-duration", "uniform:0.05:0.2", "--min-jobs", "2", "--max-jobs", "10", "--report", report, "--quiet"}
	var stdout, stderr bytes.Buffer
	if code := runLoad(context.Background(), append(args, "--token", token), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep loadgen.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Errors != 0 || rep.Heartbeats == 0 || rep.AllocationsStarted == 0 {
		t.Fatalf("%d errors (%v), %d heartbeats, %d started", rep.Errors, rep.ErrorSamples, rep.Heartbeats, rep.AllocationsStarted)
	}
	stdout.Reset()
	stderr.Reset()
	t.Setenv("FAIRSCHED_TOKEN", "")
	if code := runLoad(context.Background(), append(args, "--token", ""), &stdout, &stderr); code == 0 {
		t.Fatalf("without a token the load ran: %s", stdout.String())
	}
	if !bytes.Contains(stderr.Bytes(), []byte("401")) {
		t.Errorf("without a token: %s", stderr.String())
	}
}
