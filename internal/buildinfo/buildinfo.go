// Package buildinfo names the running binary's version, commit and Go
// version, read once from the build information the Go toolchain embeds
// (debug.ReadBuildInfo): the module version when built from a tagged module,
// "devel" otherwise, and the VCS revision of a build from a checkout.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// Info is what a binary knows of its own build.
type Info struct {
	// Version is the module's version ("v1.2.3"), or "devel".
	Version string `json:"version"`
	// Commit is the VCS revision, with "+dirty" when the checkout had
	// changes; "unknown" when the build did not record one.
	Commit string `json:"commit"`
	// GoVersion is the toolchain's version ("go1.26.8").
	GoVersion string `json:"go_version"`
}

// version and commit, when set at link time (go build -ldflags "-X
// github.com/fairsched/fairsched/internal/buildinfo.version=v1.2.0 -X
// …commit=abc123", as deploy/Dockerfile does for a build without .git),
// take the place of what the build information says.
var version, commit string

// Get returns the binary's build information.
var Get = sync.OnceValue(func() Info {
	info := fromBuildInfo()
	if version != "" {
		info.Version = version
	}
	if commit != "" {
		info.Commit = commit
	}
	return info
})

func fromBuildInfo() Info {
	info := Info{Version: "devel", Commit: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		info.Version = v
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
			if len(info.Commit) > 12 {
				info.Commit = info.Commit[:12]
			}
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && info.Commit != "unknown" {
		info.Commit += "+dirty"
	}
	return info
}
