package kubetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Version is the Kubernetes release the binaries are built from (make
// kube-bins; kube/hack/kube-bins.sh).
const Version = "v1.37.2"

// Binaries are the programs a cluster runs.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok"}

// EnvBins names the directory of the binaries; EnvE2E set to 1 makes their
// absence a failure rather than a skip (make test-kube), and set to 0 skips
// the end-to-end tests even when the binaries are there.
const (
	EnvBins = "KUBE_BINS"
	EnvE2E  = "FAIRSCHED_KUBE_E2E"
)

// ErrNoBinaries is wrapped by BinDir's error when a binary is missing.
var ErrNoBinaries = errors.New("the Kubernetes binaries are not built")

// BinDir returns the directory that holds every binary of Binaries:
// $KUBE_BINS, else fairsched/kube-bins/<Version>/bin under the user's cache
// directory ($XDG_CACHE_HOME, else ~/.cache), where make kube-bins puts them
// so that every checkout and clone on the machine shares one build.
func BinDir() (string, error) {
	dir := os.Getenv(EnvBins)
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("%w: %v; run make kube-bins, or set %s to their directory", ErrNoBinaries, err, EnvBins)
		}
		dir = filepath.Join(cache, "fairsched", "kube-bins", Version, "bin")
	}
	var missing []string
	for _, b := range Binaries {
		st, err := os.Stat(filepath.Join(dir, b))
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("%w: %s missing in %s; make kube-bins builds them (or set %s to their directory)",
			ErrNoBinaries, strings.Join(missing, ", "), dir, EnvBins)
	}
	return filepath.Abs(dir)
}

// RepoRoot returns the root of the fairsched checkout: the nearest
// directory above the working directory that holds kube/go.mod.
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("cannot get the working directory: %w", err)
	}
	for d := wd; ; {
		if st, err := os.Stat(filepath.Join(d, "kube", "go.mod")); err == nil && !st.IsDir() {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("cannot find the fairsched checkout (a directory with kube/go.mod) above %s", wd)
		}
		d = parent
	}
}
