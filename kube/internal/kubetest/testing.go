package kubetest

import (
	"context"
	"errors"
	"os"
	"testing"
)

// New starts a cluster for a test and stops it when the test ends (its
// component logs are printed if the test failed). It skips the test when
// the binaries are not built, or fails it under FAIRSCHED_KUBE_E2E=1
// (make test-kube); FAIRSCHED_KUBE_E2E=0 skips it.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	Require(t)
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("cannot start the cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the end of each component's log (all of them in %s; KUBETEST_KEEP=1 keeps it):\n%s", c.Dir, c.Logs(25))
		}
		if err := c.Close(); err != nil {
			t.Errorf("cannot close the cluster: %v", err)
		}
	})
	return c
}

// Require skips (or, under FAIRSCHED_KUBE_E2E=1, fails) the test unless the
// binaries are built and the end-to-end tests are wanted.
func Require(t testing.TB) {
	t.Helper()
	switch os.Getenv(EnvE2E) {
	case "0":
		t.Skipf("%s=0: the Kubernetes end-to-end tests are off", EnvE2E)
	case "1":
		if _, err := BinDir(); err != nil {
			t.Fatalf("%s=1 but %v", EnvE2E, err)
		}
	default:
		if _, err := BinDir(); err != nil {
			if errors.Is(err, ErrNoBinaries) {
				t.Skipf("skipped: %v", err)
			}
			t.Fatal(err)
		}
	}
}
